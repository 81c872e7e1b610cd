package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Message is one chat message in the session's history.
type Message struct {
	// Role is system, user, assistant or tool.
	Role string
	Text string
	// Parts, when set on a user message, replace Text with a list of
	// text and media parts (media attached after tool results).
	Parts []Part
	// ToolCalls are an assistant message's calls.
	ToolCalls []ToolCall
	// ToolCallID names the call a tool message answers.
	ToolCallID string
}

// Part is one part of a multi-part user message.
type Part struct {
	// Type is text, image, audio, video or file.
	Type string
	Text string
	MIME string
	// Data is base64.
	Data string
	Name string
}

// ToolCall is a function call made by the model.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
	// DroppedBytes, when above zero, is the size of arguments that were
	// over MaxArgumentBytes and so were not kept while streaming
	// (Arguments is then empty): the call is refused without holding them.
	DroppedBytes int `json:"-"`
}

// ToolDecl is a function declaration sent to the model.
type ToolDecl struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// ModelRequest is one chat-completions request.
type ModelRequest struct {
	Model    string
	Messages []Message
	Tools    []ToolDecl
	// MaxTokens caps the answer (0: the endpoint's default).
	MaxTokens int
}

// Usage counts tokens.
type Usage struct {
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
	TotalTokens  int `json:"totalTokens"`
}

// Add sums u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{u.InputTokens + v.InputTokens, u.OutputTokens + v.OutputTokens, u.TotalTokens + v.TotalTokens}
}

// ModelResponse is the model's whole answer to one request.
type ModelResponse struct {
	Text         string
	Reasoning    string
	Refusal      string
	ToolCalls    []ToolCall
	FinishReason string
	Usage        Usage
}

// StreamEvents receive a response as it streams. Any may be nil.
type StreamEvents struct {
	OnText      func(string)
	OnReasoning func(string)
	// OnRetry is told before each retry, for a progress message.
	OnRetry func(attempt int, wait time.Duration, err error)
	// OnCut is told when a stream that already showed text was cut; the
	// partial answer is dropped and the request resent.
	OnCut func()
}

// Model is the session's model: a streaming request with retries, and a
// single plain request for side queries.
type Model interface {
	Stream(ctx context.Context, req ModelRequest, ev StreamEvents) (*ModelResponse, error)
	Complete(ctx context.Context, req ModelRequest) (*ModelResponse, error)
	// Name is the model name in use.
	Name() string
}

// ErrorKind classifies model failures.
type ErrorKind int

const (
	// ErrFatal is a failure that retrying does not fix (400, 404).
	ErrFatal ErrorKind = iota
	// ErrAuth is 401 or 403: the key is missing or wrong.
	ErrAuth
	// ErrTransient is 408, 429, 5xx, a reset or a cut stream.
	ErrTransient
	// ErrUnreachable is a refused connection or an unknown host: nothing
	// serves the endpoint, and retrying within seconds will not change it.
	ErrUnreachable
	// ErrNotFound is 404: the model name or the endpoint's path is wrong.
	ErrNotFound
)

// ModelError is a failed model request.
type ModelError struct {
	Kind       ErrorKind
	Status     int
	Message    string
	RetryAfter time.Duration
	Attempts   int
	// BaseURL and Model are the request's endpoint ("" for the SDK's
	// default) and model, for messages that name what to change.
	BaseURL, Model string
}

func (e *ModelError) Error() string {
	switch e.Kind {
	case ErrUnreachable:
		return fmt.Sprintf("Nothing answers at %s (%s). Start the model server, or set model.baseUrl (or OPENAI_BASE_URL) to an endpoint that runs.", endpointLabel(e.BaseURL), e.Message)
	case ErrNotFound:
		return fmt.Sprintf("The endpoint %s does not serve the model %q (status 404: %s). Check model.name (or OPENAI_MODEL), and that model.baseUrl (or OPENAI_BASE_URL) ends in the API's base path, usually /v1.",
			endpointLabel(e.BaseURL), e.Model, e.Message)
	case ErrAuth:
		return fmt.Sprintf("The model endpoint %s refused the API key (status %d: %s). Check OPENAI_API_KEY (or DASHSCOPE_API_KEY) in the environment qwen-ls starts with, or model.apiKey in ~/.qwen/settings.json.",
			endpointLabel(e.BaseURL), e.Status, e.Message)
	}
	if e.Status != 0 {
		return fmt.Sprintf("the model request failed with status %d: %s", e.Status, e.Message)
	}
	return "the model request failed: " + e.Message
}

