package rpc_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
	"github.com/qwen-ls/qwen-ls/tools"
)

// taskContent collects the text of the task call's tool_call_updates, in
// order: the SubagentRun lines as the editor shows them.
func taskContent(t *testing.T, ups []update, id string) []string {
	t.Helper()
	var out []string
	for _, u := range ups {
		if u.ToolCallID != id || u.SessionUpdate != "tool_call_update" || len(u.Content) == 0 {
			continue
		}
		var items []struct {
			Type    string
			Content struct{ Text string }
		}
		if err := json.Unmarshal(u.Content, &items); err != nil {
			t.Fatalf("content %s: %v", u.Content, err)
		}
		if len(items) == 1 && items[0].Type == "content" {
			out = append(out, items[0].Content.Text)
		}
	}
	return out
}

// The acceptance: the task tool's subagent runs two tool calls
// (read_file, then grep_search by its alias) and its answer is the tool
// message of the parent's task call. The editor sees the subagent's calls
// as SubagentRun progress under the task call, never as tool calls of
// their own, and the subagent's request declares no task tool.
func TestTaskSubagentRunsTwoToolCallsEndToEnd(t *testing.T) {
	a := startAgent(t, "default")
	src := filepath.Join(a.root, "pkg", "x.go")
	os.MkdirAll(filepath.Dir(src), 0o755)
	os.WriteFile(src, []byte("package pkg\n\nfunc Parse() {}\n"), 0o644)
	a.model.Push(
		modeltest.Response{Text: "I will delegate the search.", ToolCalls: []modeltest.ToolCall{
			{ID: "task1", Name: "task", Arguments: `{"description":"find the parser","prompt":"Find where Parse is defined and report the file."}`}}},
		modeltest.Response{Text: "Reading.", ToolCalls: []modeltest.ToolCall{{ID: "c1", Name: "read_file", Arguments: jsonArgs("absolute_path", src)}}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "c2", Name: "search_file_content", Arguments: `{"pattern":"func Parse"}`}}},
		modeltest.Response{Text: "Parse is defined in pkg/x.go, line 3."},
		modeltest.Response{Text: "The parser lives in pkg/x.go."},
	)
	res, err := a.prompt("where is the parser?")
	if err != nil || !strings.Contains(string(res), `"stopReason":"end_turn"`) {
		t.Fatalf("prompt = %s, %v", res, err)
	}
	reqs := a.model.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d model requests, want 5", len(reqs))
	}
	if !slices.Contains(reqs[0].Tools, "task") {
		t.Fatalf("the parent lacks task: %v", reqs[0].Tools)
	}
	for _, i := range []int{1, 2, 3} {
		for _, banned := range []string{"task", "todo_write", "exit_plan_mode"} {
			if slices.Contains(reqs[i].Tools, banned) {
				t.Errorf("subagent request %d declares %s: %v", i, banned, reqs[i].Tools)
			}
		}
		if !slices.Contains(reqs[i].Tools, "read_file") || !slices.Contains(reqs[i].Tools, "grep_search") {
			t.Errorf("subagent request %d tools %v", i, reqs[i].Tools)
		}
		if reqs[i].Messages[1].Text() != "Find where Parse is defined and report the file." {
			t.Errorf("subagent request %d starts with %q", i, reqs[i].Messages[1].Text())
		}
	}
	if got := a.toolMessage(t, "c1"); got != "package pkg\n\nfunc Parse() {}\n" {
		t.Errorf("read_file message %q", got)
	}
	if got := a.toolMessage(t, "c2"); !strings.Contains(got, "func Parse() {}") {
		t.Errorf("grep message %q", got)
	}
	if got := a.toolMessage(t, "task1"); got != "Parse is defined in pkg/x.go, line 3." {
		t.Errorf("task message %q", got)
	}
	// The parent's history holds the task call and its answer only.
	for _, m := range reqs[4].Messages {
		if m.ToolCallID == "c1" || m.ToolCallID == "c2" {
			t.Errorf("the subagent's call %s is in the parent's history", m.ToolCallID)
		}
	}

	ups := a.updates(t)
	var shown strings.Builder
	for _, u := range ups {
		if u.SessionUpdate == "tool_call" && u.ToolCallID != "task1" {
			t.Errorf("a top-level tool_call for the subagent's call: %+v", u)
		}
		if u.SessionUpdate == "tool_call_update" && u.ToolCallID != "task1" {
			t.Errorf("an update of the subagent's call: %+v", u)
		}
		if u.SessionUpdate == "tool_call" && (u.Kind != "other" || u.Title != `general-purpose subagent: "find the parser"`) {
			t.Errorf("task announced as %+v", u)
		}
		if u.SessionUpdate == "agent_message_chunk" {
			var c struct{ Text string }
			json.Unmarshal(u.Content, &c)
			shown.WriteString(c.Text)
		}
	}
	if shown.String() != "I will delegate the search.The parser lives in pkg/x.go." {
		t.Errorf("the editor's agent text %q", shown.String())
	}
	lines := taskContent(t, ups, "task1")
	want := []string{
		"ReadFile: pkg/x.go (in_progress)",
		"ReadFile: pkg/x.go (completed)\nGrep: 'func Parse' (in_progress)",
		"ReadFile: pkg/x.go (completed)\nGrep: 'func Parse' (completed)",
	}
	for _, w := range want {
		if !slices.Contains(lines, w) {
			t.Errorf("the task call never showed %q; it showed %q", w, lines)
		}
	}
	var completed bool
	for _, u := range ups {
		if u.ToolCallID == "task1" && u.Status == "completed" {
			completed = true
		}
	}
	if !completed || lines[len(lines)-1] != want[2] {
		t.Errorf("the task call did not end completed with both calls: %q", lines)
	}
}

