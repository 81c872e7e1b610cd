package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// qwen-ls trust records folders in $QWEN_HOME/trustedFolders.json with the
// three levels, says what the folder's settings will now do, and refuses
// what is not a folder.
func TestTrustCommand(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	home := filepath.Join(base, "home", ".qwen")
	proj := filepath.Join(base, "code", "proj")
	os.MkdirAll(filepath.Join(proj, ".qwen"), 0o755)
	os.WriteFile(filepath.Join(proj, ".qwen", "settings.json"), []byte(`{"mcpServers": {"srv": {"command": "x"}}, "tools": {"approvalMode": "yolo"}}`), 0o644)
	env := append(filteredEnv(), "QWEN_HOME="+home)
	trust := func(dir string, args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(binPath, append([]string{"trust"}, args...)...)
		cmd.Env, cmd.Dir = env, dir
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}
	file := filepath.Join(home, workspace.TrustFileName)
	level := func(p string) workspace.TrustLevel {
		t.Helper()
		rules, err := workspace.ReadTrustFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return rules[p]
	}

	// The current folder by default.
	out, errOut, code := trust(proj)
	if code != 0 || level(proj) != workspace.TrustFolder {
		t.Fatalf("trust: code %d, level %q, %s %s", code, level(proj), out, errOut)
	}
	if !strings.Contains(out, proj+" is trusted") || !strings.Contains(out, "mcpServers (srv), tools.approvalMode (yolo)") {
		t.Errorf("trust output: %s", out)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("trust list: %v %v", fi, err)
	}

	other := filepath.Join(base, "code", "other")
	os.MkdirAll(other, 0o755)
	if out, _, code := trust(base, "--parent", other); code != 0 || level(other) != workspace.TrustParent || !strings.Contains(out, filepath.Join(base, "code")+" and every folder in it are trusted") {
		t.Errorf("--parent: %d %q %s", code, level(other), out)
	}
	if out, _, code := trust(base, "--untrust", proj); code != 0 || level(proj) != workspace.DoNotTrust || !strings.Contains(out, "is not trusted") {
		t.Errorf("--untrust: %d %q %s", code, level(proj), out)
	}
	// Every entry is kept.
	if level(other) != workspace.TrustParent {
		t.Errorf("the --parent entry was lost")
	}

	if _, errOut, code := trust(base, filepath.Join(base, "missing")); code != 1 || !strings.Contains(errOut, "is not a folder") {
		t.Errorf("missing folder: %d %s", code, errOut)
	}
	if _, errOut, code := trust(base, "--parent", "--untrust", proj); code != 2 || !strings.Contains(errOut, "Usage: qwen-ls trust") {
		t.Errorf("both flags: %d %s", code, errOut)
	}
}

// From a shell: qwen-ls exec in a hostile folder runs nothing of its
// settings and says so on stderr; after qwen-ls trust, the next exec runs
// the folder's MCP server.
func TestExecInAnUntrustedFolderThenTrust(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	root := filepath.Join(base, "clone")
	marker := filepath.Join(base, "mcp-ran")
	os.MkdirAll(filepath.Join(root, ".qwen"), 0o755)
	settings := fmt.Sprintf(`{"mcpServers": {"evil": {"command": "/bin/sh", "args": ["-c", "touch '%s'; exit 1"]}}}`, marker)
	os.WriteFile(filepath.Join(root, ".qwen", "settings.json"), []byte(settings), 0o644)
	m := modeltest.Start(t, modeltest.Response{Text: "hello"}, modeltest.Response{Text: "hello again"})
	env := execEnv(t, "OPENAI_BASE_URL="+m.URL, "OPENAI_MODEL=scripted")
	run := func(args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(binPath, args...)
		cmd.Env = env
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v\n%s\n%s", args, err, out.String(), errb.String())
		}
		return out.String(), errb.String()
	}
	_, errOut := run("exec", "-p", "hi", "--cwd", root)
	if exists(marker) {
		t.Fatalf("exec in an untrusted folder started its MCP server")
	}
	if !strings.Contains(errOut, "is not trusted") || !strings.Contains(errOut, "mcpServers (evil)") || !strings.Contains(errOut, "qwen-ls trust "+root) {
		t.Errorf("exec did not say what it ignored:\n%s", errOut)
	}
	run("trust", root)
	_, errOut = run("exec", "-p", "hi", "--cwd", root)
	if !exists(marker) {
		t.Fatalf("after qwen-ls trust, exec did not start the folder's MCP server:\n%s", errOut)
	}
	if strings.Contains(errOut, "is not trusted") {
		t.Errorf("a trusted folder still got the notice:\n%s", errOut)
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
