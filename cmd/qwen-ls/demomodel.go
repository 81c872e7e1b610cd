package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// demoTurn is one scripted answer of the demo's model: some text, at most
// one tool call, and the token counts it reports.
type demoTurn struct {
	text               string
	tool, args         string
	prompt, completion int
}

// demoScript is the demo's conversation; root is the sample workspace.
func demoScript(root string) []demoTurn {
	args := func(kv ...string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	return []demoTurn{
		{text: "I'll start with the file you have open.", tool: "read_file",
			args: args("absolute_path", root+"/greet/greet.go"), prompt: 1450, completion: 40},
		{text: "Your unsaved TODO asks main to greet the team. Let me find who calls Greet.", tool: "grep_search",
			args: args("pattern", `Greet\(`, "path", root), prompt: 1620, completion: 45},
		{tool: "read_file", args: args("absolute_path", root+"/main.go"), prompt: 1750, completion: 30},
		{text: "main.go is the only caller. Changing its argument:", tool: "edit",
			args: args("file_path", root+"/main.go", "old_string", `greet.Greet("world")`, "new_string", `greet.Greet("team")`), prompt: 1900, completion: 60},
		{text: "Done. `main.go` now calls `greet.Greet(\"team\")`, as the TODO in your unsaved\n" +
			"`greet/greet.go` asked. `Greet` has no other callers. The TODO comment itself\n" +
			"is still in your buffer; delete it when you save.", prompt: 2050, completion: 70},
	}
}

// demoRequest is what the demo keeps of each chat request it was sent.
type demoRequest struct {
	Stream   bool              `json:"stream"`
	Tools    []json.RawMessage `json:"tools"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
}

// demoModel is the demo's model: a server on 127.0.0.1 that speaks just
// enough of the OpenAI chat-completions protocol (streamed, as qwen-ls
// asks for it) to play its turns in order, and keeps what it was sent.
type demoModel struct {
	// URL is the base URL, ending in /v1.
	URL  string
	srv  *http.Server
	done chan struct{}

	mu    sync.Mutex
	turns []demoTurn
	reqs  []demoRequest
}

func startDemoModel(turns []demoTurn) (*demoModel, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	m := &demoModel{URL: "http://" + ln.Addr().String() + "/v1", turns: turns, done: make(chan struct{})}
	m.srv = &http.Server{Handler: http.HandlerFunc(m.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(m.done)
		_ = m.srv.Serve(ln)
	}()
	return m, nil
}

func (m *demoModel) Close() {
	_ = m.srv.Close()
	<-m.done
}

// Requests returns the chat requests received so far.
func (m *demoModel) Requests() []demoRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]demoRequest(nil), m.reqs...)
}

func (m *demoModel) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"the demo model answers only chat completions"}}`, http.StatusNotFound)
		return
	}
	var req demoRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !req.Stream {
		http.Error(w, `{"error":{"message":"the demo model answers only streamed JSON requests"}}`, http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	n := len(m.reqs)
	var turn demoTurn
	ok := len(m.turns) > 0
	if ok {
		turn, m.turns = m.turns[0], m.turns[1:]
	}
	m.mu.Unlock()
	if !ok {
		http.Error(w, `{"error":{"message":"the demo's script has ended"}}`, http.StatusInternalServerError)
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	send := func(choice map[string]any, usage map[string]any) {
		chunk := map[string]any{"id": fmt.Sprintf("demo-%d", n), "object": "chat.completion.chunk", "created": 1, "model": "scripted-demo", "choices": []any{}}
		if choice != nil {
			choice["index"] = 0
			chunk["choices"] = []any{choice}
		}
		if usage != nil {
			chunk["usage"] = usage
		}
		data, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", data)
	}
	send(map[string]any{"delta": map[string]any{"role": "assistant", "content": turn.text}}, nil)
	finish := "stop"
	if turn.tool != "" {
		finish = "tool_calls"
		call := map[string]any{"index": 0, "id": fmt.Sprintf("call_%d", n), "type": "function",
			"function": map[string]any{"name": turn.tool, "arguments": turn.args}}
		send(map[string]any{"delta": map[string]any{"tool_calls": []any{call}}}, nil)
	}
	send(map[string]any{"delta": map[string]any{}, "finish_reason": finish}, nil)
	send(nil, map[string]any{"prompt_tokens": turn.prompt, "completion_tokens": turn.completion, "total_tokens": turn.prompt + turn.completion})
	io.WriteString(w, "data: [DONE]\n\n")
}

// toolMessageFor finds the tool message answering the first call of the
// named tool in the recorded requests.
func toolMessageFor(reqs []demoRequest, tool string) string {
	for _, r := range reqs {
		ids := map[string]bool{}
		for _, msg := range r.Messages {
			for _, tc := range msg.ToolCalls {
				if tc.Function.Name == tool {
					ids[tc.ID] = true
				}
			}
			if msg.Role == "tool" && ids[msg.ToolCallID] {
				var text string
				_ = json.Unmarshal(msg.Content, &text)
				return text
			}
		}
	}
	return ""
}
