// Package modeltest is a scripted OpenAI-compatible model on loopback: a
// real HTTP server that speaks the chat-completions protocol (streaming
// SSE and plain JSON), answers each request with the next scripted
// Response, and records what it was sent. Tests script text, reasoning,
// tool calls with arguments split across chunks, usage, and faults (error
// statuses with Retry-After, streams cut mid-way, garbage arguments, slow
// answers), and replays recorded answers byte for byte (RawFile, RawBody:
// the shapes of real providers in testdata/providers, optionally stalling
// part way). The entry points are NewServer (for programs such as the demo)
// and Start (for tests, closed when the test ends).
package modeltest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Response is one scripted answer.
type Response struct {
	// Text is streamed as content, in pieces of ChunkSize bytes.
	Text string
	// Reasoning is streamed as reasoning_content before the text.
	Reasoning string
	// Refusal is sent as the message's refusal.
	Refusal string
	// ToolCalls are streamed after the text, each with its arguments
	// split across several chunks.
	ToolCalls []ToolCall
	// FinishReason defaults to "tool_calls" when there are tool calls,
	// else "stop".
	FinishReason string
	// Usage, when set, is sent in a final chunk with no choices.
	Usage *Usage

	// Status, when not 0 or 200, answers with that status and Body (a
	// JSON error object when empty) instead of a completion.
	Status     int
	RetryAfter string
	Body       string
	// CutAfter > 0 closes the connection after that many chunks, without
	// [DONE]: a stream cut mid-way.
	CutAfter int
	// Delay is waited before answering; ChunkDelay between chunks. Both
	// end early when the client goes away.
	Delay      time.Duration
	ChunkDelay time.Duration
	// KeepAlive > 0 starts a streamed answer at once and, while Delay
	// passes, sends an SSE comment line (": keepalive") every KeepAlive,
	// as servers and proxies do while a model is busy. It applies to a
	// scripted stream only, not to an error Status or a raw answer.
	KeepAlive time.Duration
	// Hold, when not nil, is waited on (until closed) before answering,
	// so a test can keep a turn waiting on the model for as long as it
	// needs. It ends early when the client goes away.
	Hold <-chan struct{}
	// ChunkSize splits Text and arguments; 0 means 8 bytes.
	ChunkSize int

	// RawFile or RawBody, when set, is sent verbatim as the answer (a
	// recorded provider's wire shape), with Status (200 when 0) and
	// ContentType (by RawFile's extension when empty: .sse is an event
	// stream, anything else JSON).
	RawFile     string
	RawBody     []byte
	ContentType string
	// StallAfter > 0 sends only that many bytes of the raw answer, then
	// stalls; Stall is how long the answer stalls (at StallAfter, or
	// after the whole raw answer) before the connection closes. A stall
	// ends early when the client goes away.
	StallAfter int
	Stall      time.Duration
}

// ToolCall is one scripted function call. Arguments is sent verbatim, so
// it may be deliberately invalid JSON.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Usage is the token count of a response.
type Usage struct {
	Prompt, Completion int
	// Cached, when positive, is sent as prompt_tokens_details.cached_tokens:
	// the prompt tokens a provider's cache served.
	Cached int
}

// Request is one request the server received.
type Request struct {
	Header   http.Header
	Path     string
	Body     json.RawMessage
	Model    string
	Stream   bool
	Messages []Message
	// Tools are the declared function names, in order.
	Tools []string
	// ToolsRaw is the request's tools array as sent.
	ToolsRaw json.RawMessage
}

// Message is a chat message as sent by the client.
type Message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls,omitempty"`
}

// Text returns the message content when it is a plain string, or the
// concatenated text parts when it is an array.
func (m Message) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return ""
}

// Server is the scripted model.
type Server struct {
	// URL is the OpenAI base URL, ending in /v1.
	URL string

	srv *http.Server
	ln  net.Listener

	mu       sync.Mutex
	script   []Response
	requests []Request
	// side answers requests that match it (such as a side query with no
	// tools) without consuming the script.
	side    func(Request) (Response, bool)
	changed chan struct{}
	// vars expand scripts posted to the control endpoints.
	vars map[string]string
	wg   sync.WaitGroup
	// busy is the total time spent handling requests, so benchmarks can
	// tell the model's share of a round trip from the client's.
	busy time.Duration
}

// BusyTime is the total time the server spent handling requests: reading
// and decoding them, and writing the answers.
func (s *Server) BusyTime() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.busy
}

// NewServer starts a scripted model on 127.0.0.1 with an empty script.
func NewServer() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("modeltest: listen on loopback: %w", err)
	}
	s := &Server{ln: ln, changed: make(chan struct{}), URL: "http://" + ln.Addr().String() + "/v1"}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Start starts a scripted model that is closed when the test ends.
