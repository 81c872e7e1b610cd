package session_test

import (
	"context"
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

// askHost records updates and permission requests, and allows once.
type askHost struct {
	recHost
	mu    sync.Mutex
	perms []permAsked
}

type permAsked struct {
	sessionID string
	req       session.PermissionRequest
}

func (h *askHost) CanAsk() bool { return true }
func (h *askHost) RequestPermission(_ context.Context, sid string, req session.PermissionRequest) (session.PermissionAnswer, error) {
	h.mu.Lock()
	h.perms = append(h.perms, permAsked{sid, req})
	h.mu.Unlock()
	return session.PermissionAnswer{OptionID: session.OptionProceedOnce}, nil
}

func (h *askHost) asked() []permAsked {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.perms)
}

// agentFixture is a manager whose tools are built over its environment,
// the real task tool among them.
type agentFixture struct {
	mgr   *session.Manager
	model *modeltest.Server
	env   *tools.Env
	root  string
}

func newAgentFixture(t *testing.T, host session.Host, build func(env *tools.Env) []tools.Tool, script ...modeltest.Response) *agentFixture {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "W")
	os.MkdirAll(root, 0o755)
	root, _ = filepath.EvalSymlinks(root)
	home := filepath.Join(base, "home", ".qwen")
	ws := workspace.New(workspace.Options{Roots: []string{root}, Settings: workspace.SettingsOptions{
		UserDir: home, SystemPath: filepath.Join(base, "etc.json"), Getenv: func(string) (string, bool) { return "", false }}})
	t.Cleanup(func() { ws.Close() })
	env := &tools.Env{Workspace: ws, QwenHome: home}
	m := modeltest.Start(t, script...)
	mgr := session.NewManager(session.Options{
		Env:   env,
		Tools: fakeTools(build(env)),
		Host:  host,
		NewModel: func() (session.Model, error) {
			return session.NewOpenAIModel(session.ModelConfig{Name: "scripted", BaseURL: m.URL}, session.RetryPolicy{Attempts: 3, Base: time.Millisecond, Max: 2 * time.Second}), nil
		},
	})
	return &agentFixture{mgr: mgr, model: m, env: env, root: root}
}

func (f *agentFixture) prompt(t *testing.T, mode, text string) (string, session.PromptResult) {
	t.Helper()
	info, err := f.mgr.NewSession("", mode)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := f.mgr.Session(info.ID)
	res, err := s.Prompt(context.Background(), []session.ContentBlock{{Type: "text", Text: text}})
	if err != nil {
		t.Fatal(err)
	}
	return info.ID, res
}

