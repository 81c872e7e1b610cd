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

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// startBinary runs the built server on a fresh root with the scripted
// model, in the given approval mode, and opens a session.
func startBinary(t *testing.T, m *modeltest.Server, mode string) (e *rpctest.Editor, cmd *exec.Cmd, root, sid string) {
	t.Helper()
	root, _ = filepath.EvalSymlinks(t.TempDir())
	cmd = exec.Command(binPath, "--stdio")
	cmd.Env = execEnv(t)
	e = rpctest.StartProcess(t, cmd)
	e.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true, InitializationOptions: map[string]any{
		"approvalMode": mode, "model": map[string]any{"name": "s", "baseUrl": m.URL}}})
	res, err := e.Call("qwen/newSession", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var ns struct{ SessionID string }
	json.Unmarshal(res, &ns)
	return e, cmd, root, ns.SessionID
}

// A message of exactly 64 MiB, the limit, is accepted: the server reads
// a didOpen that large, and grep_search finds the marker on the buffer's
// last line, so the whole text arrived. (The release binary does the
// decoding, so this stays quick under the race detector.)
func TestSixtyFourMiBMessageIsAccepted(t *testing.T) {
	const marker = "END-OF-THE-BIG-BUFFER"
	m := modeltest.Start(t)
	e, _, root, sid := startBinary(t, m, "yolo")
	path := filepath.Join(root, "big.txt")
	head := `{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"` + rpctest.URI(path) + `","languageId":"plaintext","version":1,"text":"`
	tail := marker + `\n"}}}`
	// Lines of 1023 bytes (1022 letters and a newline, escaped as \n in
	// JSON: 1024 bytes on the wire); the first absorbs the remainder.
	line := strings.Repeat("a", 1022) + `\n`
	room := rpc.MaxMessageSize - len(head) - len(tail)
	lines := room / len(line)
	first := strings.Repeat("a", room-lines*len(line)) + line
	e.WriteRaw([]byte(fmt.Sprintf("Content-Length: %d\r\n\r\n%s%s", rpc.MaxMessageSize, head, first)))
	chunk := []byte(strings.Repeat(line, 1024))
	for left := lines - 1; left > 0; left -= 1024 {
		if left < 1024 {
			chunk = chunk[:left*len(line)]
		}
		e.WriteRaw(chunk)
	}
	e.WriteRaw([]byte(tail))
	args, _ := json.Marshal(map[string]string{"pattern": marker, "path": root})
	m.Push(modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "g", Name: "grep_search", Arguments: string(args)}}}, modeltest.Response{Text: "found"})
	if _, err := e.Call("qwen/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "find it"}}}); err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	msgs := reqs[1].Messages
	out := msgs[len(msgs)-1].Text()
	lastLine := strconv.Itoa(lines + 1)
	if !strings.Contains(out, "big.txt") || !strings.Contains(out, lastLine) || !strings.Contains(out, marker) {
		t.Fatalf("grep result %q, want the marker on line %s of big.txt", out, lastLine)
	}
	if o := e.Orphans(); len(o) != 0 {
		t.Fatalf("the 64 MiB message was answered with an error: %+v", o)
	}
}

// prompt sends a prompt without waiting for its answer.
func sendPrompt(e *rpctest.Editor, sid, text string) {
	e.Send("qwen/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}})
}

// waitUpdate waits for a session update whose JSON contains all of parts.
func waitUpdate(e *rpctest.Editor, parts ...string) {
	e.WaitNotification("qwen/sessionUpdate", func(p json.RawMessage) bool {
		for _, s := range parts {
			if !strings.Contains(string(p), s) {
				return false
			}
		}
		return true
	})
}

// An editor that disconnects while a command runs: the server exits and
// the command's process goes with it (the fake editor's leak check also
// fails the test for any process the server started that is left).
func TestDisconnectMidTurnStopsEveryChild(t *testing.T) {
	m := modeltest.Start(t,
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "sh", Name: "run_shell_command", Arguments: `{"command":"sleep 60"}`}}},
		modeltest.Response{Text: "never asked"},
	)
	e, cmd, _, sid := startBinary(t, m, "yolo")
	sendPrompt(e, sid, "wait a minute")
	waitUpdate(e, `"toolCallId":"sh"`, `"status":"in_progress"`)
	var sleeper int
	deadline := time.Now().Add(rpctest.DefaultTimeout)
	for sleeper == 0 {
		for _, p := range descendants(cmd.Process.Pid) {
			if c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); strings.HasPrefix(string(c), "sleep\x00") {
				sleeper = p
			}
		}
		if sleeper == 0 && time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.CloseInput()
	if code := e.ExitCode(); code != 1 {
		t.Fatalf("exit code %d after the editor went away, want 1", code)
	}
	deadline = time.Now().Add(5 * time.Second)
	for alive(sleeper) && !zombie(sleeper) {
		if time.Now().After(deadline) {
			t.Fatalf("the command (pid %d) outlived the server", sleeper)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(m.Requests()); n != 1 {
		t.Fatalf("%d model requests, want 1: the turn must stop with the connection", n)
	}
}

// An editor that disconnects while an edit waits for its review: nothing
// is written, not even half, and no temp file is left.
func TestDisconnectDuringReviewWritesNothing(t *testing.T) {
	m := modeltest.Start(t)
	e, _, root, sid := startBinary(t, m, "default")
	p := filepath.Join(root, "a.txt")
	const original = "one\ntwo\n"
	os.WriteFile(p, []byte(original), 0o644)
	asked := make(chan struct{}, 1)
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	e.Handle("qwen/proposeEdit", func(json.RawMessage) (any, error) {
		asked <- struct{}{}
		<-never // the editor is gone before it answers
		return nil, nil
	})
	readArgs, _ := json.Marshal(map[string]string{"absolute_path": p})
	writeArgs, _ := json.Marshal(map[string]string{"file_path": p, "content": strings.Repeat("new\n", 100000)})
	m.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "r", Name: "read_file", Arguments: string(readArgs)}}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "w", Name: "write_file", Arguments: string(writeArgs)}}, ChunkSize: 64 << 10},
		modeltest.Response{Text: "never asked"},
	)
	sendPrompt(e, sid, "rewrite it")
	select {
	case <-asked:
	case <-time.After(rpctest.DefaultTimeout):
		for _, n := range e.Notifications("") {
			t.Logf("%s %.300s", n.Method, n.Params)
		}
		t.Fatalf("no review was asked for; %d model requests", len(m.Requests()))
	}
	e.CloseInput()
	if code := e.ExitCode(); code != 1 {
		t.Fatalf("exit code %d after the editor went away, want 1", code)
	}
	if data, _ := os.ReadFile(p); string(data) != original {
		t.Fatalf("file after the disconnect holds %d bytes, want the original", len(data))
	}
	ents, _ := os.ReadDir(root)
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("files after the disconnect: %v, want only a.txt", names)
	}
}