// Setup says which settings fix the failure, for the kinds a setting
// fixes; ok is false for the others.
func (e *ModelError) Setup() (Setup, bool) {
	switch e.Kind {
	case ErrUnreachable:
		return Setup{Reason: "model_unreachable", Settings: []string{"model.baseUrl"}, Env: []string{"OPENAI_BASE_URL"}, BaseURL: endpointLabel(e.BaseURL), Model: e.Model}, true
	case ErrNotFound:
		return Setup{Reason: "model_not_found", Settings: []string{"model.name", "model.baseUrl"}, Env: []string{"OPENAI_MODEL", "OPENAI_BASE_URL"}, BaseURL: endpointLabel(e.BaseURL), Model: e.Model}, true
	case ErrAuth:
		return Setup{Reason: "model_auth", Settings: []string{"model.apiKey"}, Env: []string{"OPENAI_API_KEY", "DASHSCOPE_API_KEY"}, BaseURL: endpointLabel(e.BaseURL), Model: e.Model}, true
	}
	return Setup{Reason: "model_error", Settings: []string{}, Env: []string{}, BaseURL: endpointLabel(e.BaseURL), Model: e.Model}, false
}

// openAIBaseURL is the endpoint the SDK uses when none is set.
const openAIBaseURL = "https://api.openai.com/v1"

func endpointLabel(baseURL string) string {
	if baseURL == "" {
		return openAIBaseURL
	}
	return baseURL
}

// unreachableCause says why nothing serves the endpoint: a refused
// connection or an unknown host; ok is false for other errors.
func unreachableCause(err error) (string, bool) {
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused", true
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return "no such host " + dnsErr.Name, true
	}
	return "", false
}

// RetryPolicy says how transient failures are retried.
type RetryPolicy struct {
	// Attempts is the number of retries after the first try (default 5).
	Attempts int
	// Base is the first backoff (default 1 s), doubled each retry, with
	// full jitter; Max caps one wait, Retry-After included (default 60 s).
	Base, Max time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts == 0 {
		p.Attempts = 5
	}
	if p.Base == 0 {
		p.Base = time.Second
	}
	if p.Max == 0 {
		p.Max = 60 * time.Second
	}
	return p
}

// ModelConfig says which endpoint and model to use.
type ModelConfig struct {
	Name    string
	BaseURL string
	APIKey  string
	// MaxResponseBytes bounds one streamed answer (text, reasoning and
	// tool calls together); 0 means 64 MiB. A longer answer fails
	// without being read to the end.
	MaxResponseBytes int
}

// OpenAIModel talks to any OpenAI-compatible chat-completions endpoint.
type OpenAIModel struct {
	cfg    ModelConfig
	client openai.Client
	retry  RetryPolicy

	// toolsMu guards the converted declarations of the last request: the
	// set rarely changes between requests, and decoding every schema each
	// time is most of a request's own cost.
	toolsMu  sync.Mutex
	toolsKey []ToolDecl
	toolsVal json.RawMessage
}

// NewOpenAIModel returns a model client. The SDK's own retries are off:
// ours report progress and honour Retry-After.
func NewOpenAIModel(cfg ModelConfig, retry RetryPolicy) *OpenAIModel {
	key := cfg.APIKey
	if key == "" {
		// Local servers (Ollama, vLLM, llama.cpp) need no key, but the
		// SDK would otherwise fall back to the environment.
		key = "none"
	}
	opts := []option.RequestOption{option.WithAPIKey(key), option.WithMaxRetries(0)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	return &OpenAIModel{cfg: cfg, client: openai.NewClient(opts...), retry: retry.withDefaults()}
}

// Name implements Model.
func (m *OpenAIModel) Name() string { return m.cfg.Name }

// Complete implements Model: one attempt, no streaming.
func (m *OpenAIModel) Complete(ctx context.Context, req ModelRequest) (*ModelResponse, error) {
	body, err := m.body(req, false)
	if err != nil {
		return nil, err
	}
	c, err := m.client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: m.modelName(req)}, option.WithRequestBody("application/json", body))
	if err != nil {
		return nil, m.label(classify(ctx, err), req)
	}
	if len(c.Choices) == 0 {
		return nil, &ModelError{Kind: ErrFatal, Message: "the answer has no choices"}
	}
	ch := c.Choices[0]
	out := &ModelResponse{Text: ch.Message.Content, Refusal: ch.Message.Refusal, FinishReason: ch.FinishReason,
		Usage: Usage{int(c.Usage.PromptTokens), int(c.Usage.CompletionTokens), int(c.Usage.TotalTokens)}}
	for _, tc := range ch.Message.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return out, nil
}

