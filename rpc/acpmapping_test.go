package rpc_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// acpSession initializes c with the given client capabilities and opens a
// session in a fresh folder, returning its id and the folder.
func acpSession(t *testing.T, c *acpClient, caps map[string]any) (string, string) {
	t.Helper()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	c.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": caps})
	ns := c.call("session/new", map[string]any{"cwd": root, "mcpServers": []any{}})
	var sid string
	json.Unmarshal(ns["sessionId"], &sid)
	return sid, root
}

func toolMessageOf(t *testing.T, m *modeltest.Server, id string) string {
	t.Helper()
	for _, r := range m.Requests() {
		for _, msg := range r.Messages {
			if msg.Role == "tool" && msg.ToolCallID == id {
				return msg.Text()
			}
		}
	}
	t.Fatalf("the model was never told about call %s", id)
	return ""
}

// Locations in session/update are absolute paths with 1-based lines: a
// read from offset 9 (0-based) is at line 10 of the absolute path.
func TestACPLocationsAreAbsoluteAndOneBased(t *testing.T) {
	m := modeltest.Start(t)
	c := startACP(t, m.URL)
	c.answer = func(string, json.RawMessage) any { return nil }
	sid, root := acpSession(t, c, map[string]any{})
	p := filepath.Join(root, "lines.txt")
	os.WriteFile(p, []byte(strings.Repeat("line\n", 20)), 0o644)
	m.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "r", Name: "read_file", Arguments: `{"absolute_path":"` + p + `","offset":9,"limit":2}`}}},
		modeltest.Response{Text: "ok"},
	)
	c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "read"}}})
	var found bool
	for _, u := range c.updates() {
		if string(u["sessionUpdate"]) != `"tool_call"` {
			continue
		}
		var locs []struct {
			Path string `json:"path"`
			Line int    `json:"line"`
		}
		json.Unmarshal(u["locations"], &locs)
		if len(locs) != 1 || locs[0].Path != p || locs[0].Line != 10 {
			t.Fatalf("tool_call locations = %s, want [{%s 10}]", u["locations"], p)
		}
		found = true
	}
	if !found {
		t.Fatal("no tool_call update")
	}
}

// With fs.readTextFile, a read goes to the client: its unsaved text is
// what the model reads, and a -32002 answer means the file does not exist
// even though the disk has one.
func TestACPReadsGoThroughTheClient(t *testing.T) {
	m := modeltest.Start(t)
	c := startACP(t, m.URL)
	var mu sync.Mutex
	var asked []string
	sid, root := "", ""
	unsaved := "unsaved.txt"
	gone := "gone.txt"
	c.answer = func(method string, params json.RawMessage) any {
		var p struct {
			SessionID string `json:"sessionId"`
			Path      string `json:"path"`
		}
		json.Unmarshal(params, &p)
		mu.Lock()
		asked = append(asked, method+" "+p.Path)
		mu.Unlock()
		if method != "fs/read_text_file" || p.SessionID != sid {
			return acpError{-32601, "unexpected " + method}
		}
		if filepath.Base(p.Path) == gone {
			return acpError{-32002, "Resource not found: " + p.Path}
		}
		return map[string]any{"content": "only in the editor\n"}
	}
	sid, root = acpSession(t, c, map[string]any{"fs": map[string]any{"readTextFile": true}})
	os.WriteFile(filepath.Join(root, gone), []byte("on disk\n"), 0o644)
	m.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			{ID: "a", Name: "read_file", Arguments: jsonArgs("absolute_path", filepath.Join(root, unsaved))},
			{ID: "b", Name: "read_file", Arguments: jsonArgs("absolute_path", filepath.Join(root, gone))},
		}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "s", Name: "run_shell_command", Arguments: jsonArgs("command", "ls")}}},
		modeltest.Response{Text: "ok"},
	)
	c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "read"}}})
	if got := toolMessageOf(t, m, "a"); !strings.Contains(got, "only in the editor") {
		t.Fatalf("read of the unsaved file told the model %q", got)
	}
	if got := toolMessageOf(t, m, "b"); !strings.Contains(got, "does not exist") {
		t.Fatalf("read after -32002 told the model %q", got)
	}
	// A local shell command sees the disk, and says the editor's text was
	// not what it saw.
	if got := toolMessageOf(t, m, "s"); !strings.Contains(got, "unsaved changes in the editor") || !strings.Contains(got, filepath.Join(root, unsaved)) {
		t.Fatalf("the shell result = %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 {
		t.Fatalf("client requests = %q", asked)
	}
}

