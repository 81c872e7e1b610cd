package tools

import (
	"path/filepath"
	"slices"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// sandboxPaths lists the paths the OS sandbox keeps read-only: protected
// are those of the workspace roots (for commands that run unasked),
// always the user's trust list and settings files (for every command the
// agent runs, whatever the mode).
func (e *Env) sandboxPaths() (protected, always []string) {
	if e == nil || e.Workspace == nil {
		return nil, nil
	}
	// One file named twice (on a case-insensitive system, in two cases)
	// is listed once.
	same := e.Workspace.Roots.Flavor().Same
	has := func(list []string, p string) bool {
		return slices.ContainsFunc(list, func(q string) bool { return same(q, p) })
	}
	add := func(list *[]string, p string) {
		if p == "" {
			return
		}
		p = filepath.Clean(p)
		if !has(*list, p) {
			*list = append(*list, p)
		}
	}
	if s := e.Settings(); s != nil {
		add(&always, s.TrustFile())
		add(&always, s.UserFile())
	}
	for _, dir := range e.userDirs() {
		add(&always, filepath.Join(dir, workspace.TrustFileName))
		add(&always, filepath.Join(dir, "settings.json"))
	}
	// Everything else the shell analysis protects (protectedPaths): the
	// roots' .qwen, .git hooks, config and info, .vscode, .idea, .envrc
	// and memory files, the user folders' memory files, the system
	// settings file.
	for _, p := range e.protectedPaths() {
		if !has(always, p) {
			add(&protected, p)
		}
	}
	return protected, always
}
