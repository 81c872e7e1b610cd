package rpc_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// cmdAgent is an LSP agent with a qwen home of its own, in a folder that
// is trusted or not.
type cmdAgent struct {
	*agent
	qhome string
}

func startCmdAgent(t *testing.T, mode string, trusted bool, files map[string]string) *cmdAgent {
	t.Helper()
	qhome := t.TempDir()
	var root string
	a := startAgentWith(t, mode, rpc.Options{QwenHome: qhome}, func(p *rpctest.InitParams) {
		root = p.Roots[0]
		p.InitializationOptions.(map[string]any)["workspaceTrusted"] = trusted
		for name, text := range files {
			// "~/" files go to the qwen home, others to the root.
			path := filepath.Join(root, name)
			if rest, ok := strings.CutPrefix(name, "~/"); ok {
				path = filepath.Join(qhome, rest)
			}
			os.MkdirAll(filepath.Dir(path), 0o755)
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	})
	return &cmdAgent{agent: a, qhome: qhome}
}

type listedCommand struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Input       *struct {
		Hint string `json:"hint"`
	} `json:"input"`
	Source     string `json:"source"`
	NeedsModel bool   `json:"needsModel"`
}

func (a *cmdAgent) listCommands(t *testing.T) map[string]listedCommand {
	t.Helper()
	res, err := a.e.Call("qwen/listCommands", map[string]any{"sessionId": a.sid})
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Commands []listedCommand }
	if err := json.Unmarshal(res, &out); err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(out.Commands))
	m := map[string]listedCommand{}
	for i, c := range out.Commands {
		names[i] = c.Name
		m[c.Name] = c
	}
	if !slices.IsSorted(names) {
		t.Fatalf("the commands are not sorted by name: %v", names)
	}
	return m
}

// agentText is the agent_message_chunk text the session got so far.
func (a *cmdAgent) agentText(t *testing.T) string {
	var b strings.Builder
	for _, u := range a.updates(t) {
		if u.SessionUpdate == "agent_message_chunk" {
			var c struct{ Text string }
			json.Unmarshal(u.Content, &c)
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func (a *cmdAgent) promptOK(t *testing.T, text string) map[string]json.RawMessage {
	t.Helper()
	res, err := a.prompt(text)
	if err != nil {
		t.Fatalf("prompt %q: %v", text, err)
	}
	var out map[string]json.RawMessage
	json.Unmarshal(res, &out)
	return out
}

// lastUserText is the text of the last user message of a model request.
func lastUserText(r modeltest.Request) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Text()
		}
	}
	return ""
}

var commandFiles = map[string]string{
	"~/commands/hello.toml":          "description = \"Say hello\"\nprompt = \"Say hello to {{args}}.\"\n",
	"~/commands/review.toml":         "description = \"user review\"\nprompt = \"user version\"\n",
	".qwen/commands/review.toml":     "description = \"project review\"\nprompt = \"project version\"\n",
	".qwen/commands/git/commit.toml": "prompt = \"Write a commit message for {{args}}\"\n",
	".qwen/commands/help.toml":       "description = \"not the built-in\"\nprompt = \"x\"\n",
	".qwen/commands/plain.toml":      "prompt = \"Plain prompt.\"\n",
	".qwen/commands/broken.toml":     "prompt = \n",
}

