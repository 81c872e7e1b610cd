package session_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/session"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/toolstest"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// recHost records updates; it cannot ask the user.
type recHost struct {
	mu      sync.Mutex
	updates []session.Update
}

func (h *recHost) Update(id string, u session.Update) {
	h.mu.Lock()
	h.updates = append(h.updates, u)
	h.mu.Unlock()
}
func (h *recHost) CanAsk() bool { return false }
func (h *recHost) RequestPermission(context.Context, string, session.PermissionRequest) (session.PermissionAnswer, error) {
	return session.PermissionAnswer{}, errors.New("no")
}
func (h *recHost) ReviewEdit(context.Context, string, session.EditReview) (session.EditAnswer, error) {
	return session.EditAnswer{}, errors.New("no")
}
func (h *recHost) ApplyToBuffer(context.Context, string, int32, string) error {
	return errors.New("no")
}
func (h *recHost) CanApplyToBuffers() bool { return false }

func (h *recHost) all() []session.Update {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]session.Update(nil), h.updates...)
}

// fakeTools is a Toolbox over a fixed list that, like the registry,
// resolves aliases.
type fakeTools []tools.Tool

func (f fakeTools) Tools() session.ToolSet { return f }
func (f fakeTools) Lookup(name string) (tools.Tool, *tools.ToolError) {
	for _, t := range f {
		if t.Name() == name || slices.Contains(t.Aliases(), name) {
			return t, nil
		}
	}
	return nil, tools.NewError(tools.ErrorToolNotRegistered, fmt.Sprintf("There is no tool named %q", name))
}
func (f fakeTools) Declarations() []session.ToolDecl {
	var out []session.ToolDecl
	for _, t := range f {
		out = append(out, session.ToolDecl{Name: t.Name(), Description: t.Description(), Parameters: t.Schema()})
	}
	return out
}
func (f fakeTools) Names() []string {
	var out []string
	for _, t := range f {
		out = append(out, t.Name())
	}
	return out
}

type fixture struct {
	mgr   *session.Manager
	host  *recHost
	model *modeltest.Server
	root  string
	home  string
}

func newFixture(t *testing.T, ts []tools.Tool, script ...modeltest.Response) *fixture {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "W")
	os.MkdirAll(root, 0o755)
	root, _ = filepath.EvalSymlinks(root)
	home := filepath.Join(base, "home", ".qwen")
	ws := workspace.New(workspace.Options{Roots: []string{root}, Settings: workspace.SettingsOptions{
		UserDir: home, SystemPath: filepath.Join(base, "etc.json"), Getenv: func(string) (string, bool) { return "", false }}})
	t.Cleanup(func() { ws.Close() })
	m := modeltest.Start(t, script...)
	h := &recHost{}
	mgr := session.NewManager(session.Options{
		Env:   &tools.Env{Workspace: ws, QwenHome: home},
		Tools: fakeTools(ts),
		Host:  h,
		NewModel: func() (session.Model, error) {
			return session.NewOpenAIModel(session.ModelConfig{Name: "scripted", BaseURL: m.URL}, session.RetryPolicy{Attempts: 3, Base: time.Millisecond, Max: 2 * time.Second}), nil
		},
	})
	return &fixture{mgr: mgr, host: h, model: m, root: root, home: home}
}

func (f *fixture) prompt(t *testing.T, mode, text string) (session.PromptResult, error) {
	t.Helper()
	info, err := f.mgr.NewSession("", mode)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := f.mgr.Session(info.ID)
	return s.Prompt(context.Background(), []session.ContentBlock{{Type: "text", Text: text}})
}

func readOnly(name string, exec func(ctx context.Context) (tools.Result, error)) *toolstest.Fake {
	f := toolstest.NewFake(name, "")
	f.Base.Spec.Kind = tools.KindRead
	f.ExecuteFunc = func(ctx context.Context, _ *tools.Call, _ map[string]any, _ func(tools.Output)) (tools.Result, error) {
		return exec(ctx)
	}
	return f
}

