package session

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

func TestProviderFromBaseURL(t *testing.T) {
	for url, want := range map[string]string{
		"":                          "openai",
		"https://api.openai.com/v1": "openai",
		"https://dashscope.aliyuncs.com/compatible-mode/v1":                                                   "dashscope",
		"https://dashscope-intl.aliyuncs.com/compatible-mode/v1":                                              "dashscope",
		"https://token-plan.cn-beijing.maas.aliyuncs.com/v1":                                                  "dashscope",
		"https://evil.example/dashscope.aliyuncs.com/v1":                                                      "openai-compatible",
		"https://api.deepseek.com/v1":                                                                         "deepseek",
		"https://api.deepseek.com.evil.example/v1":                                                            "openai-compatible",
		"https://openrouter.ai/api/v1":                                                                        "openrouter",
		"https://generativelanguage.googleapis.com/v1beta/openai/":                                            "gemini",
		"https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1/endpoints/openapi": "gemini",
		"https://api.anthropic.com/v1/":                                                                       "openai-compatible",
		"http://localhost:11434/v1":                                                                           "ollama",
		"http://127.0.0.1:1234/v1":                                                                            "lmstudio",
		"http://127.0.0.1:8080/v1":                                                                            "llamacpp",
		"http://gpu-box:8000/v1":                                                                              "vllm",
		"http://127.0.0.1:9999/v1":                                                                            "openai-compatible",
	} {
		if got := providerFor(ModelConfig{BaseURL: url, Name: "qwen3"}).name; got != want {
			t.Errorf("%q: %s, want %s", url, got, want)
		}
	}
	// Thinking goes back to an unknown server on a private network, not
	// to an unknown hosted API.
	for url, want := range map[string]reasoningRule{"http://127.0.0.1:9999/v1": reasoningKept, "http://10.0.0.5:30000/v1": reasoningKept,
		"http://gpu-box:30000/v1": reasoningKept, "https://api.groq.com/openai/v1": reasoningNever} {
		if got := providerFor(ModelConfig{BaseURL: url}).reasoning; got != want {
			t.Errorf("%s: reasoning rule %d, want %d", url, got, want)
		}
	}
	if got := providerFor(ModelConfig{BaseURL: "http://127.0.0.1:9999/v1", Provider: "DashScope"}).name; got != "dashscope" {
		t.Errorf("override: %s", got)
	}
	if got := providerFor(ModelConfig{BaseURL: "http://127.0.0.1:9999/v1", Name: "deepseek-v4-flash"}).name; got != "deepseek" {
		t.Errorf("deepseek by model name: %s", got)
	}
}

// shapedRequest sends one streaming request through provider name and
// returns what the server received.
func shapedRequest(t *testing.T, name string, cfg ModelConfig) modeltest.Request {
	t.Helper()
	srv := modeltest.Start(t, modeltest.Response{Text: "ok"})
	cfg.Provider = name
	m := modelFor(t, srv, cfg)
	req := ModelRequest{SessionID: "s1", PromptID: "s1########1", Tools: append(readDecl, ToolDecl{Name: "glob", Parameters: json.RawMessage(`{"type":"object"}`)}),
		Messages: []Message{{Role: "system", Text: "sys"}, {Role: "user", Text: "first"}, {Role: "assistant", Text: "a"}, {Role: "user", Text: "latest"}}}
	if _, err := m.Stream(t.Context(), req, StreamEvents{}); err != nil {
		t.Fatal(err)
	}
	return srv.Requests()[0]
}