// Stream implements Model, retrying transient failures.
func (m *OpenAIModel) Stream(ctx context.Context, req ModelRequest, ev StreamEvents) (*ModelResponse, error) {
	body, err := m.body(req, true)
	if err != nil {
		return nil, err
	}
	params := openai.ChatCompletionNewParams{Model: m.modelName(req)}
	for attempt := 0; ; attempt++ {
		resp, shown, err := m.streamOnce(ctx, params, body, ev)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var me *ModelError
		if !errors.As(err, &me) {
			me = &ModelError{Kind: ErrFatal, Message: err.Error()}
		}
		m.label(me, req)
		me.Attempts = attempt + 1
		if me.Kind != ErrTransient || attempt >= m.retry.Attempts {
			return nil, me
		}
		if shown && ev.OnCut != nil {
			ev.OnCut()
		}
		wait := backoff(m.retry, attempt, me.RetryAfter)
		if ev.OnRetry != nil {
			ev.OnRetry(attempt+1, wait, me)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// label records the request's endpoint and model in a ModelError, so its
// message can name them.
func (m *OpenAIModel) label(err error, req ModelRequest) error {
	var me *ModelError
	if errors.As(err, &me) {
		me.BaseURL, me.Model = m.cfg.BaseURL, m.modelName(req)
	}
	return err
}

// backoff is exponential with full jitter, or Retry-After when the server
// gave one, capped by the policy.
func backoff(p RetryPolicy, attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, p.Max)
	}
	ceil := p.Base << min(attempt, 20)
	if ceil > p.Max || ceil <= 0 {
		ceil = p.Max
	}
	return p.Base/2 + time.Duration(rand.Int64N(int64(ceil)))
}

func (m *OpenAIModel) streamOnce(ctx context.Context, params openai.ChatCompletionNewParams, body []byte, ev StreamEvents) (*ModelResponse, bool, error) {
	stream := m.client.Chat.Completions.NewStreaming(ctx, params, option.WithRequestBody("application/json", body))
	defer stream.Close()
	out := &ModelResponse{}
	var text, reasoning, refusal strings.Builder
	// Arguments arrive in many small pieces; a builder per call keeps
	// collecting them linear (appending to a string copies all of it
	// each time: minutes for a few megabytes sent a token at a time).
	// Arguments past MaxArgumentBytes are only counted: such a call is
	// refused anyway, and holding them would cost their size again at
	// every growth of the builder.
	type callParts struct {
		id         string
		name, args strings.Builder
		dropped    int
	}
	calls := map[int64]*callParts{}
	var order []int64
	tight := false
	shown := false
	size := 0
	limit := m.cfg.MaxResponseBytes
	if limit <= 0 {
		limit = maxResponseBytes
	}
	for stream.Next() {
		if size > limit {
			return nil, shown, &ModelError{Kind: ErrFatal, Message: fmt.Sprintf("the answer is over %s; the rest was not read", sizeLabel(limit))}
		}
		chunk := stream.Current()
		if chunk.JSON.Usage.Valid() {
			out.Usage = Usage{int(chunk.Usage.PromptTokens), int(chunk.Usage.CompletionTokens), int(chunk.Usage.TotalTokens)}
		}
		if len(chunk.Choices) == 0 {
			continue
		}
		ch := chunk.Choices[0]
		d := ch.Delta
		if f, ok := d.JSON.ExtraFields["reasoning_content"]; ok {
			var r string
			if json.Unmarshal([]byte(f.Raw()), &r) == nil && r != "" {
				reasoning.WriteString(r)
				size += len(r)
				if ev.OnReasoning != nil {
					ev.OnReasoning(r)
				}
				shown = true
			}
		}
		if d.Content != "" {
			text.WriteString(d.Content)
			size += len(d.Content)
			if ev.OnText != nil {
				ev.OnText(d.Content)
			}
			shown = true
		}
		if d.Refusal != "" {
			refusal.WriteString(d.Refusal)
			size += len(d.Refusal)
		}
		for _, tc := range d.ToolCalls {
			c, ok := calls[tc.Index]
			if !ok {
				c = &callParts{}
				calls[tc.Index] = c
				order = append(order, tc.Index)
			}
			if tc.ID != "" {
				c.id = tc.ID
			}
			if tc.Function.Name != "" {
				c.name.WriteString(tc.Function.Name)
			}
			switch a := tc.Function.Arguments; {
			case c.dropped > 0:
				c.dropped += len(a)
			case c.args.Len()+len(a) > MaxArgumentBytes:
				c.dropped = c.args.Len() + len(a)
				c.args = strings.Builder{}
			default:
				c.args.WriteString(a)
			}
			if !tight && c.args.Len()+c.dropped > largeArgumentBytes {
				// Each chunk's decoding leaves garbage; with large
				// arguments held, collect it sooner (tightenGC).
				tight = true
				defer tightenGC()()
			}
			size += len(tc.ID) + len(tc.Function.Name) + len(tc.Function.Arguments)
		}
		if ch.FinishReason != "" {
			out.FinishReason = ch.FinishReason
		}
	}
	if err := stream.Err(); err != nil {
		return nil, shown, classify(ctx, err)
	}
	if out.FinishReason == "" {
		// A stream that ends without a finish reason was cut short.
		return nil, shown, &ModelError{Kind: ErrTransient, Message: "the stream ended before the answer was complete"}
	}
	out.Text, out.Reasoning, out.Refusal = text.String(), reasoning.String(), refusal.String()
	for _, i := range order {
		c := calls[i]
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: c.id, Name: c.name.String(), Arguments: c.args.String(), DroppedBytes: c.dropped})
	}
	return out, shown, nil
}