// Two read-only calls in one batch run at the same time: each waits until
// the other has started, which would never happen if they ran in turn.
// The edit-kind call that follows starts only after both finished.
func TestReadOnlyCallsRunInParallelAndWritesAfter(t *testing.T) {
	var started sync.WaitGroup
	started.Add(2)
	var mu sync.Mutex
	var order []string
	reader := func(name string) *toolstest.Fake {
		return readOnly(name, func(ctx context.Context) (tools.Result, error) {
			started.Done()
			done := make(chan struct{})
			go func() { started.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				return tools.ErrorResult(tools.ErrorExecutionFailed, "the other read never started: calls ran one at a time"), nil
			}
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			return tools.TextResult(name+" ok", nil), nil
		})
	}
	writer := toolstest.NewFake("writer", "")
	writer.Base.Spec.Kind = tools.KindEdit
	writer.ExecuteFunc = func(context.Context, *tools.Call, map[string]any, func(tools.Output)) (tools.Result, error) {
		mu.Lock()
		order = append(order, "writer")
		mu.Unlock()
		return tools.TextResult("written", nil), nil
	}
	f := newFixture(t, []tools.Tool{reader("r1"), reader("r2"), writer},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{Name: "r1", Arguments: "{}"}, {Name: "r2", Arguments: "{}"}, {Name: "writer", Arguments: "{}"}}, Usage: &modeltest.Usage{Prompt: 10, Completion: 5}},
		modeltest.Response{Text: "done", Usage: &modeltest.Usage{Prompt: 20, Completion: 2}},
	)
	res, err := f.prompt(t, session.ModeYolo, "go")
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != session.StopEndTurn || res.Usage.InputTokens != 30 || res.Usage.OutputTokens != 7 || res.Usage.TotalTokens != 37 {
		t.Fatalf("result = %+v", res)
	}
	if len(order) != 3 || order[2] != "writer" {
		t.Fatalf("order = %v, want both reads before the write", order)
	}
	reqs := f.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	var got []string
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" {
			got = append(got, m.ToolCallID+"="+m.Text())
		}
	}
	want := []string{"call_1=r1 ok", "call_2=r2 ok", "call_3=written"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("tool messages = %v, want %v", got, want)
	}
}

// Without a way to ask, a call that needs confirmation is denied with the
// message of tools.md §6.5, and the turn goes on.
func TestConfirmationWithoutAskingIsDenied(t *testing.T) {
	w := toolstest.NewFake("writer", "")
	w.Base.Spec.Kind = tools.KindEdit
	ran := false
	w.ShouldConfirmFunc = func(context.Context, *tools.Call, map[string]any) (*tools.Confirmation, *tools.ToolError) {
		return &tools.Confirmation{Title: "Confirm", Details: &tools.ExecConfirmation{Command: "x", RootCommand: "x"}}, nil
	}
	w.ExecuteFunc = func(context.Context, *tools.Call, map[string]any, func(tools.Output)) (tools.Result, error) {
		ran = true
		return tools.TextResult("ran", nil), nil
	}
	f := newFixture(t, []tools.Tool{w},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{Name: "writer", Arguments: "{}"}}},
		modeltest.Response{Text: "ok"})
	if _, err := f.prompt(t, session.ModeDefault, "go"); err != nil {
		t.Fatal(err)
	}
	if ran {
		t.Fatal("the call ran without permission")
	}
	msgs := f.model.Requests()[1].Messages
	last := msgs[len(msgs)-1]
	if last.Role != "tool" || last.Text() != "writer needs the user's permission, but this client cannot ask for it, so the call was denied. An allow rule or another approval mode can permit it." {
		t.Fatalf("tool message = %q", last.Text())
	}
}

