package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/sandbox"
	"github.com/qwen-ls/qwen-ls/tools/toolstest"
)

// What the sandbox refused is named only when it did refuse it: the
// supervisor's reports first, and from error output only a path the policy
// forbids and the server's own rights allow.
func TestBlockedBySandboxNamesOnlyRealRefusals(t *testing.T) {
	root := t.TempDir()
	home := t.TempDir()
	secret := filepath.Join(home, "id_rsa")
	if err := os.WriteFile(secret, []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	class := sandbox.Class{Roots: []string{root}}
	protect := sandbox.Policy{Mode: sandbox.Protect, Class: class, Writable: []string{root}, Readable: []string{root, outside}}
	readOnly := sandbox.Policy{Mode: sandbox.ReadOnly, Class: class, Readable: []string{root, outside}}
	cases := []struct {
		name    string
		pol     sandbox.Policy
		denials []sandbox.Denial
		stderr  string
		want    string // a part of the answer; "" for none
	}{
		{"report first", protect, []sandbox.Denial{{Op: "write", Path: root + "/.git/config", Kind: sandbox.KindGit}}, "bash: x: Permission denied",
			"write " + root + "/.git/config (git's own files"},
		{"several reports", protect, []sandbox.Denial{{Op: "write", Path: "/a"}, {Op: "write", Path: "/b"}, {Op: "write", Path: "/c"}, {Op: "write", Path: "/d"}}, "",
			"and 1 more"},
		{"proc is never the sandbox", readOnly, nil, "grep: /proc/1/environ: Permission denied", ""},
		{"a read outside the allow-list", readOnly, nil, "cat: " + secret + ": Permission denied", "read " + secret},
		{"a write inside the roots under protect is not refused", protect, nil, "bash: " + root + "/out.txt: Permission denied", ""},
		{"a write outside under protect", protect, nil, "touch: cannot touch '" + outside + "/x': Permission denied", "write " + outside + "/x (outside the folders"},
		{"a relative path resolves in the folder", protect, nil, "bash: .envrc: Permission denied", "write " + root + "/.envrc (.envrc runs"},
		{"a write from read-only", readOnly, nil, "sort: cannot create '" + root + "/sorted': Permission denied", "write " + root + "/sorted"},
		{"network without network", readOnly, nil, "curl: (7) Failed to connect: Permission denied", "network access"},
		{"network with network is someone else's", protect, nil, "curl: (7) Failed to connect: Permission denied", ""},
		{"none is never the sandbox", sandbox.Policy{Mode: sandbox.None}, []sandbox.Denial{{Op: "write", Path: "/a"}}, "x: Permission denied", ""},
		{"no path, no blame", protect, nil, "Permission denied", ""},
	}
	for _, c := range cases {
		got := tools.BlockedBySandbox(c.pol, c.denials, root, c.stderr)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// The hook folder a repository's configuration names is part of the
// protected class, so the guard keeps it like .git/hooks.
func TestProtectedClassHasTheConfiguredHooksPath(t *testing.T) {
	s := toolstest.NewSetup(t, nil)
	root := s.Root
	cfg := "[core]\n\tbare = false\n[Core]\n\thooksPath = \"scripts/git-hooks\" # team hooks\n[alias]\n\thooksPath = nope\n"
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".git", "config"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c := s.ProtectedClass()
	want := filepath.Join(c.Roots[0], "scripts", "git-hooks")
	if len(c.HookDirs) != 1 || c.HookDirs[0] != want {
		t.Fatalf("HookDirs = %q, want [%s]", c.HookDirs, want)
	}
	if k, ok := c.Protected(filepath.Join(want, "pre-commit")); !ok || k != sandbox.KindHooks {
		t.Fatalf("a hook in the configured folder is not protected: %q %v", k, ok)
	}
}