// qwen/listCommands lists the built-ins and the custom commands, with
// namespaces from subfolders, the project's replacing the user's, and no
// custom command replacing a built-in; a session hears the same list
// right after qwen/newSession. /help and /stats answer with no model
// request at all.
func TestListCommandsHelpAndStatsWithoutTheModel(t *testing.T) {
	a := startCmdAgent(t, "default", true, commandFiles)
	cmds := a.listCommands(t)
	for _, b := range []string{"compress", "clear", "stats", "init", "memory", "tools", "mcp", "model", "mode", "undo", "help"} {
		if c, ok := cmds[b]; !ok || c.Source != "builtin" {
			t.Errorf("built-in /%s: %+v", b, c)
		}
	}
	if c := cmds["help"]; c.Description == "not the built-in" {
		t.Errorf("a custom command replaced /help: %+v", c)
	}
	if c := cmds["git:commit"]; c.Source != "project" || c.Input == nil || c.Input.Hint != "arguments" || !c.NeedsModel {
		t.Errorf("git:commit = %+v", c)
	}
	if c := cmds["hello"]; c.Source != "user" || c.Description != "Say hello" {
		t.Errorf("hello = %+v", c)
	}
	if c := cmds["review"]; c.Source != "project" || c.Description != "project review" {
		t.Errorf("review = %+v", c)
	}
	if c := cmds["plain"]; c.Input != nil || c.Description == "" {
		t.Errorf("plain = %+v", c)
	}
	if _, ok := cmds["broken"]; ok {
		t.Errorf("a file without a prompt was listed")
	}
	if c := cmds["stats"]; c.NeedsModel {
		t.Errorf("stats needs no model: %+v", c)
	}
	if c := cmds["model"]; c.Input == nil || c.Input.Hint == "" {
		t.Errorf("model has an argument hint: %+v", c)
	}

	var sawList bool
	for _, u := range a.e.Notifications("qwen/sessionUpdate") {
		if strings.Contains(string(u.Params), `"available_commands_update"`) && strings.Contains(string(u.Params), `"git:commit"`) &&
			strings.Contains(string(u.Params), a.sid) {
			sawList = true
		}
	}
	if !sawList {
		t.Error("no available_commands_update after qwen/newSession")
	}

	res := a.promptOK(t, "/help")
	if string(res["stopReason"]) != `"end_turn"` || string(res["command"]) != `"help"` {
		t.Fatalf("/help answered %v", res)
	}
	if text := a.agentText(t); !strings.Contains(text, "/git:commit") || !strings.Contains(text, "/compress") {
		t.Fatalf("/help showed %q", text)
	}
	res = a.promptOK(t, "  /stats")
	if string(res["command"]) != `"stats"` {
		t.Fatalf("/stats answered %v", res)
	}
	if text := a.agentText(t); !strings.Contains(text, "Model requests | 0") || !strings.Contains(text, "Cache hits") {
		t.Fatalf("/stats showed %q", text)
	}
	if n := len(a.model.Requests()); n != 0 {
		t.Fatalf("/help and /stats made %d model requests", n)
	}
}

// A custom command: {{args}} as typed in the text, shell-quoted inside
// !{…}; @{file} is the open buffer's unsaved text; the shell command (it
// writes a file, so default mode asks) is asked about first, and the
// model gets the expanded prompt.
func TestCustomCommandExpandsArgsFileAndShell(t *testing.T) {
	a := startCmdAgent(t, "default", true, map[string]string{
		".qwen/commands/ctx.toml": `description = "context"
prompt = """Review {{args}}.
File: @{notes.txt}
Shell: !{printf '[%s]' {{args}} | tee shell.out}"""
`,
		"notes.txt": "on disk\n",
	})
	notes := filepath.Join(a.root, "notes.txt")
	a.e.Open(notes, "unsaved text\n")
	var asked []string
	a.e.Handle("qwen/requestPermission", func(params json.RawMessage) (any, error) {
		asked = append(asked, string(params))
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "proceed_once"}}, nil
	})
	a.model.Push(modeltest.Response{Text: "reviewed"})
	res := a.promptOK(t, "/ctx it's a b")
	if string(res["command"]) != `"ctx"` || string(res["stopReason"]) != `"end_turn"` {
		t.Fatalf("/ctx answered %v", res)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], `printf '[%s]' 'it'\\''s a b' | tee shell.out`) {
		t.Fatalf("permission requests = %v", asked)
	}
	reqs := a.model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests", len(reqs))
	}
	got := lastUserText(reqs[0])
	for _, want := range []string{"Review it's a b.", "File: unsaved text", "Shell: [it's a b]"} {
		if !strings.Contains(got, want) {
			t.Errorf("the model got %q, without %q", got, want)
		}
	}
	if strings.Contains(got, "on disk") || strings.Contains(got, "/ctx") {
		t.Errorf("the model got %q", got)
	}
}