func Start(t testing.TB, script ...Response) *Server {
	t.Helper()
	s, err := NewServer()
	if err != nil {
		t.Fatal(err)
	}
	s.Push(script...)
	t.Cleanup(s.Close)
	return s
}

// Close stops the server and ends every open stream.
func (s *Server) Close() {
	_ = s.srv.Close()
	s.wg.Wait()
}

// Push appends responses to the script.
func (s *Server) Push(rs ...Response) {
	s.mu.Lock()
	s.script = append(s.script, rs...)
	s.mu.Unlock()
}

// Remaining is how many scripted responses are unused.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script)
}

// SetSide installs a handler for side requests: when it returns true its
// response is used and the script is left alone.
func (s *Server) SetSide(f func(Request) (Response, bool)) {
	s.mu.Lock()
	s.side = f
	s.mu.Unlock()
}

// Requests returns every request received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// WaitRequests waits until at least n requests arrived or timeout passed,
// and returns them.
func (s *Server) WaitRequests(n int, timeout time.Duration) []Request {
	deadline := time.After(timeout)
	for {
		s.mu.Lock()
		if len(s.requests) >= n {
			out := append([]Request(nil), s.requests...)
			s.mu.Unlock()
			return out
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			return s.Requests()
		}
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	defer func() {
		s.mu.Lock()
		s.busy += time.Since(start)
		s.mu.Unlock()
	}()
	if strings.HasPrefix(r.URL.Path, "/_control/") {
		s.control(w, r)
		return
	}
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"scripted","object":"model"}]}`)
		return
	}
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	req := parseRequest(r, body)
	s.mu.Lock()
	s.requests = append(s.requests, req)
	close(s.changed)
	s.changed = make(chan struct{})
	var resp Response
	var ok bool
	if s.side != nil {
		resp, ok = s.side(req)
	}
	if !ok {
		if len(s.script) == 0 {
			s.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":{"message":"modeltest: the script has no response left for this request","type":"server_error"}}`)
			return
		}
		resp = s.script[0]
		s.script = s.script[1:]
	}
	s.mu.Unlock()
	s.answer(w, r, req, resp)
}

func parseRequest(r *http.Request, body []byte) Request {
	var p struct {
		Model    string          `json:"model"`
		Stream   bool            `json:"stream"`
		Messages []Message       `json:"messages"`
		Tools    json.RawMessage `json:"tools"`
	}
	_ = json.Unmarshal(body, &p)
	req := Request{Header: r.Header.Clone(), Path: r.URL.Path, Body: body, Model: p.Model, Stream: p.Stream, Messages: p.Messages, ToolsRaw: p.Tools}
	var tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(p.Tools, &tools) == nil {
		for _, t := range tools {
			req.Tools = append(req.Tools, t.Function.Name)
		}
	}
	return req
}

func sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	select {
	case <-time.After(d):
		return true
	case <-r.Context().Done():
		return false
	}
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, req Request, resp Response) {
	started := false
	if resp.KeepAlive > 0 && req.Stream && resp.RawFile == "" && resp.RawBody == nil && (resp.Status == 0 || resp.Status == http.StatusOK) {
		if !keepAlive(w, r, resp.Delay, resp.KeepAlive) {
			return
		}
		started = true
	} else if !sleep(r, resp.Delay) {
		return
	}
	if resp.Hold != nil {
		select {
		case <-resp.Hold:
		case <-r.Context().Done():
			return
		}
	}
	if resp.RawFile != "" || resp.RawBody != nil {
		s.answerRaw(w, r, resp)
		return
	}
	if resp.Status != 0 && resp.Status != http.StatusOK {
		if resp.RetryAfter != "" {
			w.Header().Set("Retry-After", resp.RetryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.Status)
		b := resp.Body
		if b == "" {
			b = fmt.Sprintf(`{"error":{"message":"scripted failure with status %d","type":"scripted_error","code":"%d"}}`, resp.Status, resp.Status)
		}
		io.WriteString(w, b)
		return
	}
	finish := resp.FinishReason
	if finish == "" {
		finish = "stop"
		if len(resp.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	if !req.Stream {
		s.answerJSON(w, req, resp, finish)
		return
	}
	if !started {
		startStream(w)
	}
	flusher, _ := w.(http.Flusher)
	sent := 0
	emit := func(v any) bool {
		if resp.CutAfter > 0 && sent >= resp.CutAfter {
			return false
		}
		if sent > 0 && !sleep(r, resp.ChunkDelay) {
			return false
		}
		data, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		sent++
		return true
	}
	cut := func() {
		// Abort the connection so the client sees an unexpected EOF.
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
			}
		}
	}
	size := resp.ChunkSize
	if size <= 0 {
		size = 8
	}
	model := req.Model
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 1, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}
	if !emit(chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		cut()
		return
	}
	for _, piece := range split(resp.Reasoning, size) {
		if !emit(chunk(map[string]any{"reasoning_content": piece}, nil)) {
			cut()
			return
		}
	}
	for _, piece := range split(resp.Text, size) {
		if !emit(chunk(map[string]any{"content": piece}, nil)) {
			cut()
			return
		}
	}
	if resp.Refusal != "" && !emit(chunk(map[string]any{"refusal": resp.Refusal}, nil)) {
		cut()
		return
	}
	for i, tc := range resp.ToolCalls {
		id := tc.ID
		if id == "" {
			id = "call_" + strconv.Itoa(i+1)
		}
		head := map[string]any{"index": i, "id": id, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": ""}}
		if !emit(chunk(map[string]any{"tool_calls": []any{head}}, nil)) {
			cut()
			return
		}
		for _, piece := range split(tc.Arguments, size) {
			part := map[string]any{"index": i, "function": map[string]any{"arguments": piece}}
			if !emit(chunk(map[string]any{"tool_calls": []any{part}}, nil)) {
				cut()
				return
			}
		}
	}
	if !emit(chunk(map[string]any{}, finish)) {
		cut()
		return
	}
	if resp.Usage != nil {
		u := map[string]any{"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 1, "model": model, "choices": []any{},
			"usage": usageJSON(resp.Usage)}
		if !emit(u) {
			cut()
			return
		}
	}
	if resp.CutAfter > 0 && sent >= resp.CutAfter {
		cut()
		return
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// startStream sends an event stream's status and headers.
func startStream(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// keepAlive starts an event stream and sends a comment every interval
// until d has passed; false when the client went away.
func keepAlive(w http.ResponseWriter, r *http.Request, d, interval time.Duration) bool {
	startStream(w)
	flusher, _ := w.(http.Flusher)
	end := time.After(d)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-end:
			return true
		case <-r.Context().Done():
			return false
		case <-tick.C:
			if _, err := io.WriteString(w, ": keepalive\n\n"); err != nil {
				return false
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
}

func (s *Server) answerJSON(w http.ResponseWriter, req Request, resp Response, finish string) {
	msg := map[string]any{"role": "assistant", "content": resp.Text}
	if resp.Refusal != "" {
		msg["refusal"] = resp.Refusal
	}
	var calls []any
	for i, tc := range resp.ToolCalls {
		id := tc.ID
		if id == "" {
			id = "call_" + strconv.Itoa(i+1)
		}
		calls = append(calls, map[string]any{"id": id, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}})
	}
	if calls != nil {
		msg["tool_calls"] = calls
	}
	out := map[string]any{"id": "chatcmpl-scripted", "object": "chat.completion", "created": 1, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}}
	if resp.Usage != nil {
		out["usage"] = usageJSON(resp.Usage)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// answerRaw sends a recorded answer byte for byte.
func (s *Server) answerRaw(w http.ResponseWriter, r *http.Request, resp Response) {
	body := resp.RawBody
	if resp.RawFile != "" {
		data, err := os.ReadFile(resp.RawFile)
		if err != nil {
			http.Error(w, fmt.Sprintf(`{"error":{"message":"modeltest: %s"}}`, err), http.StatusInternalServerError)
			return
		}
		body = data
	}
	ct := resp.ContentType
	if ct == "" {
		ct = "application/json"
		if strings.HasSuffix(resp.RawFile, ".sse") {
			ct = "text/event-stream"
		}
	}
	status := resp.Status
	if status == 0 {
		status = http.StatusOK
	}
	if resp.RetryAfter != "" {
		w.Header().Set("Retry-After", resp.RetryAfter)
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(status)
	flusher, _ := w.(http.Flusher)
	if resp.StallAfter > 0 && resp.StallAfter < len(body) {
		body = body[:resp.StallAfter]
	}
	// Large bodies go out in pieces, so a slow reader is not one long
	// write.
	for len(body) > 0 {
		n := min(len(body), 1<<20)
		if _, err := w.Write(body[:n]); err != nil {
			return
		}
		body = body[n:]
	}
	if flusher != nil {
		flusher.Flush()
	}
	sleep(r, resp.Stall)
}

func usageJSON(u *Usage) map[string]any {
	out := map[string]any{"prompt_tokens": u.Prompt, "completion_tokens": u.Completion, "total_tokens": u.Prompt + u.Completion}
	if u.Cached > 0 {
		out["prompt_tokens_details"] = map[string]any{"cached_tokens": u.Cached}
	}
	return out
}

// split cuts s into pieces of at most n bytes, never inside a UTF-8
// sequence.
func split(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		end := n
		if end >= len(s) {
			out = append(out, s)
			break
		}
		for end > 0 && !startsRune(s[end]) {
			end--
		}
		if end == 0 {
			end = n
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

func startsRune(b byte) bool { return b&0xC0 != 0x80 }
