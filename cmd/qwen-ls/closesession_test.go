package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// fdCount is how many descriptors process pid has open.
func fdCount(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("cannot count descriptors: %v", err)
	}
	return len(ents)
}

func okScript(n int) []modeltest.Response {
	out := make([]modeltest.Response, n)
	for i := range out {
		out[i] = modeltest.Response{Text: "ok"}
	}
	return out
}

// 500 sessions opened, prompted and closed one after another in one
// server: the server's open descriptors stay flat, a closed session is
// gone from the server (and can be loaded again), and the default
// general.sessionRetention.maxCount (100) holds as they are made.
func TestClosedSessionsReleaseTheirFiles(t *testing.T) {
	const n = 500
	root, _ := filepath.EvalSymlinks(t.TempDir())
	home := t.TempDir()
	m := modeltest.Start(t, okScript(n)...)
	e, cmd := startSessionServer(t, m, root, home)
	var at50, first, last string
	var base int
	for i := 1; i <= n; i++ {
		sid := newSessionID(t, e, "default")
		if first == "" {
			first = sid
		}
		last = sid
		if _, err := promptText(e, sid, fmt.Sprintf("task %d", i)); err != nil {
			t.Fatalf("prompt %d: %v", i, err)
		}
		if _, err := e.Call("qwen/closeSession", map[string]any{"sessionId": sid}); err != nil {
			t.Fatalf("qwen/closeSession %d: %v", i, err)
		}
		switch i {
		case 50:
			base = fdCount(t, cmd.Process.Pid)
			at50 = fmt.Sprint(base)
		case n:
			end := fdCount(t, cmd.Process.Pid)
			t.Logf("server descriptors: %s after 50 sessions, %d after %d", at50, end, n)
			if end > base+4 {
				t.Fatalf("descriptors grew from %d to %d over %d closed sessions", base, end, n-50)
			}
		}
	}
	if _, err := promptText(e, first, "again"); err == nil || !strings.Contains(err.Error(), "unknown session") {
		t.Fatalf("a prompt to a closed session: %v", err)
	}
	if _, err := e.Call("qwen/closeSession", map[string]any{"sessionId": first}); err == nil {
		t.Fatal("closing a closed session succeeded")
	}
	if _, err := e.Call("qwen/loadSession", map[string]any{"sessionId": last}); err != nil {
		t.Fatalf("a closed session could not be loaded again: %v", err)
	}
	if files := sessionFiles(t, home); len(files) != 100 || slices.Contains(files, first) {
		t.Fatalf("%d session files after %d sessions (the first kept: %v), want the 100 most recent", len(files), n, slices.Contains(files, first))
	}
}

// With a limit of 64 open files, 120 sessions that are never closed all
// take prompts, and every one is written to its file.
func TestManySessionsUnderA64FileLimit(t *testing.T) {
	const n = 120
	root, _ := filepath.EvalSymlinks(t.TempDir())
	home := t.TempDir()
	m := modeltest.Start(t, okScript(n)...)
	cmd := exec.Command("/bin/sh", "-c", `ulimit -n 64 && exec "$0" --stdio`, binPath)
	cmd.Env = append(filteredEnv(),
		"HOME="+home,
		"QWEN_HOME="+filepath.Join(home, ".qwen"),
		"QWEN_CODE_SYSTEM_SETTINGS_PATH="+filepath.Join(home, "none.json"),
		"OPENAI_BASE_URL="+m.URL,
		"OPENAI_API_KEY="+sessionTestKey,
		"OPENAI_MODEL=scripted",
	)
	e := rpctest.StartProcess(t, cmd)
	e.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true, UTF8: true})
	var ids []string
	for i := 1; i <= n; i++ {
		sid := newSessionID(t, e, "default")
		if _, err := promptText(e, sid, fmt.Sprintf("task %d", i)); err != nil {
			t.Fatalf("prompt of session %d under a 64-file limit: %v", i, err)
		}
		ids = append(ids, sid)
	}
	t.Logf("%d open sessions: the server holds %d descriptors", n, fdCount(t, cmd.Process.Pid))
	res, err := e.Call("qwen/listSessions", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var ls struct {
		Sessions []struct{ SessionID, Title string }
	}
	json.Unmarshal(res, &ls)
	if len(ls.Sessions) != n {
		t.Fatalf("listed %d sessions, want %d", len(ls.Sessions), n)
	}
	for _, id := range ids {
		matches, _ := filepath.Glob(filepath.Join(home, ".qwen", "projects", "*", "sessions", id+".jsonl"))
		if len(matches) != 1 {
			t.Fatalf("session %s has no file", id)
		}
		b, _ := os.ReadFile(matches[0])
		if !strings.Contains(string(b), `"type":"message"`) {
			t.Fatalf("session %s's file holds no message:\n%s", id, b)
		}
	}
}
