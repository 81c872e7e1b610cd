//go:build linux

package rpc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/sandbox"
	"github.com/qwen-ls/qwen-ls/workspace"
)

func requireSandbox(t *testing.T) {
	t.Helper()
	if !sandbox.Probe().ReadOnly() || !sandbox.Probe().Mounts {
		if os.Getenv(sandbox.EnvOptional) == "1" {
			t.Skip("no sandbox here")
		}
		t.Fatalf("no sandbox with namespaces (%s)", sandbox.Probe())
	}
}

// toolText is the text the model got back for the tool call id.
func toolText(m *modeltest.Server, id string) string {
	for _, r := range m.Requests() {
		for _, msg := range r.Messages {
			if msg.Role == "tool" && msg.ToolCallID == id {
				return msg.Text()
			}
		}
	}
	return ""
}

// In yolo mode a command runs unasked, with the protected paths read-only.
// One that writes .git/config is stopped by the sandbox; the result says
// so, and the person is asked, through the ordinary permission request
// with the reason shown, whether it may run once outside the sandbox.
func TestBlockedBySandboxAsksToRunOutside(t *testing.T) {
	requireSandbox(t)
	for _, answer := range []string{"proceed_once", "cancel"} {
		t.Run(answer, func(t *testing.T) {
			a := startAgent(t, "yolo")
			cfg := filepath.Join(a.root, ".git", "config")
			if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(cfg, []byte("orig\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var titles []string
			a.e.Handle("qwen/requestPermission", func(params json.RawMessage) (any, error) {
				var p struct {
					ToolCall struct {
						Title string `json:"title"`
					} `json:"toolCall"`
				}
				_ = json.Unmarshal(params, &p)
				mu.Lock()
				titles = append(titles, p.ToolCall.Title)
				mu.Unlock()
				return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": answer}}, nil
			})
			args, _ := json.Marshal(map[string]any{"command": "echo changed > .git/config && echo written"})
			a.model.Push(modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "w", Name: "run_shell_command", Arguments: string(args)}}},
				modeltest.Response{Text: "done"})
			if _, err := a.prompt("change the config"); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(titles) != 1 || !strings.Contains(titles[0], "blocked by the sandbox: write to .git/config") {
				t.Fatalf("permission requests: %q", titles)
			}
			b, _ := os.ReadFile(cfg)
			text := toolText(a.model, "w")
			if answer == "proceed_once" {
				if string(b) != "changed\n" || !strings.Contains(text, "Stdout: written") {
					t.Fatalf("approved to run outside the sandbox, yet config %q, model saw:\n%s", b, text)
				}
				return
			}
			if string(b) != "orig\n" {
				t.Fatalf("refused, yet the config is %q", b)
			}
			if !strings.Contains(text, "blocked by the sandbox: write to .git/config") {
				t.Fatalf("the model was not told the sandbox blocked it:\n%s", text)
			}
		})
	}
}

// The initialize result tells the client which protection is active.
func TestInitializeReportsSandbox(t *testing.T) {
	e := rpctest.Start(t, rpc.Options{Version: "test", Stderr: testLog{t}})
	res := e.Initialize(rpctest.InitParams{Roots: []string{t.TempDir()}, Rich: true})
	var r struct {
		Capabilities struct {
			Experimental struct {
				Qwen struct {
					Sandbox struct {
						Summary  string `json:"summary"`
						Landlock int    `json:"landlock"`
						ReadOnly bool   `json:"readOnly"`
					} `json:"sandbox"`
				} `json:"qwen"`
			} `json:"experimental"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatal(err)
	}
	sb := r.Capabilities.Experimental.Qwen.Sandbox
	want := sandbox.Probe()
	if sb.Summary != want.String() || sb.Landlock != want.Landlock || sb.ReadOnly != want.ReadOnly() || !strings.HasPrefix(sb.Summary, "sandbox: ") {
		t.Fatalf("experimental.qwen.sandbox = %+v, want %s", sb, want)
	}
}

// Every form of shellForms, run the way a read-only verdict runs it (as if
// the parser had been fooled), is stopped by the read-only sandbox: no
// marker, no victim changed. TestShellFormsAskAndDoNotRunWhenRejected
// proves that the live forms do have their effect when they may.
func TestShellFormsContainedByReadOnlySandbox(t *testing.T) {
	requireSandbox(t)
	base := t.TempDir()
	root, _ := filepath.EvalSymlinks(base)
	root = filepath.Join(root, "W")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	prepareShellWorkspace(t, root)
	ws := workspace.New(workspace.Options{Roots: []string{root}, Settings: workspace.SettingsOptions{
		UserDir: filepath.Join(base, "home", ".qwen"), SystemPath: filepath.Join(base, "none.json"),
		Getenv: func(string) (string, bool) { return "", false },
	}})
	ctx, cancel := context.WithCancel(context.Background())
	ws.Start(ctx)
	t.Cleanup(func() { cancel(); _ = ws.Close() })
	env := &tools.Env{Workspace: ws, QwenHome: filepath.Join(base, "home", ".qwen")}
	sh := tools.NewShell(env)
	t.Cleanup(env.Processes.KillAll)
	for i, f := range shellForms {
		args, _ := json.Marshal(map[string]any{"command": expandForm(f.cmd, root, i), "timeout": 20000})
		params, terr := tools.PrepareArgs(sh, string(args))
		if terr != nil {
			t.Fatalf("%q: %s", f.cmd, terr.Message)
		}
		call := &tools.Call{ID: fmt.Sprintf("f%d", i), SessionID: "s", Approval: tools.ApprovalNotNeeded}
		if _, err := sh.Execute(context.Background(), call, params, func(tools.Output) {}); err != nil {
			t.Fatalf("%q: %v", f.cmd, err)
		}
	}
	env.Processes.KillAll()
	for i, f := range shellForms {
		if broke := formEffects(root, i); broke != "" {
			t.Errorf("%q got out of the read-only sandbox: %s", f.cmd, broke)
		}
	}
}

// Without a sandbox (forced here as on a kernel without Landlock), a
// command judged read-only asks before it runs; rejected, it does not run.
func TestNoSandboxReadOnlyCommandAsks(t *testing.T) {
	t.Setenv(sandbox.EnvDisable, "1")
	a := startAgent(t, "default")
	var mu sync.Mutex
	var titles []string
	a.e.Handle("qwen/requestPermission", func(params json.RawMessage) (any, error) {
		var p struct {
			ToolCall struct {
				Title string `json:"title"`
			} `json:"toolCall"`
		}
		_ = json.Unmarshal(params, &p)
		mu.Lock()
		titles = append(titles, p.ToolCall.Title)
		mu.Unlock()
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "cancel"}}, nil
	})
	args, _ := json.Marshal(map[string]any{"command": "ls -la"})
	a.model.Push(modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "ls", Name: "run_shell_command", Arguments: string(args)}}},
		modeltest.Response{Text: "done"})
	if _, err := a.prompt("list"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(titles) != 1 || !strings.Contains(titles[0], "no sandbox") {
		t.Fatalf("permission requests: %q; the model saw:\n%s", titles, toolText(a.model, "ls"))
	}
	if text := toolText(a.model, "ls"); strings.Contains(text, "Stdout:") {
		t.Fatalf("the rejected command ran:\n%s", text)
	}
}
