package tools_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/toolstest"
)

func todoCall(session string) *tools.Call {
	return &tools.Call{ID: "call_t", SessionID: session, Name: "todo_write"}
}

func TestTodoWriteDeclarationGolden(t *testing.T) {
	e := newTestEnv(t, nil)
	toolstest.Golden(t, "declarations/todo_write.json", declarationJSON(t, tools.NewTodoWrite(e.Env)), *updateMisc)
}

func TestTodoWriteSpec(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewTodoWrite(e.Env)
	if tool.Name() != "todo_write" || tool.DisplayName() != "TodoWrite" || tool.Kind() != tools.KindThink ||
		len(tool.Aliases()) != 0 || !tool.SkipSchemaValidation() || tool.Source() != tools.SourceBuiltin {
		t.Errorf("static description is wrong")
	}
	var _ tools.SessionDescriber = tool
	if conf, terr := tool.ShouldConfirm(context.Background(), todoCall("s"), nil); conf != nil || terr != nil {
		t.Errorf("todo_write asks for %+v, %+v", conf, terr)
	}
}

func TestTodoWriteValidate(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewTodoWrite(e.Env)
	const (
		notArray = `Argument "todos" must be an array of todo items.`
		noID     = `Every todo needs a non-empty "id".`
		noText   = `Every todo needs a non-empty "content".`
		badState = `Every todo needs a "status" of pending, in_progress or completed.`
	)
	for _, tt := range []struct{ raw, want string }{
		{`{}`, notArray},
		{`{"todos": null}`, notArray},
		{`{"todos": "[]"}`, notArray},
		{`{"todos": {"id": "a"}}`, notArray},
		{`{"todos": [1]}`, notArray},
		{`{"todos": [{"content": "x", "status": "pending"}]}`, noID},
		{`{"todos": [{"id": " ", "content": "x", "status": "pending"}]}`, noID},
		{`{"todos": [{"id": true, "content": "x", "status": "pending"}]}`, noID},
		{`{"todos": [{"id": "a", "status": "pending"}]}`, noText},
		{`{"todos": [{"id": "a", "content": "\t", "status": "pending"}]}`, noText},
		{`{"todos": [{"id": "a", "content": "x"}]}`, badState},
		{`{"todos": [{"id": "a", "content": "x", "status": "done"}]}`, badState},
		{`{"todos": [{"id": "a", "content": "x", "status": "Pending"}]}`, badState},
		{`{"todos": [{"id": "a", "content": "x", "status": "pending"}, {"id": "b", "content": "y", "status": "pending"}, {"id": "a", "content": "z", "status": "completed"}]}`,
			`Todo ids must be unique; "a" appears more than once.`},
		// The first problem in list order is the one reported.
		{`{"todos": [{"id": "a", "content": "", "status": "x"}, {"id": "", "content": "y", "status": "pending"}]}`, noText},
	} {
		_, terr := tools.PrepareArgs(tool, tt.raw)
		if terr == nil || terr.Type != tools.ErrorInvalidToolParams || terr.Message != tt.want {
			t.Errorf("%s:\n got %+v\nwant %q", tt.raw, terr, tt.want)
		}
	}
	for _, raw := range []string{
		`{"todos": []}`,
		`{"todos": [{"id": "1", "content": "x", "status": "in_progress", "priority": "high"}]}`,
		`{"todos": [{"id": 1, "content": "x", "status": "completed"}]}`,
	} {
		if _, terr := tools.PrepareArgs(tool, raw); terr != nil {
			t.Errorf("%s: %s", raw, terr.Message)
		}
	}
}

