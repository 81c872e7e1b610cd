package rpc_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// acpRPCError is an error answer.
type acpRPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// try sends a request and returns its result or its error.
func (c *acpClient) try(method string, params any) (map[string]json.RawMessage, *acpRPCError) {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := fmt.Sprint(c.nextID)
	ch := make(chan json.RawMessage, 1)
	c.responses[id] = ch
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.nextID, "method": method, "params": params})
	c.w.Write(append(b, '\n'))
	c.mu.Unlock()
	select {
	case line := <-ch:
		var m struct {
			Result map[string]json.RawMessage `json:"result"`
			Error  *acpRPCError               `json:"error"`
		}
		json.Unmarshal(line, &m)
		return m.Result, m.Error
	case <-time.After(20 * time.Second):
		c.t.Fatalf("no answer to %s", method)
		return nil, nil
	}
}

func textPrompt(sid, text string) map[string]any {
	return map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}}
}

// updatesOfKind lists the session/update payloads of one kind.
func (c *acpClient) updatesOfKind(kind string) []map[string]json.RawMessage {
	var out []map[string]json.RawMessage
	for _, u := range c.updates() {
		if string(u["sessionUpdate"]) == `"`+kind+`"` {
			out = append(out, u)
		}
	}
	return out
}

// A session made by session/new in one process can be loaded and resumed
// by the next before it ever had a prompt (acpx's saved sessions: "sessions
// new", then "prompt" from another process); an id that was never made is
// -32002, on which clients fall back to session/new.
func TestACPNewSessionIsLoadableFromTheNextProcess(t *testing.T) {
	m := modeltest.Start(t, modeltest.Response{Text: "resumed"})
	base := t.TempDir()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	c1, stop := startACPHome(t, m.URL, base)
	c1.call("initialize", map[string]any{"protocolVersion": 1})
	var sid string
	json.Unmarshal(c1.call("session/new", map[string]any{"cwd": root, "mcpServers": []any{}})["sessionId"], &sid)
	stop()

	c2, stop2 := startACPHome(t, m.URL, base)
	c2.call("initialize", map[string]any{"protocolVersion": 1})
	if _, e := c2.try("session/load", map[string]any{"sessionId": sid, "cwd": root, "mcpServers": []any{}}); e != nil {
		t.Fatalf("session/load of a session made by the previous process: %+v", e)
	}
	stop2()

	c3, _ := startACPHome(t, m.URL, base)
	c3.call("initialize", map[string]any{"protocolVersion": 1})
	res, e := c3.try("session/resume", map[string]any{"sessionId": sid, "cwd": root, "mcpServers": []any{}})
	if e != nil || !strings.Contains(string(res["modes"]), "currentModeId") {
		t.Fatalf("session/resume = %v, %+v", res, e)
	}
	c3.call("session/prompt", textPrompt(sid, "go on"))
	if len(c3.updatesOfKind("user_message_chunk")) != 0 {
		t.Fatalf("session/resume replayed the conversation")
	}
	for _, method := range []string{"session/load", "session/resume"} {
		_, e := c3.try(method, map[string]any{"sessionId": "0123456789abcdef01234567", "cwd": root, "mcpServers": []any{}})
		if e == nil || e.Code != -32002 {
			t.Fatalf("%s of an unknown session: %+v, want -32002", method, e)
		}
	}
}

// initialize advertises the session capabilities the agent has.
func TestACPAdvertisesSessionCapabilities(t *testing.T) {
	c := startACP(t, modeltest.Start(t).URL)
	res := c.call("initialize", map[string]any{"protocolVersion": 1})
	var caps struct {
		SessionCapabilities map[string]json.RawMessage `json:"sessionCapabilities"`
	}
	json.Unmarshal(res["agentCapabilities"], &caps)
	for _, k := range []string{"list", "additionalDirectories", "resume", "close", "delete"} {
		if string(caps.SessionCapabilities[k]) != "{}" {
			t.Errorf("sessionCapabilities.%s = %s, want {}", k, caps.SessionCapabilities[k])
		}
	}
}

// A client's refusal of fs/read_text_file is its read policy: the model is
// told the read was refused and never sees the disk's text.
func TestACPRefusedReadIsNotReadFromDisk(t *testing.T) {
	m := modeltest.Start(t)
	c := startACP(t, m.URL)
	c.answer = func(method string, params json.RawMessage) any {
		if method == "fs/read_text_file" {
			return acpError{-32000, "reading .env files is not allowed"}
		}
		return nil
	}
	sid, root := acpSession(t, c, map[string]any{"fs": map[string]any{"readTextFile": true}})
	secret := filepath.Join(root, ".env")
	os.WriteFile(secret, []byte("TOKEN=on-disk-only\n"), 0o644)
	m.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "r", Name: "read_file", Arguments: jsonArgs("absolute_path", secret)}}},
		modeltest.Response{Text: "ok"},
	)
	c.call("session/prompt", textPrompt(sid, "read it"))
	got := toolMessageOf(t, m, "r")
	if strings.Contains(got, "on-disk-only") || !strings.Contains(got, "refused") || !strings.Contains(got, "not allowed") {
		t.Fatalf("after a refused read the model was told %q", got)
	}
}

