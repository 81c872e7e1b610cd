package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/kaptinlin/jsonrepair"
)

// This file reads an answer, an event stream or one JSON completion, into
// a ModelResponse: <think> split out of the text, and near-JSON tool-call
// arguments repaired (wire_request.go writes the request).
//
// The answer is read here rather than through the SDK's stream: the SDK
// scans SSE lines with a 32 MiB cap (under the 64 MiB an answer may
// hold), reads a JSON answer to a streaming request as an empty stream,
// and hides the fields that providers add (reasoning_content, cached
// tokens).

// wireDelta is a chunk's delta, or a JSON answer's message.
type wireDelta struct {
	Content flexText `json:"content"`
	// ReasoningContent is DashScope's, vLLM's, DeepSeek's and llama.cpp's
	// thinking; Reasoning is Ollama's and OpenRouter's.
	ReasoningContent flexText `json:"reasoning_content"`
	Reasoning        flexText `json:"reasoning"`
	Refusal          flexText `json:"refusal"`
	ToolCalls        []struct {
		Index    int    `json:"index"`
		ID       string `json:"id"`
		Function struct {
			Name string `json:"name"`
			// Arguments is a string; a few servers send an object.
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
		// ExtraContent is provider data on the call (Gemini's
		// {"google": {"thought_signature": ...}}).
		ExtraContent json.RawMessage `json:"extra_content"`
	} `json:"tool_calls"`
}

// flexText is a text field that a few servers send as a list of parts
// ([{"type": "text", "text": ...}]) instead of a string: the parts' text,
// joined.
type flexText string

func (f *flexText) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '[' {
		var parts []struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(data, &parts); err != nil {
			return err
		}
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		*f = flexText(b.String())
		return nil
	}
	if string(data) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	*f = flexText(s)
	return nil
}

type wireUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	// PromptCacheHitTokens is DeepSeek's count of cached prompt tokens.
	PromptCacheHitTokens int `json:"prompt_cache_hit_tokens"`
}

func (u *wireUsage) usage() Usage {
	out := Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if u.PromptTokensDetails != nil {
		out.CachedTokens = u.PromptTokensDetails.CachedTokens
	}
	if out.CachedTokens == 0 {
		out.CachedTokens = u.PromptCacheHitTokens
	}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.InputTokens + out.OutputTokens
	}
	return out
}

