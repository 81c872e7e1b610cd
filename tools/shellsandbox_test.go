//go:build linux

package tools_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/sandbox"
)

func sandboxed(t *testing.T) {
	t.Helper()
	if !sandbox.Probe().ReadOnly() {
		if os.Getenv(sandbox.EnvOptional) == "1" {
			t.Skip("no Landlock on this kernel")
		}
		t.Fatalf("no read-only sandbox here (%s); see tools/sandbox TestLandlockRequired", sandbox.Probe())
	}
}

func runWith(t *testing.T, sh *tools.Shell, approval tools.Approval, command string, ask func(context.Context, string) (bool, error)) tools.Result {
	t.Helper()
	call := &tools.Call{ID: "c", SessionID: "s", Approval: approval, AskOutsideSandbox: ask}
	res, _, err := execShell(t, context.Background(), sh, call, map[string]any{"command": command})
	if err != nil {
		t.Fatalf("%s: %v", command, err)
	}
	return res
}

// TestShellReadOnlyVerdictRunsSandboxed: a command that runs because it
// was judged read-only cannot write, and the result says the sandbox
// stopped it; the person may then run it outside once.
func TestShellReadOnlyVerdictRunsSandboxed(t *testing.T) {
	sandboxed(t)
	e, sh := shellTestEnv(t, nil)
	marker := filepath.Join(e.Root, "marker")
	res := runWith(t, sh, tools.ApprovalNotNeeded, "touch marker", nil)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the read-only sandbox let touch write")
	}
	if !strings.Contains(res.Text(), "blocked by the sandbox: write "+marker+" (a command judged read-only writes nothing)") {
		t.Fatalf("the result does not say the sandbox blocked it:\n%s", res.Text())
	}

	var asked []string
	no := func(_ context.Context, reason string) (bool, error) { asked = append(asked, reason); return false, nil }
	res = runWith(t, sh, tools.ApprovalNotNeeded, "echo x > marker", no)
	if len(asked) != 1 || asked[0] != "blocked by the sandbox: write "+marker+" (a command judged read-only writes nothing)" {
		t.Fatalf("asked %q", asked)
	}
	if _, err := os.Stat(marker); err == nil || !strings.Contains(res.Text(), "declined") {
		t.Fatalf("a refusal still wrote, or was not reported:\n%s", res.Text())
	}

	yes := func(context.Context, string) (bool, error) { return true, nil }
	res = runWith(t, sh, tools.ApprovalNotNeeded, "echo x > marker && echo done", yes)
	if b, err := os.ReadFile(marker); err != nil || string(b) != "x\n" || field(t, res.Text(), "Stdout") != "done" {
		t.Fatalf("approved outside the sandbox, yet: %q %v\n%s", b, err, res.Text())
	}
}

