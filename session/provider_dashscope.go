package session

import (
	"net/url"
	"strings"
)

// dashScope is Alibaba Cloud Model Studio's OpenAI-compatible mode. Like
// Qwen Code it asks for the explicit context cache (a header, and
// cache_control on the system message, the latest message and the last
// tool, wire_request.go), sends the session and prompt ids as metadata,
// keeps the thinking of earlier answers (preserve_thinking, with
// reasoning_content on the assistant messages), and asks vision models
// for high-resolution images. The thinking switch itself (enable_thinking) is the user's, in
// model.generationConfig.extra_body.
var dashScope = &provider{
	name: "dashscope",
	match: func(u *url.URL, _ ModelConfig) bool {
		h := strings.ToLower(u.Hostname())
		return hostIs(u, "dashscope.aliyuncs.com", "dashscope-intl.aliyuncs.com", "dashscope-us.aliyuncs.com") ||
			(strings.HasPrefix(h, "token-plan.") && strings.HasSuffix(h, ".maas.aliyuncs.com"))
	},
	reasoning:    reasoningKept,
	cacheControl: true,
	thinkTags:    true,
	header: func(ModelConfig) map[string]string {
		return map[string]string{"X-DashScope-CacheControl": "enable"}
	},
	extra: func(_ ModelConfig, model string, req ModelRequest) map[string]any {
		out := map[string]any{"preserve_thinking": true}
		if req.SessionID != "" || req.PromptID != "" {
			out["metadata"] = map[string]any{"sessionId": req.SessionID, "promptId": req.PromptID}
		}
		if dashScopeVision(model) {
			out["vl_high_resolution_images"] = true
		}
		return out
	},
}

// dashScopeVision reports whether a DashScope model reads images, by the
// names Qwen Code lists.
func dashScopeVision(model string) bool {
	m := strings.ToLower(model)
	if m == "coder-model" {
		return true
	}
	for _, p := range []string{"qwen-vl", "qwen3-vl-plus", "qwen3.5-plus", "qwen3.6-plus", "qwen3.7-plus", "qvq"} {
		if strings.HasPrefix(m, p) {
			return true
		}
	}
	return false
}
