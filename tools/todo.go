package tools

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/qwen-ls/qwen-ls/workspace"
)

//go:embed todo.md
var todoWriteDescription string

var todoWriteSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "todos": {
      "type": "array",
      "description": "The whole todo list, in order. It replaces the previous list.",
      "items": {
        "type": "object",
        "properties": {
          "id": {
            "type": "string",
            "description": "A short identifier, unique within the list, kept the same for an item across updates."
          },
          "content": {
            "type": "string",
            "minLength": 1,
            "description": "What the item is, as a short imperative sentence."
          },
          "status": {
            "type": "string",
            "enum": ["pending", "in_progress", "completed"]
          }
        },
        "required": ["id", "content", "status"]
      }
    }
  },
  "required": ["todos"]
}`)

// SessionDescriber is implemented by tools whose title depends on the
// session the call belongs to (todo_write: "Create todos" or "Update
// todos"). Describe has no session to go by, so a scheduler that knows the
// session calls DescribeSession instead.
type SessionDescriber interface {
	DescribeSession(sessionID string, params map[string]any) string
}

// TodoWrite is the todo_write tool (tools.md §3.12): it replaces the
// session's todo list, keeps it in <QwenHome>/todos/<sessionId>.json, and
// shows it as a TodoList display (from which the scheduler sends the plan
// update).
type TodoWrite struct {
	Base
	env *Env

	// mu guards sizes: the length of the list each session last wrote
	// through this tool, so the title needs no file read after the first.
	mu    sync.Mutex
	sizes map[string]int
}

// NewTodoWrite returns the todo_write tool.
func NewTodoWrite(env *Env) *TodoWrite {
	return &TodoWrite{env: env, sizes: map[string]int{}, Base: Base{Spec: Spec{
		Name:                 "todo_write",
		DisplayName:          "TodoWrite",
		Description:          strings.TrimSpace(todoWriteDescription),
		Schema:               todoWriteSchema,
		Kind:                 KindThink,
		SkipSchemaValidation: true,
	}}}
}

// The validation messages of tools.md §3.12.
const (
	todoNotArray    = `Argument "todos" must be an array of todo items.`
	todoBlankID     = `Every todo needs a non-empty "id".`
	todoBlankText   = `Every todo needs a non-empty "content".`
	todoBadStatus   = `Every todo needs a "status" of pending, in_progress or completed.`
	todoDuplicateID = `Todo ids must be unique; "%s" appears more than once.`
)

// parseTodos reads and checks the todos argument. The first problem, in
// list order, is reported. A numeric id is taken as its decimal text:
// models write 1 for "1" often enough, and the list means the same.
func parseTodos(params map[string]any) ([]Todo, *ToolError) {
	raw, ok := params["todos"].([]any)
	if !ok {
		return nil, InvalidParams(todoNotArray)
	}
	todos := make([]Todo, 0, len(raw))
	seen := make(map[string]bool, len(raw))
	for _, item := range raw {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, InvalidParams(todoNotArray)
		}
		var id string
		switch v := m["id"].(type) {
		case string:
			id = v
		case json.Number:
			id = v.String()
		}
		if strings.TrimSpace(id) == "" {
			return nil, InvalidParams(todoBlankID)
		}
		content, _ := m["content"].(string)
		if strings.TrimSpace(content) == "" {
			return nil, InvalidParams(todoBlankText)
		}
		status, _ := m["status"].(string)
		switch TodoStatus(status) {
		case todoPending, todoInProgress, todoCompleted:
		default:
			return nil, InvalidParams(todoBadStatus)
		}
		if seen[id] {
			return nil, InvalidParams(fmt.Sprintf(todoDuplicateID, id))
		}
		seen[id] = true
		todos = append(todos, Todo{ID: id, Content: content, Status: TodoStatus(status)})
	}
	return todos, nil
}

// Validate gives the messages of tools.md §3.12 (the schema step is
// skipped for this tool). An empty list is valid: it clears the list.
func (t *TodoWrite) Validate(params map[string]any) *ToolError {
	_, terr := parseTodos(params)
	return terr
}

// Describe is "Create todos" while no session has a list through this tool
// and "Update todos" after. It cannot tell sessions apart; DescribeSession
// can, and the scheduler prefers it.
func (t *TodoWrite) Describe(map[string]any) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, n := range t.sizes {
		if n > 0 {
			return "Update todos"
		}
	}
	return "Create todos"
}

// DescribeSession is "Create todos" when the session has no list yet (none
// stored, or an empty one) and "Update todos" otherwise. A session restored
// by qwen/loadSession has its stored list, so the file decides the first
// time.
func (t *TodoWrite) DescribeSession(sessionID string, _ map[string]any) string {
	t.mu.Lock()
	n, known := t.sizes[sessionID]
	t.mu.Unlock()
	if !known {
		todos, _ := LoadTodos(t.env, sessionID)
		n = len(todos)
	}
	if n > 0 {
		return "Update todos"
	}
	return "Create todos"
}

// Execute stores the whole list and tells the model what it now holds.
func (t *TodoWrite) Execute(ctx context.Context, call *Call, params map[string]any, _ func(Output)) (Result, error) {
	todos, terr := parseTodos(params)
	if terr != nil {
		return Result{Error: terr}, nil
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if err := saveTodos(t.env, call.SessionID, todos); err != nil {
		return ErrorResult(ErrorExecutionFailed, "Could not save the todo list: "+err.Error()), nil
	}
	t.mu.Lock()
	t.sizes[call.SessionID] = len(todos)
	t.mu.Unlock()

	msg, err := todoMessage(todos)
	if err != nil {
		return Result{}, err
	}
	return TextResult(msg, &TodoList{Todos: todos}), nil
}

// todoMessage is the llmContent of tools.md §3.12.
func todoMessage(todos []Todo) (string, error) {
	if len(todos) == 0 {
		return "Todo list cleared.\n\n<system-reminder>\nFor your own tracking (this note is not for the user), the list is now empty.\n</system-reminder>", nil
	}
	var pending, inProgress, completed int
	for _, td := range todos {
		switch td.Status {
		case todoPending:
			pending++
		case todoInProgress:
			inProgress++
		case todoCompleted:
			completed++
		}
	}
	list, err := todoJSON(todos, "")
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Todo list updated (%d items: %d pending, %d in progress, %d completed). Keep using it to track your work and continue with the next item.\n\n<system-reminder>\nFor your own tracking (this note is not for the user), the list now holds:\n%s\n</system-reminder>",
		len(todos), pending, inProgress, completed, list), nil
}

// todoFile is what <QwenHome>/todos/<sessionId>.json holds.
type todoFile struct {
	Todos     []Todo `json:"todos"`
	SessionID string `json:"sessionId"`
}

// todoJSON encodes v compactly (indent "") or with indent, without
// escaping <, > and &: the model and the user read these texts, and
// "\u003c" would only obscure them.
func todoJSON(v any, indent string) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("encode todo list: %w", err)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// todoPath is the file of the session's list. The session id names a file,
// so it must be a plain name.
func todoPath(env *Env, sessionID string) (string, error) {
	if sessionID == "" {
		return "", errors.New("the call belongs to no session")
	}
	if !filepath.IsLocal(sessionID) || strings.ContainsAny(sessionID, `/\`) {
		return "", fmt.Errorf("the session id %q cannot name a file", sessionID)
	}
	return filepath.Join(env.QwenHome, "todos", sessionID+".json"), nil
}

// saveTodos writes the list of the session atomically. The error text is
// the <reason> of "Could not save the todo list: <reason>".
func saveTodos(env *Env, sessionID string, todos []Todo) error {
	p, err := todoPath(env, sessionID)
	if err != nil {
		return err
	}
	if todos == nil {
		todos = []Todo{}
	}
	text, err := todoJSON(todoFile{Todos: todos, SessionID: sessionID}, "  ")
	if err != nil {
		return err
	}
	if err := workspace.WriteFileAtomic(p, []byte(text), 0o600); err != nil {
		return fmt.Errorf("cannot write %s: %s", p, rootCause(err))
	}
	return nil
}

// LoadTodos returns the todo list stored for the session (tools.md §3.12),
// for qwen/loadSession to restore it. A session without a stored list has
// none, and that is no error.
func LoadTodos(env *Env, sessionID string) ([]Todo, error) {
	p, err := todoPath(env, sessionID)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load todo list: %w", err)
	}
	var f todoFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("load todo list %s: %w", p, err)
	}
	return f.Todos, nil
}
