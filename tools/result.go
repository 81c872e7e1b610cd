package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Part is one element of a result's llmContent: text, or inline media
// (tools.md §1.2). Exactly one of the two is meant to be set; InlineData
// wins when both are.
type Part struct {
	Text       string
	InlineData *InlineData
}

// InlineData is media sent to the model: an image, audio, video or a PDF.
type InlineData struct {
	MimeType string `json:"mimeType"`
	// Data is the content, base64-encoded.
	Data string `json:"data"`
	// DisplayName names the attachment for the model (optional).
	DisplayName string `json:"displayName,omitempty"`
}

// TextPart returns a text part.
func TextPart(text string) Part { return Part{Text: text} }

// MarshalJSON encodes {text} or {inlineData}, never both, never neither.
func (p Part) MarshalJSON() ([]byte, error) {
	if p.InlineData != nil {
		return json.Marshal(struct {
			InlineData *InlineData `json:"inlineData"`
		}{p.InlineData})
	}
	return json.Marshal(struct {
		Text string `json:"text"`
	}{p.Text})
}

// UnmarshalJSON decodes {text} or {inlineData}.
func (p *Part) UnmarshalJSON(data []byte) error {
	var w struct {
		Text       string      `json:"text"`
		InlineData *InlineData `json:"inlineData"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("decode tool result part: %w", err)
	}
	*p = Part{Text: w.Text, InlineData: w.InlineData}
	return nil
}

// Result is what a tool's Execute returns (tools.md §1.2).
type Result struct {
	// LLMContent is sent to the model per tools.md §5.5.
	LLMContent []Part
	// Display is shown to the user; nil shows nothing.
	Display Display
	// Error makes the call fail; the model then sees only its message.
	Error *ToolError
}

// TextResult returns a successful result with one text part for the model
// and the given display (which may be nil).
func TextResult(llm string, display Display) Result {
	return Result{LLMContent: []Part{TextPart(llm)}, Display: display}
}

// ErrorResult returns a failed result of type t. Both the model and the user
// see only msg (tools.md §5.5, §5.6), so no content or display is set.
func ErrorResult(t ErrorType, msg string) Result {
	return Result{Error: NewError(t, msg)}
}

// Text joins the text parts of LLMContent with "\n", leaving media out.
func (r Result) Text() string {
	var texts []string
	for _, p := range r.LLMContent {
		if p.InlineData == nil {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

type resultJSON struct {
	LLMContent    []Part          `json:"llmContent"`
	ReturnDisplay json.RawMessage `json:"returnDisplay,omitempty"`
	Error         *ToolError      `json:"error,omitempty"`
}

// MarshalJSON encodes {llmContent, returnDisplay?, error?}.
func (r Result) MarshalJSON() ([]byte, error) {
	w := resultJSON{LLMContent: r.LLMContent, Error: r.Error}
	if w.LLMContent == nil {
		w.LLMContent = []Part{}
	}
	if r.Display != nil {
		d, err := json.Marshal(r.Display)
		if err != nil {
			return nil, fmt.Errorf("encode tool result display: %w", err)
		}
		w.ReturnDisplay = d
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (r *Result) UnmarshalJSON(data []byte) error {
	var w resultJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("decode tool result: %w", err)
	}
	d, err := unmarshalDisplay(w.ReturnDisplay)
	if err != nil {
		return err
	}
	*r = Result{LLMContent: w.LLMContent, Display: d, Error: w.Error}
	return nil
}

// Display is a result's returnDisplay (tools.md §1.2): one of Markdown,
// *FileDiff, *TodoList, *PlanSummary or *SubagentRun, or *TerminalDisplay
// for a command run in the editor's own terminal. The set is closed so
// that the editor side can convert every case (tools.md §5.6).
type Display interface {
	isDisplay()
}

// Markdown is a display of Markdown text; JSON is a plain string.
type Markdown string

// FileDiff shows a change to one file. OriginalContent is nil for a new file
// and then encodes as null.
type FileDiff struct {
	FileName        string  `json:"fileName"`
	FilePath        string  `json:"filePath"`
	FileDiff        string  `json:"fileDiff"`
	OriginalContent *string `json:"originalContent"`
	NewContent      string  `json:"newContent"`
	// Review is how the person decided the proposal hunk by hunk, when
	// they did.
	Review *ReviewReport `json:"review,omitempty"`
}

// TodoStatus is the state of one todo item.
type TodoStatus string

// The todo states of tools.md §3.12.
const (
	todoPending    TodoStatus = "pending"
	todoInProgress TodoStatus = "in_progress"
	todoCompleted  TodoStatus = "completed"
)

// Todo is one entry of a TodoList.
type Todo struct {
	ID      string     `json:"id"`
	Content string     `json:"content"`
	Status  TodoStatus `json:"status"`
}

// TodoList shows the whole todo list after todo_write.
type TodoList struct {
	Todos []Todo `json:"todos"`
}

// MarshalJSON keeps an empty list as [] rather than null.
func (t *TodoList) MarshalJSON() ([]byte, error) {
	todos := t.Todos
	if todos == nil {
		todos = []Todo{}
	}
	return json.Marshal(struct {
		Todos []Todo `json:"todos"`
	}{todos})
}

// PlanSummary shows the outcome of exit_plan_mode.
type PlanSummary struct {
	Message  string `json:"message"`
	Plan     string `json:"plan"`
	Rejected bool   `json:"rejected,omitempty"`
}

// SubagentStatus is the state of a subagent run.
type SubagentStatus string

// The states of tools.md §1.2.
const (
	SubagentRunning   SubagentStatus = "running"
	subagentCompleted SubagentStatus = "completed"
	subagentFailed    SubagentStatus = "failed"
	subagentCancelled SubagentStatus = "cancelled"
)

// SubagentToolCall is one call a subagent made, as its run shows it.
type SubagentToolCall struct {
	Name   string `json:"name"`
	Title  string `json:"title"`
	Status string `json:"status"`
}

// SubagentRun shows the progress and the outcome of a task call.
type SubagentRun struct {
	SubagentName string             `json:"subagentName"`
	Description  string             `json:"description"`
	Status       SubagentStatus     `json:"status"`
	ToolCalls    []SubagentToolCall `json:"toolCalls"`
	Result       string             `json:"result,omitempty"`
	Turns        int                `json:"turns"`
}

// MarshalJSON keeps an empty call list as [] rather than null.
func (s *SubagentRun) MarshalJSON() ([]byte, error) {
	type plain SubagentRun
	c := plain(*s)
	if c.ToolCalls == nil {
		c.ToolCalls = []SubagentToolCall{}
	}
	return json.Marshal(c)
}

func (Markdown) isDisplay()     {}
func (*FileDiff) isDisplay()    {}
func (*TodoList) isDisplay()    {}
func (*PlanSummary) isDisplay() {}
func (*SubagentRun) isDisplay() {}

// unmarshalDisplay decodes a returnDisplay: a JSON string is Markdown; an
// object is told apart by its distinctive key (fileDiff, todos, subagentName,
// plan). Empty input and null give a nil Display.
func unmarshalDisplay(data []byte) (Display, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || bytes.Equal(data, []byte("null")) {
		return nil, nil
	}
	if data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, fmt.Errorf("decode markdown display: %w", err)
		}
		return Markdown(s), nil
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		return nil, fmt.Errorf("decode display: %w", err)
	}
	var d Display
	switch {
	case has(keys, "fileDiff"):
		d = &FileDiff{}
	case has(keys, "todos"):
		d = &TodoList{}
	case has(keys, "subagentName"):
		d = &SubagentRun{}
	case has(keys, "plan"):
		d = &PlanSummary{}
	case has(keys, "terminalId"):
		d = &TerminalDisplay{}
	default:
		return nil, errors.New("decode display: unknown display object")
	}
	if err := json.Unmarshal(data, d); err != nil {
		return nil, fmt.Errorf("decode display: %w", err)
	}
	return d, nil
}

func has(m map[string]json.RawMessage, k string) bool {
	_, ok := m[k]
	return ok
}
