package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
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

// sessionFiles is the ids of the session files under home.
func sessionFiles(t *testing.T, home string) []string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(home, ".qwen", "projects", "*", "sessions", "*.jsonl"))
	var ids []string
	for _, p := range paths {
		ids = append(ids, strings.TrimSuffix(filepath.Base(p), ".jsonl"))
	}
	slices.Sort(ids)
	return ids
}

// sessionPath is the file of a session under home.
func sessionPath(t *testing.T, home, id string) string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(home, ".qwen", "projects", "*", "sessions", id+".jsonl"))
	if len(paths) != 1 {
		t.Fatalf("session %s: files %v", id, paths)
	}
	return paths[0]
}

// age sets a file's times to d ago.
func age(t *testing.T, path string, d time.Duration) {
	t.Helper()
	when := time.Now().Add(-d)
	if err := os.Chtimes(path, when, when); err != nil {
		t.Fatal(err)
	}
}

// general.sessionRetention.maxCount holds in a long-running server: each
// new session removes the oldest stored ones beyond the limit (the new one
// counted), never a session this server still has open nor one another
// server has open, even when they are the oldest.
func TestRetentionPrunesAsSessionsAreCreated(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".qwen"), 0o700)
	os.WriteFile(filepath.Join(home, ".qwen", "settings.json"), []byte(`{"general":{"sessionRetention":{"maxCount":3}}}`), 0o600)
	m := modeltest.Start(t)

	a := startACPIn(t, m, ws, home)
	openHere := a.newSession(ws)
	age(t, sessionPath(t, home, openHere), 48*time.Hour)
	b := startACPIn(t, m, ws, home)
	openThere := b.newSession(ws)
	age(t, sessionPath(t, home, openThere), 24*time.Hour)

	var last string
	for i := 1; i <= 8; i++ {
		last = a.newSession(ws)
		want := []string{openHere, openThere, last}
		slices.Sort(want)
		if got := sessionFiles(t, home); !slices.Equal(got, want) {
			t.Fatalf("after the server's session #%d (%d closed before it), with maxCount 3: %d session files %v, want %v (open here %s, open in another server %s, new %s)",
				i, i-1, len(got), got, want, openHere, openThere, last)
		}
		a.call("session/close", map[string]any{"sessionId": last})
	}

	// Once the other server exits, its session is the oldest one that can
	// go; this server's open one stays, older still.
	b.stop()
	newest := a.newSession(ws)
	want := []string{openHere, last, newest}
	slices.Sort(want)
	if got := sessionFiles(t, home); !slices.Equal(got, want) {
		t.Fatalf("after the other server exited and a new session: files %v, want %v (%s was the other server's)", got, want, openThere)
	}
}
