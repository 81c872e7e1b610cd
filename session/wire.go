package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

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
	MaxTokens     int             `json:"max_tokens,omitempty"`
}

type wireStreamOpts struct {
	IncludeUsage bool `json:"include_usage"`
}

type wireMessage struct {
	Role string `json:"role"`
	// Content is a string, or a list of parts for a multi-part user
	// message; assistant messages with only tool calls leave it out.
	Content    any            `json:"content,omitempty"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// encodeRequest builds the request body; tools is the pre-encoded tools
// array (nil for none).
func encodeRequest(model string, msgs []Message, tools json.RawMessage, stream bool, maxTokens int) ([]byte, error) {
	w := wireRequest{Model: model, Stream: stream, MaxTokens: maxTokens}
	if stream {
		w.StreamOptions = &wireStreamOpts{IncludeUsage: true}
	}
	for _, m := range msgs {
		wm, err := wireMessageOf(m)
		if err != nil {
			return nil, err
		}
		w.Messages = append(w.Messages, wm)
	}
	body, err := json.Marshal(w)
	if err != nil || len(tools) == 0 {
		return body, err
	}
	// The tools array was encoded (and checked) once; splice it in rather
	// than have the encoder validate and compact it again per request.
	out := make([]byte, 0, len(body)+len(tools)+10)
	out = append(out, body[:len(body)-1]...)
	out = append(out, `,"tools":`...)
	out = append(out, tools...)
	return append(out, '}'), nil
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
			wm.ToolCalls = append(wm.ToolCalls, wireToolCall{ID: tc.ID, Type: "function", Function: wireFunction{Name: tc.Name, Arguments: tc.Arguments}})
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
