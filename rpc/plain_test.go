package rpc_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
	"github.com/qwen-ls/qwen-ls/tools"
)

// plainAgent is an LSP client without experimental.qwen.
func plainAgent(t *testing.T, showMessage bool, opts rpc.Options) *agent {
	return startAgentWith(t, "default", opts, func(p *rpctest.InitParams) {
		p.Rich, p.ShowMessage = false, showMessage
	})
}

func (a *agent) execPrompt(text string) (json.RawMessage, error) {
	return a.e.Call("workspace/executeCommand", map[string]any{"command": "qwen-ls.prompt", "arguments": []any{text}})
}

func TestPlainClientEditAsksWithShowMessageRequest(t *testing.T) {
	a := plainAgent(t, true, rpc.Options{})
	p := filepath.Join(a.root, "a.txt")
	os.WriteFile(p, []byte("old\n"), 0o644)
	var messages []string
	a.e.Handle("window/showMessageRequest", func(params json.RawMessage) (any, error) {
		var m struct {
			Message string
			Actions []struct{ Title string }
		}
		json.Unmarshal(params, &m)
		messages = append(messages, m.Message)
		if len(m.Actions) != 3 || m.Actions[0].Title != "Allow" || m.Actions[1].Title != "Allow for session" || m.Actions[2].Title != "Reject" {
			t.Errorf("actions = %+v", m.Actions)
		}
		return map[string]any{"title": "Allow"}, nil
	})
	a.readThenEdit(p, "old", "new")
	res, err := a.execPrompt("change it")
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Text, StopReason, SessionID string }
	json.Unmarshal(res, &out)
	if out.Text != "finished" || out.StopReason != "end_turn" || out.SessionID == "" {
		t.Fatalf("qwen-ls.prompt = %s", res)
	}
	if data, _ := os.ReadFile(p); string(data) != "new\n" {
		t.Fatalf("disk = %q", data)
	}
	if len(messages) != 1 || !strings.Contains(messages[0], "a.txt") || !strings.Contains(messages[0], "(+1 -1)") {
		t.Fatalf("showMessageRequest = %q", messages)
	}
	if len(a.e.Notifications("qwen/sessionUpdate")) != 0 {
		t.Fatal("a plain client was sent qwen/sessionUpdate")
	}
	// A second prompt without a session id reuses the implicit session.
	a.model.Push(modeltest.Response{Text: "again"})
	res2, _ := a.execPrompt("again")
	if !strings.Contains(string(res2), out.SessionID) {
		t.Fatalf("second prompt used another session: %s", res2)
	}
}

func TestPlainClientNullAnswerIsReject(t *testing.T) {
	a := plainAgent(t, true, rpc.Options{})
	p := filepath.Join(a.root, "a.txt")
	os.WriteFile(p, []byte("old\n"), 0o644)
	a.e.Handle("window/showMessageRequest", func(json.RawMessage) (any, error) { return nil, nil })
	a.readThenEdit(p, "old", "new")
	if _, err := a.execPrompt("change it"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(p); string(data) != "old\n" {
		t.Fatalf("disk = %q", data)
	}
}

// Without showMessage support nothing can be asked: the edit is denied
// with a message to the model and the user's log.
func TestPlainClientWithoutShowMessageIsDenied(t *testing.T) {
	a := plainAgent(t, false, rpc.Options{})
	p := filepath.Join(a.root, "a.txt")
	os.WriteFile(p, []byte("old\n"), 0o644)
	a.readThenEdit(p, "old", "new")
	if _, err := a.execPrompt("change it"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(p); string(data) != "old\n" {
		t.Fatalf("disk = %q", data)
	}
	want := "edit needs the user's permission, but this client cannot ask for it, so the call was denied. An allow rule or another approval mode can permit it."
	if msg := a.toolMessage(t, "ed"); msg != want {
		t.Fatalf("model told %q", msg)
	}
	a.e.WaitNotification("window/logMessage", func(p json.RawMessage) bool {
		return strings.Contains(string(p), "cannot ask for it")
	})
}

func TestPlainClientCancelCommand(t *testing.T) {
	var started atomic.Bool
	a := plainAgent(t, true, rpc.Options{ExtraTools: []tools.Tool{}})
	a.model.Push(modeltest.Response{Text: "slow", Delay: 60e9})
	id, ch := a.e.Send("workspace/executeCommand", map[string]any{"command": "qwen-ls.prompt", "arguments": []any{"hi"}})
	a.model.WaitRequests(1, rpctest.DefaultTimeout)
	started.Store(true)
	if _, err := a.e.Call("workspace/executeCommand", map[string]any{"command": "qwen-ls.cancel", "arguments": []any{}}); err != nil {
		t.Fatal(err)
	}
	res, err := a.e.Wait(id, ch)
	if err != nil || !strings.Contains(string(res), `"stopReason":"cancelled"`) {
		t.Fatalf("%s %v", res, err)
	}
	if _, err := a.e.Call("workspace/executeCommand", map[string]any{"command": "qwen-ls.explode"}); !isCode(err, rpc.CodeInvalidParams) {
		t.Fatalf("unknown command: %v", err)
	}
}