// Plan mode blocks a call that changes things, with the exact output of
// tools.md §6.4, and lets read-only calls run.
func TestPlanModeBlocksChanges(t *testing.T) {
	w := toolstest.NewFake("write_file", "")
	w.Base.Spec.Kind = tools.KindEdit
	r := readOnly("read_file", func(context.Context) (tools.Result, error) { return tools.TextResult("content", nil), nil })
	f := newFixture(t, []tools.Tool{w, r},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{Name: "write_file", Arguments: "{}"}, {Name: "read_file", Arguments: "{}"}}},
		modeltest.Response{Text: "ok"})
	if _, err := f.prompt(t, session.ModePlan, "go"); err != nil {
		t.Fatal(err)
	}
	msgs := f.model.Requests()[1].Messages
	var tool []string
	for _, m := range msgs {
		if m.Role == "tool" {
			tool = append(tool, m.Text())
		}
	}
	if len(tool) != 2 || !strings.HasPrefix(tool[0], `Tool call "write_file" was not executed because plan mode is active.`) || tool[1] != "content" {
		t.Fatalf("tool messages = %q", tool)
	}
}

// The same failing call three times: only the third message carries the
// repeated-failure warning (conformance case 6).
func TestCase06_RepeatedFailureWarning(t *testing.T) {
	bad := toolstest.NewFake("bad", "")
	bad.ExecuteFunc = func(context.Context, *tools.Call, map[string]any, func(tools.Output)) (tools.Result, error) {
		return tools.ErrorResult(tools.ErrorExecutionFailed, "it broke"), nil
	}
	call := modeltest.Response{ToolCalls: []modeltest.ToolCall{{Name: "bad", Arguments: "{}"}}}
	f := newFixture(t, []tools.Tool{bad}, call, call, call, modeltest.Response{Text: "giving up"})
	if _, err := f.prompt(t, session.ModeYolo, "go"); err != nil {
		t.Fatal(err)
	}
	reqs := f.model.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i := 1; i <= 3; i++ {
		msgs := reqs[i].Messages
		text := msgs[len(msgs)-1].Text()
		hasWarning := strings.Contains(text, "WARNING: repeated failure.")
		if hasWarning != (i == 3) {
			t.Errorf("request %d: tool message %q (warning expected only on the third)", i+1, text)
		}
	}
}

// Broken JSON arguments are a tool error and the turn goes on (case 3).
func TestCase03_BrokenArgumentsAreToolErrors(t *testing.T) {
	tl := toolstest.NewFake("read_file", `{"type":"object","properties":{"absolute_path":{"type":"string"}},"required":["absolute_path"]}`)
	f := newFixture(t, []tools.Tool{tl},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{Name: "read_file", Arguments: `{"absolute_path": `}, {Name: "read_file", Arguments: `not json`}}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{Name: "read_file", Arguments: `{}`}}},
		modeltest.Response{Text: "ok"})
	res, err := f.prompt(t, session.ModeYolo, "go")
	if err != nil || res.StopReason != session.StopEndTurn {
		t.Fatalf("%+v %v", res, err)
	}
	reqs := f.model.Requests()
	var tool []string
	for _, m := range reqs[2].Messages {
		if m.Role == "tool" {
			tool = append(tool, m.Text())
		}
	}
	// The cut object is repaired (to {"absolute_path": null}), so the
	// schema names what is missing; "not json" cannot be repaired.
	if len(tool) != 3 || tool[0] != "params must have required property 'absolute_path'" || !strings.HasPrefix(tool[1], "Invalid JSON in tool call arguments:") ||
		tool[2] != "params must have required property 'absolute_path'" {
		t.Fatalf("tool messages = %q", tool)
	}
}

// An unknown tool gets the registry's error and the turn goes on.
func TestUnknownToolIsAToolError(t *testing.T) {
	f := newFixture(t, nil,
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{Name: "nope", Arguments: "{}"}}},
		modeltest.Response{Text: "ok"})
	res, err := f.prompt(t, session.ModeYolo, "go")
	if err != nil || res.StopReason != session.StopEndTurn {
		t.Fatalf("%+v %v", res, err)
	}
	msgs := f.model.Requests()[1].Messages
	if !strings.Contains(msgs[len(msgs)-1].Text(), `There is no tool named "nope"`) {
		t.Fatalf("tool message = %q", msgs[len(msgs)-1].Text())
	}
	var failed bool
	for _, u := range f.host.all() {
		if u.Kind == session.UpdateToolCallUpd && u.Status == session.StatusFailed {
			failed = true
		}
	}
	if !failed {
		t.Fatal("the editor was not told the call failed")
	}
}
