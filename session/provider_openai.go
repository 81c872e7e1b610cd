package session

import "net/url"

// openAI is OpenAI's own API (also the SDK's default endpoint). It keeps
// reasoning to itself and rejects fields it does not know, so nothing
// beyond the protocol is sent. Its reasoning models (o1, o3, gpt-5)
// refuse max_tokens; max_completion_tokens bounds every model's answer.
var openAI = &provider{
	name:             "openai",
	match:            func(u *url.URL, _ ModelConfig) bool { return hostIs(u, "api.openai.com") },
	reasoning:        reasoningNever,
	completionTokens: true,
}
