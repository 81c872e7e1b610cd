package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/workspace"
)

func TestProtectedWrite(t *testing.T) {
	e := newTestEnv(t, map[string]any{"context": map[string]any{"fileName": []any{"NOTES.md", "GUIDE.md"}}})
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	for _, tc := range []struct {
		path      string
		want      string // a word of the reason; "" for not protected
		forbidden bool
		// evenYolo: a file tool's write asks in yolo too (the protected
		// class inside the roots, and the user's settings).
		evenYolo bool
	}{
		{filepath.Join(e.Home, workspace.TrustFileName), "trusted folders list", true, false},
		{filepath.Join(e.Home, "settings.json"), "user settings", false, true},
		{filepath.Join(e.Root, ".qwen", "settings.json"), "workspace settings", false, true},
		{filepath.Join(e.Root, "pkg", ".qwen", "settings.json"), "workspace settings", false, true},
		{filepath.Join(e.Root, ".qwen", "agents", "a.md"), ".qwen/agents", false, true},
		{filepath.Join(e.Root, ".qwen", "other.json"), "files in .qwen", false, true},
		{filepath.Join(e.Root, ".git", "hooks", "pre-push"), ".git/hooks", false, true},
		{filepath.Join(e.Root, ".GIT", "Hooks", "pre-push"), ".git/hooks", false, true},
		{filepath.Join(e.Root, ".git", "config"), "git's config", false, true},
		{filepath.Join(e.Root, "sub", ".git", "config"), "git's config", false, true},
		// The git directory is read-only but for what git writes for
		// commits, branches, merges and stashes: the files that make git
		// read another repository need no name of their own.
		{filepath.Join(e.Root, ".git", "config.bak"), ".git/", false, true},
		{filepath.Join(e.Root, ".git", "commondir"), ".git/", false, true},
		{filepath.Join(e.Root, ".git", "objects", "info", "alternates"), ".git/", false, true},
		{filepath.Join(e.Root, ".git", "modules", "m", "config"), ".git/", false, true},
		{filepath.Join(e.Root, ".git", "worktrees", "w", "commondir"), ".git/", false, true},
		{filepath.Join(e.Root, ".git", "refs", "heads", "main"), "", false, false},
		{filepath.Join(e.Root, ".git", "index.lock"), "", false, false},
		{filepath.Join(e.Root, ".git", "objects", "ab", "cdef"), "", false, false},
		{filepath.Join(e.Root, ".gitattributes"), ".gitattributes", false, true},
		{filepath.Join(e.Root, "sub", ".gitmodules"), ".gitmodules", false, true},
		{filepath.Join(e.Root, ".devcontainer", "devcontainer.json"), ".devcontainer", false, true},
		{filepath.Join(e.Root, ".husky", "pre-commit"), "hook folders", false, true},
		{filepath.Join(e.Root, ".githooks", "pre-commit"), "hook folders", false, true},
		{filepath.Join(e.Root, ".vscode", "tasks.json"), ".vscode", false, true},
		{filepath.Join(e.Root, ".envrc"), ".envrc", false, true},
		{filepath.Join(e.Root, "sub", "NOTES.md"), "memory files", false, true},
		{filepath.Join(e.Root, "GUIDE.md"), "memory files", false, true},
		// Outside the roots (where only a shell command writes) the
		// names decide, and the question is not forced in yolo.
		{filepath.Join(e.Home, "NOTES.md"), "memory files", false, false},
		{filepath.Join(outside, ".git", "commondir"), ".git/", false, false},
		{filepath.Join(outside, ".devcontainer", "x.json"), ".devcontainer", false, false},
		// QWEN.md is not a memory file under this context.fileName.
		{filepath.Join(e.Root, "QWEN.md"), "", false, false},
		{filepath.Join(e.Root, "git", "hooks", "x"), "", false, false},
		{filepath.Join(e.Root, ".git2", "x"), "", false, false},
		{filepath.Join(e.Root, "gitattributes.txt"), "", false, false},
		{filepath.Join(e.Root, "main.go"), "", false, false},
	} {
		pr := e.ProtectedWrite(tc.path)
		if pr.Forbidden != tc.forbidden || (tc.want == "") != (pr.Reason == "") || !strings.Contains(pr.Reason, tc.want) || pr.EvenInYolo != tc.evenYolo {
			t.Errorf("ProtectedWrite(%s) = %+v, want %q forbidden=%v evenInYolo=%v", tc.path, pr, tc.want, tc.forbidden, tc.evenYolo)
		}
	}

	// A link inside the workspace that points at a protected file is
	// protected too.
	os.MkdirAll(filepath.Join(e.Root, ".git", "hooks"), 0o755)
	os.WriteFile(filepath.Join(e.Root, ".git", "hooks", "pre-commit"), []byte("#!/bin/sh\n"), 0o755)
	if err := os.Symlink(filepath.Join(e.Root, ".git", "hooks", "pre-commit"), filepath.Join(e.Root, "innocent.sh")); err != nil {
		t.Fatal(err)
	}
	if pr := e.ProtectedWrite(filepath.Join(e.Root, "innocent.sh")); !strings.Contains(pr.Reason, ".git/hooks") {
		t.Errorf("a link to a hook: %+v", pr)
	}
	// A path through a link to the root is judged where it leads: the
	// class, not only the names.
	if err := os.Symlink(e.Root, filepath.Join(outside, "alias")); err != nil {
		t.Fatal(err)
	}
	if pr := e.ProtectedWrite(filepath.Join(outside, "alias", ".qwen", "commands", "x.toml")); !strings.Contains(pr.Reason, ".qwen") || !pr.EvenInYolo {
		t.Errorf("the root through a link: %+v", pr)
	}
	// So is a link to the user's own files, the trust list above all.
	os.MkdirAll(e.Home, 0o755)
	for _, c := range []struct {
		target, link, want string
		forbidden          bool
	}{
		{filepath.Join(e.Home, workspace.TrustFileName), "trust.json", "trusted folders list", true},
		{filepath.Join(e.Home, "settings.json"), "cfg.json", "user settings", false},
	} {
		os.WriteFile(c.target, []byte("{}\n"), 0o644)
		if err := os.Symlink(c.target, filepath.Join(e.Root, c.link)); err != nil {
			t.Fatal(err)
		}
		if pr := e.ProtectedWrite(filepath.Join(e.Root, c.link)); pr.Forbidden != c.forbidden || !strings.Contains(pr.Reason, c.want) {
			t.Errorf("a link to %s: %+v", c.target, pr)
		}
	}
}

// save_memory refuses memory file names that would leave the folder or
// name qwen-ls's own files.
func TestSaveMemoryRefusesSteeredNames(t *testing.T) {
	for _, name := range []string{".git/hooks/post-checkout", "../x.md", "settings.json", "trustedFolders.json", "TrustedFolders.JSON"} {
		e := newTestEnv(t, map[string]any{"context": map[string]any{"fileName": name}})
		res := run(t, tools.NewSaveMemory(e.Env), newEditCall(nil), memoryArgs(t, "x", "project"))
		if res.Error == nil || !strings.Contains(res.Error.Message, name) {
			t.Errorf("context.fileName %q: %+v", name, res.Error)
		}
	}
}
