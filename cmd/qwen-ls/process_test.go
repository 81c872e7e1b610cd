package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// A background command outlives its turn but not the server: after
// shutdown and exit no process of its group is left (conformance case 39).
func TestBackgroundCommandsDieWithTheServer(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	m := modeltest.Start(t,
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "bg", Name: "run_shell_command", Arguments: `{"command":"sleep 60","is_background":true}`}}},
		modeltest.Response{Text: "started"},
	)
	cmd := exec.Command(binPath, "--stdio")
	cmd.Env = execEnv(t)
	e := rpctest.StartProcess(t, cmd)
	e.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true, InitializationOptions: map[string]any{
		"approvalMode": "yolo", "model": map[string]any{"name": "s", "baseUrl": m.URL}}})
	res, err := e.Call("qwen/newSession", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var ns struct{ SessionID string }
	json.Unmarshal(res, &ns)
	if _, err := e.Call("qwen/prompt", map[string]any{"sessionId": ns.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "start it"}}}); err != nil {
		t.Fatal(err)
	}
	msgs := m.Requests()[1].Messages
	out := msgs[len(msgs)-1].Text()
	pgid := 0
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Process Group PGID: "); ok {
			pgid, _ = strconv.Atoi(v)
		}
	}
	if pgid == 0 || !strings.Contains(out, "still running in the background") {
		t.Fatalf("tool result = %q", out)
	}
	if len(processesInGroup(pgid)) == 0 {
		t.Fatalf("the background group %d is not running", pgid)
	}
	if code := e.Shutdown(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(processesInGroup(pgid)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if left := processesInGroup(pgid); len(left) > 0 {
		t.Fatalf("processes of the background group left after exit: %v", left)
	}
}
