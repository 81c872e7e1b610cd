package rpc_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// acpCommandClient starts an ACP server whose user folder holds a command,
// with folder trust on or off, and opens a session in a root that holds a
// project command.
func acpCommandClient(t *testing.T, m *modeltest.Server, trusted bool, caps ...map[string]any) (c *acpClient, home, root, sid string) {
	t.Helper()
	base := t.TempDir()
	home = filepath.Join(base, "home", ".qwen")
	os.MkdirAll(filepath.Join(home, "commands"), 0o755)
	os.WriteFile(filepath.Join(home, "commands", "hello.toml"), []byte("description = \"Say hello\"\nprompt = \"Say hello to {{args}}.\"\n"), 0o644)
	if trusted {
		os.WriteFile(filepath.Join(home, "settings.json"), []byte(`{"security":{"folderTrust":{"enabled":false}}}`), 0o644)
	}
	root, _ = filepath.EvalSymlinks(t.TempDir())
	os.MkdirAll(filepath.Join(root, ".qwen", "commands", "git"), 0o755)
	os.WriteFile(filepath.Join(root, ".qwen", "commands", "git", "ctx.toml"), []byte(`description = "context"
prompt = """Review {{args}}.
File: @{notes.txt}
Shell: !{printf '[%s]' {{args}} | tee shell.out}"""
`), 0o644)
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("notes on disk\n"), 0o644)
	c, _ = startACPHome(t, m.URL, base)
	cc := map[string]any{}
	if len(caps) > 0 {
		cc = caps[0]
	}
	c.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": cc})
	ns := c.call("session/new", map[string]any{"cwd": root, "mcpServers": []any{}})
	json.Unmarshal(ns["sessionId"], &sid)
	return c, home, root, sid
}

// commandsUpdates returns the availableCommands of each
// available_commands_update received so far.
func (c *acpClient) commandsUpdates() [][]map[string]json.RawMessage {
	var out [][]map[string]json.RawMessage
	for _, u := range c.updates() {
		if string(u["sessionUpdate"]) != `"available_commands_update"` {
			continue
		}
		var list []map[string]json.RawMessage
		json.Unmarshal(u["availableCommands"], &list)
		out = append(out, list)
	}
	return out
}

func (c *acpClient) agentText() string {
	var b strings.Builder
	for _, u := range c.updates() {
		if string(u["sessionUpdate"]) == `"agent_message_chunk"` {
			var cb struct{ Text string }
			json.Unmarshal(u["content"], &cb)
			b.WriteString(cb.Text)
		}
	}
	return b.String()
}

func acpText(sid, text string) map[string]any {
	return map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}}
}

// ACP: available_commands_update in ACP's shape right after session/new's
// answer, /help and /stats without a model request, the command named in
// the answer's _meta, a custom command with {{args}}, @{file} and !{…}
// asked first (a rejection runs nothing), and an unknown command sent as
// text after a note.
func TestACPCommands(t *testing.T) {
	m := modeltest.Start(t)
	c, _, root, sid := acpCommandClient(t, m, true)
	waitFor(t, "available_commands_update", func() bool { return len(c.commandsUpdates()) > 0 })
	list := c.commandsUpdates()[0]
	names := map[string]bool{}
	for _, item := range list {
		var name string
		json.Unmarshal(item["name"], &name)
		names[name] = true
		for k := range item {
			if k != "name" && k != "description" && k != "input" {
				t.Errorf("an ACP command has the field %q: %v", k, item)
			}
		}
	}
	for _, want := range []string{"help", "stats", "clear", "hello", "git:ctx"} {
		if !names[want] {
			t.Errorf("%s not offered: %v", want, names)
		}
	}
	// The update follows session/new's answer.
	c.mu.Lock()
	answerAt, updateAt := -1, -1
	for i, l := range c.lines {
		if answerAt < 0 && bytes.Contains(l, []byte(`"result"`)) && bytes.Contains(l, []byte(`"sessionId"`)) {
			answerAt = i
		}
		if updateAt < 0 && bytes.Contains(l, []byte(`available_commands_update`)) {
			updateAt = i
		}
	}
	c.mu.Unlock()
	if answerAt < 0 || updateAt < answerAt {
		t.Errorf("the commands came at line %d, session/new's answer at %d", updateAt, answerAt)
	}

	res := c.call("session/prompt", acpText(sid, "/help"))
	if string(res["stopReason"]) != `"end_turn"` || !strings.Contains(string(res["_meta"]), `"command":"help"`) {
		t.Fatalf("/help answered %v", res)
	}
	c.call("session/prompt", acpText(sid, "/stats"))
	if text := c.agentText(); !strings.Contains(text, "/git:ctx") || !strings.Contains(text, "Model requests | 0") {
		t.Fatalf("the transcript is %q", text)
	}
	if n := len(m.Requests()); n != 0 {
		t.Fatalf("/help and /stats made %d model requests", n)
	}

	// Rejected first: nothing runs, the model is not asked.
	var asked []string
	approve := false
	c.answer = func(method string, params json.RawMessage) any {
		if method != "session/request_permission" {
			return acpError{code: -32601, msg: "no"}
		}
		asked = append(asked, string(params))
		if approve {
			return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "proceed_once"}}
		}
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "cancel"}}
	}
	res = c.call("session/prompt", acpText(sid, "/git:ctx a b"))
	if len(asked) != 1 || !strings.Contains(string(res["_meta"]), `"git:ctx"`) {
		t.Fatalf("asked %d times; answer %v", len(asked), res)
	}
	if _, err := os.Stat(filepath.Join(root, "shell.out")); err == nil {
		t.Fatal("the rejected command ran")
	}
	if n := len(m.Requests()); n != 0 {
		t.Fatalf("%d model requests after a rejection", n)
	}

	approve = true
	m.Push(modeltest.Response{Text: "reviewed"})
	c.call("session/prompt", acpText(sid, "/git:ctx a b"))
	if len(asked) != 2 || len(m.Requests()) != 1 {
		t.Fatalf("asked %d times, %d model requests", len(asked), len(m.Requests()))
	}
	got := lastUserText(m.Requests()[0])
	for _, want := range []string{"Review a b.", "File: notes on disk", "Shell: [a b]"} {
		if !strings.Contains(got, want) {
			t.Errorf("the model got %q, without %q", got, want)
		}
	}

	m.Push(modeltest.Response{Text: "ok"})
	res = c.call("session/prompt", acpText(sid, "/nosuch thing"))
	if res["_meta"] != nil {
		t.Fatalf("an unknown command answered %v", res)
	}
	if !strings.Contains(c.agentText(), "Unknown command /nosuch; sent as text.") || !strings.HasPrefix(lastUserText(m.Requests()[1]), "/nosuch thing") {
		t.Fatal("the unknown command did not go to the model as text")
	}
}