// Rejecting a command's !{…} runs nothing and asks the model nothing.
func TestCustomCommandShellRejectedRunsNothing(t *testing.T) {
	a := startCmdAgent(t, "default", true, map[string]string{
		".qwen/commands/mk.toml": "prompt = \"Made: !{touch marker && echo made}\"\n",
	})
	var asked int
	a.e.Handle("qwen/requestPermission", func(params json.RawMessage) (any, error) {
		asked++
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "cancel"}}, nil
	})
	res := a.promptOK(t, "/mk")
	if string(res["command"]) != `"mk"` {
		t.Fatalf("/mk answered %v", res)
	}
	if asked != 1 {
		t.Fatalf("asked %d times", asked)
	}
	if _, err := os.Stat(filepath.Join(a.root, "marker")); err == nil {
		t.Fatal("the rejected command ran")
	}
	if n := len(a.model.Requests()); n != 0 {
		t.Fatalf("%d model requests after a rejection", n)
	}
	if text := a.agentText(t); !strings.Contains(text, "not allowed") {
		t.Fatalf("the transcript says %q", text)
	}
}

// In yolo mode a command's !{…} runs without a question, as the model's
// commands would; the arguments go after the prompt when it has no
// {{args}}.
func TestCustomCommandShellInYoloAndAppendedArgs(t *testing.T) {
	a := startCmdAgent(t, "yolo", true, map[string]string{
		".qwen/commands/git/show.toml": "prompt = \"Out: !{echo from-shell}\"\n",
	})
	a.e.Handle("qwen/requestPermission", func(params json.RawMessage) (any, error) {
		t.Errorf("asked in yolo mode: %s", params)
		return nil, nil
	})
	a.model.Push(modeltest.Response{Text: "ok"})
	a.promptOK(t, "/git:show extra words")
	got := lastUserText(a.model.Requests()[0])
	if !strings.Contains(got, "Out: from-shell") || !strings.Contains(got, "/git:show extra words") {
		t.Fatalf("the model got %q", got)
	}
}

// An untrusted folder's commands are not read; the user's are.
func TestUntrustedFolderIgnoresProjectCommands(t *testing.T) {
	a := startCmdAgent(t, "default", false, commandFiles)
	cmds := a.listCommands(t)
	if _, ok := cmds["git:commit"]; ok {
		t.Fatal("an untrusted folder's command was listed")
	}
	if c := cmds["review"]; c.Source != "user" {
		t.Fatalf("review = %+v", c)
	}
	a.model.Push(modeltest.Response{Text: "ok"})
	a.promptOK(t, "/git:commit now")
	if got := lastUserText(a.model.Requests()[0]); !strings.HasPrefix(got, "/git:commit now") {
		t.Fatalf("the model got %q", got)
	}
}

// An unknown /word goes to the model as text after a note; "//" sends a
// leading slash; a path is just text.
func TestUnknownCommandGoesToTheModel(t *testing.T) {
	a := startCmdAgent(t, "default", true, nil)
	a.model.Push(modeltest.Response{Text: "a"}, modeltest.Response{Text: "b"}, modeltest.Response{Text: "c"})
	res := a.promptOK(t, "/nosuch do it")
	if _, ok := res["command"]; ok {
		t.Fatalf("an unknown command answered %v", res)
	}
	if text := a.agentText(t); !strings.Contains(text, "Unknown command /nosuch; sent as text. /help lists commands.") {
		t.Fatalf("no note: %q", text)
	}
	a.promptOK(t, "//help me")
	a.promptOK(t, "/usr/bin/env is odd")
	reqs := a.model.Requests()
	if len(reqs) != 3 || !strings.HasPrefix(lastUserText(reqs[0]), "/nosuch do it") || !strings.HasPrefix(lastUserText(reqs[1]), "/help me") ||
		!strings.HasPrefix(lastUserText(reqs[2]), "/usr/bin/env is odd") {
		t.Fatalf("requests: %d", len(reqs))
	}
	// The note is not history: the model never sees it.
	for _, m := range reqs[2].Messages {
		if strings.Contains(m.Text(), "Unknown command") {
			t.Fatal("the note reached the model")
		}
	}
	if strings.Count(a.agentText(t), "Unknown command") != 1 {
		t.Fatal("a note for a path or //")
	}
}