// DashScope requests carry the cache header, cache_control on the system
// message, the latest message and the last tool, and the metadata and
// thinking switches, as Qwen Code sends them.
func TestDashScopeRequestShape(t *testing.T) {
	r := shapedRequest(t, "dashscope", ModelConfig{Name: "qwen3.6-plus"})
	if r.Header.Get("X-DashScope-CacheControl") != "enable" {
		t.Errorf("headers %v", r.Header)
	}
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools            []map[string]json.RawMessage `json:"tools"`
		Metadata         map[string]string            `json:"metadata"`
		PreserveThinking bool                         `json:"preserve_thinking"`
		HighRes          bool                         `json:"vl_high_resolution_images"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	cached := `[{"cache_control":{"type":"ephemeral"},"text":"%s","type":"text"}]`
	for i, want := range []string{strings.Replace(cached, "%s", "sys", 1), `"first"`, `"a"`, strings.Replace(cached, "%s", "latest", 1)} {
		if string(body.Messages[i].Content) != want {
			t.Errorf("message %d content %s, want %s", i, body.Messages[i].Content, want)
		}
	}
	if _, ok := body.Tools[0]["cache_control"]; ok || string(body.Tools[1]["cache_control"]) != `{"type":"ephemeral"}` {
		t.Errorf("tools %s", r.ToolsRaw)
	}
	if body.Metadata["sessionId"] != "s1" || body.Metadata["promptId"] != "s1########1" || !body.PreserveThinking || !body.HighRes {
		t.Errorf("body %s", r.Body)
	}
}

// providerNames lists the profiles ModelConfig.Provider may name.
func providerNames() []string {
	out := make([]string, 0, len(providers))
	for _, p := range providers {
		out = append(out, p.name)
	}
	return out
}

// Other providers' requests carry none of DashScope's fields.
func TestOtherProvidersCarryNoDashScopeFields(t *testing.T) {
	for _, name := range providerNames() {
		if name == "dashscope" {
			continue
		}
		r := shapedRequest(t, name, ModelConfig{})
		for _, field := range []string{"cache_control", "metadata", "preserve_thinking", "vl_high_resolution_images", "enable_thinking"} {
			if strings.Contains(string(r.Body), field) {
				t.Errorf("%s: body has %s: %s", name, field, r.Body)
			}
		}
		if r.Header.Get("X-DashScope-CacheControl") != "" {
			t.Errorf("%s: DashScope header sent", name)
		}
	}
}

func TestOpenRouterHeaders(t *testing.T) {
	r := shapedRequest(t, "openrouter", ModelConfig{})
	if r.Header.Get("HTTP-Referer") == "" || r.Header.Get("X-Title") != "qwen-ls" {
		t.Fatalf("headers %v", r.Header)
	}
	if r := shapedRequest(t, "openai", ModelConfig{}); r.Header.Get("X-Title") != "" {
		t.Fatal("OpenAI request has OpenRouter's headers")
	}
}

// Sampling parameters and extra_body reach the body; extra_body wins over
// the provider's fields, and the client's own keys stay.
func TestSamplingParamsAndExtraBody(t *testing.T) {
	r := shapedRequest(t, "dashscope", ModelConfig{SamplingParams: map[string]any{"temperature": 0.2, "model": "x"},
		ExtraBody: map[string]any{"enable_thinking": true, "preserve_thinking": false, "messages": 1}})
	var body map[string]any
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body["temperature"] != 0.2 || body["enable_thinking"] != true || body["preserve_thinking"] != false || body["model"] != "m" {
		t.Fatalf("body %s", r.Body)
	}
	if _, ok := body["messages"].([]any); !ok {
		t.Fatalf("messages replaced: %s", r.Body)
	}
}

// <think> leaked into the content becomes reasoning, tag split across
// chunks or not.
func TestThinkTagsInContent(t *testing.T) {
	srv := modeltest.Start(t, raw("vllm/think-in-content.sse"))
	var text strings.Builder
	resp, err := stream(t, modelFor(t, srv, ModelConfig{}), StreamEvents{OnText: func(s string) { text.WriteString(s) }})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Reasoning != "\nThe user greets me. Answer briefly.\n" || resp.Text != "Hello!" || text.String() != "Hello!" {
		t.Fatalf("reasoning %q text %q shown %q", resp.Reasoning, resp.Text, text.String())
	}
	// Every split of the content gives the same answer.
	content := "  <think>a</think>\n\nb <think>c</think>"
	for cut := 0; cut <= len(content); cut++ {
		var ts thinkSplitter
		t1, r1 := ts.feed(content[:cut])
		t2, r2 := ts.feed(content[cut:])
		t3, r3 := ts.flush()
		if got, gotR := t1+t2+t3, r1+r2+r3; got != "b <think>c</think>" || gotR != "a" {
			t.Fatalf("cut %d: text %q reasoning %q", cut, got, gotR)
		}
	}
	// Only a closing tag: the template opened <think> in the prompt.
	p := providerFor(ModelConfig{Provider: "vllm"})
	r := &ModelResponse{Text: "thinking here\n</think>\n\nanswer"}
	p.finish(r, ModelRequest{})
	if r.Reasoning != "thinking here" || r.Text != "answer" {
		t.Fatalf("%+v", r)
	}
}

// Qwen's <tool_call> text from a server without a tool parser becomes a
// call, for declared tools only.
func TestToolCallTextBecomesACall(t *testing.T) {
	srv := modeltest.Start(t, raw("vllm/tool-call-text.sse"))
	resp, err := stream(t, modelFor(t, srv, ModelConfig{}), StreamEvents{})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "read_file" || resp.ToolCalls[0].Arguments != `{"absolute_path": "/project/a.txt"}` ||
		resp.Text != "Let me read it." || resp.FinishReason != "tool_calls" {
		t.Fatalf("%+v", resp)
	}
	text := `<tool_call>{"name":"rm_rf","arguments":{}}</tool_call>`
	if rest, calls := toolCallsInText(text, readDecl); len(calls) != 0 || rest != text {
		t.Fatalf("undeclared tool parsed: %v", calls)
	}
	// OpenAI's answers are left alone.
	if openAI.toolCallText || openAI.thinkTags {
		t.Fatal("OpenAI profile rewrites answers")
	}
}

// Local servers are asked for their context window, each its own way.
func TestContextWindowOfLocalServers(t *testing.T) {
	serve := func(path, file string) string {
		data, err := os.ReadFile(fixture(file))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != path {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(data)
		}))
		t.Cleanup(srv.Close)
		return srv.URL + "/v1"
	}
	cases := []struct {
		provider, model, path, file string
		want                        int
	}{
		{"vllm", "Qwen/Qwen3-8B", "/v1/models", "vllm/models.json", 32768},
		{"llamacpp", "qwen3", "/props", "llamacpp/props.json", 16384},
		{"ollama", "qwen3:8b", "/api/show", "ollama/show.json", 12288},
		{"lmstudio", "qwen3-8b", "/api/v0/models/qwen3-8b", "lmstudio/model.json", 8192},
	}
	for _, c := range cases {
		m := NewOpenAIModel(ModelConfig{Name: c.model, BaseURL: serve(c.path, c.file), Provider: c.provider}, RetryPolicy{})
		if got := m.ContextWindow(t.Context()); got != c.want {
			t.Errorf("%s: window %d, want %d", c.provider, got, c.want)
		}
		// A server that answers something else is "unknown".
		other := NewOpenAIModel(ModelConfig{Name: c.model, BaseURL: serve("/nothing", c.file), Provider: c.provider}, RetryPolicy{})
		if got := other.ContextWindow(t.Context()); got != 0 {
			t.Errorf("%s: window %d from a server without the endpoint", c.provider, got)
		}
	}
	if got := NewOpenAIModel(ModelConfig{Name: "m", BaseURL: serve("/v1/models", "vllm/models.json"), Provider: "openai"}, RetryPolicy{}).ContextWindow(t.Context()); got != 0 {
		t.Errorf("openai profile asked for a window: %d", got)
	}
}
