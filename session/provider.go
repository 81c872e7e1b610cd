package session

import (
	"encoding/json"
	"net"
	"net/url"
	"slices"
	"strings"
)

// A provider profile says what one kind of endpoint needs beyond the
// chat-completions protocol: headers, body fields, whether the thinking
// of earlier answers goes back, and fixes for answers that came back in
// the wrong place. One is chosen from the base URL, as Qwen Code does, or
// named by ModelConfig.Provider. Each has its own file.
type provider struct {
	name string
	// match tells the provider from an endpoint's parsed URL (nil: only
	// by name).
	match func(u *url.URL, cfg ModelConfig) bool
	// reasoning says when an assistant message's thinking goes back.
	reasoning reasoningRule
	// cacheControl marks the prompt for DashScope's explicit cache.
	cacheControl bool
	// thinkTags splits <think>...</think> out of the content.
	thinkTags bool
	// toolCallText parses Qwen's <tool_call>{...}</tool_call> text in the
	// content as calls, when the server has no tool parser.
	toolCallText bool
	// callExtras sends each tool call's extra_content back as it came.
	callExtras bool
	// window asks the server for its context window (nil: it cannot).
	window windowProbe
	// completionTokens bounds the answer with max_completion_tokens
	// instead of max_tokens (maxtokens.go).
	completionTokens bool
	// windowBound: the server bounds an answer by its context window and
	// refuses a prompt and max_tokens that pass it together, so no
	// default bound is sent (maxtokens.go).
	windowBound bool
	// header and extra add headers and top-level body fields.
	header func(cfg ModelConfig) map[string]string
	extra  func(cfg ModelConfig, model string, req ModelRequest) map[string]any
}

// reasoningRule says which assistant messages carry reasoning_content.
type reasoningRule int

const (
	// reasoningNever sends no reasoning_content: strict endpoints
	// (OpenAI's) reject fields they do not know.
	reasoningNever reasoningRule = iota
	// reasoningKept sends it on every message that has thinking.
	reasoningKept
	// reasoningWithCalls is DeepSeek's rule: on every message with tool
	// calls (empty when there was no thinking), on no other.
	reasoningWithCalls
)

// providers in the order they are tried; the last matches anything.
var providers = []*provider{dashScope, deepSeek, openRouter, openAI, gemini, ollama, lmStudio, llamaCpp, vLLM, compatible}

// compatible is any other OpenAI-compatible endpoint: what Qwen Code's
// default provider does, with the fixes of local servers.
var compatible = &provider{
	name: "openai-compatible",
	// An unknown server on this machine or a private network is most
	// likely vLLM or SGLang, whose /v1/models names max_model_len.
	window:       vllmWindow,
	windowBound:  true,
	match:        func(*url.URL, ModelConfig) bool { return true },
	reasoning:    reasoningKept,
	thinkTags:    true,
	toolCallText: true,
}

// providerFor picks the profile for cfg.
func providerFor(cfg ModelConfig) *provider {
	if name := strings.ToLower(strings.TrimSpace(cfg.Provider)); name != "" {
		for _, p := range providers {
			if p.name == name {
				return p
			}
		}
	}
	u, err := url.Parse(cfg.BaseURL)
	if cfg.BaseURL == "" || err != nil {
		// The SDK's default endpoint is OpenAI's.
		return openAI
	}
	for _, p := range providers {
		if p == compatible && !onPrivateNetwork(u) {
			// A hosted API we do not know may refuse fields it does
			// not know (Groq, Mistral and Cerebras refuse
			// reasoning_content): send only the protocol's.
			c := *compatible
			c.reasoning = reasoningNever
			c.window = nil
			// A hosted API bounds nothing by a window of ours: send
			// the default bound, as Qwen Code does.
			c.windowBound = false
			return &c
		}
		if p.match != nil && p.match(u, cfg) {
			return p
		}
	}
	return compatible
}

