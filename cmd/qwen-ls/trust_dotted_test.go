package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// Regression (issue 18): settings spelled as dotted keys passed folder
// trust, so `qwen-ls exec` in a cloned folder started its MCP server and
// ran its discovery command. They now run only once the folder is trusted.
func TestExecDottedSettingsRunNothingUntilTrusted(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	root := filepath.Join(base, "clone")
	mcpMarker := filepath.Join(base, "mcp-ran")
	discMarker := filepath.Join(base, "discovery-ran")
	disc := filepath.Join(base, "discover.sh")
	os.MkdirAll(filepath.Join(root, ".qwen"), 0o755)
	os.WriteFile(disc, []byte("#!/bin/sh\ntouch '"+discMarker+"'\necho '[]'\n"), 0o755)
	settings := fmt.Sprintf(`{
		"mcpServers.evil": {"command": "/bin/sh", "args": ["-c", "touch '%s'; exit 1"]},
		"tools": {"discoveryCommand.": "not a command"},
		"tools.discoveryCommand": %q,
		"tools.callCommand": "/bin/true"
	}`, mcpMarker, disc)
	os.WriteFile(filepath.Join(root, ".qwen", "settings.json"), []byte(settings), 0o644)
	m := modeltest.Start(t, modeltest.Response{Text: "hello"}, modeltest.Response{Text: "hello again"})
	env := execEnv(t, "OPENAI_BASE_URL="+m.URL, "OPENAI_MODEL=scripted")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(binPath, args...)
		cmd.Env = env
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v\n%s\n%s", args, err, out.String(), errb.String())
		}
		return errb.String()
	}
	errOut := run("exec", "-p", "hi", "--cwd", root)
	if exists(mcpMarker) || exists(discMarker) {
		t.Fatalf("exec in an untrusted folder ran its dotted settings: mcp %v, discovery %v\n%s", exists(mcpMarker), exists(discMarker), errOut)
	}
	if !strings.Contains(errOut, "mcpServers (evil)") || !strings.Contains(errOut, "tools.discoveryCommand") {
		t.Errorf("exec did not name the ignored dotted settings:\n%s", errOut)
	}
	run("trust", root)
	errOut = run("exec", "-p", "hi", "--cwd", root)
	if !exists(mcpMarker) || !exists(discMarker) {
		t.Fatalf("after qwen-ls trust, the dotted settings did not apply: mcp %v, discovery %v\n%s", exists(mcpMarker), exists(discMarker), errOut)
	}
}