// A resource_link is set off from the text around it and the linked
// file's text is attached for the model; a link outside the workspace is
// named but not read.
func TestACPResourceLinksAreAttached(t *testing.T) {
	m := modeltest.Start(t, modeltest.Response{Text: "ok"})
	c := startACP(t, m.URL)
	sid, root := acpSession(t, c, map[string]any{})
	p := filepath.Join(root, "notes.txt")
	os.WriteFile(p, []byte("the linked file's text\n"), 0o644)
	outside := filepath.Join(t.TempDir(), "elsewhere.txt")
	os.WriteFile(outside, []byte("outside text\n"), 0o644)
	link := func(path string) map[string]any {
		return map[string]any{"type": "resource_link", "uri": (&url.URL{Scheme: "file", Path: path}).String(), "name": filepath.Base(path)}
	}
	c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{
		map[string]any{"type": "text", "text": "summarise"}, link(p), map[string]any{"type": "text", "text": "and"}, link(outside),
	}})
	reqs := m.Requests()
	msgs := reqs[len(reqs)-1].Messages
	user := msgs[len(msgs)-1].Text()
	if !strings.Contains(user, "summarise @"+p+" and") || !strings.Contains(user, "the linked file's text") {
		t.Fatalf("the model got %q", user)
	}
	if strings.Contains(user, "outside text") || !strings.Contains(user, "@"+outside) || !strings.Contains(user, "outside the workspace") {
		t.Fatalf("a link outside the workspace: the model got %q", user)
	}
}

// session/close ends a running turn and forgets the session;
// session/delete removes its file; logout answers. None is -32601.
func TestACPCloseDeleteAndLogout(t *testing.T) {
	m := modeltest.Start(t)
	base := t.TempDir()
	c, _ := startACPHome(t, m.URL, base)
	var mu sync.Mutex
	asked := make(chan struct{}, 1)
	// The permission request is never answered before the close: its
	// answer waits for the end of the test.
	testEnded := make(chan struct{})
	t.Cleanup(func() { close(testEnded) })
	c.async = true
	c.answer = func(method string, params json.RawMessage) any {
		if method == "session/request_permission" {
			asked <- struct{}{}
			<-testEnded
		}
		return nil
	}
	sid, root := acpSession(t, c, map[string]any{})
	m.Push(modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "w", Name: "write_file", Arguments: jsonArgs("file_path", filepath.Join(root, "x.txt"), "content", "x")}}},
		modeltest.Response{Text: "never"})
	done := make(chan *acpRPCError, 1)
	var stop map[string]json.RawMessage
	go func() {
		res, e := c.try("session/prompt", textPrompt(sid, "write"))
		mu.Lock()
		stop = res
		mu.Unlock()
		done <- e
	}()
	<-asked
	if _, e := c.try("session/close", map[string]any{"sessionId": sid}); e != nil {
		t.Fatalf("session/close: %+v", e)
	}
	select {
	case e := <-done:
		mu.Lock()
		defer mu.Unlock()
		if e != nil || string(stop["stopReason"]) != `"cancelled"` {
			t.Fatalf("the closed session's prompt ended with %v, %+v", stop, e)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the prompt did not end when its session was closed")
	}
	if _, e := c.try("session/prompt", textPrompt(sid, "again")); e == nil {
		t.Fatal("a closed session took a prompt")
	}
	if _, e := c.try("session/close", map[string]any{"sessionId": sid}); e == nil || e.Code != -32002 {
		t.Fatalf("closing it again: %+v, want -32002", e)
	}
	file := filepath.Join(base, "home", ".qwen", "projects")
	if n := countJSONL(t, file); n != 1 {
		t.Fatalf("%d session files before session/delete, want 1", n)
	}
	if _, e := c.try("session/delete", map[string]any{"sessionId": sid}); e != nil {
		t.Fatalf("session/delete: %+v", e)
	}
	if n := countJSONL(t, file); n != 0 {
		t.Fatalf("%d session files after session/delete", n)
	}
	if _, e := c.try("logout", map[string]any{}); e != nil {
		t.Fatalf("logout: %+v", e)
	}
}

func countJSONL(t *testing.T, dir string) int {
	n := 0
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".jsonl") {
			n++
		}
		return nil
	})
	return n
}

