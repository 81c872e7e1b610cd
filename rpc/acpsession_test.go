package rpc_test

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// startACPHome starts an ACP server whose qwen home is under base, so that
// two servers in turn can share it; stop ends it.
func startACPHome(t *testing.T, modelURL, base string) (c *acpClient, stop func()) {
	t.Helper()
	home := filepath.Join(base, "home", ".qwen")
	ws := workspace.New(workspace.Options{Settings: workspace.SettingsOptions{
		UserDir: home, SystemPath: filepath.Join(base, "none.json"),
		Getenv: func(k string) (string, bool) {
			switch k {
			case "OPENAI_BASE_URL":
				return modelURL, true
			case "OPENAI_MODEL":
				return "scripted", true
			}
			return "", false
		}}})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	srv := rpc.NewServer(rpc.Options{Version: "test", ACP: true, Workspace: ws, QwenHome: home, Stderr: testLog{t}})
	c = &acpClient{t: t, w: inW, responses: map[string]chan json.RawMessage{}, done: make(chan int, 1), ws: ws}
	c.answer = func(string, json.RawMessage) any { return nil }
	go func() {
		code := srv.Serve(context.Background(), inR, outW)
		outW.Close()
		c.done <- code
	}()
	go c.read(outR)
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			inW.Close()
			<-c.done
			ws.Close()
		}
	}
	t.Cleanup(stop)
	return c, stop
}

// An ACP session outlives its server: another server lists it for the
// cwd (without making the cwd a root), and session/load replays it before
// answering with its modes, starting the client's MCP servers as
// session/new does.
func TestACPLoadsASessionOfAnEarlierServer(t *testing.T) {
	m := modeltest.Start(t, modeltest.Response{Text: "hello from before"}, modeltest.Response{Text: "elsewhere"})
	base := t.TempDir()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	other, _ := filepath.EvalSymlinks(t.TempDir())
	c1, stop := startACPHome(t, m.URL, base)
	c1.call("initialize", map[string]any{"protocolVersion": 1})
	var sid, otherID string
	json.Unmarshal(c1.call("session/new", map[string]any{"cwd": root, "mcpServers": []any{}})["sessionId"], &sid)
	c1.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "greet me"}}})
	json.Unmarshal(c1.call("session/new", map[string]any{"cwd": other, "mcpServers": []any{}})["sessionId"], &otherID)
	c1.call("session/prompt", map[string]any{"sessionId": otherID, "prompt": []any{map[string]any{"type": "text", "text": "in the other folder"}}})
	stop()

	c2, _ := startACPHome(t, m.URL, base)
	init := c2.call("initialize", map[string]any{"protocolVersion": 1})
	if !strings.Contains(string(init["agentCapabilities"]), `"loadSession":true`) {
		t.Fatalf("initialize = %v", init)
	}
	list := c2.call("session/list", map[string]any{"cwd": root})
	if !strings.Contains(string(list["sessions"]), sid) || !strings.Contains(string(list["sessions"]), "greet me") || strings.Contains(string(list["sessions"]), otherID) {
		t.Fatalf("session/list of %s = %s", root, list["sessions"])
	}
	if list := c2.call("session/list", map[string]any{"cwd": other}); !strings.Contains(string(list["sessions"]), otherID) || strings.Contains(string(list["sessions"]), sid) {
		t.Fatalf("session/list of %s = %s", other, list["sessions"])
	}
	if roots := c2.ws.Roots.List(); len(roots) != 0 {
		t.Fatalf("listing sessions made roots of %v", roots)
	}
	bin := mcpServer(t)
	res := c2.call("session/load", map[string]any{"sessionId": sid, "cwd": root, "mcpServers": []any{map[string]any{
		"name": "cl", "command": bin, "args": []string{"-name", "cl", "-tools", "hello"}, "env": []any{},
	}}})
	if !strings.Contains(string(res["modes"]), `"currentModeId":"default"`) {
		t.Fatalf("session/load = %v", res)
	}
	c2.mu.Lock()
	notes := append([]json.RawMessage(nil), c2.notes...)
	c2.mu.Unlock()
	var kinds []string
	var kept []json.RawMessage
	for _, n := range notes {
		var p struct {
			Method string
			Params struct {
				SessionID string
				Update    struct{ SessionUpdate string }
			}
		}
		json.Unmarshal(n, &p)
		// The command list follows the answer (slash commands), not
		// part of the replay.
		if p.Method == "session/update" && p.Params.SessionID == sid && p.Params.Update.SessionUpdate != "available_commands_update" {
			kinds = append(kinds, p.Params.Update.SessionUpdate)
			kept = append(kept, n)
		}
	}
	// The replay, then the session's title.
	if strings.Join(kinds, ",") != "user_message_chunk,agent_message_chunk,session_info_update" || !strings.Contains(string(kept[len(kept)-2]), "hello from before") ||
		!strings.Contains(string(kept[len(kept)-1]), `"title":"greet me"`) {
		t.Fatalf("replayed %v: %s", kinds, notes)
	}
	// The next prompt goes on from the history, with the client's MCP
	// tool offered.
	m.Push(modeltest.Response{Text: "again"})
	c2.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "and now?"}}})
	reqs := m.Requests()
	last := reqs[len(reqs)-1]
	if !contains(last.Tools, "hello") {
		t.Fatalf("after session/load with mcpServers the model was offered %v", last.Tools)
	}
	var texts []string
	for _, msg := range last.Messages {
		texts = append(texts, msg.Text())
	}
	if got := strings.Join(texts, "|"); !strings.Contains(got, "greet me") || !strings.Contains(got, "hello from before") || strings.Contains(got, "in the other folder") {
		t.Fatalf("the request after load carried %q", got)
	}
}
