package session

import (
	"net/url"
	"strings"
)

// Local servers, told by their default ports (or a host that names them).
// All four may leak <think> into the content (a model without a reasoning
// parser) and write Qwen's <tool_call> text instead of calls (a server
// started without a tool parser), so both are fixed up.

func portIs(u *url.URL, port string, names ...string) bool {
	if u.Port() == port {
		return true
	}
	h := strings.ToLower(u.Hostname())
	for _, n := range names {
		if strings.Contains(h, n) {
			return true
		}
	}
	return false
}

// ollama sends its thinking as "reasoning"; its OpenAI-compatible API has
// no field for thinking in the history, so none is sent back.
var ollama = &provider{
	name:         "ollama",
	match:        func(u *url.URL, _ ModelConfig) bool { return portIs(u, "11434", "ollama") },
	reasoning:    reasoningNever,
	thinkTags:    true,
	toolCallText: true,
}

// lmStudio sends reasoning_content when its "separate reasoning" setting
// is on, and <think> in the content otherwise.
var lmStudio = &provider{
	name:         "lmstudio",
	match:        func(u *url.URL, _ ModelConfig) bool { return portIs(u, "1234", "lmstudio", "lm-studio") },
	reasoning:    reasoningNever,
	thinkTags:    true,
	toolCallText: true,
}

// llamaCpp is llama.cpp's llama-server: reasoning_content with its
// default reasoning format, and its Jinja templates read it back.
var llamaCpp = &provider{
	name:         "llamacpp",
	match:        func(u *url.URL, _ ModelConfig) bool { return portIs(u, "8080", "llama") },
	reasoning:    reasoningKept,
	thinkTags:    true,
	toolCallText: true,
}

// vLLM with a reasoning parser sends reasoning_content, and the Qwen3
// chat templates read it back from the history.
var vLLM = &provider{
	name:         "vllm",
	match:        func(u *url.URL, _ ModelConfig) bool { return portIs(u, "8000", "vllm") },
	reasoning:    reasoningKept,
	thinkTags:    true,
	toolCallText: true,
}