// The first prompt titles the session, and the client hears it as a
// session_info_update before the prompt's answer.
func TestACPSessionTitleUpdate(t *testing.T) {
	m := modeltest.Start(t, modeltest.Response{Text: "ok"})
	c := startACP(t, m.URL)
	sid, _ := acpSession(t, c, map[string]any{})
	c.call("session/prompt", textPrompt(sid, "Fix the parser\nmore detail"))
	infos := c.updatesOfKind("session_info_update")
	if len(infos) != 1 || string(infos[0]["title"]) != `"Fix the parser"` || len(infos[0]["updatedAt"]) < 10 {
		t.Fatalf("session_info_update = %v", infos)
	}
}

// The untrusted-folder notice is a notice update when the client takes
// them, and the start of the agent's message when it does not.
func TestACPUntrustedFolderNotice(t *testing.T) {
	for _, notices := range []bool{true, false} {
		t.Run(fmt.Sprint("notices=", notices), func(t *testing.T) {
			m := modeltest.Start(t, modeltest.Response{Text: "ok"})
			c := startACP(t, m.URL)
			root, _ := filepath.EvalSymlinks(t.TempDir())
			os.MkdirAll(filepath.Join(root, ".qwen"), 0o755)
			os.WriteFile(filepath.Join(root, ".qwen", "settings.json"), []byte(`{"tools": {"approvalMode": "yolo"}}`), 0o644)
			caps := map[string]any{}
			if notices {
				caps["session"] = map[string]any{"notices": map[string]any{}}
			}
			c.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": caps})
			var sid string
			json.Unmarshal(c.call("session/new", map[string]any{"cwd": root, "mcpServers": []any{}})["sessionId"], &sid)
			c.call("session/prompt", textPrompt(sid, "hi"))
			var inMessage bool
			for _, u := range c.updatesOfKind("agent_message_chunk") {
				inMessage = inMessage || strings.Contains(string(u["content"]), "is not trusted")
			}
			got := c.updatesOfKind("notice")
			if notices {
				if inMessage || len(got) != 1 || string(got[0]["severity"]) != `"warning"` || !strings.Contains(string(got[0]["description"]), "qwen-ls trust") {
					t.Fatalf("with notices: notice updates %v, in the message %v", got, inMessage)
				}
			} else if !inMessage || len(got) != 0 {
				t.Fatalf("without notices: notice updates %v, in the message %v", got, inMessage)
			}
		})
	}
}

// session/close while a command runs in the client's terminal: the turn
// has to kill and release the terminal, which needs the client's answers,
// so the close must not hold up the reading of them. When the close is
// answered, the terminal has been released; the prompt answers cancelled.
func TestACPCloseDuringATerminalCommand(t *testing.T) {
	m := modeltest.Start(t)
	c := startACP(t, m.URL)
	g := &goTerminals{}
	c.answer = g.answer
	c.async = true
	sid, _ := acpSession(t, c, map[string]any{"terminal": true})
	m.Push(modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "s", Name: "run_shell_command", Arguments: `{"command":"sleep 60"}`}}},
		modeltest.Response{Text: "never"})
	ended := make(chan map[string]json.RawMessage, 1)
	go func() {
		res, _ := c.try("session/prompt", textPrompt(sid, "run"))
		ended <- res
	}()
	calls := func() string {
		g.mu.Lock()
		defer g.mu.Unlock()
		return strings.Join(g.calls, " ")
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(calls(), "terminal/wait_for_exit") {
		if time.Now().After(deadline) {
			t.Fatalf("the command never started: %s", calls())
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	if _, e := c.try("session/close", map[string]any{"sessionId": sid}); e != nil {
		t.Fatalf("session/close: %+v", e)
	}
	t.Logf("session/close answered after %v", time.Since(start))
	if got := calls(); !strings.HasSuffix(got, "terminal/release") {
		t.Fatalf("when session/close answered, the terminal requests were %s", got)
	}
	// The prompt's own answer may be written just after the close's.
	select {
	case res := <-ended:
		if string(res["stopReason"]) != `"cancelled"` {
			t.Fatalf("the prompt ended with %v", res)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the prompt did not end when its session was closed")
	}
}

// docs/protocol.md states the loadSession capability the agent advertises,
// wherever it names it.
func TestACPDocsStateTheAdvertisedLoadSession(t *testing.T) {
	c := startACP(t, modeltest.Start(t).URL)
	res := c.call("initialize", map[string]any{"protocolVersion": 1})
	var caps struct {
		LoadSession bool `json:"loadSession"`
	}
	json.Unmarshal(res["agentCapabilities"], &caps)
	doc, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("loadSession: %v", caps.LoadSession)
	text := strings.Join(strings.Fields(string(doc)), " ")
	n := 0
	for _, v := range []string{"true", "false"} {
		mention := "loadSession: " + v
		c := strings.Count(text, mention)
		n += c
		if c > 0 && mention != want {
			t.Errorf("docs/protocol.md says %q %d time(s); initialize advertises %q", mention, c, want)
		}
	}
	if n == 0 {
		t.Errorf("docs/protocol.md never states loadSession")
	}
}