// TestShellSameOutputInsideSandbox: ordinary read-only commands give the
// same output in the read-only sandbox as outside it.
func TestShellSameOutputInsideSandbox(t *testing.T) {
	sandboxed(t)
	e, sh := shellTestEnv(t, nil)
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = e.Root
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(e.Root, "go.mod"), []byte("module example.com/m\n\ngo 1.21\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.Root, "a.go"), []byte("package m\n\n// Hello says hello.\nfunc Hello() string { return \"hello\" }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-qm", "first")
	if err := os.WriteFile(filepath.Join(e.Root, "a.go"), []byte("package m\n// changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	commands := []string{"ls -la", "git status", "git log -p", "grep -rn module .", "find . -name '*.go'", "cat a.go", "wc -l a.go go.mod",
		"git diff", "head -2 go.mod | tail -1"}
	if _, err := exec.LookPath("rg"); err == nil {
		commands = append(commands, "rg -n module .")
	}
	if _, err := exec.LookPath("go"); err == nil {
		commands = append(commands, "GOFLAGS=-mod=mod GOPROXY=off go list ./...")
	}
	for _, c := range commands {
		outside := runWith(t, sh, tools.ApprovalUser, c, nil)
		inside := runWith(t, sh, tools.ApprovalNotNeeded, c, nil)
		if stripPGID(outside.Text()) != stripPGID(inside.Text()) {
			t.Errorf("%s differs in the sandbox:\n--- outside\n%s\n--- inside\n%s", c, outside.Text(), inside.Text())
		}
		if field(t, inside.Text(), "Exit Code") != "0" {
			t.Errorf("%s failed:\n%s", c, inside.Text())
		}
	}
}

// TestShellAllowRuleProtectsPaths: a command run by an allow rule writes
// the workspace but not .git/config or the trust list.
func TestShellAllowRuleProtectsPaths(t *testing.T) {
	sandboxed(t)
	if !sandbox.Probe().Mounts {
		t.Fatal("no mount namespace here")
	}
	e, sh := shellTestEnv(t, nil)
	if err := os.MkdirAll(filepath.Join(e.Root, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(e.Root, ".git", "config")
	trust := filepath.Join(e.Home, "trustedFolders.json")
	if err := os.MkdirAll(e.Home, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{cfg, trust} {
		if err := os.WriteFile(f, []byte("orig\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, approval := range []tools.Approval{tools.ApprovalRule, tools.ApprovalUnknown} {
		res := runWith(t, sh, approval, "echo x > .git/config; echo x > .git/hooks/pre-commit; echo '{}' > "+trust+"; echo ok > out.txt", nil)
		for _, f := range []string{cfg, trust} {
			if b, _ := os.ReadFile(f); string(b) != "orig\n" {
				t.Errorf("%s written under %q", f, approval)
			}
		}
		if _, err := os.Stat(filepath.Join(e.Root, ".git/hooks/pre-commit")); err == nil {
			t.Errorf("a hook was written under %q", approval)
		}
		if b, _ := os.ReadFile(filepath.Join(e.Root, "out.txt")); string(b) != "ok\n" {
			t.Errorf("an ordinary write failed under %q:\n%s", approval, res.Text())
		}
	}
	// The person's own yes: the workspace's files are theirs, the trust
	// list still is not (as root, where a mount namespace costs nothing).
	runWith(t, sh, tools.ApprovalUser, "echo x > .git/config; echo '{}' > "+trust, nil)
	if b, _ := os.ReadFile(cfg); string(b) != "x\n" {
		t.Errorf("an approved command could not write .git/config")
	}
	if b, _ := os.ReadFile(trust); os.Geteuid() == 0 && string(b) != "orig\n" {
		t.Errorf("an approved command wrote the trust list")
	}
}

// TestShellNoSandboxAsks: without a sandbox, a read-only command asks.
func TestShellNoSandboxAsks(t *testing.T) {
	_, sh := shellTestEnv(t, nil)
	params := map[string]any{"command": "ls -la"}
	if conf, terr := sh.ShouldConfirm(context.Background(), nil, params); terr != nil || (conf != nil) != !sandbox.Probe().ReadOnly() {
		t.Fatalf("with the sandbox as probed (%s): confirmation %v %v", sandbox.Probe(), conf, terr)
	}
	t.Setenv(sandbox.EnvDisable, "1")
	conf, terr := sh.ShouldConfirm(context.Background(), nil, params)
	if terr != nil || conf == nil || !strings.Contains(conf.Title, "no sandbox") {
		t.Fatalf("without a sandbox a read-only command must ask: %+v %v", conf, terr)
	}
	if !sh.AllowedInPlanMode(params) {
		t.Fatal("plan mode should still allow it (it then asks)")
	}
}

// TestShellSandboxOffSetting: tools.sandbox off runs read-only commands
// unasked and unconfined, as the person chose.
func TestShellSandboxOffSetting(t *testing.T) {
	e, sh := shellTestEnv(t, map[string]any{"tools": map[string]any{"sandbox": "off"}})
	t.Setenv(sandbox.EnvDisable, "1")
	if conf, _ := sh.ShouldConfirm(context.Background(), nil, map[string]any{"command": "ls"}); conf != nil {
		t.Fatal("with the sandbox off, read-only commands should not ask")
	}
	runWith(t, sh, tools.ApprovalNotNeeded, "touch marker", nil)
	if _, err := os.Stat(filepath.Join(e.Root, "marker")); err != nil {
		t.Fatal("tools.sandbox off still confined the command")
	}
}

// TestShellWorkspaceWriteSetting: with tools.sandbox workspace-write a
// command run by a rule writes only inside the roots and its TMPDIR.
func TestShellWorkspaceWriteSetting(t *testing.T) {
	sandboxed(t)
	e, sh := shellTestEnv(t, map[string]any{"tools": map[string]any{"sandbox": "workspace-write"}})
	outside := t.TempDir()
	res := runWith(t, sh, tools.ApprovalRule, "echo in > in.txt && f=$(mktemp) && echo t > $f && cat $f && echo out > "+outside+"/out.txt", nil)
	if b, _ := os.ReadFile(filepath.Join(e.Root, "in.txt")); string(b) != "in\n" || field(t, res.Text(), "Stdout") != "t" {
		t.Fatalf("writes in the root or TMPDIR failed:\n%s", res.Text())
	}
	if _, err := os.Stat(filepath.Join(outside, "out.txt")); err == nil {
		t.Fatal("workspace-write let a command write outside the roots")
	}
	if !strings.Contains(res.Text(), "blocked by the sandbox") {
		t.Fatalf("no sandbox note:\n%s", res.Text())
	}
}

var pgidLine = regexp.MustCompile(`Process Group PGID: \d+`)

func stripPGID(s string) string { return pgidLine.ReplaceAllString(s, "") }