// ACP: an untrusted folder's commands are not offered; a command file
// written later is announced; session/load announces the list too.
func TestACPCommandsUntrustedAndChanged(t *testing.T) {
	m := modeltest.Start(t)
	c, home, root, sid := acpCommandClient(t, m, false)
	waitFor(t, "available_commands_update", func() bool { return len(c.commandsUpdates()) > 0 })
	first := c.commandsUpdates()[0]
	raw, _ := json.Marshal(first)
	if strings.Contains(string(raw), "git:ctx") || !strings.Contains(string(raw), `"hello"`) {
		t.Fatalf("an untrusted folder's commands: %s", raw)
	}
	if err := os.WriteFile(filepath.Join(home, "commands", "later.toml"), []byte("prompt = \"later\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitFor(t, "the new command", func() bool {
		ups := c.commandsUpdates()
		b, _ := json.Marshal(ups[len(ups)-1])
		return strings.Contains(string(b), `"later"`)
	})
	t.Logf("announced %v after the file was written", time.Since(start))

	m.Push(modeltest.Response{Text: "ok"})
	c.call("session/prompt", acpText(sid, "hello there"))
	before := len(c.commandsUpdates())
	c.call("session/load", map[string]any{"sessionId": sid, "cwd": root, "mcpServers": []any{}})
	waitFor(t, "the list after session/load", func() bool { return len(c.commandsUpdates()) > before })
}

// ACP: @{file} is the client's text of the file when the client serves
// reads (fs/read_text_file); a client that refuses the read stops the
// command, and the disk is not read instead.
func TestACPCommandFileFromTheClient(t *testing.T) {
	m := modeltest.Start(t)
	c, _, root, sid := acpCommandClient(t, m, true, map[string]any{"fs": map[string]any{"readTextFile": true}})
	refuse := false
	var reads []string
	c.answer = func(method string, params json.RawMessage) any {
		switch method {
		case "fs/read_text_file":
			reads = append(reads, string(params))
			if refuse {
				return acpError{code: -32603, msg: "the user said no"}
			}
			return map[string]any{"content": "the client's unsaved text\n"}
		case "session/request_permission":
			return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "proceed_once"}}
		}
		return acpError{code: -32601, msg: "no"}
	}
	m.Push(modeltest.Response{Text: "ok"})
	c.call("session/prompt", acpText(sid, "/git:ctx x"))
	if len(reads) == 0 || !strings.Contains(reads[0], filepath.Join(root, "notes.txt")) {
		t.Fatalf("reads = %v", reads)
	}
	if got := lastUserText(m.Requests()[0]); !strings.Contains(got, "File: the client's unsaved text") {
		t.Fatalf("the model got %q", got)
	}
	refuse = true
	c.call("session/prompt", acpText(sid, "/git:ctx y"))
	if n := len(m.Requests()); n != 1 {
		t.Fatalf("a refused read still asked the model (%d requests)", n)
	}
	if !strings.Contains(c.agentText(), "notes.txt") {
		t.Fatalf("the refusal is not shown: %q", c.agentText())
	}
}
