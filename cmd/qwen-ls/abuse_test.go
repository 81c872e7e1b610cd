package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// startBinary runs the built server on a fresh root with the scripted
// model, in yolo mode, and opens a session.
func startBinary(t *testing.T, m *modeltest.Server) (e *rpctest.Editor, cmd *exec.Cmd, root, sid string) {
	t.Helper()
	root, _ = filepath.EvalSymlinks(t.TempDir())
	cmd = exec.Command(binPath, "--stdio")
	cmd.Env = execEnv(t)
	e = rpctest.StartProcess(t, cmd)
	e.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true, InitializationOptions: map[string]any{
		"approvalMode": "yolo", "model": map[string]any{"name": "s", "baseUrl": m.URL}}})
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
	e, _, root, sid := startBinary(t, m)
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
