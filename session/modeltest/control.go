package modeltest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// Control endpoints let a test in another process (an editor's Lua or
// TypeScript test) script the model and read back what it was sent:
//
//	POST /_control/script    body: a script (see ParseScript); ?reset=1
//	                         drops the responses not used yet first.
//	                         Query parameters other than reset are
//	                         variables, added to the server's Vars.
//	GET  /_control/requests  every chat request so far, as a JSON array of
//	                         {model, messages: [{role, content, tool_call_id,
//	                         tool_calls}], tools: [name]}; content is the
//	                         message's text.
//	GET  /_control/remaining how many scripted responses are unused.
//
// They answer only on loopback, like the rest of the server.

// ControlRequest is one recorded request as /_control/requests shows it.
type ControlRequest struct {
	Model    string           `json:"model"`
	Messages []ControlMessage `json:"messages"`
	Tools    []string         `json:"tools"`
}

// ControlMessage is a chat message with its content flattened to text.
type ControlMessage struct {
	Role       string            `json:"role"`
	Content    string            `json:"content"`
	ToolCallID string            `json:"tool_call_id,omitempty"`
	ToolCalls  []ControlToolCall `json:"tool_calls,omitempty"`
}

// ControlToolCall is a tool call the client echoed back in history.
type ControlToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// SetVars sets the variables that scripts posted to /_control/script are
// expanded with.
func (s *Server) SetVars(vars map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vars = map[string]string{}
	for k, v := range vars {
		s.vars[k] = v
	}
}

// Summaries returns the recorded requests in their control form.
func (s *Server) Summaries() []ControlRequest {
	reqs := s.Requests()
	out := make([]ControlRequest, 0, len(reqs))
	for _, r := range reqs {
		c := ControlRequest{Model: r.Model, Tools: r.Tools, Messages: []ControlMessage{}}
		if c.Tools == nil {
			c.Tools = []string{}
		}
		for _, m := range r.Messages {
			cm := ControlMessage{Role: m.Role, Content: m.Text(), ToolCallID: m.ToolCallID}
			for _, tc := range m.ToolCalls {
				cm.ToolCalls = append(cm.ToolCalls, ControlToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
			}
			c.Messages = append(c.Messages, cm)
		}
		out = append(out, c)
	}
	return out
}

func (s *Server) control(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch strings.TrimPrefix(r.URL.Path, "/_control/") {
	case "script":
		if r.Method != http.MethodPost {
			http.Error(w, `{"error":"POST a script"}`, http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			http.Error(w, `{"error":"read body"}`, http.StatusBadRequest)
			return
		}
		q := r.URL.Query()
		s.mu.Lock()
		vars := map[string]string{}
		for k, v := range s.vars {
			vars[k] = v
		}
		s.mu.Unlock()
		for k, v := range q {
			if k != "reset" && len(v) > 0 {
				vars[k] = v[0]
			}
		}
		rs, err := ParseScript(body, vars)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		s.mu.Lock()
		if q.Get("reset") != "" {
			s.script = nil
			s.requests = nil
		}
		s.script = append(s.script, rs...)
		n := len(s.script)
		s.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]int{"remaining": n})
	case "requests":
		_ = json.NewEncoder(w).Encode(s.Summaries())
	case "remaining":
		_ = json.NewEncoder(w).Encode(map[string]int{"remaining": s.Remaining()})
	default:
		http.Error(w, `{"error":"unknown control endpoint"}`, http.StatusNotFound)
	}
}
