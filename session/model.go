package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	// Reasoning is an assistant message's thinking, kept so that it can
	// be sent back to providers that want it (provider.go).
	Reasoning string
	// Typed is a prompt as the person typed it, when the model was sent
	// another text (a custom command's expansion, /init): what a replay
	// shows. Never sent to the model.
	Typed string
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
	// Extra is the provider's own data on the call, sent back with it
	// where the profile says so (Gemini's thought signature); it is kept
	// in the session's file.
	Extra json.RawMessage `json:"Extra,omitempty"`
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
	// SessionID and PromptID name the session and the user prompt the
	// request serves, for providers that take request metadata
	// (DashScope); empty leaves the metadata out.
	SessionID, PromptID string
}

// Usage counts tokens.
type Usage struct {
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
	TotalTokens  int `json:"totalTokens"`
	// CachedTokens is the part of InputTokens the provider read from its
	// prompt cache (prompt_tokens_details.cached_tokens, or DeepSeek's
	// prompt_cache_hit_tokens).
	CachedTokens int `json:"cachedTokens"`
}

// Add sums u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{u.InputTokens + v.InputTokens, u.OutputTokens + v.OutputTokens, u.TotalTokens + v.TotalTokens, u.CachedTokens + v.CachedTokens}
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
	return ShownEndpoint(baseURL)
}

