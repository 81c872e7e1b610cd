package session

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// These tests replay recorded provider answers (testdata/providers, see
// its README) through a real HTTP server on loopback, byte for byte.

func fixture(name string) string { return filepath.Join("..", "testdata", "providers", name) }

func raw(name string) modeltest.Response { return modeltest.Response{RawFile: fixture(name)} }

// fastRetry keeps retry waits short; the tests count attempts, not time.
var fastRetry = RetryPolicy{Attempts: 3, Base: time.Millisecond, Max: 5 * time.Millisecond}

func modelFor(t *testing.T, srv *modeltest.Server, cfg ModelConfig) *OpenAIModel {
	t.Helper()
	cfg.BaseURL = srv.URL
	if cfg.Name == "" {
		cfg.Name = "m"
	}
	return NewOpenAIModel(cfg, fastRetry)
}

var readDecl = []ToolDecl{{Name: "read_file", Parameters: json.RawMessage(`{"type":"object","properties":{"absolute_path":{"type":"string"}}}`)}}

func stream(t *testing.T, m *OpenAIModel, ev StreamEvents) (*ModelResponse, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return m.Stream(ctx, ModelRequest{Messages: []Message{{Role: "system", Text: "s"}, {Role: "user", Text: "u"}}, Tools: readDecl}, ev)
}

func modelError(t *testing.T, err error) *ModelError {
	t.Helper()
	var me *ModelError
	if !errors.As(err, &me) {
		t.Fatalf("error %v (%T) is not a *ModelError", err, err)
	}
	return me
}

// A JSON completion answering a streaming request is the answer, taken
// at once (it was retried as a cut stream six times).
func TestJSONAnswerToStreamingRequestIsTheAnswer(t *testing.T) {
	srv := modeltest.Start(t, raw("vllm/nonstream-answer.json"))
	var text, thought strings.Builder
	resp, err := stream(t, modelFor(t, srv, ModelConfig{}), StreamEvents{
		OnText: func(s string) { text.WriteString(s) }, OnReasoning: func(s string) { thought.WriteString(s) }})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Done: the tests pass." || resp.Reasoning != "A short answer will do." || resp.FinishReason != "stop" || resp.Usage.InputTokens != 640 {
		t.Fatalf("response = %+v", resp)
	}
	if text.String() != resp.Text || thought.String() != resp.Reasoning {
		t.Fatalf("shown %q / %q", text.String(), thought.String())
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
}