func (f *agentFixture) agentFile(t *testing.T, name, content string) {
	t.Helper()
	dir := filepath.Join(f.root, ".qwen", "agents")
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// toolMessages maps call ids to the tool messages of a request.
func toolMessages(r modeltest.Request) map[string]string {
	out := map[string]string{}
	for _, m := range r.Messages {
		if m.Role == "tool" {
			out[m.ToolCallID] = m.Text()
		}
	}
	return out
}

func fakeTool(name string, kind tools.Kind, result string) *toolstest.Fake {
	f := toolstest.NewFake(name, "")
	f.Base.Spec.Kind = kind
	f.ExecuteFunc = func(context.Context, *tools.Call, map[string]any, func(tools.Output)) (tools.Result, error) {
		return tools.TextResult(result, nil), nil
	}
	return f
}

func standardTools(env *tools.Env) []tools.Tool {
	return []tools.Tool{tools.NewReadFile(env), tools.NewGrepSearch(env), fakeTool("todo_write", tools.KindThink, "todos"),
		tools.NewTask(env), fakeTool("exit_plan_mode", tools.KindThink, "plan")}
}

// Conformance case 47: the subagent's request has its own system prompt
// and first message and lacks task (and todo_write, exit_plan_mode); a
// call to task from inside fails as an unknown tool; the parent's tool
// message is the subagent's final text; an unknown subagent_type is the
// message of tools.md §3.13.
func TestCase47_TaskRunsASubSession(t *testing.T) {
	f := newAgentFixture(t, &recHost{}, standardTools,
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			{ID: "t1", Name: "task", Arguments: `{"description":"find x","prompt":"Find where x is defined."}`},
			{ID: "t2", Name: "task", Arguments: `{"description":"find y","prompt":"y","subagent_type":"nope"}`},
		}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "inner", Name: "task", Arguments: `{"description":"deeper","prompt":"p"}`}}},
		modeltest.Response{Text: "x is defined in a.go, line 3."},
		modeltest.Response{Text: "Done."},
	)
	f.mgr.SetFocus(&session.Focus{Path: filepath.Join(f.root, "open.go")})
	_, res := f.prompt(t, session.ModeDefault, "where is x?")
	if res.StopReason != session.StopEndTurn || res.LastText != "Done." {
		t.Fatalf("result %+v", res)
	}
	reqs := f.model.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	parent, sub := reqs[0], reqs[1]
	if !slices.Contains(parent.Tools, "task") {
		t.Fatalf("the parent lacks task: %v", parent.Tools)
	}
	if want := []string{"read_file", "grep_search"}; !slices.Equal(sub.Tools, want) {
		t.Errorf("subagent tools %v, want %v", sub.Tools, want)
	}
	sys, first := sub.Messages[0], sub.Messages[1]
	if sys.Role != "system" || !strings.HasPrefix(sys.Text(), "You are a subagent of Qwen Code.") ||
		!strings.Contains(sys.Text(), "\n\n# Environment\n") || !strings.Contains(sys.Text(), "- Workspace roots: "+f.root) ||
		strings.Contains(sys.Text(), "You are Qwen Code, a coding agent") {
		t.Errorf("subagent system prompt:\n%s", sys.Text())
	}
	if first.Role != "user" || first.Text() != "Find where x is defined." || len(sub.Messages) != 2 {
		t.Errorf("subagent messages %+v", sub.Messages)
	}
	if got := toolMessages(reqs[2])["inner"]; !strings.Contains(got, `There is no tool named "task"`) {
		t.Errorf("the subagent's own task call: %q", got)
	}
	msgs := toolMessages(reqs[3])
	if msgs["t1"] != "x is defined in a.go, line 3." {
		t.Errorf("task tool message %q", msgs["t1"])
	}
	if msgs["t2"] != `There is no subagent named "nope". Available: general-purpose.` {
		t.Errorf("unknown type message %q", msgs["t2"])
	}
	// The subagent's conversation stays out of the parent's history.
	for _, m := range reqs[3].Messages {
		if m.Text() == "Find where x is defined." && m.Role == "user" {
			t.Error("the subagent's prompt is in the parent's history")
		}
	}
}

// The subagent's calls run through the scheduler (two reads in parallel,
// then its answer); the editor sees them only as SubagentRun progress
// of the parent's task call, never as tool calls of their own.
func TestSubagentCallsShowAsProgressOfTheTaskCall(t *testing.T) {
	h := &recHost{}
	f := newAgentFixture(t, h, standardTools)
	aPath := filepath.Join(f.root, "a.go")
	os.WriteFile(aPath, []byte("package a\n\nvar x = 1\n"), 0o644)
	f.model.Push(
		modeltest.Response{Text: "Delegating.", ToolCalls: []modeltest.ToolCall{{ID: "t1", Name: "task", Arguments: `{"description":"find x","prompt":"Find x."}`}}},
		modeltest.Response{Text: "Looking.", ToolCalls: []modeltest.ToolCall{
			{ID: "s1", Name: "read_file", Arguments: `{"absolute_path":"` + aPath + `"}`},
			{ID: "s2", Name: "search_file_content", Arguments: `{"pattern":"var x"}`},
		}},
		modeltest.Response{Text: "x is in a.go:3."},
		modeltest.Response{Text: "Done."},
	)
	f.prompt(t, session.ModeDefault, "find x")
	reqs := f.model.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	sub := toolMessages(reqs[2])
	if sub["s1"] != "package a\n\nvar x = 1\n" || !strings.Contains(sub["s2"], "var x = 1") {
		t.Errorf("the subagent's tool messages: %q", sub)
	}
	if got := toolMessages(reqs[3])["t1"]; got != "x is in a.go:3." {
		t.Errorf("task tool message %q", got)
	}
	var progress []string
	for _, u := range h.all() {
		if u.ToolCallID != "" && u.ToolCallID != "t1" {
			t.Errorf("an update for a call other than the task: %+v", u)
		}
		if u.Kind == session.UpdateAgentMessage {
			if c, _ := u.Content.(*session.ContentBlock); c != nil && c.Text == "Looking." {
				t.Error("the subagent's text reached the editor as the agent's message")
			}
		}
		if u.ToolCallID == "t1" && u.Kind == session.UpdateToolCallUpd {
			if items, ok := u.Content.([]session.ToolContent); ok && len(items) == 1 && items[0].Content != nil {
				progress = append(progress, items[0].Content.Text)
			}
		}
	}
	final := "ReadFile: a.go (completed)\nGrep: 'var x' (completed)"
	if len(progress) == 0 || progress[len(progress)-1] != final {
		t.Fatalf("task call content %q, want it to end with %q", progress, final)
	}
	if !slices.ContainsFunc(progress, func(p string) bool { return strings.Contains(p, "(in_progress)") }) {
		t.Errorf("no running progress was shown: %q", progress)
	}
}