func TestTodoWriteExecute(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewTodoWrite(e.Env)
	res := run(t, tool, todoCall("sess-1"), `{"todos": [
		{"id": "1", "content": "Read <main.go> & plan", "status": "completed", "priority": "high"},
		{"status": "in_progress", "content": "Fix \"the\" bug", "id": "2"},
		{"id": 3, "content": "Run tests", "status": "pending"},
		{"id": "4", "content": "Write docs", "status": "pending"}
	]}`)
	if res.Error != nil {
		t.Fatalf("error %s: %s", res.Error.Type, res.Error.Message)
	}
	want := "Todo list updated (4 items: 2 pending, 1 in progress, 1 completed). Keep using it to track your work and continue with the next item.\n\n<system-reminder>\nFor your own tracking (this note is not for the user), the list now holds:\n" +
		`[{"id":"1","content":"Read <main.go> & plan","status":"completed"},{"id":"2","content":"Fix \"the\" bug","status":"in_progress"},{"id":"3","content":"Run tests","status":"pending"},{"id":"4","content":"Write docs","status":"pending"}]` +
		"\n</system-reminder>"
	if got := res.Text(); got != want {
		t.Errorf("llmContent\n got %q\nwant %q", got, want)
	}
	todos := []tools.Todo{
		{ID: "1", Content: "Read <main.go> & plan", Status: tools.TodoCompleted},
		{ID: "2", Content: `Fix "the" bug`, Status: tools.TodoInProgress},
		{ID: "3", Content: "Run tests", Status: tools.TodoPending},
		{ID: "4", Content: "Write docs", Status: tools.TodoPending},
	}
	if d, ok := res.Display.(*tools.TodoList); !ok || !reflect.DeepEqual(d.Todos, todos) {
		t.Errorf("display %+v", res.Display)
	}

	file := filepath.Join(e.Home, "todos", "sess-1.json")
	wantFile := `{
  "todos": [
    {
      "id": "1",
      "content": "Read <main.go> & plan",
      "status": "completed"
    },
    {
      "id": "2",
      "content": "Fix \"the\" bug",
      "status": "in_progress"
    },
    {
      "id": "3",
      "content": "Run tests",
      "status": "pending"
    },
    {
      "id": "4",
      "content": "Write docs",
      "status": "pending"
    }
  ],
  "sessionId": "sess-1"
}`
	if got := diskText(t, file); got != wantFile {
		t.Errorf("stored file\n got %s\nwant %s", got, wantFile)
	}
	if got, err := tools.LoadTodos(e.Env, "sess-1"); err != nil || !reflect.DeepEqual(got, todos) {
		t.Errorf("LoadTodos = %+v, %v", got, err)
	}

	// The whole list is replaced, and an empty one clears it.
	res = run(t, tool, todoCall("sess-1"), `{"todos": []}`)
	wantClear := "Todo list cleared.\n\n<system-reminder>\nFor your own tracking (this note is not for the user), the list is now empty.\n</system-reminder>"
	if got := res.Text(); res.Error != nil || got != wantClear {
		t.Errorf("cleared: %q %+v", got, res.Error)
	}
	if d, ok := res.Display.(*tools.TodoList); !ok || len(d.Todos) != 0 {
		t.Errorf("display %+v", res.Display)
	}
	if got := diskText(t, file); got != "{\n  \"todos\": [],\n  \"sessionId\": \"sess-1\"\n}" {
		t.Errorf("stored file %q", got)
	}
	if got, err := tools.LoadTodos(e.Env, "sess-1"); err != nil || len(got) != 0 {
		t.Errorf("LoadTodos = %+v, %v", got, err)
	}
}

func TestTodoWriteCounts(t *testing.T) {
	e := newTestEnv(t, nil)
	res := run(t, tools.NewTodoWrite(e.Env), todoCall("s"), `{"todos": [{"id": "a", "content": "x", "status": "in_progress"}]}`)
	if got := res.Text(); !strings.HasPrefix(got, "Todo list updated (1 items: 0 pending, 1 in progress, 0 completed).") {
		t.Errorf("llmContent %q", got)
	}
}

func TestTodoWriteDescribe(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewTodoWrite(e.Env)
	list := `{"todos": [{"id": "a", "content": "x", "status": "pending"}]}`
	if got := tool.DescribeSession("s1", nil); got != "Create todos" {
		t.Errorf("a new session: %q", got)
	}
	if got := tool.Describe(nil); got != "Create todos" {
		t.Errorf("no list anywhere: %q", got)
	}
	run(t, tool, todoCall("s1"), list)
	if got := tool.DescribeSession("s1", nil); got != "Update todos" {
		t.Errorf("after a write: %q", got)
	}
	if got := tool.DescribeSession("s2", nil); got != "Create todos" {
		t.Errorf("another session: %q", got)
	}
	if got := tool.Describe(nil); got != "Update todos" {
		t.Errorf("without a session, after a write: %q", got)
	}
	run(t, tool, todoCall("s1"), `{"todos": []}`)
	if got := tool.DescribeSession("s1", nil); got != "Create todos" {
		t.Errorf("after clearing: %q", got)
	}

	// A restored session's stored list counts (a new tool, as after a
	// restart).
	run(t, tool, todoCall("s3"), list)
	if got := tools.NewTodoWrite(e.Env).DescribeSession("s3", nil); got != "Update todos" {
		t.Errorf("a stored list: %q", got)
	}
	// Through the guard, as the scheduler titles a call.
	if got := tools.GuardDescribe(tools.NewTodoWrite(e.Env), map[string]any{"todos": []any{}}); got != "Create todos" {
		t.Errorf("GuardDescribe %q", got)
	}
}