// Every message is one line of JSON: text with newlines in it is escaped,
// never split across lines.
func TestACPFramingHasNoEmbeddedNewlines(t *testing.T) {
	m := modeltest.Start(t)
	c := startACP(t, m.URL)
	c.answer = func(string, json.RawMessage) any { return nil }
	sid, _ := acpSession(t, c, map[string]any{})
	m.Push(modeltest.Response{Text: "first line\nsecond line\r\nthird\u2028line"})
	c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "a\nb"}}})
	c.mu.Lock()
	lines := append([][]byte(nil), c.lines...)
	c.mu.Unlock()
	var text strings.Builder
	for _, l := range lines {
		var msg map[string]any
		if err := json.Unmarshal(l, &msg); err != nil {
			t.Fatalf("a line is not one JSON message: %q (%v)", l, err)
		}
		if bytes.ContainsAny(l, "\r\n") {
			t.Fatalf("a line holds a raw line break: %q", l)
		}
	}
	for _, u := range c.updates() {
		if string(u["sessionUpdate"]) == `"agent_message_chunk"` {
			var content struct{ Text string }
			json.Unmarshal(u["content"], &content)
			text.WriteString(content.Text)
		}
	}
	if text.String() != "first line\nsecond line\r\nthird\u2028line" {
		t.Fatalf("the streamed text = %q", text.String())
	}
}

// A line over the 64 MiB cap is refused with -32600 (id null) without
// being held in memory, and the connection goes on.
func TestACPOversizedLineIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MiB")
	}
	m := modeltest.Start(t)
	c := startACP(t, m.URL)
	c.answer = func(string, json.RawMessage) any { return nil }
	c.mu.Lock()
	orphan := make(chan json.RawMessage, 1)
	c.responses["null"] = orphan
	c.w.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"`))
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for left := rpc.MaxMessageSize; left > 0; left -= len(chunk) {
		c.w.Write(chunk[:min(left, len(chunk))])
	}
	c.w.Write([]byte("\"}}\n"))
	c.mu.Unlock()
	select {
	case line := <-orphan:
		if !strings.Contains(string(line), "-32600") || !strings.Contains(string(line), "64 MiB") {
			t.Fatalf("oversized line answered %s", line)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no answer to the oversized line")
	}
	init := c.call("initialize", map[string]any{"protocolVersion": 1})
	if string(init["protocolVersion"]) != "1" {
		t.Fatalf("initialize after the oversized line = %v", init)
	}
}

// With fs.writeTextFile an accepted edit goes to the client, not the disk;
// the diff it was asked about is the whole file.
func TestACPAcceptedEditIsWrittenThroughTheClient(t *testing.T) {
	m := modeltest.Start(t)
	c := startACP(t, m.URL)
	var mu sync.Mutex
	var written []map[string]string
	var diffs []json.RawMessage
	c.answer = func(method string, params json.RawMessage) any {
		mu.Lock()
		defer mu.Unlock()
		switch method {
		case "session/request_permission":
			var p struct {
				ToolCall struct {
					Content json.RawMessage `json:"content"`
				} `json:"toolCall"`
			}
			json.Unmarshal(params, &p)
			diffs = append(diffs, p.ToolCall.Content)
			return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "proceed_once"}}
		case "fs/write_text_file":
			var p map[string]string
			json.Unmarshal(params, &p)
			written = append(written, p)
			return map[string]any{}
		}
		return acpError{-32601, method}
	}
	sid, root := acpSession(t, c, map[string]any{"fs": map[string]any{"writeTextFile": true}})
	p := filepath.Join(root, "a.txt")
	os.WriteFile(p, []byte("one\ntwo\n"), 0o644)
	m.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "r", Name: "read_file", Arguments: jsonArgs("absolute_path", p)}}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "e", Name: "edit", Arguments: jsonArgs("file_path", p, "old_string", "two", "new_string", "TWO")}}},
		modeltest.Response{Text: "done"},
	)
	c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "edit"}}})
	mu.Lock()
	defer mu.Unlock()
	wantDiff := `[{"type":"diff","path":"` + p + `","oldText":"one\ntwo\n","newText":"one\nTWO\n"}]`
	if len(diffs) != 1 || string(diffs[0]) != wantDiff {
		t.Fatalf("permission content = %s, want %s", diffs, wantDiff)
	}
	if len(written) != 1 || written[0]["path"] != p || written[0]["content"] != "one\nTWO\n" || written[0]["sessionId"] != sid {
		t.Fatalf("fs/write_text_file = %v", written)
	}
	if data, _ := os.ReadFile(p); string(data) != "one\ntwo\n" {
		t.Fatalf("the disk changed: %q", data)
	}
	if got := toolMessageOf(t, m, "e"); !strings.HasPrefix(got, "Edited ") || !strings.Contains(got, "has not saved it to disk yet") {
		t.Fatalf("the model was told %q", got)
	}
}

