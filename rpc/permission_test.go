package rpc_test

import (
	"context"
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
	"github.com/qwen-ls/qwen-ls/tools/toolstest"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// confirming is a tool that asks with the given details and counts runs.
func confirming(name string, kind tools.Kind, details tools.ConfirmationDetails, runs *atomic.Int32) *toolstest.Fake {
	f := toolstest.NewFake(name, "")
	f.Base.Spec.Kind = kind
	f.ShouldConfirmFunc = func(context.Context, *tools.Call, map[string]any) (*tools.Confirmation, *tools.ToolError) {
		return &tools.Confirmation{Title: "Confirm " + name, Details: details}, nil
	}
	f.ExecuteFunc = func(context.Context, *tools.Call, map[string]any, func(tools.Output)) (tools.Result, error) {
		runs.Add(1)
		return tools.TextResult(name+" ran", nil), nil
	}
	return f
}

type permRequest struct {
	SessionID string `json:"sessionId"`
	ToolCall  struct {
		ToolCallID, Title, Kind string
	} `json:"toolCall"`
	Options []struct{ OptionID, Name, Kind string }
}

func TestPermissionKindsAreAskedWithTheRightOptions(t *testing.T) {
	var runs atomic.Int32
	extra := []tools.Tool{
		confirming("toucher", tools.KindExecute, &tools.ExecConfirmation{Command: "touch t", Commands: []string{"touch t"}, RootCommand: "touch", PermissionRules: []string{"Bash(touch *)"}}, &runs),
		confirming("fetcher", tools.KindFetch, &tools.InfoConfirmation{Prompt: "Fetch https://example.com/x", URLs: []string{"https://example.com/x"}, PermissionRules: []string{"WebFetch(example.com)"}}, &runs),
		confirming("mcpthing", tools.KindOther, &tools.MCPConfirmation{ServerName: "srv", ToolName: "thing", ToolDisplayName: "thing (srv MCP Server)", PermissionRules: []string{"mcp__srv__thing"}}, &runs),
	}
	// A trusted folder: an untrusted one has no project option
	// (TestUntrustedFolderHasNoProjectOption).
	a := startAgentWith(t, "default", rpc.Options{ExtraTools: extra}, func(p *rpctest.InitParams) {
		p.InitializationOptions.(map[string]any)["workspaceTrusted"] = true
	})
	var asked []permRequest
	a.e.Handle("qwen/requestPermission", func(params json.RawMessage) (any, error) {
		var p permRequest
		json.Unmarshal(params, &p)
		asked = append(asked, p)
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "proceed_once"}}, nil
	})
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{Name: "toucher", Arguments: "{}"}, {Name: "fetcher", Arguments: "{}"}, {Name: "mcpthing", Arguments: "{}"}}},
		modeltest.Response{Text: "ok"},
	)
	if _, err := a.prompt("go"); err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 3 || len(asked) != 3 {
		t.Fatalf("runs %d, prompts %d", runs.Load(), len(asked))
	}
	wantKinds := []string{"execute", "fetch", "other"}
	wantAlways := []string{"Allow touch for this session", "Allow example.com for this session", "Allow mcpthing for this session"}
	for i, p := range asked {
		if p.ToolCall.Kind != wantKinds[i] || p.SessionID != a.sid {
			t.Errorf("prompt %d: %+v", i, p)
		}
		var ids []string
		for _, o := range p.Options {
			ids = append(ids, o.OptionID+":"+o.Kind)
		}
		if strings.Join(ids, ",") != "proceed_once:allow_once,proceed_always:allow_always,proceed_always_project:allow_always,proceed_always_user:allow_always,cancel:reject_once" {
			t.Errorf("prompt %d options = %v", i, ids)
		}
		if p.Options[1].Name != wantAlways[i] {
			t.Errorf("prompt %d: always option named %q, want %q", i, p.Options[1].Name, wantAlways[i])
		}
	}
	if !strings.HasPrefix(asked[0].Options[2].Name, "Always allow in this project: Bash(touch *)") {
		t.Errorf("project option = %q", asked[0].Options[2].Name)
	}
}

