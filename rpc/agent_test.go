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

// agent starts a rich editor on a fresh root with the scripted model
// configured through initializationOptions, and opens a session.
type agent struct {
	e     *rpctest.Editor
	model *modeltest.Server
	root  string
	sid   string
}

func startAgent(t *testing.T, mode string, script ...modeltest.Response) *agent {
	t.Helper()
	return startAgentWith(t, mode, rpc.Options{}, func(*rpctest.InitParams) {}, script...)
}

// startAgentWith lets a test shape the server options and the client's
// initialize params (capabilities, roots).
func startAgentWith(t *testing.T, mode string, opts rpc.Options, shape func(*rpctest.InitParams), script ...modeltest.Response) *agent {
	t.Helper()
	m := modeltest.Start(t, script...)
	opts.Version, opts.Stderr = "test", testLog{t}
	e := rpctest.Start(t, rpc.WithMethods(opts, testMethods()))
	root, _ := filepath.EvalSymlinks(t.TempDir())
	ip := rpctest.InitParams{Roots: []string{root}, Rich: true, UTF8: true, InitializationOptions: map[string]any{
		"approvalMode": mode,
		"model":        map[string]any{"name": "scripted", "baseUrl": m.URL},
	}}
	shape(&ip)
	e.Initialize(ip)
	res, err := e.Call("qwen/newSession", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var ns struct {
		SessionID    string   `json:"sessionId"`
		ApprovalMode string   `json:"approvalMode"`
		Model        *string  `json:"model"`
		Tools        []string `json:"tools"`
	}
	if err := json.Unmarshal(res, &ns); err != nil {
		t.Fatal(err)
	}
	if ns.ApprovalMode != mode || ns.Model == nil || *ns.Model != "scripted" || len(ns.Tools) == 0 {
		t.Fatalf("newSession = %s", res)
	}
	return &agent{e: e, model: m, root: root, sid: ns.SessionID}
}

func (a *agent) prompt(text string) (json.RawMessage, error) {
	return a.e.Call("qwen/prompt", map[string]any{"sessionId": a.sid, "prompt": []any{map[string]any{"type": "text", "text": text}}})
}

type update struct {
	SessionUpdate string `json:"sessionUpdate"`
	ToolCallID    string `json:"toolCallId"`
	Title         string `json:"title"`
	Kind          string `json:"kind"`
	Status        string `json:"status"`
	Locations     []struct{ Path string }
	Content       json.RawMessage `json:"content"`
}

func (a *agent) updates(t *testing.T) []update {
	var out []update
	for _, n := range a.e.Notifications("qwen/sessionUpdate") {
		var p struct {
			SessionID string `json:"sessionId"`
			Update    update `json:"update"`
		}
		if err := json.Unmarshal(n.Params, &p); err != nil {
			t.Fatal(err)
		}
		if p.SessionID == a.sid {
			out = append(out, p.Update)
		}
	}
	return out
}

// A batch of two reads and a write: the reads see the unsaved buffer, the
// write runs after both reads completed, the editor sees every step, and
// the model gets one tool message per call id (issue acceptance 1).
func TestPromptRunsABatchEndToEnd(t *testing.T) {
	a := startAgent(t, "yolo")
	aPath := filepath.Join(a.root, "a.txt")
	bPath := filepath.Join(a.root, "b.txt")
	os.WriteFile(aPath, []byte("saved text\n"), 0o644)
	os.WriteFile(bPath, []byte("bee\n"), 0o644)
	a.e.Open(aPath, "unsaved text\n")
	a.model.Push(
		modeltest.Response{Text: "Reading both.", ToolCalls: []modeltest.ToolCall{
			{ID: "r1", Name: "read_file", Arguments: `{"absolute_path":"` + aPath + `"}`},
			{ID: "r2", Name: "read_file", Arguments: `{"absolute_path":"` + bPath + `"}`},
			{ID: "w1", Name: "write_file", Arguments: `{"file_path":"` + filepath.Join(a.root, "new.txt") + `","content":"hello\n"}`},
		}, Usage: &modeltest.Usage{Prompt: 100, Completion: 20}},
		modeltest.Response{Text: "All done.", Usage: &modeltest.Usage{Prompt: 150, Completion: 5}},
	)
	res, err := a.prompt("read a and b, then write new.txt")
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		StopReason string
		Usage      struct{ InputTokens, OutputTokens, TotalTokens int }
	}
	json.Unmarshal(res, &pr)
	if pr.StopReason != "end_turn" || pr.Usage.InputTokens != 250 || pr.Usage.OutputTokens != 25 || pr.Usage.TotalTokens != 275 {
		t.Fatalf("prompt result = %s", res)
	}
	if data, _ := os.ReadFile(filepath.Join(a.root, "new.txt")); string(data) != "hello\n" {
		t.Fatalf("new.txt = %q", data)
	}
	// The model got the tool results keyed by call id, the buffer's
	// unsaved text included.
	reqs := a.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	got := map[string]string{}
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" {
			got[m.ToolCallID] = m.Text()
		}
	}
	if got["r1"] != "unsaved text\n" || got["r2"] != "bee\n" || !strings.HasPrefix(got["w1"], "Created the file") {
		t.Fatalf("tool messages = %q", got)
	}
	if len(reqs[0].Tools) < 7 || reqs[0].Tools[0] != "list_directory" {
		t.Fatalf("declared tools = %v", reqs[0].Tools)
	}
	// The editor saw each call announced, run and finished.
	ups := a.updates(t)
	idx := func(id, kind, status string) int {
		for i, u := range ups {
			if u.ToolCallID == id && u.SessionUpdate == kind && u.Status == status {
				return i
			}
		}
		t.Fatalf("no %s %s for %s in %+v", kind, status, id, ups)
		return -1
	}
	for _, id := range []string{"r1", "r2", "w1"} {
		if !(idx(id, "tool_call", "pending") < idx(id, "tool_call_update", "in_progress") && idx(id, "tool_call_update", "in_progress") < idx(id, "tool_call_update", "completed")) {
			t.Errorf("%s: statuses out of order", id)
		}
	}
	if w := idx("w1", "tool_call_update", "in_progress"); w < idx("r1", "tool_call_update", "completed") || w < idx("r2", "tool_call_update", "completed") {
		t.Errorf("the write started before both reads finished")
	}
	for _, u := range ups {
		if u.SessionUpdate == "tool_call" {
			switch u.ToolCallID {
			case "r1":
				if u.Kind != "read" || u.Title != "a.txt" || len(u.Locations) != 1 || u.Locations[0].Path != aPath {
					t.Errorf("r1 announced as %+v", u)
				}
			case "w1":
				if u.Kind != "edit" || u.Title != "Writing to new.txt" {
					t.Errorf("w1 announced as %+v", u)
				}
			}
		}
	}
	var text strings.Builder
	for _, u := range ups {
		if u.SessionUpdate == "agent_message_chunk" {
			var c struct{ Text string }
			json.Unmarshal(u.Content, &c)
			text.WriteString(c.Text)
		}
	}
	if text.String() != "Reading both.All done." {
		t.Errorf("streamed text = %q", text.String())
	}
}

