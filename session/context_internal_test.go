package session

import "testing"

// Providers word the error differently; each is recognised, and its
// numbers read.
func TestContextLengthErrorsOfEachProvider(t *testing.T) {
	for _, c := range []struct {
		name, msg   string
		limit, sent int
	}{
		{"openai", "This model's maximum context length is 128000 tokens. However, your messages resulted in 130567 tokens. Please reduce the length of the messages.", 128000, 130567},
		{"vllm", "This model's maximum context length is 32768 tokens. However, you requested 40100 tokens (40000 in the messages, 100 in the completion). Please reduce the length of the messages or completion.", 32768, 40100},
		{"dashscope", "<400> InternalError.Algo.InvalidParameter: Range of input length should be [1, 98304]", 98304, 0},
		{"llama.cpp", "the request exceeds the available context size, try increasing it", 0, 0},
		{"anthropic", "prompt is too long: 210000 tokens > 200000 maximum", 200000, 210000},
	} {
		err := &ModelError{Status: 400, Message: c.msg}
		if !isContextExceeded(err) {
			t.Errorf("%s: not recognised: %s", c.name, c.msg)
		}
		if limit, sent := refusedNumbers(err); limit != c.limit || sent != c.sent {
			t.Errorf("%s: read window %d and size %d, want %d and %d", c.name, limit, sent, c.limit, c.sent)
		}
	}
}