// sizeLabel writes a byte count in MiB when it is a whole number of them.
func sizeLabel(n int) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// classify turns an SDK or transport error into a ModelError.
func classify(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		me := &ModelError{Status: apiErr.StatusCode, Message: apiMessage(apiErr)}
		switch {
		case apiErr.StatusCode == http.StatusUnauthorized || apiErr.StatusCode == http.StatusForbidden:
			me.Kind = ErrAuth
		case apiErr.StatusCode == http.StatusNotFound:
			me.Kind = ErrNotFound
		case apiErr.StatusCode == http.StatusTooManyRequests || apiErr.StatusCode == http.StatusRequestTimeout || apiErr.StatusCode >= 500:
			me.Kind = ErrTransient
		}
		if apiErr.Response != nil {
			me.RetryAfter = parseRetryAfter(apiErr.Response.Header.Get("Retry-After"))
		}
		return me
	}
	if cause, ok := unreachableCause(err); ok {
		return &ModelError{Kind: ErrUnreachable, Message: cause}
	}
	var ne net.Error
	var ue *url.Error
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) || errors.As(err, &ne) || errors.As(err, &ue) {
		return &ModelError{Kind: ErrTransient, Message: err.Error()}
	}
	return &ModelError{Kind: ErrTransient, Message: err.Error()}
}

func apiMessage(e *openai.Error) string {
	if e.Message != "" {
		return e.Message
	}
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(e.RawJSON()), &body) == nil && body.Error.Message != "" {
		return body.Error.Message
	}
	if e.Response != nil {
		return e.Response.Status
	}
	return "no message"
}

func parseRetryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

func (m *OpenAIModel) modelName(req ModelRequest) string {
	if req.Model != "" {
		return req.Model
	}
	return m.cfg.Name
}

// body encodes a request (wire.go).
func (m *OpenAIModel) body(req ModelRequest, stream bool) ([]byte, error) {
	return encodeRequest(m.modelName(req), req.Messages, m.toolsJSON(req.Tools), stream, req.MaxTokens)
}

// toolsJSON encodes declarations, reusing the last encoding while the
// declarations stay the same.
func (m *OpenAIModel) toolsJSON(decls []ToolDecl) json.RawMessage {
	m.toolsMu.Lock()
	defer m.toolsMu.Unlock()
	if m.toolsVal != nil && sameDecls(decls, m.toolsKey) {
		return m.toolsVal
	}
	m.toolsKey, m.toolsVal = slices.Clone(decls), encodeTools(decls)
	return m.toolsVal
}

func sameDecls(a, b []ToolDecl) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Description != b[i].Description || string(a[i].Parameters) != string(b[i].Parameters) {
			return false
		}
	}
	return true
}