func TestNoModelConfiguredNamesWhatToSet(t *testing.T) {
	e := start(t)
	e.Initialize(rpctest.InitParams{Roots: []string{t.TempDir()}, Rich: true})
	res, err := e.Call("qwen/newSession", map[string]any{})
	if err != nil || !strings.Contains(string(res), `"model":null`) {
		t.Fatalf("newSession without a model: %s %v", res, err)
	}
	var ns struct{ SessionID string }
	json.Unmarshal(res, &ns)
	_, err = e.Call("qwen/prompt", map[string]any{"sessionId": ns.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}})
	if !isCode(err, rpc.CodeNoModel) || !strings.Contains(err.Error(), "OPENAI_API_KEY") || !strings.Contains(err.Error(), "OPENAI_BASE_URL") || !strings.Contains(err.Error(), "model.name") {
		t.Fatalf("prompt without a model: %v", err)
	}
}

// qwen/cancel ends a turn whose model stream hangs; the session then
// takes the next prompt (acceptance 2).
func TestCancelEndsTheTurnAndTheSessionGoesOn(t *testing.T) {
	a := startAgent(t, "default", modeltest.Response{Text: "never finished", Delay: time.Minute})
	id, ch := a.e.Send("qwen/prompt", map[string]any{"sessionId": a.sid, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}})
	a.model.WaitRequests(1, rpctest.DefaultTimeout)
	a.e.Notify("qwen/cancel", map[string]any{"sessionId": a.sid})
	res, err := a.e.Wait(id, ch)
	if err != nil || !strings.Contains(string(res), `"stopReason":"cancelled"`) {
		t.Fatalf("cancelled prompt = %s, %v", res, err)
	}
	a.model.Push(modeltest.Response{Text: "hello again"})
	if res, err := a.prompt("again"); err != nil || !strings.Contains(string(res), "end_turn") {
		t.Fatalf("next prompt = %s, %v", res, err)
	}
}

