package session

import (
	"errors"
	"net/http"
	"strings"
)

// This file bounds an answer's length in tokens. Every request carries a
// bound, as in Qwen Code: the settings' (samplingParams.max_tokens, or
// max_completion_tokens, in a generationConfig), else the provider
// profile's default for the model, so that a model that never stops is
// stopped by its endpoint and not only by the 64 MiB an answer may hold.
// The profile names the field (OpenAI's own API wants
// max_completion_tokens: its reasoning models refuse max_tokens), and a
// profile whose servers bound an answer by their context window leaves
// it out (vLLM refuses a request whose prompt and max_tokens together
// pass the window, so a fixed bound would fail long conversations).

const (
	// unknownModelTokens is the default bound for a model whose output
	// limit is not known: Qwen Code's DEFAULT_OUTPUT_TOKEN_LIMIT.
	unknownModelTokens = 32000
	// maxDefaultTokens caps the default bound of a model known to write
	// more: Qwen Code's OUTPUT_TOKEN_CEILING. A user who wants longer
	// answers sets max_tokens.
	maxDefaultTokens = 64000
)

// outputLimits are the models' own limits on one answer, in tokens, by
// the start of their names, most specific first: Qwen Code's table
// (packages/core/src/core/tokenLimits.ts), with the limits OpenAI,
// Anthropic and Google document for models it misses or overstates
// (older ones would refuse its larger bound; Gemini 2.5 writes more than
// its 8K).
var outputLimits = []struct {
	prefix string
	tokens int
}{
	{"gpt-5", 128000},
	{"gpt-4.1", 32768},
	{"gpt-4o", 16384},
	{"gpt-4-turbo", 4096},
	{"gpt-4", 8192},
	{"gpt-3.5", 4096},
	{"gpt-", 16384},
	{"o1", 100000},
	{"o3", 100000},
	{"o4", 100000},
	{"claude-opus-4-0", 32000},
	{"claude-opus-4-1", 32000},
	{"claude-opus-4-2025", 32000},
	{"claude-3-7", 64000},
	{"claude-3-5", 8192},
	{"claude-3", 4096},
	{"claude-", 64000},
	{"gemini-3", 65536},
	{"gemini-2.5", 65536},
	{"gemini-", 8192},
	{"qwen3.", 65536},
	{"coder-model", 65536},
	{"qwen", 32768},
	{"deepseek-v4", 393216},
	{"deepseek-flash", 393216},
	{"deepseek-reasoner", 65536},
	{"deepseek-r1", 65536},
	{"deepseek-chat", 8192},
	{"glm-5", 131072},
	{"glm-4.7", 16384},
	{"kimi-k3", 131072},
	{"kimi-k2.5", 32768},
	{"minimax-m2.5", 65536},
}

// knownOutputLimit is the output limit of a model by its name, 0 when
// unknown. A provider's prefix (openrouter's "openai/gpt-4o") and a tag
// (Ollama's "qwen3:8b", OpenRouter's ":free") are not part of the name.
func knownOutputLimit(model string) int {
	name := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	for _, l := range outputLimits {
		if strings.HasPrefix(name, l.prefix) {
			return l.tokens
		}
	}
	return 0
}

// tokenField is the body field that bounds the answer.
func (p *provider) tokenField() string {
	if p.completionTokens {
		return "max_completion_tokens"
	}
	return "max_tokens"
}

// defaultTokens is the profile's bound for model when the settings set
// none; 0 sends none.
func (p *provider) defaultTokens(model string) int {
	if p.windowBound {
		return 0
	}
	if n := knownOutputLimit(model); n > 0 {
		return min(n, maxDefaultTokens)
	}
	return unknownModelTokens
}

// setsBound reports whether settings fields bound the answer themselves;
// a null value counts, and is the way to send no bound.
func setsBound(fields map[string]any) bool {
	_, a := fields["max_tokens"]
	_, b := fields["max_completion_tokens"]
	return a || b
}

// answerBound is the default bound to send with req: none when the
// request or the settings set one, or when the endpoint refused it.
func (m *OpenAIModel) answerBound(req ModelRequest) int {
	if req.MaxTokens > 0 || m.unbounded.Load() || setsBound(m.cfg.SamplingParams) || setsBound(m.cfg.ExtraBody) {
		return 0
	}
	return m.provider.defaultTokens(m.modelName(req))
}

// boundFields puts the answer's bound into the body's fields (the
// settings' samplingParams so far): the request's own (the setup check's
// 1), else the settings', else the default bound. A settings' max_tokens
// goes under the profile's field name.
func boundFields(p *provider, fields map[string]any, own, bound int) {
	field := p.tokenField()
	if v, ok := fields["max_tokens"]; ok && field != "max_tokens" {
		delete(fields, "max_tokens")
		if _, set := fields[field]; !set {
			fields[field] = v
		}
	}
	switch {
	case own > 0:
		delete(fields, "max_tokens")
		delete(fields, "max_completion_tokens")
		fields[field] = own
	case bound > 0:
		fields[field] = bound
	}
}

// refusedBound reports whether an endpoint refused a request for its
// bound on the answer: a 400 (or 422) whose message names the field, as
// a model with a lower limit than the table says, or a server that wants
// the other field name, answers; or vLLM's count of the tokens "in the
// completion" when the prompt and the bound together pass its window (a
// DeepSeek model it serves gets the deepseek profile, by its name).
func refusedBound(err error) bool {
	var me *ModelError
	if !errors.As(err, &me) || (me.Status != http.StatusBadRequest && me.Status != http.StatusUnprocessableEntity) {
		return false
	}
	msg := strings.ToLower(me.Message)
	return strings.Contains(msg, "max_tokens") || strings.Contains(msg, "max_completion_tokens") || strings.Contains(msg, "in the completion")
}
