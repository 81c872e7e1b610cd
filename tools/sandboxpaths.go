package tools

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/qwen-ls/qwen-ls/tools/sandbox"
	"github.com/qwen-ls/qwen-ls/tools/shellsafe"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// alwaysProtected are the user's trust list and settings files, which the
// OS sandbox keeps read-only for every command the agent runs, whatever
// the mode (where the kernel gives a mount namespace).
func (e *Env) alwaysProtected() []string {
	if e == nil || e.Workspace == nil {
		return nil
	}
	// One file named twice (on a case-insensitive system, in two cases)
	// is listed once.
	same := e.Workspace.Roots.Flavor().Same
	var always []string
	add := func(p string) {
		if p == "" {
			return
		}
		p = filepath.Clean(p)
		if !slices.ContainsFunc(always, func(q string) bool { return same(q, p) }) {
			always = append(always, p)
		}
	}
	if s := e.Settings(); s != nil {
		add(s.TrustFile())
		add(s.UserFile())
	}
	for _, dir := range e.userDirs() {
		add(filepath.Join(dir, workspace.TrustFileName))
		add(filepath.Join(dir, "settings.json"))
	}
	return always
}

// protectedClass is the protected class of the workspace (what inside the
// roots configures or runs code later), as the sandbox keeps it: the
// roots and the git directories their .git files name, with links
// resolved, and the memory file names.
func (e *Env) protectedClass() sandbox.Class {
	var c sandbox.Class
	if e == nil || e.Workspace == nil || e.Workspace.Roots == nil {
		return c
	}
	for _, root := range e.Workspace.Roots.List() {
		real := workspace.RealPath(root)
		if !slices.Contains(c.Roots, real) {
			c.Roots = append(c.Roots, real)
		}
		for _, gd := range shellsafe.GitDirs(root) {
			if g := workspace.RealPath(gd); !slices.Contains(c.GitDirs, g) {
				c.GitDirs = append(c.GitDirs, g)
			}
		}
	}
	c.MemoryNames = e.memoryFileNames()
	return c
}

// sandboxLayout is what the read and write allow-lists of a command that
// runs unasked are made from: the home folder, the roots, the session's
// private temporary folder (made here, for a command that writes), and
// qwen-ls's own folders, which are never readable.
func (e *Env) sandboxLayout(sessionID string, writes bool) sandbox.Layout {
	var l sandbox.Layout
	if home, err := os.UserHomeDir(); err == nil {
		l.Home = home
	}
	if e == nil || e.Workspace == nil {
		return l
	}
	l.Roots = e.protectedClass().Roots
	l.Private = e.userDirs()
	if !writes {
		return l
	}
	dir := filepath.Join(e.ProjectTempDir(), "sandbox-tmp", sessionDirName(sessionID))
	if err := os.MkdirAll(dir, 0o700); err == nil {
		l.TempDir = dir
	}
	return l
}