// $/cancelRequest on the prompt id cancels the turn and answers -32800.
func TestCancelRequestOnPromptAnswersRequestCancelled(t *testing.T) {
	a := startAgent(t, "default", modeltest.Response{Text: "slow", Delay: time.Minute})
	id, ch := a.e.Send("qwen/prompt", map[string]any{"sessionId": a.sid, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}})
	a.model.WaitRequests(1, rpctest.DefaultTimeout)
	a.e.Notify("$/cancelRequest", map[string]any{"id": json.RawMessage(id)})
	if _, err := a.e.Wait(id, ch); !isCode(err, rpc.CodeRequestCancelled) {
		t.Fatalf("got %v, want -32800", err)
	}
	a.model.Push(modeltest.Response{Text: "ok"})
	if _, err := a.prompt("again"); err != nil {
		t.Fatalf("next prompt: %v", err)
	}
}

func TestBusySessionRefusesASecondPrompt(t *testing.T) {
	a := startAgent(t, "default", modeltest.Response{Text: "slow", Delay: time.Minute})
	id, ch := a.e.Send("qwen/prompt", map[string]any{"sessionId": a.sid, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}})
	a.model.WaitRequests(1, rpctest.DefaultTimeout)
	_, err := a.prompt("second")
	if !isCode(err, rpc.CodeRequestFailed) || !strings.Contains(string(err.(*rpctest.RPCError).Data), "session_busy") {
		t.Fatalf("second prompt: %v", err)
	}
	a.e.Notify("qwen/cancel", map[string]any{"sessionId": a.sid})
	a.e.Wait(id, ch)
}

// Transient faults are retried: a 500, a 429 with Retry-After, and a
// stream cut mid-way all end in a completed turn (acceptance 3).
func TestTransientModelFaultsAreRetried(t *testing.T) {
	a := startAgent(t, "default",
		modeltest.Response{Status: 500},
		modeltest.Response{Status: 429, RetryAfter: "0.05"},
		modeltest.Response{Text: "partial answer that gets cut", CutAfter: 3, ChunkSize: 4},
		modeltest.Response{Text: "the full answer"},
	)
	res, err := a.prompt("hi")
	if err != nil || !strings.Contains(string(res), "end_turn") {
		t.Fatalf("prompt = %s, %v", res, err)
	}
	if n := len(a.model.Requests()); n != 4 {
		t.Fatalf("%d requests, want 4", n)
	}
	var retries int
	var shown strings.Builder
	for _, u := range a.updates(t) {
		var c struct{ Text string }
		json.Unmarshal(u.Content, &c)
		if u.SessionUpdate == "agent_thought_chunk" && strings.Contains(c.Text, "retry") {
			retries++
		}
		if u.SessionUpdate == "agent_message_chunk" {
			shown.WriteString(c.Text)
		}
	}
	if retries != 3 {
		t.Errorf("%d retry messages, want 3", retries)
	}
	if !strings.Contains(shown.String(), "[connection lost; retrying]") || !strings.HasSuffix(shown.String(), "the full answer") {
		t.Errorf("shown text = %q", shown.String())
	}
	// The cut partial answer is not in the history the model sees next.
	a.model.Push(modeltest.Response{Text: "ok"})
	a.prompt("next")
	for _, m := range a.model.Requests()[4].Messages {
		if strings.Contains(m.Text(), "partial answer") {
			t.Fatalf("the cut partial answer stayed in the history")
		}
	}
}

// After the last retry the prompt fails with -32603 and the model's
// message, and the session stays usable.
func TestModelFailingAfterRetriesIsAnErrorAndSessionGoesOn(t *testing.T) {
	fail := modeltest.Response{Status: 503, Body: `{"error":{"message":"overloaded right now"}}`}
	a := startAgent(t, "default", fail, fail, fail, fail)
	_, err := a.prompt("hi")
	if !isCode(err, rpc.CodeInternalError) || !strings.Contains(err.Error(), "overloaded right now") {
		t.Fatalf("got %v", err)
	}
	a.model.Push(modeltest.Response{Text: "back"})
	if _, err := a.prompt("again"); err != nil {
		t.Fatalf("next prompt: %v", err)
	}
}