// session/new's mcpServers start real MCP servers whose tools the model is
// offered, alongside any in the settings.
func TestACPClientMCPServers(t *testing.T) {
	bin := mcpServer(t)
	m := modeltest.Start(t)
	c := startACP(t, m.URL)
	c.answer = func(string, json.RawMessage) any { return nil }
	root, _ := filepath.EvalSymlinks(t.TempDir())
	c.call("initialize", map[string]any{"protocolVersion": 1})
	ns := c.call("session/new", map[string]any{"cwd": root, "mcpServers": []any{map[string]any{
		"name": "cl", "command": bin, "args": []string{"-name", "cl", "-tools", "hello"}, "env": []any{map[string]any{"name": "X_TEST", "value": "1"}},
	}}})
	var sid string
	json.Unmarshal(ns["sessionId"], &sid)
	m.Push(modeltest.Response{Text: "ok"})
	c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}})
	reqs := m.Requests()
	if len(reqs) != 1 || !contains(reqs[0].Tools, "hello") {
		t.Fatalf("declared tools = %v", reqs[0].Tools)
	}
	// A malformed entry is refused with what is wrong.
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan json.RawMessage, 1)
	c.responses[itoa(id)] = ch
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "session/new", "params": map[string]any{
		"cwd": root, "mcpServers": []any{map[string]any{"name": "x", "type": "websocket", "url": "ws://127.0.0.1:1"}}}})
	c.w.Write(append(b, '\n'))
	c.mu.Unlock()
	select {
	case line := <-ch:
		if !strings.Contains(string(line), "-32602") || !strings.Contains(string(line), "websocket") {
			t.Fatalf("bad MCP server answered %s", line)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no answer")
	}
}

// An image block reaches the model as an image part when the model accepts
// images (and initialize says so); otherwise the model reads that one was
// left out.
func TestACPPromptImages(t *testing.T) {
	const png = "iVBORw0KGgo="
	for _, accepts := range []bool{true, false} {
		m := modeltest.Start(t)
		settings := `{"model": {"modalities": {"image": false}}}`
		if accepts {
			settings = `{"model": {"modalities": {"image": true}}}`
		}
		c := startACP(t, m.URL, settings)
		c.answer = func(string, json.RawMessage) any { return nil }
		root, _ := filepath.EvalSymlinks(t.TempDir())
		init := c.call("initialize", map[string]any{"protocolVersion": 1})
		if want := `"image":` + map[bool]string{true: "true", false: "false"}[accepts]; !strings.Contains(string(init["agentCapabilities"]), want) {
			t.Fatalf("accepts=%v: agentCapabilities = %s", accepts, init["agentCapabilities"])
		}
		ns := c.call("session/new", map[string]any{"cwd": root, "mcpServers": []any{}})
		var sid string
		json.Unmarshal(ns["sessionId"], &sid)
		m.Push(modeltest.Response{Text: "a cat"})
		c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{
			map[string]any{"type": "text", "text": "what is this?"},
			map[string]any{"type": "image", "mimeType": "image/png", "data": png},
		}})
		msgs := m.Requests()[0].Messages
		user := string(msgs[len(msgs)-1].Content)
		switch {
		case accepts && (!strings.Contains(user, `"image_url"`) || !strings.Contains(user, "data:image/png;base64,"+png) || !strings.Contains(user, "what is this?")):
			t.Fatalf("the user message = %s", user)
		case !accepts && (strings.Contains(user, "image_url") || !strings.Contains(user, "does not accept images")):
			t.Fatalf("the user message = %s", user)
		}
	}
}