// A subagent's call that needs a prompt is asked under the parent's
// session and task call, titled "[<name>] ...".
func TestSubagentPromptsReferToTheTaskCall(t *testing.T) {
	h := &askHost{}
	ran := false
	f := newAgentFixture(t, h, func(env *tools.Env) []tools.Tool {
		deploy := toolstest.NewFake("deploy", "")
		deploy.Base.Spec.Kind = tools.KindExecute
		deploy.ShouldConfirmFunc = func(context.Context, *tools.Call, map[string]any) (*tools.Confirmation, *tools.ToolError) {
			return &tools.Confirmation{Title: "Allow deploy?", Details: &tools.ExecConfirmation{Command: "deploy", RootCommand: "deploy"}}, nil
		}
		deploy.ExecuteFunc = func(context.Context, *tools.Call, map[string]any, func(tools.Output)) (tools.Result, error) {
			ran = true
			return tools.TextResult("deployed", nil), nil
		}
		return []tools.Tool{deploy, tools.NewTask(env)}
	},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "t1", Name: "agent", Arguments: `{"description":"ship it","prompt":"Deploy.","subagent_type":"shipper"}`}}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "d1", Name: "deploy", Arguments: `{}`}}},
		modeltest.Response{Text: "Deployed."},
		modeltest.Response{Text: "Shipped."},
	)
	f.agentFile(t, "shipper.md", "---\nname: shipper\ndescription: Ships releases.\n---\nYou ship.\n")
	sid, _ := f.prompt(t, session.ModeDefault, "ship")
	if !ran {
		t.Fatal("the allowed call did not run")
	}
	asked := h.asked()
	if len(asked) != 1 {
		t.Fatalf("%d prompts", len(asked))
	}
	if a := asked[0]; a.sessionID != sid || a.req.ToolCallID != "t1" || a.req.Title != "[shipper] Allow deploy?" ||
		a.req.Confirmation == nil || a.req.Confirmation.Title != "[shipper] Allow deploy?" {
		t.Errorf("prompt %+v", a)
	}
	if got := toolMessages(f.model.Requests()[3])["t1"]; got != "Deployed." {
		t.Errorf("task tool message %q", got)
	}
}

// In plan mode task is allowed and its sub-session is in plan mode too:
// a change is blocked there, reads run.
func TestSubagentInheritsPlanMode(t *testing.T) {
	wrote := false
	f := newAgentFixture(t, &recHost{}, func(env *tools.Env) []tools.Tool {
		w := toolstest.NewFake("write_file", "")
		w.Base.Spec.Kind = tools.KindEdit
		w.ExecuteFunc = func(context.Context, *tools.Call, map[string]any, func(tools.Output)) (tools.Result, error) {
			wrote = true
			return tools.TextResult("written", nil), nil
		}
		return []tools.Tool{w, fakeTool("read_file", tools.KindRead, "content"), tools.NewTask(env)}
	},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "t1", Name: "task", Arguments: `{"description":"fix it","prompt":"Fix."}`}}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "w1", Name: "write_file", Arguments: `{}`}, {ID: "r1", Name: "read_file", Arguments: `{}`}}},
		modeltest.Response{Text: "Plan mode stopped me."},
		modeltest.Response{Text: "ok"},
	)
	f.prompt(t, session.ModePlan, "fix")
	if wrote {
		t.Fatal("the subagent wrote in plan mode")
	}
	reqs := f.model.Requests()
	sub := toolMessages(reqs[2])
	if !strings.HasPrefix(sub["w1"], `Tool call "write_file" was not executed because plan mode is active.`) || sub["r1"] != "content" {
		t.Errorf("the subagent's tool messages %q", sub)
	}
	if got := toolMessages(reqs[3])["t1"]; got != "Plan mode stopped me." {
		t.Errorf("task tool message %q", got)
	}
}