func TestAuthFailureNamesTheKey(t *testing.T) {
	a := startAgent(t, "default", modeltest.Response{Status: 401, Body: `{"error":{"message":"invalid api key"}}`})
	_, err := a.prompt("hi")
	if !isCode(err, rpc.CodeNoModel) || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Fatalf("got %v", err)
	}
}

func TestSetApprovalModeEmitsModeUpdate(t *testing.T) {
	a := startAgent(t, "default")
	if _, err := a.e.Call("qwen/setApprovalMode", map[string]any{"sessionId": a.sid, "mode": "plan"}); err != nil {
		t.Fatal(err)
	}
	a.e.WaitNotification("qwen/sessionUpdate", func(p json.RawMessage) bool {
		return strings.Contains(string(p), `"currentModeId":"plan"`)
	})
	if _, err := a.e.Call("qwen/setApprovalMode", map[string]any{"sessionId": a.sid, "mode": "chaos"}); !isCode(err, rpc.CodeInvalidParams) {
		t.Fatalf("bad mode: %v", err)
	}
	if _, err := a.e.Call("qwen/setApprovalMode", map[string]any{"sessionId": "nope", "mode": "plan"}); !isCode(err, rpc.CodeInvalidParams) {
		t.Fatalf("bad session: %v", err)
	}
}

func TestListToolsReportsTheBuiltins(t *testing.T) {
	a := startAgent(t, "default")
	res, err := a.e.Call("qwen/listTools", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var lt struct {
		Tools []struct {
			Name, Kind, Source string
			Parameters         json.RawMessage
		}
		Servers []any
	}
	json.Unmarshal(res, &lt)
	names := []string{}
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
		if tl.Source != "builtin" || len(tl.Parameters) == 0 {
			t.Errorf("tool %+v", tl)
		}
	}
	// The built-ins come in the order of tools.md §1.5, the seven file
	// tools always among them.
	order := []string{"list_directory", "read_file", "write_file", "grep_search", "glob", "edit", "read_many_files",
		"run_shell_command", "web_fetch", "web_search", "save_memory", "todo_write", "task", "exit_plan_mode", "lsp"}
	pos := -1
	for _, n := range names {
		i := slices.Index(order, n)
		if i <= pos {
			t.Fatalf("tool %s is out of the §1.5 order in %v", n, names)
		}
		pos = i
	}
	for _, must := range order[:7] {
		if !slices.Contains(names, must) {
			t.Fatalf("listTools lacks %s: %v", must, names)
		}
	}
	if lt.Servers == nil {
		t.Fatal("servers must be a list")
	}
}

// The active file and selection reach the model with the next prompt.
func TestDidFocusGivesTheModelTheActiveFile(t *testing.T) {
	a := startAgent(t, "default", modeltest.Response{Text: "ok"})
	p := filepath.Join(a.root, "main.go")
	a.e.Open(p, "package main\n\nfunc main() {}\n")
	a.e.Notify("qwen/didFocus", map[string]any{"uri": rpctest.URI(p), "selection": map[string]any{
		"start": map[string]any{"line": 2, "character": 0}, "end": map[string]any{"line": 2, "character": 14}}})
	if _, err := a.prompt("explain"); err != nil {
		t.Fatal(err)
	}
	msgs := a.model.Requests()[0].Messages
	last := msgs[len(msgs)-1].Text()
	if !strings.Contains(last, p) || !strings.Contains(last, "lines 3-3") || !strings.Contains(last, "func main() {}") {
		t.Fatalf("user message = %q", last)
	}
}

// web_search reaches the model only while a provider is configured
// (conformance case 44), and a provider added to the settings applies from
// the next model request.
func TestWebSearchDeclaredOnlyWithAProvider(t *testing.T) {
	t.Setenv("TAVILY_API_KEY", "")
	t.Setenv("DASHSCOPE_API_KEY", "")
	a := startAgent(t, "default", modeltest.Response{Text: "one"}, modeltest.Response{Text: "two"})
	if _, err := a.prompt("first"); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(a.model.Requests()[0].Tools, "web_search") {
		t.Fatal("web_search was declared without a provider")
	}
	a.e.Notify("workspace/didChangeConfiguration", map[string]any{"settings": map[string]any{
		"model":     map[string]any{"name": "scripted", "baseUrl": a.model.URL},
		"webSearch": map[string]any{"provider": []any{map[string]any{"type": "tavily", "apiKey": "tvly-x", "endpoint": "http://127.0.0.1:9"}}},
	}})
	if _, err := a.prompt("second"); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(a.model.Requests()[1].Tools, "web_search") {
		t.Fatalf("web_search was not declared after a provider was configured: %v", a.model.Requests()[1].Tools)
	}
}