func TestTodoWriteStorageFailure(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewTodoWrite(e.Env)
	list := `{"todos": [{"id": "a", "content": "x", "status": "pending"}]}`

	// ~/.qwen/todos is a file.
	if err := os.MkdirAll(e.Home, 0o755); err != nil {
		t.Fatal(err)
	}
	todos := filepath.Join(e.Home, "todos")
	if err := os.WriteFile(todos, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := run(t, tool, todoCall("s"), list)
	wantEditError(t, res.Error, tools.ErrorExecutionFailed,
		"Could not save the todo list: cannot write "+filepath.Join(todos, "s.json")+": not a directory")
	if got := tool.DescribeSession("s", nil); got != "Create todos" {
		t.Errorf("a failed write counts as a list: %q", got)
	}

	for _, tt := range []struct{ session, reason string }{
		{"", "the call belongs to no session"},
		{"../x", `the session id "../x" cannot name a file`},
		{"a/b", `the session id "a/b" cannot name a file`},
	} {
		res := run(t, tool, todoCall(tt.session), list)
		wantEditError(t, res.Error, tools.ErrorExecutionFailed, "Could not save the todo list: "+tt.reason)
	}
}

func TestLoadTodos(t *testing.T) {
	e := newTestEnv(t, nil)
	if got, err := tools.LoadTodos(e.Env, "none"); got != nil || err != nil {
		t.Errorf("no stored list: %v, %v", got, err)
	}
	if _, err := tools.LoadTodos(e.Env, "../x"); err == nil {
		t.Error("a session id with a path was accepted")
	}
	p := filepath.Join(e.Home, "todos", "bad.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := tools.LoadTodos(e.Env, "bad"); err == nil {
		t.Error("a broken file was loaded")
	}
}

// Sessions write and title their lists at the same time (run with -race).
func TestTodoWriteConcurrentSessions(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewTodoWrite(e.Env)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			session := fmt.Sprintf("s%d", i)
			raw := fmt.Sprintf(`{"todos": [{"id": "a", "content": "item %d", "status": "pending"}]}`, i)
			params, terr := tools.PrepareArgs(tool, raw)
			if terr != nil {
				t.Error(terr.Message)
				return
			}
			_ = tool.DescribeSession(session, params)
			_ = tool.Describe(params)
			res, err := tools.Guard(context.Background(), tool, todoCall(session), params, nil)
			if err != nil || res.Error != nil {
				t.Errorf("%s: %v %+v", session, err, res.Error)
			}
		}()
	}
	wg.Wait()
	for i := range 8 {
		got, err := tools.LoadTodos(e.Env, fmt.Sprintf("s%d", i))
		if err != nil || len(got) != 1 || got[0].Content != fmt.Sprintf("item %d", i) {
			t.Errorf("s%d: %+v, %v", i, got, err)
		}
		if d := tool.DescribeSession(fmt.Sprintf("s%d", i), nil); d != "Update todos" {
			t.Errorf("s%d: %q", i, d)
		}
	}
}

func TestTodoWriteCancelled(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewTodoWrite(e.Env)
	params, terr := tools.PrepareArgs(tool, `{"todos": []}`)
	if terr != nil {
		t.Fatal(terr.Message)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tools.Guard(ctx, tool, todoCall("s"), params, nil); err == nil {
		t.Error("a cancelled call ran")
	}
	if _, err := os.Stat(filepath.Join(e.Home, "todos", "s.json")); !os.IsNotExist(err) {
		t.Errorf("a cancelled call stored its list: %v", err)
	}
}
