package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// acpProc is the built binary serving ACP (newline-delimited JSON-RPC),
// started in a folder as an ACP client such as acpx starts it.
type acpProc struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan []byte
	next  int
}

// startACPIn runs `qwen-ls --acp` in dir with home as its home and the
// scripted model m, and initializes it.
func startACPIn(t *testing.T, m *modeltest.Server, dir, home string) *acpProc {
	t.Helper()
	cmd := exec.Command(binPath, "--acp")
	cmd.Dir = dir
	cmd.Env = append(filteredEnv(),
		"HOME="+home,
		"QWEN_HOME="+filepath.Join(home, ".qwen"),
		"QWEN_CODE_SYSTEM_SETTINGS_PATH="+filepath.Join(home, "none.json"),
		"OPENAI_BASE_URL="+m.URL,
		"OPENAI_API_KEY="+sessionTestKey,
		"OPENAI_MODEL=scripted",
	)
	cmd.Stderr = io.Discard
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &acpProc{t: t, cmd: cmd, in: in, lines: make(chan []byte, 64)}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			p.lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	t.Cleanup(p.stop)
	p.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	return p
}

// call sends a request and returns its result; an error answer fails the
// test. Notifications are skipped; a request from the agent is refused.
func (p *acpProc) call(method string, params any) json.RawMessage {
	p.t.Helper()
	p.next++
	id := p.next
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		p.t.Fatalf("%s: %v", method, err)
	}
	timeout := time.After(60 * time.Second) // a hang guard, not a measurement
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				p.t.Fatalf("%s: the agent closed its output", method)
			}
			var msg struct {
				ID     *int            `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(line, &msg) != nil || msg.ID == nil {
				continue
			}
			if msg.Method != "" {
				b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": *msg.ID, "error": map[string]any{"code": -32601, "message": "not in this test"}})
				p.in.Write(append(b, '\n'))
				continue
			}
			if *msg.ID != id {
				continue
			}
			if msg.Error != nil {
				p.t.Fatalf("%s: error %s", method, msg.Error)
			}
			return msg.Result
		case <-timeout:
			p.t.Fatalf("%s: no answer", method)
		}
	}
}

// newSession makes a session in cwd (ACP stores it at once).
func (p *acpProc) newSession(cwd string) string {
	p.t.Helper()
	var res struct{ SessionID string }
	json.Unmarshal(p.call("session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}), &res)
	if res.SessionID == "" {
		p.t.Fatal("session/new gave no sessionId")
	}
	return res.SessionID
}

// stop closes the agent's input and waits for it to exit.
func (p *acpProc) stop() {
	if p.cmd.ProcessState != nil {
		return
	}
	p.in.Close()
	for range p.lines {
	}
	p.cmd.Wait()
}

// listedIDs is the ids of a session/list answer.
func listedIDs(res json.RawMessage) []string {
	var l struct {
		Sessions []struct{ SessionID string }
	}
	json.Unmarshal(res, &l)
	var ids []string
	for _, s := range l.Sessions {
		ids = append(ids, s.SessionID)
	}
	return ids
}

// acpx lists sessions with `session/list {}` from a new agent process,
// started in the folder it works in: that process has no session and so
// no roots, and lists the sessions stored for its working folder. One
// started elsewhere does not list them.
func TestACPListWithoutCwdListsTheWorkingFolder(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	other, _ := filepath.EvalSymlinks(t.TempDir())
	home := t.TempDir()
	m := modeltest.Start(t)

	p1 := startACPIn(t, m, ws, home)
	sid := p1.newSession(ws)
	p1.stop()

	p2 := startACPIn(t, m, ws, home)
	res := p2.call("session/list", map[string]any{})
	if ids := listedIDs(res); !slices.Contains(ids, sid) {
		t.Fatalf("session/list {} in a new process started in %s = %s; want the session %s stored there", ws, res, sid)
	}
	if !strings.Contains(string(res), fmt.Sprintf(`"cwd":%q`, ws)) {
		t.Fatalf("session/list {} = %s; want the session's cwd %s", res, ws)
	}
	p2.stop()

	p3 := startACPIn(t, m, other, home)
	if res := p3.call("session/list", map[string]any{}); slices.Contains(listedIDs(res), sid) {
		t.Fatalf("session/list {} in %s = %s; it lists %s's session", other, res, ws)
	}
}