// ShownEndpoint is a base URL as messages and clients may show it:
// without user info, query or fragment, which may carry a token. "" for
// "" or a URL that does not parse.
func ShownEndpoint(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		return ""
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// unreachableCause says why nothing serves the endpoint: a refused
// connection or an unknown host; ok is false for other errors.
func unreachableCause(err error) (string, bool) {
	var dnsErr *net.DNSError
	switch {
	case connRefused(err):
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

// ModelConfig says which endpoint and model to use, and how to talk to it.
// The zero value of each field beyond Name, BaseURL and APIKey means its
// default.
type ModelConfig struct {
	Name    string
	BaseURL string
	APIKey  string
	// MaxResponseBytes bounds one streamed answer (text, reasoning and
	// tool calls together); 0 means 64 MiB. A longer answer fails
	// without being read to the end.
	MaxResponseBytes int
	// Timeout bounds the wait for the endpoint to start answering (its
	// status and headers), as model.generationConfig.timeout does in Qwen
	// Code; 0 means 120 s (10 min for an endpoint on this machine, where
	// a local server reads the prompt before it answers). A request that
	// times out is not retried.
	Timeout time.Duration
	// IdleTimeout bounds the silence inside an answer: no data for this
	// long fails the attempt, which is retried. In an event stream only
	// data lines count: a server that sends nothing but ": keepalive"
	// comments is silent. 0 means 60 s (5 min for an endpoint on this
	// machine).
	IdleTimeout time.Duration
	// AnswerTimeout bounds one answer's whole time, from the request to
	// its last byte, however steadily it streams: an answer past it is
	// stopped and not retried. 0 means 10 min (30 min for an endpoint on
	// this machine, where a slow model may rightly take that long).
	AnswerTimeout time.Duration
	// MaxRetries is the number of retries after the first attempt of a
	// failure that retrying can fix; 0 keeps the RetryPolicy's, and a
	// negative value turns retries off.
	MaxRetries int
	// SamplingParams (temperature, top_p, max_tokens...) and ExtraBody are
	// added to the request body's top level, ExtraBody last so it wins
	// over the provider's own fields. When neither sets max_tokens (or
	// max_completion_tokens), the provider profile's bound is sent
	// (maxtokens.go). Keys the client owns (model,
	// messages, tools, stream, stream_options) are never replaced.
	SamplingParams map[string]any
	ExtraBody      map[string]any
	// Headers are extra HTTP headers (generationConfig.customHeaders);
	// the provider profile's own win where both set one.
	Headers map[string]string
	// ContextWindow is generationConfig.contextWindowSize: the model's
	// window in tokens when model.contextWindow says nothing; 0 unknown.
	ContextWindow int
	// Provider names the provider profile (provider.go) when the base
	// URL does not tell it: dashscope, deepseek, openrouter, openai,
	// ollama, lmstudio, llamacpp, vllm, or openai-compatible. Empty
	// picks it from the base URL.
	Provider string
}

// OpenAIModel talks to any OpenAI-compatible chat-completions endpoint.
type OpenAIModel struct {
	// windowOnce guards window, the context window the server reported.
	windowOnce sync.Once
	window     int

	cfg      ModelConfig
	client   openai.Client
	retry    RetryPolicy
	provider *provider
	// unbounded is set once the endpoint refused the default bound on an
	// answer's tokens (maxtokens.go): it is not sent again.
	unbounded atomic.Bool

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
	retry = retry.withDefaults()
	switch {
	case cfg.MaxRetries > 0:
		retry.Attempts = cfg.MaxRetries
	case cfg.MaxRetries < 0:
		retry.Attempts = 0
	}
	return &OpenAIModel{cfg: cfg, client: openai.NewClient(opts...), retry: retry, provider: providerFor(cfg)}
}

// ConfiguredWindow is the model's context window when the settings leave
// model.contextWindow unset: generationConfig.contextWindowSize, else what
// a local server says it runs with (asked once per client, at most 5 s),
// else 0.
func (m *OpenAIModel) ConfiguredWindow() int {
	if m.cfg.ContextWindow > 0 {
		return m.cfg.ContextWindow
	}
	m.windowOnce.Do(func() { m.window = m.ContextWindow(context.Background()) })
	return m.window
}

// Name implements Model.
func (m *OpenAIModel) Name() string { return m.cfg.Name }

// ProviderName is the provider profile in use (provider.go).
func (m *OpenAIModel) ProviderName() string { return m.provider.name }

const (
	defaultTimeout            = 120 * time.Second
	defaultIdleTimeout        = 60 * time.Second
	defaultAnswerTimeout      = 10 * time.Minute
	defaultLocalTimeout       = 10 * time.Minute
	defaultLocalIdleTimeout   = 5 * time.Minute
	defaultLocalAnswerTimeout = 30 * time.Minute
)

// limits are an attempt's timeouts: to the first byte (start), between
// data (idle), and for the whole answer.
type limits struct {
	start, idle, answer time.Duration
}

func (m *OpenAIModel) timeouts() limits {
	l := limits{m.cfg.Timeout, m.cfg.IdleTimeout, m.cfg.AnswerTimeout}
	local := isLoopback(m.cfg.BaseURL)
	pick := func(v *time.Duration, hosted, onMachine time.Duration) {
		if *v <= 0 {
			*v = hosted
			if local {
				*v = onMachine
			}
		}
	}
	pick(&l.start, defaultTimeout, defaultLocalTimeout)
	pick(&l.idle, defaultIdleTimeout, defaultLocalIdleTimeout)
	pick(&l.answer, defaultAnswerTimeout, defaultLocalAnswerTimeout)
	return l
}

// Complete implements Model: one attempt, no streaming.
func (m *OpenAIModel) Complete(ctx context.Context, req ModelRequest) (*ModelResponse, error) {
	body, bound, err := m.body(req, false)
	if err != nil {
		return nil, err
	}
	resp, _, err := m.attempt(ctx, req, body, StreamEvents{})
	if err != nil && bound > 0 && refusedBound(err) {
		// The endpoint refused the bound qwen-ls added on its own: the
		// request goes once more without it, and later ones too.
		m.unbounded.Store(true)
		if body, _, err = m.body(req, false); err != nil {
			return nil, err
		}
		resp, _, err = m.attempt(ctx, req, body, StreamEvents{})
	}
	if err != nil {
		return nil, m.label(err, req)
	}
	return resp, nil
}

// Stream implements Model, retrying the failures that retrying can fix.
func (m *OpenAIModel) Stream(ctx context.Context, req ModelRequest, ev StreamEvents) (*ModelResponse, error) {
	body, bound, err := m.body(req, true)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		resp, shown, err := m.attempt(ctx, req, body, ev)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if bound > 0 && refusedBound(err) {
			// The endpoint refused the bound qwen-ls added on its own:
			// the request goes again without it (not a retry), and
			// later ones too.
			m.unbounded.Store(true)
			if body, bound, err = m.body(req, true); err != nil {
				return nil, err
			}
			attempt--
			continue
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

// Why an attempt's context was cancelled by the client itself.
var (
	errStartTimeout  = errors.New("start timeout")
	errIdleTimeout   = errors.New("idle timeout")
	errAnswerTimeout = errors.New("answer timeout")
)

// attempt sends one request and reads its answer, streamed or not: an
// endpoint that answers a streaming request with one JSON completion is
// taken at its word. shown is whether any of the answer reached ev.
func (m *OpenAIModel) attempt(ctx context.Context, req ModelRequest, body []byte, ev StreamEvents) (*ModelResponse, bool, error) {
	lim := m.timeouts()
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	answerTimer := time.AfterFunc(lim.answer, func() { cancel(errAnswerTimeout) })
	defer answerTimer.Stop()
	startTimer := time.AfterFunc(lim.start, func() { cancel(errStartTimeout) })
	var raw *http.Response
	opts := []option.RequestOption{option.WithRequestBody("application/json", body)}
	for k, v := range m.cfg.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	for k, v := range m.provider.headers(m.cfg) {
		opts = append(opts, option.WithHeader(k, v))
	}
	err := m.client.Post(actx, "chat/completions", nil, &raw, opts...)
	startTimer.Stop()
	if err != nil {
		if raw != nil && raw.Body != nil {
			raw.Body.Close()
		}
		return nil, false, m.failure(ctx, actx, err, lim)
	}
	rb := &idleBody{rc: raw.Body, idle: lim.idle}
	rb.timer = time.AfterFunc(lim.idle, func() { cancel(errIdleTimeout) })
	defer rb.Close()
	limit := m.cfg.MaxResponseBytes
	if limit <= 0 {
		limit = maxResponseBytes
	}
	rd := &answerReader{m: m, req: req, ev: ev, limit: limit}
	var resp *ModelResponse
	mediaType, _, _ := mime.ParseMediaType(raw.Header.Get("Content-Type"))
	switch {
	case mediaType == "application/json" || strings.HasSuffix(mediaType, "+json"):
		rb.anyByte = true
		resp, err = rd.readJSON(rb)
	case mediaType == "text/event-stream" || mediaType == "":
		// Only data keeps an event stream alive, not comments.
		rd.alive = rb.alive
		resp, err = rd.readSSE(rb)
	default:
		rb.anyByte = true
		head, _ := io.ReadAll(io.LimitReader(rb, 300))
		err = &ModelError{Kind: ErrFatal, Message: fmt.Sprintf("the endpoint answered with %s, not an event stream or JSON: %q", mediaType, head)}
	}
	if err != nil {
		return nil, rd.shown, m.failure(ctx, actx, err, lim)
	}
	m.provider.finish(resp, req)
	repairCalls(resp)
	return resp, rd.shown, nil
}

// failure turns an attempt's error into a ModelError, telling the
// client's own timeouts from the rest.
func (m *OpenAIModel) failure(ctx, actx context.Context, err error, lim limits) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	switch cause := context.Cause(actx); {
	case errors.Is(cause, errStartTimeout):
		return &ModelError{Kind: ErrFatal, Message: fmt.Sprintf("the endpoint did not start answering within %s; a slow endpoint needs a longer model.generationConfig.timeout", lim.start)}
	case errors.Is(cause, errIdleTimeout):
		return &ModelError{Kind: ErrTransient, Message: fmt.Sprintf("the answer stalled: no data for %s, keep-alive comments aside (model.generationConfig.idleTimeout sets how long to wait, in milliseconds)", lim.idle)}
	case errors.Is(cause, errAnswerTimeout):
		return &ModelError{Kind: ErrFatal, Message: fmt.Sprintf("the answer was stopped after %s, still unfinished; model.generationConfig.answerTimeout sets how long one answer may take (milliseconds): raise it for long answers from a slow model", lim.answer)}
	}
	var me *ModelError
	if errors.As(err, &me) {
		return me
	}
	return classify(ctx, err)
}

// idleBody is a response body whose idle timer is pushed back by data:
// by any bytes (anyByte, a JSON answer), or, in an event stream, by a data
// line only (alive), so that comments alone do not keep an answer going.
type idleBody struct {
	rc      io.ReadCloser
	idle    time.Duration
	timer   *time.Timer
	anyByte bool
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 && b.anyByte {
		b.alive()
	}
	return n, err
}

// alive pushes the idle timer back.
func (b *idleBody) alive() { b.timer.Reset(b.idle) }

func (b *idleBody) Close() error {
	b.timer.Stop()
	return b.rc.Close()
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
	// A reset, a cut connection or another transport failure: the next
	// attempt may get through.
	return &ModelError{Kind: ErrTransient, Message: err.Error()}
}

// apiMessage finds the message of an error answer: OpenAI's
// {"error":{"message"}}, vLLM's top-level {"object":"error","message"},
// Ollama's {"error":"..."}, or FastAPI's {"detail":...}.
func apiMessage(e *openai.Error) string {
	if e.Message != "" {
		return e.Message
	}
	var body []byte
	if e.Response != nil && e.Response.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(e.Response.Body, 1<<20))
		e.Response.Body = io.NopCloser(bytes.NewReader(body))
	}
	if msg := errorBodyMessage(body); msg != "" {
		return msg
	}
	if msg := errorBodyMessage([]byte(e.RawJSON())); msg != "" {
		return msg
	}
	if e.Response != nil {
		return e.Response.Status
	}
	return "no message"
}

// errorBodyMessage reads the message of an error body in any of the
// shapes apiMessage names; "" when there is none.
func errorBodyMessage(body []byte) string {
	var b struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if len(body) == 0 || json.Unmarshal(body, &b) != nil {
		return ""
	}
	var inner struct {
		Message string `json:"message"`
	}
	var s string
	switch {
	case json.Unmarshal(b.Error, &inner) == nil && inner.Message != "":
		return inner.Message
	case json.Unmarshal(b.Error, &s) == nil && s != "":
		return s
	case b.Message != "":
		return b.Message
	case json.Unmarshal(b.Detail, &s) == nil && s != "":
		return s
	case len(b.Detail) > 0 && string(b.Detail) != "null":
		return string(b.Detail)
	}
	return ""
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

// body encodes a request (wire_request.go), shaped by the provider, with
// the bound on the answer's tokens (maxtokens.go).
func (m *OpenAIModel) body(req ModelRequest, stream bool) (body []byte, bound int, err error) {
	bound = m.answerBound(req)
	body, err = encodeRequest(m.provider, m.cfg, m.modelName(req), req, m.toolsJSON(req.Tools), stream, bound)
	return body, bound, err
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
