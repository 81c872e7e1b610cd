package tools_test

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/toolset"
	"github.com/qwen-ls/qwen-ls/tools/toolstest"
)

var updateTask = flag.Bool("update-task", false, "rewrite the golden declaration of task")

// subagentModel is a tools.Model whose subagent runs are scripted by run;
// it records the requests.
type subagentModel struct {
	run func(ctx context.Context, req tools.SubagentRequest, onUpdate func(tools.SubagentRun)) (tools.SubagentResult, error)

	mu   sync.Mutex
	reqs []tools.SubagentRequest
}

func (m *subagentModel) Complete(context.Context, string, string) (string, error) {
	return "", errors.New("no side requests here")
}

func (m *subagentModel) RunSubagent(ctx context.Context, req tools.SubagentRequest, onUpdate func(tools.SubagentRun)) (tools.SubagentResult, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	return m.run(ctx, req, onUpdate)
}

func (m *subagentModel) requests() []tools.SubagentRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]tools.SubagentRequest(nil), m.reqs...)
}

// writeAgent writes a definition file into dir.
func writeAgent(t testing.TB, dir, file, content string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, file)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTaskDeclarationGolden(t *testing.T) {
	e := newTestEnv(t, nil)
	toolstest.Golden(t, "declarations/task.json", declarationJSON(t, tools.NewTask(e.Env)), *updateTask)
}

func TestTaskSpec(t *testing.T) {
	e := newTestEnv(t, nil)
	task := tools.NewTask(e.Env)
	if task.Name() != "task" || task.DisplayName() != "Task" || task.Kind() != tools.KindOther ||
		!reflect.DeepEqual(task.Aliases(), []string{"agent"}) || !task.SkipSchemaValidation() || task.Source() != tools.SourceBuiltin {
		t.Errorf("static description is wrong: %s %s %s %v", task.Name(), task.DisplayName(), task.Kind(), task.Aliases())
	}
	var names []string
	for _, tool := range toolset.Builtins(e.Env) {
		names = append(names, tool.Name())
	}
	// lsp (tools.md §3.15) comes after the §1.5 list.
	if n := len(names); n < 4 || names[n-3] != "task" || names[n-2] != "exit_plan_mode" || names[n-4] != "todo_write" || names[n-1] != "lsp" {
		t.Errorf("task is not declared between todo_write and exit_plan_mode, before lsp: %v", names)
	}
}

// The messages of tools.md §3.13 and conformance case 47's unknown type.
func TestTaskValidate(t *testing.T) {
	e := newTestEnv(t, nil)
	task := tools.NewTask(e.Env)
	for _, c := range []struct{ raw, msg string }{
		{`{"prompt":"p"}`, `Argument "description" must not be empty.`},
		{`{"description":"  ","prompt":"p"}`, `Argument "description" must not be empty.`},
		{`{"description":5,"prompt":"p"}`, `Argument "description" must not be empty.`},
		{`{"description":"find x"}`, `Argument "prompt" must not be empty.`},
		{`{"description":"find x","prompt":"\n"}`, `Argument "prompt" must not be empty.`},
		{`{"description":"find x","prompt":"p","subagent_type":"nope"}`, `There is no subagent named "nope". Available: general-purpose.`},
		{`{"description":"find x","prompt":"p","subagent_type":7}`, `There is no subagent named "7". Available: general-purpose.`},
	} {
		_, terr := tools.PrepareArgs(task, c.raw)
		if terr == nil || terr.Type != tools.ErrorInvalidToolParams || terr.Message != c.msg {
			t.Errorf("%s: got %+v, want %q", c.raw, terr, c.msg)
		}
	}
	for _, raw := range []string{
		`{"description":"find x","prompt":"p"}`,
		`{"description":"find x","prompt":"p","subagent_type":""}`,
		`{"description":"find x","prompt":"p","subagent_type":"General-Purpose"}`,
	} {
		params, terr := tools.PrepareArgs(task, raw)
		if terr != nil {
			t.Errorf("%s refused: %s", raw, terr.Message)
			continue
		}
		if got := task.Describe(params); got != `general-purpose subagent: "find x"` {
			t.Errorf("%s: describe %q", raw, got)
		}
	}
	// The call by its alias reaches the same checks (the registry maps
	// the name); the unknown-type list names every subagent, sorted.
	writeAgent(t, filepath.Join(e.Root, ".qwen", "agents"), "r.md", "---\nname: reviewer\ndescription: Reviews.\n---\nReview.\n")
	writeAgent(t, filepath.Join(e.Home, "agents"), "a.md", "---\nname: Architect\ndescription: Designs.\n---\nDesign.\n")
	_, terr := tools.PrepareArgs(task, `{"description":"d","prompt":"p","subagent_type":"nope"}`)
	if terr == nil || terr.Message != `There is no subagent named "nope". Available: Architect, general-purpose, reviewer.` {
		t.Errorf("unknown type with definitions: %+v", terr)
	}
	// A broken definition is named in the error, with the reason.
	bad := writeAgent(t, filepath.Join(e.Root, ".qwen", "agents"), "broken.md", "---\nname: broken\n---\nNo description.\n")
	_, terr = tools.PrepareArgs(task, `{"description":"d","prompt":"p","subagent_type":"broken"}`)
	if terr == nil || !strings.HasPrefix(terr.Message, `There is no subagent named "broken". Available: Architect, general-purpose, reviewer. Definition files left out: `+bad+` (`) ||
		!strings.Contains(terr.Message, `"description" is required`) {
		t.Errorf("unknown type with a broken definition: %+v", terr)
	}
}

