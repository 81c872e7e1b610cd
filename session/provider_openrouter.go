package session

import "net/url"

// openRouter routes to many providers. It ranks and shows apps by the
// HTTP-Referer and X-Title headers. Its thinking arrives as "reasoning"
// and is not sent back: the routed provider may reject the field.
var openRouter = &provider{
	name:      "openrouter",
	match:     func(u *url.URL, _ ModelConfig) bool { return hostIs(u, "openrouter.ai") },
	reasoning: reasoningNever,
	header: func(ModelConfig) map[string]string {
		return map[string]string{"HTTP-Referer": "https://github.com/qwen-ls/qwen-ls", "X-Title": "qwen-ls"}
	},
}
