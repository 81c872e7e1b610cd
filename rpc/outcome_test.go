package rpc_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// finalOutcome is the _meta.qwen.outcome of a call's last tool_call_update
// that has a final status, and that status.
func finalOutcome(t *testing.T, e *rpctest.Editor, sid, callID string) (status, outcome string) {
	t.Helper()
	for _, n := range e.Notifications("qwen/sessionUpdate") {
		var p struct {
			SessionID string `json:"sessionId"`
			Update    struct {
				SessionUpdate string `json:"sessionUpdate"`
				ToolCallID    string `json:"toolCallId"`
				Status        string `json:"status"`
				Meta          *struct {
					Qwen struct {
						Outcome string `json:"outcome"`
					} `json:"qwen"`
				} `json:"_meta"`
			} `json:"update"`
		}
		json.Unmarshal(n.Params, &p)
		u := p.Update
		if p.SessionID != sid || u.SessionUpdate != "tool_call_update" || u.ToolCallID != callID || (u.Status != "completed" && u.Status != "failed") {
			continue
		}
		status, outcome = u.Status, ""
		if u.Meta != nil {
			outcome = u.Meta.Qwen.Outcome
		}
	}
	return status, outcome
}

// A call the person said no to, a call the turn's cancel stopped and a
// call that failed end with three different outcomes, live and when the
// session is replayed.
func TestToolCallOutcomesTellRejectedCancelledAndFailedApart(t *testing.T) {
	a := startAgent(t, "default")
	missing := filepath.Join(a.root, "missing.txt")
	target := filepath.Join(a.root, "new.txt")
	a.e.Handle("qwen/requestPermission", func(json.RawMessage) (any, error) {
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "cancel"}}, nil
	})
	a.e.Handle("qwen/proposeEdit", func(json.RawMessage) (any, error) {
		return map[string]any{"outcome": "rejected"}, nil
	})
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			{ID: "fail", Name: "read_file", Arguments: `{"absolute_path":"` + missing + `"}`},
		}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			{ID: "sh", Name: "run_shell_command", Arguments: `{"command":"touch made-by-shell"}`},
		}},
	)
	// Rejecting every call of a batch ends the turn (tools.md §5.3), so
	// each rejection gets a prompt of its own.
	if _, err := a.prompt("go"); err != nil {
		t.Fatal(err)
	}
	a.model.Push(modeltest.Response{ToolCalls: []modeltest.ToolCall{
		{ID: "ed", Name: "write_file", Arguments: `{"file_path":"` + target + `","content":"two\n"}`},
	}})
	if _, err := a.prompt("edit"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the rejected write happened")
	}
	want := map[string][2]string{"fail": {"failed", "failed"}, "sh": {"failed", "rejected"}, "ed": {"failed", "rejected"}}
	for id, w := range want {
		if st, oc := finalOutcome(t, a.e, a.sid, id); st != w[0] || oc != w[1] {
			t.Errorf("call %s ended %s/%s, want %s/%s", id, st, oc, w[0], w[1])
		}
	}

	// A command that runs until the turn is cancelled.
	a.e.Handle("qwen/requestPermission", func(json.RawMessage) (any, error) {
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "proceed_once"}}, nil
	})
	a.model.Push(modeltest.Response{ToolCalls: []modeltest.ToolCall{
		{ID: "long", Name: "run_shell_command", Arguments: `{"command":"sleep 30"}`},
	}})
	id, ch := a.e.Send("qwen/prompt", map[string]any{"sessionId": a.sid, "prompt": []any{map[string]any{"type": "text", "text": "wait"}}})
	a.e.WaitNotification("qwen/sessionUpdate", func(p json.RawMessage) bool {
		return strings.Contains(string(p), `"toolCallId":"long"`) && strings.Contains(string(p), `"in_progress"`)
	})
	a.e.Notify("qwen/cancel", map[string]any{"sessionId": a.sid})
	if res, err := a.e.Wait(id, ch); err != nil || !strings.Contains(string(res), "cancelled") {
		t.Fatalf("cancelled prompt = %s, %v", res, err)
	}
	if st, oc := finalOutcome(t, a.e, a.sid, "long"); st != "failed" || oc != "cancelled" {
		t.Errorf("the cancelled call ended %s/%s, want failed/cancelled", st, oc)
	}

	// The replay of the session tells rejected and cancelled calls apart
	// too (the last final update of each call is the replayed one).
	before := len(a.e.Notifications("qwen/sessionUpdate"))
	if _, err := a.e.Call("qwen/loadSession", map[string]any{"sessionId": a.sid}); err != nil {
		t.Fatal(err)
	}
	if len(a.e.Notifications("qwen/sessionUpdate")) <= before {
		t.Fatal("nothing was replayed")
	}
	for id, w := range map[string]string{"sh": "rejected", "ed": "rejected", "long": "cancelled"} {
		if _, oc := finalOutcome(t, a.e, a.sid, id); oc != w {
			t.Errorf("replayed call %s ended %q, want %s", id, oc, w)
		}
	}
}

// ACP clients get the same outcome: a rejected edit is "rejected", not
// only ACP's "failed", its reason is shown once, and the permission
// requests leave the calls' titles alone, since ACP clients merge a
// request's toolCall into the call they show.
func TestACPRejectedCalls(t *testing.T) {
	m := modeltest.Start(t)
	c := startACP(t, m.URL)
	var mu sync.Mutex
	var asked []json.RawMessage
	c.answer = func(method string, params json.RawMessage) any {
		if method == "session/request_permission" {
			mu.Lock()
			asked = append(asked, params)
			mu.Unlock()
			return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "cancel"}}
		}
		return acpError{-32601, method}
	}
	sid, root := acpSession(t, c, nil)
	m.Push(modeltest.Response{ToolCalls: []modeltest.ToolCall{
		{ID: "w", Name: "write_file", Arguments: jsonArgs("file_path", filepath.Join(root, "new.txt"), "content", "x\n")},
	}})
	c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "write"}}})
	m.Push(modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "s", Name: "run_shell_command", Arguments: jsonArgs("command", "touch x")}}})
	c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "run"}}})

	var final map[string]json.RawMessage
	for _, u := range c.updates() {
		if string(u["toolCallId"]) == `"w"` && string(u["status"]) == `"failed"` {
			final = u
		}
	}
	if got := string(final["_meta"]); got != `{"qwen":{"outcome":"rejected"}}` {
		t.Fatalf("the rejected call's _meta = %s", got)
	}
	if !strings.Contains(string(final["content"]), "The user rejected") || final["rawOutput"] != nil {
		t.Errorf("the rejected call's content %s and rawOutput %s", final["content"], final["rawOutput"])
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 {
		t.Fatalf("%d permission requests, want 2", len(asked))
	}
	for _, p := range asked {
		var req struct {
			ToolCall map[string]json.RawMessage `json:"toolCall"`
		}
		json.Unmarshal(p, &req)
		if title, ok := req.ToolCall["title"]; ok {
			t.Errorf("the permission request sets the call's title to %s", title)
		}
	}
}
