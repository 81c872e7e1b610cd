package tools

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

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
		gitDirs := []string{filepath.Join(real, ".git")}
		for _, gd := range shellsafe.GitDirs(root) {
			g := workspace.RealPath(gd)
			gitDirs = append(gitDirs, g)
			if !slices.Contains(c.GitDirs, g) {
				c.GitDirs = append(c.GitDirs, g)
			}
		}
		for _, g := range gitDirs {
			if h := hooksPath(g, real); h != "" && !slices.Contains(c.HookDirs, h) {
				c.HookDirs = append(c.HookDirs, h)
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

// hooksPath is the hook folder a repository's own configuration names
// (core.hooksPath in gitDir/config; relative to the working tree root,
// as git reads it), or "" when it names none. Include files are not
// followed: what they name is not protected by name, though the guard
// keeps .husky and .githooks wherever they are.
func hooksPath(gitDir, root string) string {
	f, err := os.Open(filepath.Join(gitDir, "config"))
	if err != nil {
		return ""
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 256<<10))
	if err != nil {
		return ""
	}
	inCore, value := false, ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			section := strings.ToLower(strings.TrimSpace(strings.Trim(line, "[]")))
			inCore = section == "core"
			continue
		}
		if !inCore {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "hooksPath") {
			continue
		}
		v = strings.TrimSpace(v)
		if rest, quoted := strings.CutPrefix(v, `"`); quoted {
			v, _, _ = strings.Cut(rest, `"`)
		} else if i := strings.IndexAny(v, "#;"); i >= 0 {
			v = strings.TrimSpace(v[:i])
		}
		value = v
	}
	switch {
	case value == "":
		return ""
	case value == "~" || strings.HasPrefix(value, "~/"):
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		value = filepath.Join(home, value[1:])
	case !filepath.IsAbs(value):
		value = filepath.Join(root, value)
	}
	return filepath.Clean(value)
}
