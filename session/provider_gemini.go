package session

import (
	"net/url"
	"strings"
)

// maxCallExtraBytes bounds the provider data kept on one tool call: a
// thought signature is a few hundred bytes.
const maxCallExtraBytes = 64 << 10

// gemini is Google's OpenAI-compatible endpoint (the Gemini API's and
// Vertex AI's). Gemini 3 attaches a thought signature to a tool call as
// extra_content and refuses, with a 400, a later request whose history
// carries the call without it, so the call's extra_content goes back as
// it came. Its thinking is not sent back.
var gemini = &provider{
	name: "gemini",
	match: func(u *url.URL, _ ModelConfig) bool {
		h := strings.ToLower(u.Hostname())
		vertex := h == "aiplatform.googleapis.com" || strings.HasSuffix(h, "-aiplatform.googleapis.com")
		return hostIs(u, "generativelanguage.googleapis.com") || vertex && strings.Contains(u.Path, "/endpoints/openapi")
	},
	reasoning:  reasoningNever,
	callExtras: true,
}
