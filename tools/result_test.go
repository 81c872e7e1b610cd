package tools_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
)

func ptr(s string) *string { return &s }

func TestResultJSON(t *testing.T) {
	tests := []struct {
		name string
		res  tools.Result
		want string
	}{
		{
			name: "text and markdown",
			res:  tools.TextResult("hello", tools.Markdown("**hi**")),
			want: `{"llmContent":[{"text":"hello"}],"returnDisplay":"**hi**"}`,
		},
		{
			name: "no content",
			res:  tools.Result{},
			want: `{"llmContent":[]}`,
		},
		{
			name: "empty text part stays a text part",
			res:  tools.Result{LLMContent: []tools.Part{{}}},
			want: `{"llmContent":[{"text":""}]}`,
		},
		{
			name: "inline data",
			res: tools.Result{LLMContent: []tools.Part{
				tools.TextPart("see"),
				{InlineData: &tools.InlineData{MimeType: "image/png", Data: "iVBORw0KGgo=", DisplayName: "i.png"}},
			}},
			want: `{"llmContent":[{"text":"see"},{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo=","displayName":"i.png"}}]}`,
		},
		{
			name: "error",
			res:  tools.ErrorResult(tools.ErrorFileNotFound, "W/nope.txt does not exist."),
			want: `{"llmContent":[],"error":{"message":"W/nope.txt does not exist.","type":"file_not_found"}}`,
		},
		{
			name: "file diff of a new file",
			res: tools.Result{Display: &tools.FileDiff{
				FileName: "a.txt", FilePath: "/w/a.txt", FileDiff: "--- a.txt\tOriginal\n", NewContent: "x",
			}},
			want: `{"llmContent":[],"returnDisplay":{"fileName":"a.txt","filePath":"/w/a.txt","fileDiff":"--- a.txt\tOriginal\n","originalContent":null,"newContent":"x"}}`,
		},
		{
			name: "file diff of an existing file",
			res: tools.Result{Display: &tools.FileDiff{
				FileName: "a.txt", FilePath: "/w/a.txt", FileDiff: "d", OriginalContent: ptr("old"), NewContent: "new",
			}},
			want: `{"llmContent":[],"returnDisplay":{"fileName":"a.txt","filePath":"/w/a.txt","fileDiff":"d","originalContent":"old","newContent":"new"}}`,
		},
		{
			name: "empty todo list",
			res:  tools.Result{Display: &tools.TodoList{}},
			want: `{"llmContent":[],"returnDisplay":{"todos":[]}}`,
		},
		{
			name: "todo list",
			res: tools.Result{Display: &tools.TodoList{Todos: []tools.Todo{
				{ID: "1", Content: "read", Status: tools.TodoInProgress},
			}}},
			want: `{"llmContent":[],"returnDisplay":{"todos":[{"id":"1","content":"read","status":"in_progress"}]}}`,
		},
		{
			name: "approved plan",
			res:  tools.Result{Display: &tools.PlanSummary{Message: "User approved the plan.", Plan: "1. x"}},
			want: `{"llmContent":[],"returnDisplay":{"message":"User approved the plan.","plan":"1. x"}}`,
		},
		{
			name: "rejected plan",
			res:  tools.Result{Display: &tools.PlanSummary{Message: "m", Plan: "p", Rejected: true}},
			want: `{"llmContent":[],"returnDisplay":{"message":"m","plan":"p","rejected":true}}`,
		},
		{
			name: "subagent run",
			res: tools.Result{Display: &tools.SubagentRun{
				SubagentName: "general-purpose", Description: "find x", Status: tools.SubagentRunning, Turns: 1,
			}},
			want: `{"llmContent":[],"returnDisplay":{"subagentName":"general-purpose","description":"find x","status":"running","toolCalls":[],"turns":1}}`,
		},
		{
			name: "finished subagent run",
			res: tools.Result{Display: &tools.SubagentRun{
				SubagentName: "g", Description: "d", Status: tools.SubagentCompleted,
				ToolCalls: []tools.SubagentToolCall{{Name: "read_file", Title: "a.go", Status: "success"}},
				Result:    "done", Turns: 2,
			}},
			want: `{"llmContent":[],"returnDisplay":{"subagentName":"g","description":"d","status":"completed","toolCalls":[{"name":"read_file","title":"a.go","status":"success"}],"result":"done","turns":2}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.res)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("marshal\n got: %s\nwant: %s", b, tt.want)
			}
			var back tools.Result
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("unmarshal: %v", err)
			}
			b2, _ := json.Marshal(back)
			if string(b2) != tt.want {
				t.Errorf("round trip\n got: %s\nwant: %s", b2, tt.want)
			}
			if tt.res.Display != nil && reflect.TypeOf(back.Display) != reflect.TypeOf(tt.res.Display) {
				t.Errorf("display decoded as %T, want %T", back.Display, tt.res.Display)
			}
		})
	}
}

func TestUnmarshalDisplayRejectsUnknownObjects(t *testing.T) {
	if _, err := tools.UnmarshalDisplay([]byte(`{"what":1}`)); err == nil {
		t.Error("no error for an unknown display")
	}
	if d, err := tools.UnmarshalDisplay([]byte(`null`)); d != nil || err != nil {
		t.Errorf("null gave %v, %v", d, err)
	}
}

func TestResultText(t *testing.T) {
	r := tools.Result{LLMContent: []tools.Part{
		tools.TextPart("a"),
		{InlineData: &tools.InlineData{MimeType: "image/png", Data: "AA=="}},
		tools.TextPart("b"),
	}}
	if r.Text() != "a\nb" {
		t.Errorf("Text() = %q", r.Text())
	}
}