// Cancelling the parent turn stops the subagent: its model stream hangs,
// qwen/cancel ends the prompt cancelled, the task call is cancelled, and
// the session takes the next prompt.
func TestCancellingTheParentStopsTheSubagent(t *testing.T) {
	a := startAgent(t, "default",
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "task1", Name: "task", Arguments: `{"description":"slow search","prompt":"Search slowly."}`}}},
		modeltest.Response{Text: "never sent", Delay: time.Minute},
	)
	id, ch := a.e.Send("qwen/prompt", map[string]any{"sessionId": a.sid, "prompt": []any{map[string]any{"type": "text", "text": "go"}}})
	if reqs := a.model.WaitRequests(2, rpctest.DefaultTimeout); len(reqs) < 2 {
		t.Fatalf("the subagent's request never came: %d requests", len(reqs))
	}
	a.e.Notify("qwen/cancel", map[string]any{"sessionId": a.sid})
	res, err := a.e.Wait(id, ch)
	if err != nil || !strings.Contains(string(res), `"stopReason":"cancelled"`) {
		t.Fatalf("cancelled prompt = %s, %v", res, err)
	}
	var failed []string
	for _, u := range a.updates(t) {
		if u.ToolCallID == "task1" && u.Status == "failed" {
			failed = append(failed, string(u.Content))
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0], "[Cancelled] The user cancelled the turn while this call was running.") {
		t.Errorf("task call end: %q", failed)
	}
	a.model.Push(modeltest.Response{Text: "fresh start"})
	if res, err := a.prompt("again"); err != nil || !strings.Contains(string(res), "end_turn") {
		t.Fatalf("next prompt = %s, %v", res, err)
	}
	reqs := a.model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests: the cancelled subagent made another", len(reqs))
	}
	if got := toolMessageIn(reqs[2], "task1"); got != "[Cancelled] The user cancelled the turn while this call was running." {
		t.Errorf("the next request tells the model %q", got)
	}
}

func toolMessageIn(r modeltest.Request, id string) string {
	for _, m := range r.Messages {
		if m.Role == "tool" && m.ToolCallID == id {
			return m.Text()
		}
	}
	return ""
}

