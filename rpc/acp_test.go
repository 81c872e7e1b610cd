package rpc_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// acpClient is a minimal ACP client: one JSON message per line.
type acpClient struct {
	t  *testing.T
	w  io.WriteCloser
	mu sync.Mutex
	// responses by id, notifications and requests in arrival order
	responses map[string]chan json.RawMessage
	notes     []json.RawMessage
	// lines are every line the server wrote, as written.
	lines  [][]byte
	answer func(method string, params json.RawMessage) any
	// async answers each request from its own goroutine.
	async  bool
	nextID int
	// ws is the server's workspace, where the test made it.
	ws   *workspace.Workspace
	done chan int
}

// startACP starts an ACP server with a qwen home of its own, holding
// userSettings[0] as its settings.json when given.
func startACP(t *testing.T, modelURL string, userSettings ...string) *acpClient {
	t.Helper()
	base := t.TempDir()
	if len(userSettings) > 0 {
		home := filepath.Join(base, "home", ".qwen")
		os.MkdirAll(home, 0o755)
		os.WriteFile(filepath.Join(home, "settings.json"), []byte(userSettings[0]), 0o644)
	}
	c, _ := startACPHome(t, modelURL, base)
	return c
}

func (c *acpClient) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		line := append([]byte(nil), sc.Bytes()...)
		c.mu.Lock()
		c.lines = append(c.lines, line)
		c.mu.Unlock()
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		switch {
		case m.Method != "" && m.ID != nil:
			reply := func() {
				res := c.answer(m.Method, m.Params)
				answer := map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": res}
				if e, ok := res.(acpError); ok {
					answer = map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": e.code, "message": e.msg}}
				}
				b, _ := json.Marshal(answer)
				c.mu.Lock()
				c.w.Write(append(b, '\n'))
				c.mu.Unlock()
			}
			if c.async {
				go reply()
			} else {
				reply()
			}
		case m.Method != "":
			c.mu.Lock()
			c.notes = append(c.notes, line)
			c.mu.Unlock()
		default:
			c.mu.Lock()
			ch := c.responses[string(m.ID)]
			c.mu.Unlock()
			if ch != nil {
				ch <- line
			}
		}
	}
}

// acpError is an answer function's way to answer with a JSON-RPC error.
type acpError struct {
	code int
	msg  string
}

// updates returns the session/update payloads received so far.
func (c *acpClient) updates() []map[string]json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []map[string]json.RawMessage
	for _, n := range c.notes {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Update map[string]json.RawMessage `json:"update"`
			} `json:"params"`
		}
		if json.Unmarshal(n, &m) == nil && m.Method == "session/update" {
			out = append(out, m.Params.Update)
		}
	}
	return out
}

func (c *acpClient) call(method string, params any) map[string]json.RawMessage {
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
		var m map[string]json.RawMessage
		json.Unmarshal(line, &m)
		if m["error"] != nil {
			c.t.Fatalf("%s failed: %s", method, m["error"])
		}
		var res map[string]json.RawMessage
		json.Unmarshal(m["result"], &res)
		return res
	case <-time.After(20 * time.Second):
		c.t.Fatalf("no answer to %s", method)
		return nil
	}
}

// An ACP client drives a whole turn: the edit arrives as a permission
// request with a diff and the three edit options, and "Allow" writes the
// file; updates come as session/update.
func TestACPTurnWithAnEditPermission(t *testing.T) {
	m := modeltest.Start(t)
	c := startACP(t, m.URL)
	var asked []json.RawMessage
	c.answer = func(method string, params json.RawMessage) any {
		asked = append(asked, params)
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "proceed_once"}}
	}
	root, _ := filepath.EvalSymlinks(t.TempDir())
	p := filepath.Join(root, "a.txt")
	os.WriteFile(p, []byte("old\n"), 0o644)

	init := c.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	if string(init["protocolVersion"]) != "1" || !strings.Contains(string(init["agentCapabilities"]), `"loadSession":true`) {
		t.Fatalf("initialize = %v", init)
	}
	ns := c.call("session/new", map[string]any{"cwd": root, "mcpServers": []any{}})
	var sid string
	json.Unmarshal(ns["sessionId"], &sid)
	if sid == "" || !strings.Contains(string(ns["modes"]), `"currentModeId":"default"`) {
		t.Fatalf("session/new = %v", ns)
	}
	m.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "r", Name: "read_file", Arguments: jsonArgs("absolute_path", p)}}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "e", Name: "edit", Arguments: jsonArgs("file_path", p, "old_string", "old", "new_string", "new")}}},
		modeltest.Response{Text: "edited"},
	)
	res := c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "edit it"}}})
	if string(res["stopReason"]) != `"end_turn"` {
		t.Fatalf("session/prompt = %v", res)
	}
	if data, _ := os.ReadFile(p); string(data) != "new\n" {
		t.Fatalf("file = %q", data)
	}
	if len(asked) != 1 || !strings.Contains(string(asked[0]), `"type":"diff"`) || !strings.Contains(string(asked[0]), `"oldText":"old\n"`) ||
		!strings.Contains(string(asked[0]), `"Allow All Edits"`) {
		t.Fatalf("permission requests = %s", asked)
	}
	c.mu.Lock()
	notes := append([]json.RawMessage(nil), c.notes...)
	c.mu.Unlock()
	var sawText bool
	for _, n := range notes {
		if strings.Contains(string(n), `"method":"session/update"`) && strings.Contains(string(n), `"edited"`) {
			sawText = true
		}
	}
	if !sawText {
		t.Fatalf("no session/update carried the answer: %s", notes)
	}
	c.call("session/set_mode", map[string]any{"sessionId": sid, "modeId": "yolo"})
	list := c.call("session/list", map[string]any{})
	if !strings.Contains(string(list["sessions"]), sid) {
		t.Fatalf("session/list = %v", list)
	}
}

// Closing stdin ends an ACP server with exit code 0; a bad line gets
// -32700 and the server goes on.
func TestACPBadLineAndEnd(t *testing.T) {
	m := modeltest.Start(t)
	c := startACP(t, m.URL)
	c.answer = func(string, json.RawMessage) any { return nil }
	c.mu.Lock()
	c.responses["null"] = make(chan json.RawMessage, 1)
	c.w.Write([]byte("this is not json\n"))
	c.mu.Unlock()
	select {
	case line := <-c.responses["null"]:
		if !strings.Contains(string(line), "-32700") {
			t.Fatalf("bad line answered %s", line)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no answer to a bad line")
	}
	c.call("initialize", map[string]any{"protocolVersion": 1})
	c.w.Close()
	select {
	case code := <-c.done:
		c.done <- code
		if code != 0 {
			t.Fatalf("exit code %d, want 0", code)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not end when stdin closed")
	}
}
