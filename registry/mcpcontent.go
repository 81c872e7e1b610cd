package registry

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/qwen-ls/qwen-ls/tools"
)

// convertCallResult turns a tools/call result into a tool result (tools.md
// §4.3, Content).
func convertCallResult(env *tools.Env, alias, name string, params map[string]any, raw json.RawMessage) tools.Result {
	var res struct {
		Content json.RawMessage `json:"content"`
		IsError bool            `json:"isError"`
	}
	_ = json.Unmarshal(raw, &res)
	if res.IsError {
		content := "null"
		var b bytes.Buffer
		if len(res.Content) > 0 && json.Compact(&b, res.Content) == nil {
			content = b.String()
		}
		return tools.Result{
			Error:   tools.Errorf(tools.ErrorMCPTool, "The MCP tool %q returned an error for the arguments %s: %s", name, compactJSON(params), content),
			Display: tools.Markdown(fmt.Sprintf("MCP tool %q returned an error.", name)),
		}
	}
	var items []json.RawMessage
	if json.Unmarshal(res.Content, &items) != nil || items == nil {
		return tools.TextResult(noContentText, tools.Markdown(noContentText))
	}
	var parts []tools.Part
	var notes []string
	text := func(s string) {
		t, note := truncateOutput(env, "mcp__"+alias+"__"+name, s)
		parts = append(parts, tools.TextPart(t))
		if note != "" {
			notes = append(notes, note)
		}
	}
	media := func(line, mime, data string) {
		parts = append(parts, tools.TextPart(line), tools.Part{InlineData: &tools.InlineData{MimeType: mime, Data: data}})
	}
	for _, it := range items {
		var c struct {
			Type     string  `json:"type"`
			Text     *string `json:"text"`
			Data     string  `json:"data"`
			MimeType string  `json:"mimeType"`
			URI      string  `json:"uri"`
			Name     string  `json:"name"`
			Title    string  `json:"title"`
			Resource *struct {
				MimeType string  `json:"mimeType"`
				Text     *string `json:"text"`
				Blob     *string `json:"blob"`
			} `json:"resource"`
		}
		if json.Unmarshal(it, &c) != nil {
			continue
		}
		switch c.Type {
		case "text":
			if c.Text != nil {
				text(*c.Text)
			}
		case "image", "audio":
			media(fmt.Sprintf("[The tool %q returned %s data (%s).]", name, c.Type, c.MimeType), c.MimeType, c.Data)
		case "resource":
			switch r := c.Resource; {
			case r == nil:
			case r.Text != nil:
				text(*r.Text)
			case r.Blob != nil:
				mime := cmp.Or(r.MimeType, defaultMimeType)
				media(fmt.Sprintf("[The tool %q returned an embedded resource (%s).]", name, mime), mime, *r.Blob)
			}
		case "resource_link":
			parts = append(parts, tools.TextPart(fmt.Sprintf("Linked resource %q: %s", cmp.Or(c.Title, c.Name), c.URI)))
		}
	}
	lines := make([]string, 0, len(parts)+len(notes))
	for _, p := range parts {
		if p.InlineData != nil {
			lines = append(lines, "["+p.InlineData.MimeType+"]")
		} else {
			lines = append(lines, p.Text)
		}
	}
	lines = append(lines, notes...)
	return tools.Result{LLMContent: parts, Display: tools.Markdown(strings.Join(lines, "\n"))}
}