// Execute hands the definition to the session's model, streams the run's
// progress as SubagentRun displays, and returns the final reply.
func TestTaskExecuteReturnsTheSubagentsReply(t *testing.T) {
	e := newTestEnv(t, nil)
	task := tools.NewTask(e.Env)
	m := &subagentModel{run: func(_ context.Context, req tools.SubagentRequest, onUpdate func(tools.SubagentRun)) (tools.SubagentResult, error) {
		run := tools.SubagentRun{SubagentName: req.Name, Description: req.Description, Status: tools.SubagentRunning, Turns: 1,
			ToolCalls: []tools.SubagentToolCall{{Name: "ReadFile", Title: "a.go", Status: "completed"}}}
		onUpdate(run)
		return tools.SubagentResult{Text: "x is defined in a.go", Turns: 2, ToolCalls: run.ToolCalls}, nil
	}}
	var outputs []tools.Output
	params, terr := tools.PrepareArgs(task, `{"description":"find x","prompt":"Where is x defined?"}`)
	if terr != nil {
		t.Fatal(terr.Message)
	}
	res, err := tools.Guard(context.Background(), task, &tools.Call{ID: "c47", SessionID: "s", Model: m}, params, func(o tools.Output) { outputs = append(outputs, o) })
	if err != nil || res.Error != nil {
		t.Fatalf("execute: %v %+v", err, res.Error)
	}
	if res.Text() != "x is defined in a.go" {
		t.Errorf("llmContent %q", res.Text())
	}
	reqs := m.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d subagent runs", len(reqs))
	}
	r := reqs[0]
	if r.CallID != "c47" || r.Name != "general-purpose" || r.Description != "find x" || r.Prompt != "Where is x defined?" ||
		r.Tools != nil || r.Model != "" || r.MaxTurns != 50 || !strings.Contains(r.SystemPrompt, "subagent") {
		t.Errorf("request %+v", r)
	}
	if len(outputs) != 2 {
		t.Fatalf("%d live outputs, want the start and one progress update", len(outputs))
	}
	first, ok := outputs[0].Display.(*tools.SubagentRun)
	if !ok || first.Status != tools.SubagentRunning || first.SubagentName != "general-purpose" || first.Description != "find x" {
		t.Errorf("first output %+v", outputs[0])
	}
	if p, ok := outputs[1].Display.(*tools.SubagentRun); !ok || len(p.ToolCalls) != 1 || p.ToolCalls[0].Title != "a.go" {
		t.Errorf("progress output %+v", outputs[1])
	}
	d, ok := res.Display.(*tools.SubagentRun)
	if !ok || d.Status != tools.SubagentCompleted || d.Turns != 2 || d.Result != "x is defined in a.go" || len(d.ToolCalls) != 1 {
		t.Errorf("display %+v", res.Display)
	}
}

// A project definition's tools, model and max_turns reach the request.
func TestTaskPassesTheDefinition(t *testing.T) {
	e := newTestEnv(t, nil)
	writeAgent(t, filepath.Join(e.Root, ".qwen", "agents"), "scout.md", "---\nname: scout\ndescription: Looks around.\ntools: [search_file_content, read_file]\nmodel: small-model\nmax_turns: 3\n---\nYou look around.\n")
	task := tools.NewTask(e.Env)
	m := &subagentModel{run: func(context.Context, tools.SubagentRequest, func(tools.SubagentRun)) (tools.SubagentResult, error) {
		return tools.SubagentResult{Text: "seen"}, nil
	}}
	res := run(t, task, &tools.Call{ID: "c", Model: m}, `{"description":"look","prompt":"p","subagent_type":"SCOUT"}`)
	if res.Error != nil || res.Text() != "seen" {
		t.Fatalf("result %+v", res)
	}
	r := m.requests()[0]
	if r.Name != "scout" || r.SystemPrompt != "You look around." || !reflect.DeepEqual(r.Tools, []string{"search_file_content", "read_file"}) ||
		r.Model != "small-model" || r.MaxTurns != 3 {
		t.Errorf("request %+v", r)
	}
}

