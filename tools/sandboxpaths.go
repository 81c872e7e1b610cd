package tools

import (
	"path/filepath"
	"slices"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// sandboxRootEntries are the entries of each workspace root that a
// sandboxed command may not change: they run code later or widen what the
// agent may do.
var sandboxRootEntries = []string{".qwen", ".git/hooks", ".git/config", ".git/info", ".vscode", ".idea", ".envrc"}

// SandboxPaths lists the paths the OS sandbox keeps read-only: protected
// are those of the workspace roots (for commands that run unasked),
// always the user's trust list and settings files (for every command the
// agent runs, whatever the mode).
func (e *Env) SandboxPaths() (protected, always []string) {
	if e == nil || e.Workspace == nil {
		return nil, nil
	}
	add := func(list *[]string, p string) {
		if p == "" {
			return
		}
		p = filepath.Clean(p)
		if !slices.Contains(*list, p) {
			*list = append(*list, p)
		}
	}
	if e.Workspace.Roots != nil {
		for _, root := range e.Workspace.Roots.List() {
			for _, entry := range sandboxRootEntries {
				add(&protected, filepath.Join(root, filepath.FromSlash(entry)))
			}
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
	return protected, always
}