// A definition's tools, given by name or alias, narrow the sub-session's
// tools; task stays out even when listed. Its model name and max_turns
// apply: at the limit the calls of the last reply are not run, and the
// partial result is the message of tools.md §3.13.
func TestSubagentDefinitionToolsModelAndMaxTurns(t *testing.T) {
	var grepRuns int
	var mu sync.Mutex
	f := newAgentFixture(t, &recHost{}, func(env *tools.Env) []tools.Tool {
		g := tools.NewGrepSearch(env)
		counted := toolstest.NewFake("grep_search", string(g.Schema()))
		counted.Base.Spec = tools.Spec{Name: "grep_search", DisplayName: "Grep", Kind: tools.KindSearch, Aliases: g.Aliases(), Schema: g.Schema(), Description: "grep"}
		counted.ExecuteFunc = func(context.Context, *tools.Call, map[string]any, func(tools.Output)) (tools.Result, error) {
			mu.Lock()
			grepRuns++
			mu.Unlock()
			return tools.TextResult("no match", nil), nil
		}
		return []tools.Tool{tools.NewReadFile(env), counted, tools.NewGlob(env), tools.NewTask(env)}
	})
	f.agentFile(t, "scout.md", "---\nname: scout\ndescription: Searches.\ntools: [search_file_content, ReadFile, read_file, task]\nmodel: scout-model\nmax_turns: 2\n---\nYou search.\n")
	grep := modeltest.Response{Text: "Still searching.", ToolCalls: []modeltest.ToolCall{{Name: "grep_search", Arguments: `{"pattern":"zzz"}`}}}
	f.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "t1", Name: "task", Arguments: `{"description":"search","prompt":"Find zzz.","subagent_type":"scout"}`}}},
		grep, grep,
		modeltest.Response{Text: "ok"},
	)
	f.prompt(t, session.ModeDefault, "find")
	reqs := f.model.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want the parent's two and the subagent's two", len(reqs))
	}
	if want := []string{"read_file", "grep_search"}; !slices.Equal(reqs[1].Tools, want) {
		t.Errorf("subagent tools %v, want %v", reqs[1].Tools, want)
	}
	if reqs[1].Model != "scout-model" || reqs[0].Model != "scripted" {
		t.Errorf("models %q and %q", reqs[0].Model, reqs[1].Model)
	}
	if grepRuns != 1 {
		t.Errorf("grep ran %d times, want once (the last reply's call is not run)", grepRuns)
	}
	want := "Subagent stopped after reaching the maximum of 2 turns. Partial result:\n\nStill searching."
	if got := toolMessages(reqs[3])["t1"]; got != want {
		t.Errorf("task tool message %q, want %q", got, want)
	}
}

// A model failure inside the subagent (a 400 is not retried) fails the
// task call with execution_failed; the parent's turn goes on.
func TestSubagentModelFailure(t *testing.T) {
	h := &recHost{}
	f := newAgentFixture(t, h, standardTools,
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "t1", Name: "task", Arguments: `{"description":"d","prompt":"p"}`}}},
		modeltest.Response{Status: 400, Body: `{"error":{"message":"bad model"}}`},
		modeltest.Response{Text: "It failed."},
	)
	_, res := f.prompt(t, session.ModeDefault, "go")
	if res.StopReason != session.StopEndTurn {
		t.Fatalf("result %+v", res)
	}
	got := toolMessages(f.model.Requests()[2])["t1"]
	if got != "The subagent failed: the model request failed with status 400: bad model" {
		t.Errorf("task tool message %q", got)
	}
	var failed bool
	for _, u := range h.all() {
		if u.ToolCallID == "t1" && u.Status == session.StatusFailed {
			failed = true
		}
	}
	if !failed {
		t.Error("the task call was not shown failed")
	}
}