// qwen/listSessions lists the connection's sessions with their first
// prompt as title; qwen/loadSession replays one, tool calls, results and
// the todo list included.
func TestListAndLoadSessions(t *testing.T) {
	a := startAgent(t, "default",
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "td", Name: "todo_write", Arguments: `{"todos":[{"id":"1","content":"Look around","status":"in_progress"}]}`}}},
		modeltest.Response{Text: "Planned."})
	// The editor's focus reaches the model as a note appended to the
	// prompt; the replay below must show only what the user wrote.
	focused := filepath.Join(a.root, "parser.go")
	a.e.Open(focused, "package parser\n")
	a.e.Notify("qwen/didFocus", map[string]any{"uri": rpctest.URI(focused)})
	if _, err := a.prompt("Plan the refactor of the parser\nwith details"); err != nil {
		t.Fatal(err)
	}
	if sent := a.model.Requests()[0].Messages; !strings.Contains(sent[len(sent)-1].Text(), "The user is looking at "+focused) {
		t.Fatalf("the model was not told the focus: %q", sent[len(sent)-1].Text())
	}
	res, err := a.e.Call("qwen/listSessions", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var ls struct {
		Sessions []struct{ SessionID, Cwd, Title, UpdatedAt string }
	}
	json.Unmarshal(res, &ls)
	if len(ls.Sessions) != 1 || ls.Sessions[0].SessionID != a.sid || ls.Sessions[0].Title != "Plan the refactor of the parser" || ls.Sessions[0].Cwd != a.root {
		t.Fatalf("listSessions = %s", res)
	}
	if _, err := time.Parse(time.RFC3339, ls.Sessions[0].UpdatedAt); err != nil {
		t.Fatalf("updatedAt %q: %v", ls.Sessions[0].UpdatedAt, err)
	}
	before := len(a.e.Notifications("qwen/sessionUpdate"))
	if _, err := a.e.Call("qwen/loadSession", map[string]any{"sessionId": a.sid}); err != nil {
		t.Fatal(err)
	}
	// The command list that follows the answer is not part of the replay.
	replayed := slices.DeleteFunc(a.e.Notifications("qwen/sessionUpdate")[before:], func(n rpctest.Message) bool {
		return strings.Contains(string(n.Params), `"available_commands_update"`)
	})
	var kinds []string
	for _, n := range replayed {
		var p struct{ Update update }
		json.Unmarshal(n.Params, &p)
		kinds = append(kinds, p.Update.SessionUpdate)
	}
	want := "user_message_chunk,tool_call,tool_call_update,agent_message_chunk,plan"
	if strings.Join(kinds, ",") != want {
		t.Fatalf("replayed %v, want %s", kinds, want)
	}
	var first struct{ Update update }
	json.Unmarshal(replayed[0].Params, &first)
	var prompt struct{ Text string }
	json.Unmarshal(first.Update.Content, &prompt)
	if prompt.Text != "Plan the refactor of the parser\nwith details" {
		t.Fatalf("the replayed prompt is %q, want the user's own words without the notes for the model", prompt.Text)
	}
	if _, err := a.e.Call("qwen/loadSession", map[string]any{"sessionId": "gone"}); !isCode(err, rpc.CodeInvalidParams) {
		t.Fatalf("unknown session: %v", err)
	}
}

// Tokens a subagent spends count toward the turn that ran it.
func TestSubagentTokensCountTowardTheTurn(t *testing.T) {
	a := startAgent(t, "yolo",
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "t", Name: "task", Arguments: `{"description":"look it up","prompt":"find x"}`}}, Usage: &modeltest.Usage{Prompt: 100, Completion: 10}},
		modeltest.Response{Text: "x is in y.go", Usage: &modeltest.Usage{Prompt: 40, Completion: 4}},
		modeltest.Response{Text: "found it", Usage: &modeltest.Usage{Prompt: 120, Completion: 5}},
	)
	res, err := a.prompt("where is x?")
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		Usage struct{ InputTokens, OutputTokens, TotalTokens int }
	}
	json.Unmarshal(res, &pr)
	if pr.Usage.InputTokens != 260 || pr.Usage.OutputTokens != 19 || pr.Usage.TotalTokens != 279 {
		t.Fatalf("usage = %s, want the parent's two requests plus the subagent's one", res)
	}
	if msg := a.toolMessage(t, "t"); msg != "x is in y.go" {
		t.Fatalf("task result = %q", msg)
	}
}
