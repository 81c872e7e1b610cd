package session

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// bodyFields decodes a request body's top-level fields.
func bodyFields(t *testing.T, r modeltest.Request) map[string]any {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	return body
}

// Every answer is bounded in tokens as Qwen Code bounds it: the profile's
// field (max_completion_tokens for OpenAI's own API), the model's known
// limit up to 64000, 32000 for a model not known; a samplingParams or
// extra_body max_tokens instead (null: none); nothing for a server that
// bounds an answer by its window (vLLM).
func TestAnswerBoundPerProfile(t *testing.T) {
	cases := []struct {
		provider string
		cfg      ModelConfig
		field    string
		want     any // nil with field "": no bound at all
	}{
		{"dashscope", ModelConfig{Name: "qwen3-coder-plus"}, "max_tokens", 32768.0},
		{"dashscope", ModelConfig{Name: "qwen3.6-plus"}, "max_tokens", 64000.0},
		{"openai", ModelConfig{Name: "gpt-4o"}, "max_completion_tokens", 16384.0},
		{"openai", ModelConfig{Name: "gpt-5"}, "max_completion_tokens", 64000.0},
		{"deepseek", ModelConfig{Name: "deepseek-chat"}, "max_tokens", 8192.0},
		{"openrouter", ModelConfig{Name: "anthropic/claude-3-5-sonnet"}, "max_tokens", 8192.0},
		{"ollama", ModelConfig{Name: "qwen3:8b"}, "max_tokens", 32768.0},
		{"llamacpp", ModelConfig{Name: "local-gguf"}, "max_tokens", 32000.0},
		{"vllm", ModelConfig{Name: "Qwen/Qwen3-32B"}, "", nil},
		{"openai-compatible", ModelConfig{Name: "anything"}, "", nil},
		// The settings' bound wins, under the profile's field name.
		{"dashscope", ModelConfig{Name: "qwen3-coder-plus", SamplingParams: map[string]any{"max_tokens": 1000}}, "max_tokens", 1000.0},
		{"openai", ModelConfig{Name: "o3", SamplingParams: map[string]any{"max_tokens": 1000}}, "max_completion_tokens", 1000.0},
		{"vllm", ModelConfig{Name: "m", SamplingParams: map[string]any{"max_tokens": 2048}}, "max_tokens", 2048.0},
		{"dashscope", ModelConfig{Name: "qwen-max", ExtraBody: map[string]any{"max_tokens": 8192}}, "max_tokens", 8192.0},
		// null turns the bound off.
		{"dashscope", ModelConfig{Name: "qwen3-coder-plus", SamplingParams: map[string]any{"max_tokens": nil}}, "max_tokens", nil},
	}
	for _, c := range cases {
		body := bodyFields(t, shapedRequest(t, c.provider, c.cfg))
		for _, f := range []string{"max_tokens", "max_completion_tokens"} {
			v, ok := body[f]
			switch {
			case f == c.field && (!ok || v != c.want):
				t.Errorf("%s %s: %s = %v (sent: %v), want %v", c.provider, c.cfg.Name, f, v, ok, c.want)
			case f != c.field && ok:
				t.Errorf("%s %s: %s = %v sent, want only %q", c.provider, c.cfg.Name, f, v, c.field)
			}
		}
	}
	// A hosted API no profile knows gets the default bound, as from Qwen
	// Code's default provider; an unknown server on this machine none.
	if got := providerFor(ModelConfig{BaseURL: "https://api.groq.com/openai/v1"}).defaultTokens("llama-3.3-70b-versatile"); got != 32000 {
		t.Errorf("hosted openai-compatible bound %d, want 32000", got)
	}
	if got := providerFor(ModelConfig{BaseURL: "http://127.0.0.1:9999/v1"}).defaultTokens("qwen3"); got != 0 {
		t.Errorf("local openai-compatible bound %d, want none", got)
	}
}

// An endpoint that refuses the default bound (a model with a lower limit
// than the table says; vLLM serving a DeepSeek model with a small window)
// gets the request again without it, at once and from then on; the turn
// goes on.
func TestRefusedDefaultBoundIsDropped(t *testing.T) {
	for _, c := range []struct {
		cfg     ModelConfig
		field   string
		refusal string
	}{
		{ModelConfig{Provider: "dashscope", Name: "qwen-max"}, "max_tokens",
			`{"error":{"message":"<400> InternalError.Algo.InvalidParameter: Range of max_tokens should be [1, 8192]","type":"invalid_request_error"}}`},
		{ModelConfig{Name: "deepseek-r1-distill-qwen-32b"}, "max_tokens",
			`{"object":"error","message":"This model's maximum context length is 32768 tokens. However, you requested 65536 tokens (1536 in the messages, 64000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","code":400}`},
	} {
		srv := modeltest.Start(t, modeltest.Response{Status: 400, Body: c.refusal}, modeltest.Response{Text: "first"}, modeltest.Response{Text: "second"})
		m := modelFor(t, srv, c.cfg)
		for _, want := range []string{"first", "second"} {
			resp, err := stream(t, m, StreamEvents{})
			if err != nil || resp.Text != want {
				t.Fatalf("%s: answer %+v, %v; want %q", c.cfg.Name, resp, err, want)
			}
		}
		reqs := srv.Requests()
		if len(reqs) != 3 {
			t.Fatalf("%s: %d requests, want 3", c.cfg.Name, len(reqs))
		}
		for i, sent := range []bool{true, false, false} {
			if got := strings.Contains(string(reqs[i].Body), `"`+c.field+`"`); got != sent {
				t.Errorf("%s: request %d sent %s: %v, want %v: %s", c.cfg.Name, i+1, c.field, got, sent, reqs[i].Body)
			}
		}
	}
}
