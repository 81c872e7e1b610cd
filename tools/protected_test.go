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
	for _, tc := range []struct {
		path      string
		want      string // a word of the reason; "" for not protected
		forbidden bool
	}{
		{filepath.Join(e.Home, workspace.TrustFileName), "trusted folders list", true},
		{filepath.Join(e.Home, "settings.json"), "user settings", false},
		{filepath.Join(e.Root, ".qwen", "settings.json"), "workspace settings", false},
		{filepath.Join(e.Root, "pkg", ".qwen", "settings.json"), "workspace settings", false},
		{filepath.Join(e.Root, ".qwen", "agents", "a.md"), ".qwen/agents", false},
		{filepath.Join(e.Root, ".git", "hooks", "pre-push"), ".git/hooks", false},
		{filepath.Join(e.Root, ".GIT", "Hooks", "pre-push"), ".git/hooks", false},
		{filepath.Join(e.Root, ".git", "config"), "git's config", false},
		{filepath.Join(e.Root, "sub", "NOTES.md"), "memory files", false},
		{filepath.Join(e.Root, "GUIDE.md"), "memory files", false},
		{filepath.Join(e.Home, "NOTES.md"), "memory files", false},
		// QWEN.md is not a memory file under this context.fileName.
		{filepath.Join(e.Root, "QWEN.md"), "", false},
		{filepath.Join(e.Root, ".qwen", "other.json"), "", false},
		{filepath.Join(e.Root, ".git", "config.bak"), "", false},
		{filepath.Join(e.Root, "git", "hooks", "x"), "", false},
		{filepath.Join(e.Root, "main.go"), "", false},
	} {
		pr := e.ProtectedWrite(tc.path)
		if pr.Forbidden != tc.forbidden || (tc.want == "") != (pr.Reason == "") || !strings.Contains(pr.Reason, tc.want) {
			t.Errorf("ProtectedWrite(%s) = %+v, want %q forbidden=%v", tc.path, pr, tc.want, tc.forbidden)
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
