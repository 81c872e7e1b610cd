package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// This file writes a request: the chat-completions body with its
// messages, parts and tools, and the arguments the history sends for a
// call (wire_answer.go reads the answer).
//
// The chat-completions request body is encoded here rather than through
// the SDK's parameter types: the SDK walks every message and every tool
// schema by reflection on each request, which was the largest share of
// the server's own cost per tool round trip. The SDK still does the
// transport, the SSE decoding and the errors.

type wireRequest struct {
	Model         string          `json:"model"`
	Messages      []wireMessage   `json:"messages"`
	Stream        bool            `json:"stream,omitempty"`
	StreamOptions *wireStreamOpts `json:"stream_options,omitempty"`
}

type wireStreamOpts struct {
	IncludeUsage bool `json:"include_usage"`
}

type wireMessage struct {
	Role string `json:"role"`
	// Content is a string, or a list of parts for a multi-part user
	// message; assistant messages with only tool calls leave it out.
	Content any `json:"content,omitempty"`
	// ReasoningContent is an assistant message's thinking, for the
	// providers that want it back (provider.go).
	ReasoningContent *string        `json:"reasoning_content,omitempty"`
	ToolCalls        []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string         `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
	// ExtraContent is what the provider attached to the call and wants
	// back (Gemini's thought signature), for the profiles that send it.
	ExtraContent json.RawMessage `json:"extra_content,omitempty"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ownKeys are the body's fields that settings may not replace.
var ownKeys = map[string]bool{"model": true, "messages": true, "tools": true, "stream": true, "stream_options": true}

// encodeRequest builds the request body for provider p; tools is the
// pre-encoded tools array (nil for none), and bound the answer's tokens
// when the settings set no bound (0: none, answerBound).
func encodeRequest(p *provider, cfg ModelConfig, model string, req ModelRequest, tools json.RawMessage, stream bool, bound int) ([]byte, error) {
	w := wireRequest{Model: model, Stream: stream}
	if stream {
		w.StreamOptions = &wireStreamOpts{IncludeUsage: true}
	}
	w.Messages = make([]wireMessage, 0, len(req.Messages))
	for _, m := range req.Messages {
		wm, err := wireMessageOf(m)
		if err != nil {
			return nil, err
		}
		if m.Role == "assistant" {
			wm.ReasoningContent = p.reasoningBack(m)
			if p.callExtras {
				for i := range wm.ToolCalls {
					wm.ToolCalls[i].ExtraContent = m.ToolCalls[i].Extra
				}
			}
		}
		w.Messages = append(w.Messages, wm)
	}
	cacheTools := false
	if p.cacheControl && len(w.Messages) > 0 {
		// Where Qwen Code marks DashScope's cache: the system message
		// always, and when streaming the latest message and the last
		// tool too.
		for i := range w.Messages {
			if w.Messages[i].Role == "system" {
				markCache(&w.Messages[i])
				break
			}
		}
		if stream {
			markCache(&w.Messages[len(w.Messages)-1])
			cacheTools = true
		}
	}
	fields := map[string]any{}
	for k, v := range cfg.SamplingParams {
		fields[k] = v
	}
	boundFields(p, fields, req.MaxTokens, bound)
	for k, v := range p.fields(cfg, model, req) {
		fields[k] = v
	}
	for k, v := range cfg.ExtraBody {
		fields[k] = v
	}
	for k := range ownKeys {
		delete(fields, k)
	}
	body, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	var extra []byte
	if len(fields) > 0 {
		if extra, err = json.Marshal(fields); err != nil {
			return nil, fmt.Errorf("encode the request's extra fields: %w", err)
		}
	}
	// The tools array was encoded (and checked) once; splice it in rather
	// than have the encoder validate and compact it again per request.
	out := make([]byte, 0, len(body)+len(tools)+len(extra)+64)
	out = append(out, body[:len(body)-1]...)
	if len(extra) > 2 {
		out = append(out, ',')
		out = append(out, extra[1:len(extra)-1]...)
	}
	if len(tools) > 0 {
		out = append(out, `,"tools":`...)
		if cacheTools {
			// The last tool's object ends just before the array's ']'.
			out = append(out, tools[:len(tools)-2]...)
			out = append(out, `,"cache_control":{"type":"ephemeral"}}]`...)
		} else {
			out = append(out, tools...)
		}
	}
	return append(out, '}'), nil
}

// markCache puts cache_control on a message's last content part, turning
// a string content into one text part.
func markCache(wm *wireMessage) {
	cc := map[string]any{"type": "ephemeral"}
	switch c := wm.Content.(type) {
	case string:
		wm.Content = []map[string]any{{"type": "text", "text": c, "cache_control": cc}}
	case []map[string]any:
		if len(c) > 0 {
			last := maps.Clone(c[len(c)-1])
			last["cache_control"] = cc
			parts := slices.Clone(c)
			parts[len(parts)-1] = last
			wm.Content = parts
		}
	}
}

func wireMessageOf(m Message) (wireMessage, error) {
	switch m.Role {
	case "system", "tool":
		return wireMessage{Role: m.Role, Content: m.Text, ToolCallID: m.ToolCallID}, nil
	case "assistant":
		wm := wireMessage{Role: "assistant"}
		if m.Text != "" || len(m.ToolCalls) == 0 {
			wm.Content = m.Text
		}
		for _, tc := range m.ToolCalls {
			wm.ToolCalls = append(wm.ToolCalls, wireToolCall{ID: tc.ID, Type: "function", Function: wireFunction{Name: tc.Name, Arguments: historyArguments(tc.Arguments)}})
		}
		return wm, nil
	case "user":
		if len(m.Parts) == 0 {
			return wireMessage{Role: "user", Content: m.Text}, nil
		}
		parts := make([]map[string]any, 0, len(m.Parts))
		for _, pt := range m.Parts {
			parts = append(parts, wirePart(pt))
		}
		return wireMessage{Role: "user", Content: parts}, nil
	}
	return wireMessage{}, fmt.Errorf("message role %q is not one of system, user, assistant, tool", m.Role)
}

func wirePart(pt Part) map[string]any {
	switch pt.Type {
	case "text":
		return map[string]any{"type": "text", "text": pt.Text}
	case "image":
		return map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:" + pt.MIME + ";base64," + pt.Data}}
	case "audio":
		format := "wav"
		if strings.Contains(pt.MIME, "mp3") || strings.Contains(pt.MIME, "mpeg") {
			format = "mp3"
		}
		return map[string]any{"type": "input_audio", "input_audio": map[string]any{"data": pt.Data, "format": format}}
	case "file":
		return map[string]any{"type": "file", "file": map[string]any{"file_data": "data:" + pt.MIME + ";base64," + pt.Data, "filename": pt.Name}}
	}
	// Video has no chat-completions part type that every server accepts;
	// describe it instead of failing the request.
	return map[string]any{"type": "text", "text": fmt.Sprintf("[%s content %s could not be attached]", pt.MIME, pt.Name)}
}

// encodeTools builds the tools array, each schema as it was declared.
func encodeTools(decls []ToolDecl) json.RawMessage {
	if len(decls) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, d := range decls {
		if i > 0 {
			b.WriteByte(',')
		}
		params := d.Parameters
		var probe map[string]json.RawMessage
		if json.Unmarshal(params, &probe) != nil || probe == nil {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		fn, _ := json.Marshal(struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}{d.Name, d.Description, params})
		b.WriteString(`{"type":"function","function":`)
		b.Write(fn)
		b.WriteByte('}')
	}
	b.WriteByte(']')
	return b.Bytes()
}

// historyArguments is what the history sends for a call's arguments: a
// JSON object always, "{}" for arguments that are not one.
func historyArguments(args string) string {
	trimmed := strings.TrimSpace(args)
	if trimmed == "" {
		return "{}"
	}
	if trimmed[0] == '{' && json.Valid([]byte(trimmed)) {
		return args
	}
	return "{}"
}
