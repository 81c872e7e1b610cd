package modeltest_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

func client(s *modeltest.Server) openai.Client {
	return openai.NewClient(option.WithBaseURL(s.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
}

func params() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:         "scripted",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
}

// The real OpenAI client reassembles the scripted stream: text, two tool
// calls whose arguments arrive in pieces, the finish reason and usage.
func TestStreamIsReassembledByTheOpenAIClient(t *testing.T) {
	s := modeltest.Start(t, modeltest.Response{
		Reasoning: "thinking about it",
		Text:      "Reading 漢字 files 😀",
		ToolCalls: []modeltest.ToolCall{
			{Name: "read_file", Arguments: `{"absolute_path":"/w/a.txt"}`},
			{ID: "c2", Name: "grep_search", Arguments: `{"pattern":"TODO","limit":3}`},
		},
		Usage:     &modeltest.Usage{Prompt: 11, Completion: 7, Cached: 5},
		ChunkSize: 5,
	})
	c := client(s)
	stream := c.Chat.Completions.NewStreaming(context.Background(), params())
	acc := openai.ChatCompletionAccumulator{}
	var reasoning strings.Builder
	for stream.Next() {
		ch := stream.Current()
		acc.AddChunk(ch)
		if len(ch.Choices) > 0 {
			if f, ok := ch.Choices[0].Delta.JSON.ExtraFields["reasoning_content"]; ok {
				reasoning.WriteString(strings.Trim(f.Raw(), `"`))
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	msg := acc.Choices[0].Message
	if msg.Content != "Reading 漢字 files 😀" {
		t.Errorf("content = %q", msg.Content)
	}
	if reasoning.String() != "thinking about it" {
		t.Errorf("reasoning = %q", reasoning.String())
	}
	if len(msg.ToolCalls) != 2 || msg.ToolCalls[0].Function.Arguments != `{"absolute_path":"/w/a.txt"}` ||
		msg.ToolCalls[1].ID != "c2" || msg.ToolCalls[1].Function.Name != "grep_search" {
		t.Errorf("tool calls = %+v", msg.ToolCalls)
	}
	if acc.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("finish = %q", acc.Choices[0].FinishReason)
	}
	if acc.Usage.PromptTokens != 11 || acc.Usage.CompletionTokens != 7 || acc.Usage.PromptTokensDetails.CachedTokens != 5 {
		t.Errorf("usage = %+v", acc.Usage)
	}
	reqs := s.Requests()
	if len(reqs) != 1 || !reqs[0].Stream || reqs[0].Messages[0].Text() != "hi" || reqs[0].Header.Get("Authorization") != "Bearer sk-test" {
		t.Errorf("recorded request = %+v", reqs)
	}
}

func TestFaults(t *testing.T) {
	s := modeltest.Start(t,
		modeltest.Response{Status: 429, RetryAfter: "2"},
		modeltest.Response{Text: "this answer is cut off halfway", CutAfter: 3},
	)
	c := client(s)
	_, err := c.Chat.Completions.New(context.Background(), params())
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Response.Header.Get("Retry-After") != "2" {
		t.Fatalf("429: %v", err)
	}
	stream := c.Chat.Completions.NewStreaming(context.Background(), params())
	n := 0
	for stream.Next() {
		n++
	}
	if stream.Err() == nil || n != 3 {
		t.Fatalf("cut stream: %d chunks, err %v; want 3 chunks and an error", n, stream.Err())
	}
	// An empty script answers 500 with a message that says so.
	_, err = c.Chat.Completions.New(context.Background(), params())
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 || !strings.Contains(apiErr.Message+apiErr.RawJSON(), "no response left") {
		t.Fatalf("exhausted script: %v", err)
	}
}

func TestParseScript(t *testing.T) {
	rs, err := modeltest.ParseScript([]byte(`A comment.
-- 02.response --
status: 500
-- 01.response --
reasoning: hmm
text: line one
text: line two
call: read_file {"absolute_path":"$ROOT/a.txt"}
call[id=x9]: glob {"pattern":"*.go"}
usage: 3 4 2
chunk-delay: 5ms
-- 03.text --
verbatim
  text
-- 03.response --
finish: length
`), map[string]string{"ROOT": "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 {
		t.Fatalf("%d responses", len(rs))
	}
	r := rs[0]
	if r.Text != "line one\nline two" || r.Reasoning != "hmm" || len(r.ToolCalls) != 2 ||
		r.ToolCalls[0].Arguments != `{"absolute_path":"/w/a.txt"}` || r.ToolCalls[1].ID != "x9" ||
		r.Usage.Prompt != 3 || r.Usage.Completion != 4 || r.Usage.Cached != 2 || r.ChunkDelay.Milliseconds() != 5 {
		t.Errorf("first = %+v", r)
	}
	if rs[1].Status != 500 || rs[2].Text != "verbatim\n  text" || rs[2].FinishReason != "length" {
		t.Errorf("rest = %+v %+v", rs[1], rs[2])
	}
	if _, err := modeltest.ParseScript([]byte("-- 01.response --\nbogus: 1\n"), nil); err == nil {
		t.Error("unknown directive accepted")
	}
}

// A recorded answer goes out byte for byte with its content type and
// status; stall-after sends only its start and then holds the connection.
func TestRawReplay(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/a.sse"
	body := "data: {\"choices\":[]}\n\n: comment\n\ndata: [DONE]\n\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, err := modeltest.ParseScript([]byte("-- 01.response --\nraw: "+path+"\n-- 02.response --\nraw: "+path+"\nstatus: 400\ncontent-type: application/json\n-- 03.response --\nraw: "+path+"\nstall-after: 10\nstall: 200ms\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := modeltest.Start(t, rs...)
	post := func() (*http.Response, string) {
		resp, err := http.Post(s.URL+"/chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp, string(data)
	}
	if resp, got := post(); got != body || resp.Header.Get("Content-Type") != "text/event-stream" || resp.StatusCode != 200 {
		t.Fatalf("%d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), got)
	}
	if resp, got := post(); got != body || resp.Header.Get("Content-Type") != "application/json" || resp.StatusCode != 400 {
		t.Fatalf("%d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), got)
	}
	start := time.Now()
	if _, got := post(); got != body[:10] {
		t.Fatalf("stalled answer %q", got)
	}
	t.Logf("stalled answer ended after %s", time.Since(start))
}

// keepalive sends comments while the answer is delayed, then the answer
// on the same stream.
func TestKeepAliveCommentsBeforeTheAnswer(t *testing.T) {
	rs, err := modeltest.ParseScript([]byte("-- 01.response --\nkeepalive: 20ms\ndelay: 200ms\ntext: late\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := modeltest.Start(t, rs...)
	resp, err := http.Post(s.URL+"/chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	got := string(data)
	if resp.Header.Get("Content-Type") != "text/event-stream" || !strings.HasPrefix(got, ": keepalive\n\n") ||
		!strings.Contains(got, `"content":"late"`) || !strings.HasSuffix(got, "data: [DONE]\n\n") {
		t.Fatalf("%s %q", resp.Header.Get("Content-Type"), got)
	}
}