// wireChunk is one streamed chunk, or (with Message set) a whole JSON
// answer.
type wireChunk struct {
	Choices []struct {
		Delta        wireDelta `json:"delta"`
		Message      wireDelta `json:"message"`
		FinishReason string    `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage `json:"usage"`
	// Error is an error sent inside a stream or a 200 answer, and Object
	// "error" with Message is vLLM's shape of one.
	Error   json.RawMessage `json:"error"`
	Object  string          `json:"object"`
	Message string          `json:"message"`
}

// inBandError is the message of an error carried in a chunk, if any.
func (c *wireChunk) inBandError(raw []byte) string {
	if (len(c.Error) > 0 && string(c.Error) != "null") || c.Object == "error" {
		if msg := errorBodyMessage(raw); msg != "" {
			return msg
		}
		return "the endpoint sent an error without a message"
	}
	return ""
}

// answerReader gathers one answer, streamed or whole, telling ev as it
// goes.
type answerReader struct {
	m     *OpenAIModel
	req   ModelRequest
	ev    StreamEvents
	limit int
	// alive, when set, is told of every piece of a data line read from
	// an event stream (the idle timer's push).
	alive func()

	shown                    bool
	size                     int
	out                      ModelResponse
	text, reasoning, refusal answerText
	think                    thinkSplitter
	// Arguments arrive in many small pieces; a builder per call keeps
	// collecting them linear (appending to a string copies all of it
	// each time: minutes for a few megabytes sent a token at a time).
	// Arguments past MaxArgumentBytes are only counted: such a call is
	// refused anyway, and holding them would cost their size again at
	// every growth of the builder.
	calls map[int]*callParts
	order []int
	tight bool
	undo  func()
}

type callParts struct {
	id         string
	name, args strings.Builder
	dropped    int
	extra      json.RawMessage
}

func (a *answerReader) tooLarge() error {
	return &ModelError{Kind: ErrFatal, Message: fmt.Sprintf("the answer is over %s; the rest was not read", sizeLabel(a.limit))}
}

// readJSON takes a whole chat.completion as the answer.
func (a *answerReader) readJSON(r io.Reader) (*ModelResponse, error) {
	defer a.release()
	data, err := io.ReadAll(io.LimitReader(r, int64(a.limit)*2+1))
	if err != nil {
		return nil, err
	}
	if len(data) > a.limit*2 {
		return nil, a.tooLarge()
	}
	var c wireChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, &ModelError{Kind: ErrFatal, Message: fmt.Sprintf("the answer is not a chat completion (%v): %q", err, head(data))}
	}
	if msg := c.inBandError(data); msg != "" {
		return nil, &ModelError{Kind: ErrFatal, Message: msg}
	}
	if len(c.Choices) == 0 {
		return nil, &ModelError{Kind: ErrFatal, Message: "the answer has no choices"}
	}
	if c.Usage != nil {
		a.out.Usage = c.Usage.usage()
	}
	ch := c.Choices[0]
	if err := a.delta(ch.Message); err != nil {
		return nil, err
	}
	a.out.FinishReason = ch.FinishReason
	if a.out.FinishReason == "" {
		a.out.FinishReason = "stop"
		if len(a.calls) > 0 {
			a.out.FinishReason = "tool_calls"
		}
	}
	return a.done(), nil
}

// readSSE reads an event stream to its end.
func (a *answerReader) readSSE(r io.Reader) (*ModelResponse, error) {
	defer a.release()
	// A line may hold the whole answer, escaped: allow for the escapes.
	sse := &sseReader{r: bufio.NewReaderSize(r, 64<<10), max: a.limit + a.limit/4 + 1<<20, alive: a.alive}
	events := 0
	for {
		data, err := sse.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if string(bytes.TrimSpace(data)) == "[DONE]" {
			break
		}
		events++
		var c wireChunk
		if err := json.Unmarshal(data, &c); err != nil {
			if sse.cut {
				// The body ended inside this event: a cut stream.
				return nil, &ModelError{Kind: ErrTransient, Message: "the stream ended inside an event"}
			}
			return nil, &ModelError{Kind: ErrFatal, Message: fmt.Sprintf("the stream sent an event that is not a chat-completion chunk (%v): %q", err, head(data))}
		}
		if msg := c.inBandError(data); msg != "" {
			return nil, &ModelError{Kind: ErrFatal, Message: msg}
		}
		if c.Usage != nil {
			a.out.Usage = c.Usage.usage()
		}
		if len(c.Choices) == 0 {
			continue
		}
		ch := c.Choices[0]
		if err := a.delta(ch.Delta); err != nil {
			return nil, err
		}
		if ch.FinishReason != "" {
			a.out.FinishReason = ch.FinishReason
		}
	}
	if events == 0 && sse.other > 0 {
		return nil, &ModelError{Kind: ErrFatal, Message: fmt.Sprintf("the answer is not an event stream: %q", sse.firstOther)}
	}
	if a.out.FinishReason == "" {
		// A stream that ends without a finish reason was cut short.
		return nil, &ModelError{Kind: ErrTransient, Message: "the stream ended before the answer was complete"}
	}
	return a.done(), nil
}

// release undoes the tighter collection that large arguments asked for.
func (a *answerReader) release() {
	if a.undo != nil {
		a.undo()
		a.undo = nil
	}
}

func head(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}

// delta adds one chunk's delta to the answer.
func (a *answerReader) delta(d wireDelta) error {
	if r := string(d.ReasoningContent + d.Reasoning); r != "" {
		a.addReasoning(r)
	}
	if d.Content != "" {
		if a.m.provider.thinkTags {
			text, thought := a.think.feed(string(d.Content))
			a.addReasoning(thought)
			a.addText(text)
		} else {
			a.addText(string(d.Content))
		}
	}
	if d.Refusal != "" {
		a.refusal.WriteString(string(d.Refusal))
		a.size += len(d.Refusal)
	}
	for i, tc := range d.ToolCalls {
		idx := tc.Index
		if len(d.ToolCalls) > 1 && idx == 0 && i > 0 {
			// Some servers leave index out of every call.
			idx = i
		}
		if a.calls == nil {
			a.calls = map[int]*callParts{}
		}
		c, ok := a.calls[idx]
		if !ok {
			c = &callParts{}
			a.calls[idx] = c
			a.order = append(a.order, idx)
		}
		if tc.ID != "" {
			c.id = tc.ID
		}
		if len(tc.ExtraContent) > 0 && string(tc.ExtraContent) != "null" {
			if len(tc.ExtraContent) > maxCallExtraBytes {
				return &ModelError{Kind: ErrFatal, Message: fmt.Sprintf("a tool call's extra_content is over %d bytes", maxCallExtraBytes)}
			}
			c.extra = append(json.RawMessage(nil), tc.ExtraContent...)
		}
		c.name.WriteString(tc.Function.Name)
		arg := rawArgument(tc.Function.Arguments)
		switch {
		case c.dropped > 0:
			c.dropped += len(arg)
		case c.args.Len()+len(arg) > MaxArgumentBytes:
			c.dropped = c.args.Len() + len(arg)
			c.args = strings.Builder{}
		default:
			c.args.WriteString(arg)
		}
		if !a.tight && c.args.Len()+c.dropped > largeArgumentBytes {
			// Each chunk's decoding leaves garbage; with large
			// arguments held, collect it sooner (tightenGC).
			a.tight = true
			a.undo = tightenGC()
		}
		a.size += len(tc.ID) + len(tc.Function.Name) + len(arg)
	}
	if a.size > a.limit {
		return a.tooLarge()
	}
	return nil
}

// rawArgument is a call's arguments piece: the string, or the JSON of an
// object sent in its place.
func rawArgument(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}

func (a *answerReader) addText(s string) {
	if s == "" {
		return
	}
	a.text.WriteString(s)
	a.size += len(s)
	if a.ev.OnText != nil {
		a.ev.OnText(s)
	}
	a.shown = true
}

func (a *answerReader) addReasoning(s string) {
	if s == "" {
		return
	}
	a.reasoning.WriteString(s)
	a.size += len(s)
	if a.ev.OnReasoning != nil {
		a.ev.OnReasoning(s)
	}
	a.shown = true
}

// done ends the answer: text held back at a possible tag goes out.
func (a *answerReader) done() *ModelResponse {
	if a.m.provider.thinkTags {
		text, thought := a.think.flush()
		a.addReasoning(thought)
		a.addText(text)
	}
	out := a.out
	out.Text, out.Reasoning, out.Refusal = a.text.String(), a.reasoning.String(), a.refusal.String()
	for _, i := range a.order {
		c := a.calls[i]
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: c.id, Name: c.name.String(), Arguments: c.args.String(), DroppedBytes: c.dropped, Extra: c.extra})
	}
	return &out
}

// sseReader reads server-sent events: each event's data lines, joined.
// A line may be up to max bytes; a longer one fails without being read
// on.
type sseReader struct {
	r   *bufio.Reader
	max int
	// other counts lines that are not SSE fields, for telling a body
	// that is no event stream at all.
	other      int
	firstOther string
	line       []byte
	// cut is set when the last event had no closing blank line.
	cut bool
	// alive, when set, is told of each piece of a data line as it is
	// read; comments, other fields and blank lines are not data.
	alive func()
}

func (s *sseReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		frag, err := s.r.ReadSlice('\n')
		if len(s.line)+len(frag) > s.max {
			return nil, &ModelError{Kind: ErrFatal, Message: fmt.Sprintf("a stream event is over %s; the rest was not read", sizeLabel(s.max))}
		}
		s.line = append(s.line, frag...)
		if s.alive != nil && isDataLine(s.line) {
			s.alive()
		}
		switch err {
		case nil:
			return bytes.TrimRight(s.line, "\r\n"), nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if len(s.line) > 0 {
				return bytes.TrimRight(s.line, "\r\n"), nil
			}
			return nil, io.EOF
		default:
			return nil, err
		}
	}
}

// isDataLine reports whether a line, or its start, is a data field.
func isDataLine(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("data"))
	return ok && (len(rest) == 0 || rest[0] == ':' || rest[0] == '\r' || rest[0] == '\n')
}

func (s *sseReader) next() ([]byte, error) {
	var data []byte
	for {
		line, err := s.readLine()
		if err == io.EOF && data != nil {
			// The body ended before the blank line that closes the
			// event: used if it is whole, else the stream was cut.
			s.cut = true
			return data, nil
		}
		if err != nil {
			// A body cut inside an event is a cut stream.
			if err == io.EOF {
				return nil, io.EOF
			}
			return nil, err
		}
		if len(line) == 0 {
			if data != nil {
				return data, nil
			}
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(name) {
		case "data":
			if data != nil {
				data = append(data, '\n')
			} else {
				data = make([]byte, 0, len(value))
			}
			data = append(data, value...)
		case "", "event", "id", "retry":
		default:
			if s.other == 0 {
				s.firstOther = head(line)
			}
			s.other++
		}
	}
}

// thinkSplitter takes <think>...</think> out of streamed content: some
// servers (a model without a reasoning parser) send the thinking inside
// the text. A tag split across chunks is held back until it is whole.
type thinkSplitter struct {
	in      bool // inside <think>
	started bool // text other than white space has been seen
	trimNL  bool // just after </think>
	pending string
}

const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// feed takes a piece of content and returns the text and the thinking in
// it.
func (t *thinkSplitter) feed(s string) (text, thought string) {
	s = t.pending + s
	t.pending = ""
	var tb, rb strings.Builder
	for s != "" {
		if t.in {
			if i := strings.Index(s, thinkClose); i >= 0 {
				rb.WriteString(s[:i])
				s = s[i+len(thinkClose):]
				t.in, t.trimNL = false, true
				continue
			}
			keep := partialSuffix(s, thinkClose)
			rb.WriteString(s[:len(s)-keep])
			t.pending = s[len(s)-keep:]
			break
		}
		if t.started {
			if t.trimNL {
				// The blank lines after </think> belong to neither.
				if s = strings.TrimLeft(s, "\r\n"); s == "" {
					break
				}
				t.trimNL = false
			}
			// Only a leading <think> opens a thought: a tag later in the
			// text is the text's own.
			tb.WriteString(s)
			break
		}
		trimmed := strings.TrimLeft(s, " \t\r\n")
		if trimmed == "" {
			t.pending = s
			break
		}
		if strings.HasPrefix(trimmed, thinkOpen) {
			s = trimmed[len(thinkOpen):]
			t.in, t.started = true, true
			continue
		}
		if strings.HasPrefix(thinkOpen, trimmed) {
			t.pending = s
			break
		}
		t.started = true
	}
	return tb.String(), rb.String()
}

func (t *thinkSplitter) flush() (text, thought string) {
	p := t.pending
	t.pending = ""
	if t.in {
		return "", p
	}
	return p, ""
}

// partialSuffix is the length of the longest end of s that begins tag.
func partialSuffix(s, tag string) int {
	for n := min(len(s), len(tag)-1); n > 0; n-- {
		if strings.HasSuffix(s, tag[:n]) {
			return n
		}
	}
	return 0
}

// Tool-call arguments. Models send "" for a call without arguments, and
// near-JSON now and then: a trailing comma, single quotes, an object cut
// short. Such arguments are repaired once when the answer arrives, so the
// call runs with them and the history holds them repaired (vLLM's chat
// templates parse the arguments in the history, and fail the request on
// bad JSON). Arguments that cannot be made an object stay as they came,
// so the tool's error tells the model; the history sends "{}" for them.

// repairCalls repairs the arguments of an answer's calls. An answer cut
// by the token limit keeps its cut arguments: closing them would run the
// call with a part of what the model meant (half a file), not repair it.
func repairCalls(resp *ModelResponse) {
	if resp.FinishReason == "length" {
		return
	}
	for i := range resp.ToolCalls {
		tc := &resp.ToolCalls[i]
		if tc.DroppedBytes > 0 {
			continue
		}
		if fixed, ok := repairArguments(tc.Arguments); ok {
			tc.Arguments = fixed
		}
	}
}

// repairArguments returns args as a JSON object: "" becomes "{}", a valid
// object is kept as it is, and near-JSON is repaired; ok is false when
// args cannot be made an object.
func repairArguments(args string) (string, bool) {
	trimmed := strings.TrimSpace(args)
	if trimmed == "" || trimmed == "null" {
		return "{}", true
	}
	if json.Valid([]byte(trimmed)) {
		return args, trimmed[0] == '{'
	}
	if trimmed[0] != '{' {
		return args, false
	}
	fixed, err := jsonrepair.Repair(trimmed)
	if err != nil {
		return args, false
	}
	fixed = strings.TrimSpace(fixed)
	if fixed == "" || fixed[0] != '{' || !json.Valid([]byte(fixed)) {
		return args, false
	}
	return fixed, true
}