// A rejection, a dismissed prompt and an option that was never offered
// all leave the call unrun.
func TestRejectIsNeverAnAllow(t *testing.T) {
	for _, answer := range []any{
		map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "cancel"}},
		map[string]any{"outcome": map[string]any{"outcome": "cancelled"}},
		map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow_everything"}},
		map[string]any{"nonsense": true},
	} {
		var runs atomic.Int32
		tool := confirming("toucher", tools.KindExecute, &tools.ExecConfirmation{Command: "touch t", RootCommand: "touch", PermissionRules: []string{"Bash(touch *)"}}, &runs)
		a := startAgentWith(t, "default", rpc.Options{ExtraTools: []tools.Tool{tool}}, func(*rpctest.InitParams) {})
		a.e.Handle("qwen/requestPermission", func(json.RawMessage) (any, error) { return answer, nil })
		a.model.Push(modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "c", Name: "toucher", Arguments: "{}"}}})
		res, err := a.prompt("go")
		if err != nil || runs.Load() != 0 {
			t.Fatalf("answer %v: runs %d, %s %v", answer, runs.Load(), res, err)
		}
		if !strings.Contains(string(res), "end_turn") || len(a.model.Requests()) != 1 {
			t.Fatalf("answer %v: a lone rejection must end the turn: %s", answer, res)
		}
	}
}

// Each "always" scope suppresses the next prompt for the same kind of
// command; the project and user scopes are written to settings and survive
// a restart of the server (conformance case 42).
func TestCase42_AlwaysAnswersPersist(t *testing.T) {
	for _, tc := range []struct {
		option   string
		file     func(root, home string) string
		survives bool
	}{
		{"proceed_always", nil, false},
		{"proceed_always_project", func(root, home string) string { return filepath.Join(root, ".qwen", "settings.json") }, true},
		{"proceed_always_user", func(root, home string) string { return filepath.Join(home, "settings.json") }, true},
	} {
		t.Run(tc.option, func(t *testing.T) {
			base := t.TempDir()
			root := filepath.Join(base, "W")
			home := filepath.Join(base, "home", ".qwen")
			os.MkdirAll(root, 0o755)
			root, _ = filepath.EvalSymlinks(root)
			m := modeltest.Start(t)
			var prompts atomic.Int32
			boot := func() (*rpctest.Editor, string) {
				ws := workspace.New(workspace.Options{Settings: workspace.SettingsOptions{UserDir: home, SystemPath: filepath.Join(base, "none.json"),
					Getenv: func(string) (string, bool) { return "", false }}})
				t.Cleanup(func() { ws.Close() })
				e := rpctest.Start(t, rpc.Options{Workspace: ws, QwenHome: home, Stderr: testLog{t}})
				e.Handle("qwen/requestPermission", func(json.RawMessage) (any, error) {
					prompts.Add(1)
					return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": tc.option}}, nil
				})
				// A trusted folder, where project rules apply.
				e.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true, InitializationOptions: map[string]any{"model": map[string]any{"name": "s", "baseUrl": m.URL}, "workspaceTrusted": true}})
				res, err := e.Call("qwen/newSession", map[string]any{})
				if err != nil {
					t.Fatal(err)
				}
				var ns struct{ SessionID string }
				json.Unmarshal(res, &ns)
				return e, ns.SessionID
			}
			touch := func(e *rpctest.Editor, sid, name string) {
				m.Push(modeltest.Response{ToolCalls: []modeltest.ToolCall{{Name: "run_shell_command", Arguments: jsonArgs("command", "touch "+name)}}}, modeltest.Response{Text: "ok"})
				if _, err := e.Call("qwen/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "go"}}}); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(filepath.Join(root, name)); err != nil {
					t.Fatalf("touch %s did not run: %v", name, err)
				}
			}
			e, sid := boot()
			touch(e, sid, "t")
			touch(e, sid, "u")
			if prompts.Load() != 1 {
				t.Fatalf("same session: %d prompts, want 1", prompts.Load())
			}
			if tc.file != nil {
				data, err := os.ReadFile(tc.file(root, home))
				if err != nil || !strings.Contains(string(data), `"Bash(touch *)"`) {
					t.Fatalf("settings file: %s %v", data, err)
				}
			}
			if code := e.Shutdown(); code != 0 {
				t.Fatalf("exit code %d", code)
			}
			e2, sid2 := boot()
			touch(e2, sid2, "v")
			wantPrompts := int32(1)
			if !tc.survives {
				wantPrompts = 2
			}
			if prompts.Load() != wantPrompts {
				t.Fatalf("after a restart: %d prompts, want %d", prompts.Load(), wantPrompts)
			}
		})
	}
}
