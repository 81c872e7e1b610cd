package main

import (
	"encoding/json"
	"fmt"
	"os"
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

// MCP server processes stop with the server: after shutdown and exit none
// is left (issue 7, acceptance 5).
func TestMCPServersStopWithTheServer(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "mcpserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../../registry/testdata/mcpserver").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	pidFile := filepath.Join(dir, "pids")
	root, _ := filepath.EvalSymlinks(t.TempDir())
	m := modeltest.Start(t, modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "a", Name: "hello", Arguments: "{}"}}}, modeltest.Response{Text: "ok"})
	cmd := exec.Command(binPath, "--stdio")
	cmd.Env = execEnv(t)
	e := rpctest.StartProcess(t, cmd)
	e.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true, InitializationOptions: map[string]any{
		"approvalMode": "yolo", "model": map[string]any{"name": "s", "baseUrl": m.URL},
		"settings": map[string]any{"mcpServers": map[string]any{
			"one": map[string]any{"command": bin, "args": []any{"-name", "one", "-tools", "hello", "-pidfile", pidFile, "-child", filepath.Join(dir, "child1")}},
			"two": map[string]any{"command": bin, "args": []any{"-name", "two", "-tools", "other", "-pidfile", pidFile}},
		}},
	}})
	res, err := e.Call("qwen/newSession", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var ns struct{ SessionID string }
	json.Unmarshal(res, &ns)
	// The prompt waits for the servers' first start, then calls one.
	if _, err := e.Call("qwen/prompt", map[string]any{"sessionId": ns.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "go"}}}); err != nil {
		t.Fatal(err)
	}
	msgs := m.Requests()[1].Messages
	if got := msgs[len(msgs)-1].Text(); got != "one:hello" {
		t.Fatalf("MCP result = %q", got)
	}
	var pids []int
	data, _ := os.ReadFile(pidFile)
	for _, f := range strings.Fields(string(data)) {
		p, _ := strconv.Atoi(f)
		pids = append(pids, p)
	}
	if c, err := os.ReadFile(filepath.Join(dir, "child1")); err == nil {
		p, _ := strconv.Atoi(strings.TrimSpace(string(c)))
		pids = append(pids, p)
	}
	if len(pids) < 3 {
		t.Fatalf("expected two servers and a child, got pids %v", pids)
	}
	for _, p := range pids {
		if !alive(p) {
			t.Fatalf("process %d is not running before exit", p)
		}
	}
	if code := e.Shutdown(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []int
		for _, p := range pids {
			if alive(p) && !zombie(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left after exit: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func zombie(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(data)
	rest := s[strings.LastIndexByte(s, ')')+2:]
	return strings.HasPrefix(rest, "Z")
}