// /clear keeps the session id, tells the client, keeps the conversation as
// a stored session of its own, and the next prompt starts afresh.
func TestClearStoresTheConversationAndStartsOver(t *testing.T) {
	a := startCmdAgent(t, "default", true, nil)
	a.model.Push(modeltest.Response{Text: "first answer"}, modeltest.Response{Text: "second answer"})
	a.promptOK(t, "first question")
	res := a.promptOK(t, "/clear")
	if string(res["command"]) != `"clear"` {
		t.Fatalf("/clear answered %v", res)
	}
	var cleared bool
	for _, u := range a.updates(t) {
		cleared = cleared || u.SessionUpdate == "history_cleared"
	}
	if !cleared {
		t.Fatal("no history_cleared")
	}
	list, err := a.e.Call("qwen/listSessions", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var ls struct {
		Sessions []struct{ SessionID, Title string }
	}
	json.Unmarshal(list, &ls)
	var stored string
	for _, s := range ls.Sessions {
		if s.SessionID != a.sid && s.Title == "first question" {
			stored = s.SessionID
		}
	}
	if stored == "" {
		t.Fatalf("the conversation was not kept: %s", list)
	}
	a.promptOK(t, "second question")
	reqs := a.model.Requests()
	for _, m := range reqs[1].Messages {
		if strings.Contains(m.Text(), "first") {
			t.Fatalf("the cleared conversation reached the model: %q", m.Text())
		}
	}
	// The kept conversation loads with its history.
	before := len(a.updates(t))
	if _, err := a.e.Call("qwen/loadSession", map[string]any{"sessionId": stored}); err != nil {
		t.Fatal(err)
	}
	var replayed strings.Builder
	for _, n := range a.e.Notifications("qwen/sessionUpdate") {
		if strings.Contains(string(n.Params), stored) {
			replayed.Write(n.Params)
		}
	}
	if !strings.Contains(replayed.String(), "first answer") {
		t.Fatalf("the kept session replays %s (%d updates before)", replayed.String(), before)
	}
}

// A command file added while a session is open reaches the session as
// available_commands_update.
func TestCommandsUpdateWhenFilesChange(t *testing.T) {
	a := startCmdAgent(t, "default", true, nil)
	a.listCommands(t)
	dir := filepath.Join(a.qhome, "commands", "team")
	os.MkdirAll(dir, 0o755)
	time.Sleep(50 * time.Millisecond)
	if err := os.WriteFile(filepath.Join(dir, "deploy.toml"), []byte("description = \"Deploy it\"\nprompt = \"deploy\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	a.e.WaitNotification("qwen/sessionUpdate", func(p json.RawMessage) bool {
		return strings.Contains(string(p), `"team:deploy"`)
	})
	t.Logf("the new command was announced %v after its file was written", time.Since(start))
	if _, ok := a.listCommands(t)["team:deploy"]; !ok {
		t.Fatal("not listed")
	}
}

// /mode and /model list the choices without an argument and set them with
// one, through the usual updates.
func TestModeAndModelCommands(t *testing.T) {
	a := startCmdAgent(t, "default", true, nil)
	a.promptOK(t, "/mode")
	if text := a.agentText(t); !strings.Contains(text, "`default` **(current)**") || !strings.Contains(text, "`yolo`") {
		t.Fatalf("/mode showed %q", text)
	}
	a.promptOK(t, "/mode plan")
	var modeUpdate bool
	for _, u := range a.updates(t) {
		modeUpdate = modeUpdate || u.SessionUpdate == "current_mode_update"
	}
	if !modeUpdate {
		t.Fatal("no current_mode_update")
	}
	a.promptOK(t, "/mode nonsense")
	if text := a.agentText(t); !strings.Contains(text, "approval mode was not changed") {
		t.Fatalf("/mode nonsense showed %q", text)
	}
	a.promptOK(t, "/model")
	if text := a.agentText(t); !strings.Contains(text, "scripted") {
		t.Fatalf("/model showed %q", text)
	}
	a.promptOK(t, "/tools")
	if text := a.agentText(t); !strings.Contains(text, "`read_file`") {
		t.Fatalf("/tools showed %q", text)
	}
	a.promptOK(t, "/mcp")
	if text := a.agentText(t); !strings.Contains(text, "No MCP servers") {
		t.Fatalf("/mcp showed %q", text)
	}
	if n := len(a.model.Requests()); n != 0 {
		t.Fatalf("%d model requests", n)
	}
}

// /memory add saves through save_memory, /memory show shows it, /init
// refuses to overwrite a memory file and otherwise asks the model.
func TestMemoryAndInitCommands(t *testing.T) {
	a := startCmdAgent(t, "yolo", true, nil)
	a.promptOK(t, "/memory add The tests use the scripted model")
	data, _ := os.ReadFile(filepath.Join(a.qhome, "QWEN.md"))
	if !strings.Contains(string(data), "The tests use the scripted model") {
		t.Fatalf("QWEN.md = %q", data)
	}
	a.promptOK(t, "/memory show")
	if text := a.agentText(t); strings.Count(text, "The tests use the scripted model") < 1 {
		t.Fatalf("/memory show showed %q", text)
	}
	if n := len(a.model.Requests()); n != 0 {
		t.Fatalf("%d model requests", n)
	}
	a.model.Push(modeltest.Response{Text: "written"})
	res := a.promptOK(t, "/init")
	if string(res["command"]) != `"init"` || len(a.model.Requests()) != 1 || !strings.Contains(lastUserText(a.model.Requests()[0]), "QWEN.md") {
		t.Fatalf("/init answered %v", res)
	}
	os.WriteFile(filepath.Join(a.root, "QWEN.md"), []byte("# notes\n"), 0o644)
	a.promptOK(t, "/init")
	if n := len(a.model.Requests()); n != 1 {
		t.Fatalf("/init over an existing QWEN.md asked the model (%d requests)", n)
	}
}

// /undo reverts the last turn's file changes; /stats counts the turn.
func TestUndoAndStatsAfterATurn(t *testing.T) {
	a := startCmdAgent(t, "yolo", true, nil)
	p := filepath.Join(a.root, "new.txt")
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "w", Name: "write_file", Arguments: jsonArgs("file_path", p, "content", "hi\n")}}, Usage: &modeltest.Usage{Prompt: 100, Completion: 10}},
		modeltest.Response{Text: "done", Usage: &modeltest.Usage{Prompt: 120, Completion: 5}},
	)
	a.promptOK(t, "write it")
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	a.promptOK(t, "/stats")
	text := a.agentText(t)
	for _, want := range []string{"Model requests | 2", "Input tokens | 220", "Output tokens | 15", "Tool calls | 1: 1 succeeded"} {
		if !strings.Contains(text, want) {
			t.Errorf("/stats showed %q, without %q", text, want)
		}
	}
	a.promptOK(t, "/undo")
	if _, err := os.Stat(p); err == nil {
		t.Fatal("/undo left the file")
	}
	a.promptOK(t, "/undo")
	if text := a.agentText(t); !strings.Contains(text, "Nothing to undo") {
		t.Fatalf("a second /undo showed %q", text)
	}
}

// /compress summarises the conversation with one model request.
func TestCompressCommand(t *testing.T) {
	a := startCmdAgent(t, "default", true, nil)
	a.model.Push(modeltest.Response{Text: "one"}, modeltest.Response{Text: "two"}, modeltest.Response{Text: "the summary"})
	a.promptOK(t, "first")
	a.promptOK(t, "second")
	res := a.promptOK(t, "/compress")
	if string(res["command"]) != `"compress"` {
		t.Fatalf("/compress answered %v", res)
	}
	if n := len(a.model.Requests()); n != 3 {
		t.Fatalf("%d model requests", n)
	}
	var compressed bool
	for _, u := range a.updates(t) {
		compressed = compressed || u.SessionUpdate == "context_compressed"
	}
	if !compressed || !strings.Contains(a.agentText(t), "compressed") {
		t.Fatalf("no compression: %q", a.agentText(t))
	}
}