func TestTaskMaxTurnsGivesThePartialResult(t *testing.T) {
	e := newTestEnv(t, nil)
	writeAgent(t, filepath.Join(e.Root, ".qwen", "agents"), "brief.md", "---\nname: brief\ndescription: Short.\nmax_turns: 2\n---\nBe brief.\n")
	task := tools.NewTask(e.Env)
	for _, c := range []struct{ last, want string }{
		{"Still looking in pkg/.", "Subagent stopped after reaching the maximum of 2 turns. Partial result:\n\nStill looking in pkg/."},
		{"", "Subagent stopped after reaching the maximum of 2 turns. Partial result:\n\n(none)"},
	} {
		m := &subagentModel{run: func(context.Context, tools.SubagentRequest, func(tools.SubagentRun)) (tools.SubagentResult, error) {
			return tools.SubagentResult{Text: c.last, Turns: 2, MaxTurnsReached: true}, nil
		}}
		res := run(t, task, &tools.Call{ID: "c", Model: m}, `{"description":"d","prompt":"p","subagent_type":"brief"}`)
		if res.Error != nil || res.Text() != c.want {
			t.Errorf("last %q: result %+v", c.last, res)
		}
	}
}

func TestTaskModelFailureIsExecutionFailed(t *testing.T) {
	e := newTestEnv(t, nil)
	task := tools.NewTask(e.Env)
	m := &subagentModel{run: func(context.Context, tools.SubagentRequest, func(tools.SubagentRun)) (tools.SubagentResult, error) {
		return tools.SubagentResult{}, errors.New("the model request failed with status 503: overloaded")
	}}
	res := run(t, task, &tools.Call{ID: "c", Model: m}, `{"description":"d","prompt":"p"}`)
	if res.Error == nil || res.Error.Type != tools.ErrorExecutionFailed || res.Error.Message != "The subagent failed: the model request failed with status 503: overloaded" {
		t.Errorf("result %+v", res.Error)
	}
	res = run(t, task, &tools.Call{ID: "c"}, `{"description":"d","prompt":"p"}`)
	if res.Error == nil || res.Error.Type != tools.ErrorExecutionFailed || res.Error.Message != "The subagent failed: no model is configured." {
		t.Errorf("without a model: %+v", res.Error)
	}
}

// A cancelled turn is a Go error from Execute, whatever the run returned.
func TestTaskCancelledTurnIsAnError(t *testing.T) {
	e := newTestEnv(t, nil)
	task := tools.NewTask(e.Env)
	ctx, cancel := context.WithCancel(context.Background())
	m := &subagentModel{run: func(ctx context.Context, _ tools.SubagentRequest, _ func(tools.SubagentRun)) (tools.SubagentResult, error) {
		cancel()
		<-ctx.Done()
		return tools.SubagentResult{Text: "too late"}, ctx.Err()
	}}
	params, _ := tools.PrepareArgs(task, `{"description":"d","prompt":"p"}`)
	if _, err := tools.Guard(ctx, task, &tools.Call{ID: "c", Model: m}, params, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

// The description lists the subagents and follows the definition files
// from one call to the next.
func TestTaskDescriptionFollowsTheDefinitions(t *testing.T) {
	e := newTestEnv(t, nil)
	task := tools.NewTask(e.Env)
	gp := "\n- **general-purpose**: "
	if d := task.Description(); !strings.HasSuffix(d[:strings.LastIndex(d, gp)], "Available subagents:") || strings.Count(d, "\n- **") != 1 {
		t.Fatalf("description without definitions:\n%s", d)
	}
	dir := filepath.Join(e.Root, ".qwen", "agents")
	p := writeAgent(t, dir, "reviewer.md", "---\nname: reviewer\ndescription: Reviews a change.\n---\nYou review.\n")
	if d := task.Description(); !strings.HasSuffix(d, "\n- **reviewer**: Reviews a change.") || !strings.Contains(d, gp) {
		t.Fatalf("after adding reviewer:\n%s", d)
	}
	writeAgent(t, dir, "reviewer.md", "---\nname: reviewer\ndescription: |\n  Reviews a change\n  for style and bugs.\n---\nYou review.\n")
	if d := task.Description(); !strings.HasSuffix(d, "\n- **reviewer**: Reviews a change for style and bugs.") {
		t.Fatalf("after editing reviewer:\n%s", d)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if d := task.Description(); strings.Contains(d, "reviewer") {
		t.Fatalf("after removing reviewer:\n%s", d)
	}
}
