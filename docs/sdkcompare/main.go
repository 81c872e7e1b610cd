// Command sdkcompare runs the official Anthropic and Gemini Go SDKs
// against loopback servers that send each API's own streaming shape
// (testdata/providers/{anthropic,gemini}/native-stream.sse) and prints
// what each SDK gives: thinking, tool calls, thought signatures, cached
// tokens, and the request it sent. It is its own module so that qwen-ls
// does not link the SDKs; docs/protocol.md ("Anthropic and Gemini")
// compares it with qwen-ls's client on the compatible endpoints.
//
//	cd docs/sdkcompare && go run .
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"google.golang.org/genai"
)

func serve(body string, seen *[]byte) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		*seen = b
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
	}))
}

func main() {
	ant, _ := os.ReadFile("../../testdata/providers/anthropic/native-stream.sse")
	gem, _ := os.ReadFile("../../testdata/providers/gemini/native-stream.sse")
	var req []byte
	s := serve(string(ant), &req)
	c := anthropic.NewClient(option.WithBaseURL(s.URL), option.WithAPIKey("k"), option.WithMaxRetries(0))
	t0 := time.Now()
	st := c.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
		Model: "claude-sonnet-4-5", MaxTokens: 1024,
		System:   []anthropic.TextBlockParam{{Text: "s", CacheControl: anthropic.NewCacheControlEphemeralParam()}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("u"))},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "read_file", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"absolute_path": map[string]any{"type": "string"}}},
			CacheControl: anthropic.NewCacheControlEphemeralParam()}}},
		Thinking: anthropic.ThinkingConfigParamOfEnabled(2048),
	})
	msg := anthropic.Message{}
	for st.Next() {
		if err := msg.Accumulate(st.Current()); err != nil {
			fmt.Println("accumulate:", err)
		}
	}
	fmt.Println("anthropic native: err", st.Err(), "in", time.Since(t0))
	for _, b := range msg.Content {
		switch v := b.AsAny().(type) {
		case anthropic.ThinkingBlock:
			fmt.Printf("  thinking %q (signature %d bytes)\n", v.Thinking, len(v.Signature))
		case anthropic.ToolUseBlock:
			fmt.Printf("  tool_use %s %s\n", v.Name, v.Input)
		case anthropic.TextBlock:
			fmt.Printf("  text %q\n", v.Text)
		}
	}
	fmt.Printf("  usage input %d cache_read %d output %d, stop %s\n", msg.Usage.InputTokens, msg.Usage.CacheReadInputTokens, msg.Usage.OutputTokens, msg.StopReason)
	fmt.Printf("  request %d bytes: %s\n", len(req), req)
	s.Close()

	s = serve(string(gem), &req)
	gc, err := genai.NewClient(context.Background(), &genai.ClientConfig{APIKey: "k", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: s.URL}})
	if err != nil {
		panic(err)
	}
	t0 = time.Now()
	var last *genai.GenerateContentResponse
	for r, err := range gc.Models.GenerateContentStream(context.Background(), "gemini-3-pro-preview", genai.Text("u"), &genai.GenerateContentConfig{
		Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{Name: "read_file", ParametersJsonSchema: map[string]any{"type": "object"}}}}}}) {
		if err != nil {
			fmt.Println("gemini err:", err)
			break
		}
		for _, p := range r.Candidates[0].Content.Parts {
			if p.FunctionCall != nil {
				fmt.Printf("  functionCall %s %v (thought signature %d bytes)\n", p.FunctionCall.Name, p.FunctionCall.Args, len(p.ThoughtSignature))
			} else {
				fmt.Printf("  text %q\n", p.Text)
			}
		}
		last = r
	}
	fmt.Println("gemini native in", time.Since(t0))
	if last != nil && last.UsageMetadata != nil {
		u := last.UsageMetadata
		fmt.Printf("  usage prompt %d cached %d thoughts %d\n", u.PromptTokenCount, u.CachedContentTokenCount, u.ThoughtsTokenCount)
	}
	fmt.Printf("  request %d bytes\n", len(req))
}
