package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

const sessionTestKey = "sk-test-0123456789abcdef"

// startSessionServer runs the built binary on root with home as its home
// and the scripted model m, and initializes it.
func startSessionServer(t *testing.T, m *modeltest.Server, root, home string) (*rpctest.Editor, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(binPath, "--stdio")
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
	return e, cmd
}

func newSessionID(t *testing.T, e *rpctest.Editor, mode string) string {
	t.Helper()
	res, err := e.Call("qwen/newSession", map[string]any{"approvalMode": mode})
	if err != nil {
		t.Fatal(err)
	}
	var ns struct{ SessionID string }
	json.Unmarshal(res, &ns)
	return ns.SessionID
}

func promptText(e *rpctest.Editor, sid, text string) (json.RawMessage, error) {
	return e.Call("qwen/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}})
}

// contentText is a model message's content as one string.
func contentText(m modeltest.Message) string { return m.Text() }

// A session outlives a server killed with SIGKILL: a new server lists it,
// replays it, and sends its history with the next prompt.
func TestSessionSurvivesKill9(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	home := t.TempDir()
	m := modeltest.Start(t,
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "w1", Name: "write_file", Arguments: fmt.Sprintf(`{"file_path":%q,"content":"pelican\n"}`, filepath.Join(root, "notes.txt"))}}},
		modeltest.Response{Text: "I noted the word."},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "sh", Name: "run_shell_command", Arguments: `{"command":"touch later.txt"}`}}},
		modeltest.Response{Text: "The word was pelican."},
	)
	e, cmd := startSessionServer(t, m, root, home)
	sid := newSessionID(t, e, "yolo")
	if _, err := promptText(e, sid, "Remember the word pelican in notes.txt (my key is "+sessionTestKey+")"); err != nil {
		t.Fatal(err)
	}
	// The second turn's command waits for the user's permission when the
	// server is killed.
	if _, err := e.Call("qwen/setApprovalMode", map[string]any{"sessionId": sid, "mode": "default"}); err != nil {
		t.Fatal(err)
	}
	asked, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	e.Handle("qwen/requestPermission", func(json.RawMessage) (any, error) {
		close(asked)
		<-release
		return nil, fmt.Errorf("released")
	})
	go promptText(e, sid, "Then touch later.txt")
	<-asked
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-e.Done()

	files, _ := filepath.Glob(filepath.Join(home, ".qwen", "projects", "*", "sessions", sid+".jsonl"))
	if len(files) != 1 {
		t.Fatalf("session file for %s: %v", sid, files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), sessionTestKey) {
		t.Fatalf("the API key was written into the session file")
	}
	if fi, _ := os.Stat(files[0]); fi.Mode().Perm() != 0o600 {
		t.Fatalf("session file mode %v, want 0600", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(filepath.Dir(files[0])); fi.Mode().Perm() != 0o700 {
		t.Fatalf("session folder mode %v, want 0700", fi.Mode().Perm())
	}

	e2, _ := startSessionServer(t, m, root, home)
	res, err := e2.Call("qwen/listSessions", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var ls struct {
		Sessions []struct{ SessionID, Title string }
	}
	json.Unmarshal(res, &ls)
	if _, err := os.Stat(filepath.Join(root, "later.txt")); err == nil {
		t.Fatalf("the command ran without permission")
	}
	if len(ls.Sessions) != 1 || ls.Sessions[0].SessionID != sid || !strings.HasPrefix(ls.Sessions[0].Title, "Remember the word pelican") {
		t.Fatalf("listSessions after the restart = %s", res)
	}
	if _, err := e2.Call("qwen/loadSession", map[string]any{"sessionId": sid}); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, n := range e2.Notifications("qwen/sessionUpdate") {
		var p struct {
			SessionID string
			Update    struct {
				SessionUpdate string
				Content       json.RawMessage
			}
		}
		json.Unmarshal(n.Params, &p)
		// The command list that follows the answer is not part of the
		// replay.
		if p.SessionID == sid && p.Update.SessionUpdate != "available_commands_update" {
			kinds = append(kinds, p.Update.SessionUpdate)
		}
	}
	if got := strings.Join(kinds, ","); got != "user_message_chunk,tool_call,tool_call_update,agent_message_chunk,user_message_chunk,tool_call,tool_call_update" {
		t.Fatalf("replayed %s", got)
	}
	if _, err := promptText(e2, sid, "What was the word?"); err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	last := reqs[len(reqs)-1]
	var roles []string
	for _, msg := range last.Messages {
		roles = append(roles, msg.Role)
	}
	if got := strings.Join(roles, ","); got != "system,user,assistant,tool,assistant,user,assistant,tool,user" {
		t.Fatalf("the request after loading has roles %s", got)
	}
	if !strings.Contains(contentText(last.Messages[1]), "Remember the word pelican") || contentText(last.Messages[4]) != "I noted the word." ||
		last.Messages[2].ToolCalls[0].Function.Name != "write_file" || !strings.Contains(contentText(last.Messages[5]), "Then touch later.txt") ||
		!strings.HasPrefix(contentText(last.Messages[7]), "[Interrupted]") || !strings.Contains(contentText(last.Messages[8]), "What was the word?") {
		t.Fatalf("the request after loading does not carry the history: %s", last.Body)
	}
	if strings.Contains(string(last.Body), sessionTestKey) {
		t.Fatalf("the key came back from the file")
	}
}

// Two servers on one root write sessions at the same time; a third lists
// and loads every one of them whole.
func TestTwoServersShareASessionFolder(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	home := t.TempDir()
	const perServer, prompts = 3, 4
	var script []modeltest.Response
	for i := 0; i < 2*perServer*prompts; i++ {
		script = append(script, modeltest.Response{Text: "ok"})
	}
	m := modeltest.Start(t, script...)
	var wg sync.WaitGroup
	var mu sync.Mutex
	want := map[string]bool{}
	var servers []*rpctest.Editor
	for srv := 0; srv < 2; srv++ {
		e, _ := startSessionServer(t, m, root, home)
		servers = append(servers, e)
		for j := 0; j < perServer; j++ {
			sid := newSessionID(t, e, "default")
			mu.Lock()
			want[sid] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; k < prompts; k++ {
					if _, err := promptText(e, sid, fmt.Sprintf("prompt %d of %s", k, sid)); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	e3, _ := startSessionServer(t, m, root, home)
	// A session still open in its server cannot be continued in another.
	for sid := range want {
		_, err := e3.Call("qwen/loadSession", map[string]any{"sessionId": sid})
		var re *rpctest.RPCError
		if !errors.As(err, &re) || re.Code != -32803 || !strings.Contains(string(re.Data), "session_in_use") {
			t.Fatalf("loading a session open in another server: %v", err)
		}
		break
	}
	for _, e := range servers {
		if code := e.Shutdown(); code != 0 {
			t.Fatalf("a server exited with %d", code)
		}
	}
	res, err := e3.Call("qwen/listSessions", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var ls struct{ Sessions []struct{ SessionID string } }
	json.Unmarshal(res, &ls)
	if len(ls.Sessions) != len(want) {
		t.Fatalf("listed %d sessions, want %d: %s", len(ls.Sessions), len(want), res)
	}
	for _, s := range ls.Sessions {
		if !want[s.SessionID] {
			t.Fatalf("unexpected session %s", s.SessionID)
		}
		before := len(e3.Notifications("qwen/sessionUpdate"))
		res, err := e3.Call("qwen/loadSession", map[string]any{"sessionId": s.SessionID})
		if err != nil || strings.Contains(string(res), "warnings") {
			t.Fatalf("load %s: %s %v", s.SessionID, res, err)
		}
		n := 0
		for _, note := range e3.Notifications("qwen/sessionUpdate")[before:] {
			if strings.Contains(string(note.Params), "prompt ") && strings.Contains(string(note.Params), s.SessionID) {
				n++
			}
		}
		if n != prompts {
			t.Fatalf("session %s replayed %d of its %d prompts", s.SessionID, n, prompts)
		}
	}
}
