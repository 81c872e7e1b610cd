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

// hiddenConfigWrite appends to .git/config through a path the parser
// cannot see (python builds it), so that the command runs unasked under an
// allow rule or in yolo and only the sandbox stands in its way.
const hiddenConfigWrite = `python3 -c 'open(".gi"+"t/config","a").write("changed\n")' && echo written`

// A command that runs unasked because of an allow rule and writes a
// protected file is refused by the sandbox; the result names the file and
// why, and the person is asked, through the ordinary permission request
// with that reason, whether it may run once outside the sandbox.
func TestBlockedBySandboxAsksToRunOutside(t *testing.T) {
	requireSandbox(t)
	for _, answer := range []string{"proceed_once", "cancel"} {
		t.Run(answer, func(t *testing.T) {
			a := startAgentWith(t, "default", rpc.Options{}, func(p *rpctest.InitParams) {
				opts := p.InitializationOptions.(map[string]any)
				opts["settings"] = map[string]any{"permissions": map[string]any{"allow": []any{"Bash(python3 *)"}}}
			})
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
			text := a.shell(t, "w", hiddenConfigWrite)
			mu.Lock()
			defer mu.Unlock()
			want := "blocked by the sandbox: write " + cfg + " (git's own files"
			if len(titles) != 1 || !strings.Contains(titles[0], want) {
				t.Fatalf("permission requests: %q, want one that says %q", titles, want)
			}
			b, _ := os.ReadFile(cfg)
			if answer == "proceed_once" {
				if string(b) != "orig\nchanged\n" || !strings.Contains(text, "Stdout: written") {
					t.Fatalf("approved to run outside the sandbox, yet config %q, model saw:\n%s", b, text)
				}
				return
			}
			if string(b) != "orig\n" {
				t.Fatalf("refused, yet the config is %q", b)
			}
			if !strings.Contains(text, want) {
				t.Fatalf("the model was not told the sandbox blocked it:\n%s", text)
			}
		})
	}
}

// In yolo nothing asks: the same refusal comes back to the model, naming
// the path and why, and the file is unchanged.
func TestBlockedBySandboxInYoloRefusesWithoutAsking(t *testing.T) {
	requireSandbox(t)
	a, asked := rulesAgent(t, "yolo", map[string]any{})
	cfg := filepath.Join(a.root, ".git", "config")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("orig\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	text := a.shell(t, "w", hiddenConfigWrite)
	if len(*asked) != 0 {
		t.Fatalf("yolo asked: %s", (*asked)[0])
	}
	if b, _ := os.ReadFile(cfg); string(b) != "orig\n" {
		t.Fatalf("the config is %q", b)
	}
	if want := "blocked by the sandbox: write " + cfg; !strings.Contains(text, want) {
		t.Fatalf("the model was not told %q:\n%s", want, text)
	}
}

// Class 7 of issue 29: a read-only command whose error output says
// "Permission denied" for a reason that is not the sandbox's (a process's
// /proc entry, here the supervisor's own, which is not readable) is not
// reported as blocked by the sandbox, and the person is not offered to run
// it outside.
func TestOrdinaryDenialIsNotBlamedOnTheSandbox(t *testing.T) {
	requireSandbox(t)
	a, asked := rulesAgent(t, "default", map[string]any{})
	text := a.shell(t, "g", "grep -s -c SECRET /proc/1/environ; grep SECRET /proc/1/environ")
	if len(*asked) != 0 {
		t.Fatalf("asked: %s", (*asked)[0])
	}
	if !strings.Contains(text, "Permission denied") {
		t.Fatalf("the command did not meet the denial this test is about:\n%s", text)
	}
	if strings.Contains(text, "sandbox") {
		t.Fatalf("an ordinary denial was blamed on the sandbox:\n%s", text)
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
