package tools_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
)

var updateMisc = flag.Bool("update-misc", false, "rewrite the golden declarations of save_memory, todo_write and exit_plan_mode")

// The tool-level part of tools.md §8 cases 40 (exit_plan_mode), 45 and 46.
// The scheduler's part (the prompt, the mode switch, current_mode_update,
// the plan session update built from the TodoList display, the next
// session's system prompt) belongs to the session package; the comments
// say where.

// Case 40, exit_plan_mode answered proceed_always: the tool asks with a
// plan confirmation, and once the session switched to auto-edit (the
// scheduler sets Call.Mode and sends current_mode_update) the model reads
// the approval text naming that mode.
func TestCase40_ExitPlanModeProceedAlways(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewExitPlanMode(e.Env)
	if tool.Kind().ReadOnly() {
		t.Error("exit_plan_mode must not run in a parallel group")
	}
	plan := "1. Add the flag\n2. Test it"
	call := &tools.Call{ID: "c40", SessionID: "s40", Name: "exit_plan_mode"}
	params, terr := tools.PrepareArgs(tool, argsJSON(t, map[string]any{"plan": plan}))
	if terr != nil {
		t.Fatal(terr.Message)
	}
	conf, terr := tools.GuardConfirm(t.Context(), tool, call, params)
	if terr != nil {
		t.Fatal(terr.Message)
	}
	if conf.Type() != tools.ConfirmPlan || conf.Title != "Would you like to proceed?" || conf.Details.(*tools.PlanConfirmation).Plan != plan {
		t.Fatalf("confirmation %+v", conf)
	}
	call.Confirmation = conf
	call.Mode = "auto-edit" // proceed_always
	res, err := tools.Guard(t.Context(), tool, call, params, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Text(); res.Error != nil || got != "The user approved your plan, and the approval mode is now auto-edit. Carry out the plan; if you keep a todo list, update it first." {
		t.Errorf("approval text %q %+v", got, res.Error)
	}
}

// Case 45: the accepted review writes the global memory file. The next
// session sees the fact because the session loads <QwenHome>/QWEN.md into
// its system prompt at start (tools.md §3.11, memory loading).
func TestCase45_SaveMemoryGlobal(t *testing.T) {
	e := memoryEnv(t, nil)
	tool := tools.NewSaveMemory(e.Env)
	call := newEditCall(nil)
	params, c := mustProposeChange(t, tool, call, `{"fact":"I like tabs"}`)
	if c.FilePath != filepath.Join(e.Home, "QWEN.md") {
		t.Fatalf("proposal for %s", c.FilePath)
	}
	res := executeChange(t, tool, call, params)
	if got := wantApplied(t, res); got != `Saved to global memory: "I like tabs"` {
		t.Errorf("message %q", got)
	}
	if got := diskText(t, filepath.Join(e.Home, "QWEN.md")); !strings.HasSuffix(got, "## Qwen Added Memories\n- I like tabs\n") {
		t.Errorf("~/.qwen/QWEN.md = %q", got)
	}
}

// Case 46: duplicate ids are refused with the tool's own message; a valid
// list is stored under ~/.qwen/todos and shown as a TodoList, from which
// the scheduler sends the plan update with every entry.
func TestCase46_TodoWrite(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewTodoWrite(e.Env)
	res := run(t, tool, todoCall("s46"), `{"todos":[{"id":"a","content":"x","status":"pending"},{"id":"a","content":"y","status":"pending"}]}`)
	wantEditError(t, res.Error, tools.ErrorInvalidToolParams, `Todo ids must be unique; "a" appears more than once.`)
	if _, err := os.Stat(filepath.Join(e.Home, "todos", "s46.json")); !os.IsNotExist(err) {
		t.Errorf("a refused list was stored: %v", err)
	}

	res = run(t, tool, todoCall("s46"), `{"todos":[{"id":"a","content":"x","status":"completed"},{"id":"b","content":"y","status":"in_progress"},{"id":"c","content":"z","status":"pending"}]}`)
	if res.Error != nil {
		t.Fatalf("error %s: %s", res.Error.Type, res.Error.Message)
	}
	d, ok := res.Display.(*tools.TodoList)
	if !ok || len(d.Todos) != 3 || d.Todos[0].Content != "x" || d.Todos[1].Status != tools.TodoInProgress || d.Todos[2].ID != "c" {
		t.Errorf("display %+v", res.Display)
	}
	stored, err := tools.LoadTodos(e.Env, "s46")
	if err != nil || len(stored) != 3 {
		t.Errorf("~/.qwen/todos/s46.json holds %+v, %v", stored, err)
	}
	if got := diskText(t, filepath.Join(e.Home, "todos", "s46.json")); !strings.Contains(got, `"sessionId": "s46"`) {
		t.Errorf("stored file %s", got)
	}
}