// onPrivateNetwork reports whether an endpoint is on this machine or a
// private network (an IP in a private range, or a name without a dot):
// where an OpenAI-compatible server is most likely vLLM, SGLang or
// llama.cpp under another port.
func onPrivateNetwork(u *url.URL) bool {
	h := strings.ToLower(u.Hostname())
	if ip := net.ParseIP(h); ip != nil {
		return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast()
	}
	return h == "localhost" || !strings.Contains(h, ".") || strings.HasSuffix(h, ".local") || strings.HasSuffix(h, ".internal")
}

// hostIs reports whether u's host is h or a subdomain of it.
func hostIs(u *url.URL, hosts ...string) bool {
	h := strings.ToLower(u.Hostname())
	return slices.ContainsFunc(hosts, func(want string) bool { return h == want || strings.HasSuffix(h, "."+want) })
}

func (p *provider) headers(cfg ModelConfig) map[string]string {
	if p.header == nil {
		return nil
	}
	return p.header(cfg)
}

func (p *provider) fields(cfg ModelConfig, model string, req ModelRequest) map[string]any {
	if p.extra == nil {
		return nil
	}
	return p.extra(cfg, model, req)
}

// reasoningBack is the reasoning_content to send with an assistant
// message, nil for none.
func (p *provider) reasoningBack(m Message) *string {
	switch p.reasoning {
	case reasoningKept:
		if m.Reasoning != "" {
			return &m.Reasoning
		}
	case reasoningWithCalls:
		if len(m.ToolCalls) > 0 {
			r := m.Reasoning
			return &r
		}
	}
	return nil
}

// finish fixes an answer after it arrived: thinking left in the text
// with only its closing tag, and calls written as text.
func (p *provider) finish(resp *ModelResponse, req ModelRequest) {
	if p.thinkTags && resp.Reasoning == "" {
		// A chat template that opens <think> in the prompt leaves only
		// the closing tag in the answer.
		if before, after, ok := strings.Cut(resp.Text, thinkClose); ok && !strings.Contains(before, thinkOpen) {
			resp.Reasoning = strings.TrimSpace(before)
			resp.Text = strings.TrimLeft(after, "\r\n")
		}
	}
	if p.toolCallText && len(resp.ToolCalls) == 0 && len(req.Tools) > 0 {
		if text, calls := toolCallsInText(resp.Text, req.Tools); len(calls) > 0 {
			resp.Text, resp.ToolCalls = text, calls
			if resp.FinishReason == "stop" {
				resp.FinishReason = "tool_calls"
			}
		}
	}
}

const (
	toolCallOpen  = "<tool_call>"
	toolCallClose = "</tool_call>"
)

// toolCallsInText takes Qwen's <tool_call>{"name":...,"arguments":{...}}
// </tool_call> blocks out of text, for the declared tools only; a block
// that does not parse stays in the text.
func toolCallsInText(text string, decls []ToolDecl) (string, []ToolCall) {
	var calls []ToolCall
	var rest strings.Builder
	s := text
	for {
		i := strings.Index(s, toolCallOpen)
		if i < 0 {
			break
		}
		j := strings.Index(s[i:], toolCallClose)
		if j < 0 {
			break
		}
		block := s[i+len(toolCallOpen) : i+j]
		var c struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		declared := func(name string) bool {
			return slices.ContainsFunc(decls, func(d ToolDecl) bool { return d.Name == name })
		}
		if json.Unmarshal([]byte(strings.TrimSpace(block)), &c) == nil && declared(c.Name) {
			rest.WriteString(s[:i])
			args := rawArgument(c.Arguments)
			calls = append(calls, ToolCall{ID: "", Name: c.Name, Arguments: args})
		} else {
			rest.WriteString(s[:i+j+len(toolCallClose)])
		}
		s = s[i+j+len(toolCallClose):]
	}
	if len(calls) == 0 {
		return text, nil
	}
	rest.WriteString(s)
	return strings.TrimSpace(rest.String()), calls
}