// Thinking is kept in the answer and sent back where the provider wants
// it: DashScope (and vLLM, llama.cpp) always, DeepSeek on calls only,
// OpenAI and OpenRouter never.
func TestReasoningIsKeptAndSentBackPerProvider(t *testing.T) {
	srv := modeltest.Start(t, raw("dashscope/stream-thinking.sse"))
	resp, err := stream(t, modelFor(t, srv, ModelConfig{Provider: "dashscope"}), StreamEvents{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Reasoning != "The user wants the test file. I should read it first." || resp.Text != "I will read it." || len(resp.ToolCalls) != 1 {
		t.Fatalf("response = %+v", resp)
	}
	withCalls := Message{Role: "assistant", Text: resp.Text, Reasoning: resp.Reasoning, ToolCalls: resp.ToolCalls}
	plain := Message{Role: "assistant", Text: "done", Reasoning: "short"}
	silent := Message{Role: "assistant", ToolCalls: resp.ToolCalls}
	msgs := []Message{{Role: "user", Text: "u"}, withCalls, {Role: "tool", ToolCallID: resp.ToolCalls[0].ID, Text: "x"}, plain, silent}
	want := map[string][]any{
		// the reasoning_content of withCalls, plain, silent (nil: absent)
		"dashscope":  {resp.Reasoning, "short", nil},
		"vllm":       {resp.Reasoning, "short", nil},
		"llamacpp":   {resp.Reasoning, "short", nil},
		"deepseek":   {resp.Reasoning, nil, ""},
		"openai":     {nil, nil, nil},
		"openrouter": {nil, nil, nil},
		"ollama":     {nil, nil, nil},
	}
	for name, w := range want {
		p := providerFor(ModelConfig{Provider: name})
		body, err := encodeRequest(p, ModelConfig{}, "m", ModelRequest{Messages: msgs}, nil, true, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Messages []map[string]any `json:"messages"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		for i, idx := range []int{1, 3, 4} {
			if v := got.Messages[idx]["reasoning_content"]; v != w[i] {
				t.Errorf("%s: message %d reasoning_content = %#v, want %#v", name, idx, v, w[i])
			}
		}
	}
}

// Arguments that are empty or near-JSON are repaired for the call; the
// history sends a JSON object always.
func TestToolArgumentsAreRepaired(t *testing.T) {
	cases := map[string]string{
		"vllm/tool-args-trailing-comma.sse":    `{"absolute_path": "/project/a.txt"}`,
		"llamacpp/tool-args-single-quotes.sse": `{"absolute_path": "/project/a.txt"}`,
		"openai/tool-truncated-args.sse":       `{"absolute_path":"/project/a.txt"}`,
		"ollama/tool-empty-args.sse":           `{}`,
		"deepseek/stream-thinking-tools.sse":   `{"absolute_path":"/project/a.txt"}`,
		"dashscope/stream-thinking.sse":        `{"absolute_path": "/work/a_test.go"}`,
	}
	for name, want := range cases {
		srv := modeltest.Start(t, raw(name))
		resp, err := stream(t, modelFor(t, srv, ModelConfig{}), StreamEvents{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Arguments != want {
			t.Errorf("%s: calls = %+v, want arguments %s", name, resp.ToolCalls, want)
		}
	}
	for in, want := range map[string]string{"": "{}", `{"a":1}`: `{"a":1}`, "not json": "{}", `{"a":`: "{}", `[1]`: "{}"} {
		if got := historyArguments(in); got != want {
			t.Errorf("historyArguments(%q) = %q, want %q", in, got, want)
		}
	}
	// An answer cut by the token limit keeps its cut arguments.
	resp := &ModelResponse{FinishReason: "length", ToolCalls: []ToolCall{{Arguments: `{"content":"half`}}}
	repairCalls(resp)
	if resp.ToolCalls[0].Arguments != `{"content":"half` {
		t.Fatalf("cut arguments repaired: %q", resp.ToolCalls[0].Arguments)
	}
}

func FuzzRepairArguments(f *testing.F) {
	for _, s := range []string{"", "{}", `{"a":1,}`, `{'a':'b'}`, `{"a":"b`, `{"a":[1,2`, "not json", `{"a":1}{"b":2}`, `{"a":"\u00`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, ok := repairArguments(s)
		if ok {
			var v map[string]any
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("repairArguments(%q) = %q, not an object: %v", s, out, err)
			}
		}
		h := historyArguments(out)
		var v map[string]any
		if err := json.Unmarshal([]byte(h), &v); err != nil {
			t.Fatalf("historyArguments(%q) = %q, not an object", out, h)
		}
	})
}

// Error bodies show their message, whatever their shape.
func TestErrorBodiesShowTheirMessage(t *testing.T) {
	cases := []struct {
		file   string
		status int
		want   string
		kind   ErrorKind
	}{
		{"vllm/error-400.json", 400, "maximum context length is 32768 tokens", ErrFatal},
		{"dashscope/error-400.json", 400, "Range of input length", ErrFatal},
		{"llamacpp/error-context.json", 400, "exceeds the available context size", ErrFatal},
		{"ollama/error-404.json", 404, `model "qwen3:8b" not found`, ErrNotFound},
	}
	for _, c := range cases {
		r := raw(c.file)
		r.Status = c.status
		srv := modeltest.Start(t, r)
		_, err := stream(t, modelFor(t, srv, ModelConfig{}), StreamEvents{})
		me := modelError(t, err)
		if !strings.Contains(me.Error(), c.want) || me.Kind != c.kind || len(srv.Requests()) != 1 {
			t.Errorf("%s: %v (kind %d, %d requests)", c.file, err, me.Kind, len(srv.Requests()))
		}
	}
	// A 429 is retried, and its message kept.
	r := raw("openai/error-429.json")
	r.Status = 429
	srv := modeltest.Start(t, r, raw("openai/stream-usage-cached.sse"))
	var retried []string
	if _, err := stream(t, modelFor(t, srv, ModelConfig{}), StreamEvents{OnRetry: func(_ int, _ time.Duration, err error) { retried = append(retried, err.Error()) }}); err != nil {
		t.Fatal(err)
	}
	if len(retried) != 1 || !strings.Contains(retried[0], "Rate limit reached") {
		t.Fatalf("retries: %q", retried)
	}
}

// An error sent inside a stream (OpenRouter's) ends the answer with its
// message.
func TestMidStreamErrorIsShown(t *testing.T) {
	srv := modeltest.Start(t, raw("openrouter/error-midstream.sse"))
	_, err := stream(t, modelFor(t, srv, ModelConfig{}), StreamEvents{})
	if me := modelError(t, err); !strings.Contains(me.Message, "upstream disconnected") || len(srv.Requests()) != 1 {
		t.Fatalf("%v, %d requests", err, len(srv.Requests()))
	}
}

// A stream that stalls after its headers fails after the idle timeout
// and is retried; the message names the setting.
func TestIdleStallIsRetried(t *testing.T) {
	stall := raw("dashscope/stream-text.sse")
	stall.StallAfter, stall.Stall = 200, 30*time.Second
	srv := modeltest.Start(t, stall, raw("dashscope/stream-text.sse"))
	var retried []string
	start := time.Now()
	resp, err := stream(t, modelFor(t, srv, ModelConfig{IdleTimeout: 300 * time.Millisecond}), StreamEvents{
		OnRetry: func(_ int, _ time.Duration, err error) { retried = append(retried, err.Error()) }})
	t.Logf("stall detected and retried in %s", time.Since(start))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "The file defines one function." || len(retried) != 1 || !strings.Contains(retried[0], "model.generationConfig.idleTimeout") {
		t.Fatalf("text %q, retries %q", resp.Text, retried)
	}
}

// An endpoint that never starts answering fails after the request
// timeout, without a retry.
func TestRequestTimeoutIsNotRetried(t *testing.T) {
	srv := modeltest.Start(t, modeltest.Response{Delay: 30 * time.Second, Text: "late"})
	_, err := stream(t, modelFor(t, srv, ModelConfig{Timeout: 300 * time.Millisecond}), StreamEvents{})
	me := modelError(t, err)
	if !strings.Contains(me.Error(), "model.generationConfig.timeout") || me.Kind != ErrFatal || len(srv.Requests()) != 1 {
		t.Fatalf("%v (%d requests)", err, len(srv.Requests()))
	}
}

// MaxRetries from the settings bounds the retries.
func TestMaxRetriesFromConfig(t *testing.T) {
	srv := modeltest.Start(t, modeltest.Response{Status: 503}, modeltest.Response{Status: 503}, modeltest.Response{Status: 503})
	_, err := stream(t, modelFor(t, srv, ModelConfig{MaxRetries: 1}), StreamEvents{})
	if me := modelError(t, err); me.Attempts != 2 || len(srv.Requests()) != 2 {
		t.Fatalf("%v: %d attempts, %d requests", err, me.Attempts, len(srv.Requests()))
	}
	srv = modeltest.Start(t, modeltest.Response{Status: 503}, modeltest.Response{Status: 503})
	_, err = stream(t, modelFor(t, srv, ModelConfig{MaxRetries: -1}), StreamEvents{})
	if me := modelError(t, err); me.Attempts != 1 {
		t.Fatalf("%v: %d attempts", err, me.Attempts)
	}
}

// A 60 MB event is read whole (the SDK's scanner stopped at 32 MiB); past
// the bound an answer fails at once.
func TestLargeEventIsReadAndOversizeFailsAtOnce(t *testing.T) {
	text := strings.Repeat("x", 60<<20)
	ev, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": text}, "finish_reason": "stop"}}})
	body := append(append([]byte("data: "), ev...), "\n\ndata: [DONE]\n\n"...)
	srv := modeltest.Start(t, modeltest.Response{RawBody: body, ContentType: "text/event-stream"})
	start := time.Now()
	resp, err := stream(t, modelFor(t, srv, ModelConfig{}), StreamEvents{})
	t.Logf("60 MB event read in %s", time.Since(start))
	if err != nil || len(resp.Text) != len(text) {
		t.Fatalf("err %v", err)
	}
	srv = modeltest.Start(t, modeltest.Response{RawBody: body, ContentType: "text/event-stream"})
	_, err = stream(t, modelFor(t, srv, ModelConfig{MaxResponseBytes: 8 << 20}), StreamEvents{})
	if me := modelError(t, err); !strings.Contains(me.Message, "was not read") || len(srv.Requests()) != 1 {
		t.Fatalf("%v (%d requests)", err, len(srv.Requests()))
	}
}

// Garbage where an event stream should be fails at once.
func TestGarbageStreamIsNotRetried(t *testing.T) {
	for _, r := range []modeltest.Response{raw("broken/garbage.sse"), {RawFile: fixture("broken/html-200.html"), ContentType: "text/html"}, {RawFile: fixture("broken/html-200.html"), ContentType: "text/event-stream"}} {
		srv := modeltest.Start(t, r, r, r)
		_, err := stream(t, modelFor(t, srv, ModelConfig{}), StreamEvents{})
		if me := modelError(t, err); me.Kind != ErrFatal || len(srv.Requests()) != 1 {
			t.Errorf("%s (%s): %v, %d requests", r.RawFile, r.ContentType, err, len(srv.Requests()))
		}
	}
}

// Cached prompt tokens reach Usage, in each provider's shape.
func TestCachedTokensInUsage(t *testing.T) {
	for name, want := range map[string]int{
		"openai/stream-usage-cached.sse":     3840,
		"dashscope/stream-text.sse":          2816,
		"deepseek/stream-thinking-tools.sse": 1280,
		"openrouter/stream-text.sse":         2048,
		"llamacpp/stream-reasoning.sse":      0,
	} {
		srv := modeltest.Start(t, raw(name))
		resp, err := stream(t, modelFor(t, srv, ModelConfig{}), StreamEvents{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if resp.Usage.CachedTokens != want || resp.Usage.InputTokens == 0 {
			t.Errorf("%s: usage %+v, want %d cached", name, resp.Usage, want)
		}
	}
}

// Every fixture decodes to an answer or to the error it records.
func TestEveryFixtureIsReadable(t *testing.T) {
	files, _ := filepath.Glob(fixture("*/*"))
	if len(files) < 20 {
		t.Fatalf("only %d fixtures", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil || len(data) == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// Any bytes as an answer end in a response or an error, never a panic,
// and the answer's bound holds.
func FuzzReadAnswer(f *testing.F) {
	for _, name := range []string{"dashscope/stream-thinking.sse", "vllm/think-in-content.sse", "vllm/tool-call-text.sse", "openrouter/stream-text.sse", "vllm/nonstream-answer.json", "broken/garbage.sse"} {
		data, err := os.ReadFile(fixture(name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, strings.HasSuffix(name, ".json"))
	}
	f.Fuzz(func(t *testing.T, data []byte, asJSON bool) {
		m := NewOpenAIModel(ModelConfig{Provider: "vllm"}, RetryPolicy{})
		a := &answerReader{m: m, req: ModelRequest{Tools: readDecl}, limit: 1 << 16}
		var resp *ModelResponse
		var err error
		if asJSON {
			resp, err = a.readJSON(strings.NewReader(string(data)))
		} else {
			resp, err = a.readSSE(strings.NewReader(string(data)))
		}
		if err != nil {
			return
		}
		m.provider.finish(resp, a.req)
		repairCalls(resp)
		if n := len(resp.Text) + len(resp.Reasoning); n > 1<<16+1<<10 {
			t.Fatalf("answer of %d bytes past the bound", n)
		}
	})
}

// A refused connection fails at once; a stream cut mid-way is retried.
func TestRetriesMatchTheFailure(t *testing.T) {
	srv := modeltest.Start(t)
	url := srv.URL
	srv.Close()
	m := NewOpenAIModel(ModelConfig{Name: "m", BaseURL: url}, fastRetry)
	_, err := m.Stream(t.Context(), ModelRequest{Messages: []Message{{Role: "user", Text: "u"}}}, StreamEvents{})
	if me := modelError(t, err); me.Kind != ErrUnreachable || me.Attempts != 1 {
		t.Fatalf("%v: kind %d, %d attempts", err, me.Kind, me.Attempts)
	}
	cut := raw("dashscope/stream-text.sse")
	cut.StallAfter = 150 // then the connection closes: a cut stream
	srv = modeltest.Start(t, cut, raw("dashscope/stream-text.sse"))
	var retries int
	resp, err := stream(t, modelFor(t, srv, ModelConfig{}), StreamEvents{OnRetry: func(int, time.Duration, error) { retries++ }})
	if err != nil || retries != 1 || resp.Text != "The file defines one function." {
		t.Fatalf("%v, %d retries", err, retries)
	}
}

// Content sent as a list of text parts is read as its text.
func TestContentAsParts(t *testing.T) {
	body := []byte(`data: {"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},"finish_reason":null}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"content":null},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n")
	srv := modeltest.Start(t, modeltest.Response{RawBody: body, ContentType: "text/event-stream"})
	resp, err := stream(t, modelFor(t, srv, ModelConfig{}), StreamEvents{})
	if err != nil || resp.Text != "ab" {
		t.Fatalf("%v %+v", err, resp)
	}
}

// Gemini 3 signs a tool call (extra_content.google.thought_signature) and
// refuses a later request whose history has the call without it: the
// gemini profile sends it back as it came, other profiles leave it out
// (strict endpoints reject fields they do not know). The signature is
// kept in the session's file with the call.
func TestGeminiThoughtSignatureGoesBack(t *testing.T) {
	const sig = `{"google":{"thought_signature":"CsoBAdHtim9Qk2sigAAAexample+signature/0001=="}}`
	for _, tc := range []struct {
		provider string
		back     bool
	}{{"gemini", true}, {"openai", false}, {"openai-compatible", false}} {
		t.Run(tc.provider, func(t *testing.T) {
			srv := modeltest.Start(t, raw("gemini/stream-tool-signature.sse"), raw("gemini/stream-text.sse"))
			m := modelFor(t, srv, ModelConfig{Provider: tc.provider})
			resp, err := stream(t, m, StreamEvents{})
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "read_file" || string(resp.ToolCalls[0].Extra) != sig ||
				resp.Text != "I will read the file first." || resp.FinishReason != "tool_calls" {
				t.Fatalf("response %+v", resp)
			}
			stored, _ := json.Marshal(resp.ToolCalls[0])
			var back ToolCall
			if json.Unmarshal(stored, &back) != nil || string(back.Extra) != sig {
				t.Fatalf("the call as stored: %s", stored)
			}
			msgs := []Message{{Role: "system", Text: "s"}, {Role: "user", Text: "u"},
				{Role: "assistant", Text: resp.Text, ToolCalls: []ToolCall{back}},
				{Role: "tool", ToolCallID: back.ID, Text: "one line"}}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			second, err := m.Stream(ctx, ModelRequest{Messages: msgs, Tools: readDecl}, StreamEvents{})
			if err != nil {
				t.Fatal(err)
			}
			if second.Text != "The file holds one line." || second.Usage.CachedTokens != 1024 {
				t.Fatalf("second answer %+v", second)
			}
			var body struct {
				Messages []struct {
					ToolCalls []struct {
						ExtraContent json.RawMessage `json:"extra_content"`
					} `json:"tool_calls"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(srv.Requests()[1].Body, &body); err != nil || len(body.Messages) != 4 || len(body.Messages[2].ToolCalls) != 1 {
				t.Fatalf("second request %s (%v)", srv.Requests()[1].Body, err)
			}
			got := string(body.Messages[2].ToolCalls[0].ExtraContent)
			if tc.back && got != sig || !tc.back && got != "" {
				t.Errorf("extra_content sent back: %q", got)
			}
		})
	}
}

// Anthropic's OpenAI-compatible endpoint streams a call's arguments in
// pieces after an empty first one; the call is whole, and the request
// carries none of the fields other providers get (the endpoint ignores
// metadata and has no reasoning_content).
func TestAnthropicCompatibleStream(t *testing.T) {
	srv := modeltest.Start(t, raw("anthropic/stream-tool.sse"))
	cfg := ModelConfig{Name: "claude-sonnet-4-5"}
	m := modelFor(t, srv, cfg)
	m.provider = providerFor(ModelConfig{BaseURL: "https://api.anthropic.com/v1/"})
	resp, err := stream(t, m, StreamEvents{})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].ID != "toolu_01XyZaBcDeFgHiJkLmNoPq" || resp.ToolCalls[0].Arguments != `{"absolute_path": "/project/a.txt"}` ||
		resp.Text != "Let me read it." || resp.Usage.InputTokens != 1380 {
		t.Fatalf("response %+v", resp)
	}
	body := string(srv.Requests()[0].Body)
	for _, field := range []string{"cache_control", "metadata", "reasoning_content", "extra_content", "preserve_thinking"} {
		if strings.Contains(body, field) {
			t.Errorf("request carries %s: %s", field, body)
		}
	}
}
