package session

import (
	"net/url"
	"strings"
)

// deepSeek is DeepSeek's API, or a DeepSeek model served elsewhere. Its
// thinking mode wants reasoning_content back on every assistant message
// that made tool calls (a 400 otherwise), empty when there was none, and
// on no other: its older reasoner model fails a request that carries it
// on a plain answer.
var deepSeek = &provider{
	name: "deepseek",
	match: func(u *url.URL, cfg ModelConfig) bool {
		return hostIs(u, "api.deepseek.com") || strings.Contains(strings.ToLower(cfg.Name), "deepseek")
	},
	reasoning: reasoningWithCalls,
}