// Definitions in <root>/.qwen/agents reach the task description from the
// next request, an invalid one left out; a definition's tools, given by
// name or alias, narrow the subagent's declared tools through the real
// registry, and task stays out even when listed (as agent).
func TestProjectSubagentDefinitionEndToEnd(t *testing.T) {
	a := startAgent(t, "default", modeltest.Response{Text: "hello"})
	if _, err := a.prompt("hi"); err != nil {
		t.Fatal(err)
	}
	if raw := string(a.model.Requests()[0].ToolsRaw); !strings.Contains(raw, `- **general-purpose**: `) || strings.Contains(raw, "scout") {
		t.Fatalf("first task description: %s", raw)
	}
	dir := filepath.Join(a.root, ".qwen", "agents")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "scout.md"), []byte("---\nname: scout\ndescription: Finds things fast.\ntools:\n  - search_file_content\n  - read_file\n  - agent\n---\nYou find things.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.md"), []byte("---\nname: broken\n---\nno description\n"), 0o644)
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "task1", Name: "agent", Arguments: `{"description":"scout it","prompt":"Look.","subagent_type":"Scout"}`}}},
		modeltest.Response{Text: "Nothing to see."},
		modeltest.Response{Text: "ok"},
	)
	if _, err := a.prompt("scout"); err != nil {
		t.Fatal(err)
	}
	reqs := a.model.Requests()
	if raw := string(reqs[1].ToolsRaw); !strings.Contains(raw, `- **scout**: Finds things fast.`) || strings.Contains(raw, "broken") {
		t.Errorf("task description after adding scout: %s", raw)
	}
	if want := []string{"read_file", "grep_search"}; !slices.Equal(reqs[2].Tools, want) {
		t.Errorf("scout's tools %v, want %v", reqs[2].Tools, want)
	}
	if sys := reqs[2].Messages[0].Text(); !strings.HasPrefix(sys, "You find things.\n\n# Environment\n") {
		t.Errorf("scout's system prompt %q", sys)
	}
	if got := a.toolMessage(t, "task1"); got != "Nothing to see." {
		t.Errorf("task message %q", got)
	}
}

// A subagent's call that needs the user is asked in the parent session
// under the task call, titled "[<subagent>] ...": a permission prompt and
// an edit review.
func TestSubagentPromptsReachTheEditorPrefixed(t *testing.T) {
	var runs atomic.Int32
	extra := []tools.Tool{confirming("toucher", tools.KindExecute, &tools.ExecConfirmation{Command: "touch t", Commands: []string{"touch t"}, RootCommand: "touch", PermissionRules: []string{"Bash(touch *)"}}, &runs)}
	a := startAgentWith(t, "default", rpc.Options{ExtraTools: extra}, func(p *rpctest.InitParams) { p.ApplyEdit, p.DocumentChanges = true, true })
	var mu sync.Mutex
	var titles, ids []string
	record := func(params json.RawMessage) {
		var p struct {
			SessionID  string `json:"sessionId"`
			ToolCallID string `json:"toolCallId"`
			Title      string `json:"title"`
			ToolCall   *struct {
				ToolCallID string `json:"toolCallId"`
				Title      string `json:"title"`
			} `json:"toolCall"`
		}
		json.Unmarshal(params, &p)
		if p.ToolCall != nil {
			p.ToolCallID, p.Title = p.ToolCall.ToolCallID, p.ToolCall.Title
		}
		mu.Lock()
		defer mu.Unlock()
		if p.SessionID != a.sid {
			t.Errorf("prompt for session %q", p.SessionID)
		}
		titles, ids = append(titles, p.Title), append(ids, p.ToolCallID)
	}
	a.e.Handle("qwen/requestPermission", func(params json.RawMessage) (any, error) {
		record(params)
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "proceed_once"}}, nil
	})
	a.e.Handle("qwen/proposeEdit", func(params json.RawMessage) (any, error) {
		record(params)
		return map[string]any{"outcome": "accepted"}, nil
	})
	newFile := filepath.Join(a.root, "notes.txt")
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "task1", Name: "task", Arguments: `{"description":"touch and write","prompt":"Do both."}`}}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "c1", Name: "toucher", Arguments: "{}"}}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "c2", Name: "write_file", Arguments: jsonArgs("file_path", newFile, "content", "hi\n")}}},
		modeltest.Response{Text: "Both done."},
		modeltest.Response{Text: "ok"},
	)
	if _, err := a.prompt("go"); err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 1 {
		t.Errorf("toucher ran %d times", runs.Load())
	}
	if data, _ := os.ReadFile(newFile); string(data) != "hi\n" {
		t.Errorf("notes.txt = %q", data)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(titles) != 2 || titles[0] != "[general-purpose] Confirm toucher" || !strings.HasPrefix(titles[1], "[general-purpose] ") ||
		ids[0] != "task1" || ids[1] != "task1" {
		t.Errorf("prompts: titles %q, call ids %q", titles, ids)
	}
	if got := a.toolMessage(t, "task1"); got != "Both done." {
		t.Errorf("task message %q", got)
	}
}
