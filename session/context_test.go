package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/qwen-ls/qwen-ls/session"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
	"github.com/qwen-ls/qwen-ls/tools"
)

// countingModel answers every request as a model with a window of limit
// tokens would, counting a token per four bytes of the request body: a
// request over the limit fails with a context-length error; a summary
// request gets a summary; a user prompt gets a call to big_read, and its
// result the reply "done".
type countingModel struct {
	limit int

	mu       sync.Mutex
	requests []countedRequest
}

type countedRequest struct {
	tokens   int
	summary  bool
	refused  bool
	messages []modeltest.Message
}

const summaryMarker = "You compress a coding agent's conversation"

func (c *countingModel) answer(req modeltest.Request) (modeltest.Response, bool) {
	tokens := len(req.Body) / 4
	summary := len(req.Messages) > 0 && strings.HasPrefix(req.Messages[0].Text(), summaryMarker)
	c.mu.Lock()
	defer c.mu.Unlock()
	r := countedRequest{tokens: tokens, summary: summary, messages: req.Messages}
	if tokens > c.limit {
		r.refused = true
		c.requests = append(c.requests, r)
		return modeltest.Response{Status: 400, Body: fmt.Sprintf(`{"error":{"message":"This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.","type":"invalid_request_error","code":"context_length_exceeded"}}`, c.limit, tokens)}, true
	}
	c.requests = append(c.requests, r)
	usage := &modeltest.Usage{Prompt: tokens, Completion: 10}
	if summary {
		return modeltest.Response{Text: "The user is stepping through numbered steps; each step read a big file.", Usage: usage}, true
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role == "tool" {
		return modeltest.Response{Text: "done", Usage: usage}, true
	}
	return modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "", Name: "big_read", Arguments: `{}`}}, Usage: usage}, true
}

func (c *countingModel) all() []countedRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]countedRequest(nil), c.requests...)
}

// bigRead is a read-only tool with a 4000-character output.
func bigRead() tools.Tool {
	return readOnly("big_read", func(context.Context) (tools.Result, error) {
		return tools.TextResult(strings.Repeat("line of output\n", 266), tools.Markdown("read")), nil
	})
}

// A long conversation passes the threshold: the session shortens old tool
// outputs and summarises, keeps the recent turns verbatim, tells the
// editor, and every request after that stays inside the window.
func TestLongConversationCompresses(t *testing.T) {
	st := newStored(t)
	const window = 8000
	st.ws.Settings.SetEditorLayer(map[string]any{"model": map[string]any{"contextWindow": float64(window)}})
	cm := &countingModel{limit: window}
	st.model.SetSide(cm.answer)
	m := st.manager(t, []tools.Tool{bigRead()})
	s := newSess(t, m, "yolo")
	const steps = 14
	for i := 0; i < steps; i++ {
		if res := prompt(t, s, fmt.Sprintf("step %d: read the big file", i)); res.StopReason != session.StopEndTurn {
			t.Fatalf("step %d stopped with %s", i, res.StopReason)
		}
	}
	var compressed []session.Update
	for _, u := range st.host.all() {
		if u.Kind == session.UpdateCompressed {
			compressed = append(compressed, u)
		}
	}
	if len(compressed) == 0 {
		t.Fatal("no context_compressed update in a conversation well past the threshold")
	}
	t.Logf("%d compressions in %d requests", len(compressed), len(cm.all()))
	for _, u := range compressed {
		if *u.TokensAfter >= *u.TokensBefore {
			t.Fatalf("compression from %d to %d tokens", *u.TokensBefore, *u.TokensAfter)
		}
	}
	reqs := cm.all()
	first := -1
	summaries := 0
	for i, r := range reqs {
		if r.refused {
			t.Fatalf("request %d (%d tokens) was over the window", i, r.tokens)
		}
		if r.summary {
			summaries++
			if first < 0 {
				first = i
			}
		}
	}
	if summaries == 0 {
		t.Fatal("the older turns were never summarised")
	}
	for _, r := range reqs[first:] {
		if !r.summary && r.tokens >= window {
			t.Fatalf("a request after compression has %d tokens, over the %d window", r.tokens, window)
		}
	}
	last := reqs[len(reqs)-1].messages
	var body strings.Builder
	for _, msg := range last {
		body.WriteString(msg.Text() + "\n")
	}
	text := body.String()
	if !strings.Contains(text, "<conversation-summary>") || !strings.Contains(text, "each step read a big file") {
		t.Fatalf("the last request lacks the summary:\n%s", text)
	}
	for _, want := range []string{fmt.Sprintf("step %d: read the big file", steps-1), fmt.Sprintf("step %d: read the big file", steps-2)} {
		if !strings.Contains(text, want) {
			t.Fatalf("the recent prompt %q is not verbatim in the last request", want)
		}
	}
	if strings.Contains(text, "step 0: read the big file") {
		t.Fatalf("the oldest prompt was kept verbatim after compression")
	}
	// The editor's replay still has the whole conversation, tool outputs
	// uncut, in this process and in the next one.
	if p, full := replayed(st, s); p != steps || full != steps {
		t.Fatalf("replay showed %d prompts and %d whole tool outputs, want %d of each", p, full, steps)
	}
	m.Close()
	lr, err := st.manager(t, []tools.Tool{bigRead()}).Load(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if p, full := replayed(st, lr.Session); p != steps || full != steps {
		t.Fatalf("replay after a load showed %d prompts and %d whole tool outputs, want %d of each", p, full, steps)
	}
	// The loaded session goes on from the compressed history, and its
	// transcript keeps growing with it.
	prompt(t, lr.Session, "one more step")
	if h := lr.Session.History(); !strings.Contains(h[0].Text, "<conversation-summary>") {
		t.Fatalf("the loaded history does not start with the summary: %.200s", h[0].Text)
	}
	if p, full := replayed(st, lr.Session); p != steps+1 || full != steps+1 {
		t.Fatalf("replay after one more prompt showed %d prompts and %d whole tool outputs, want %d of each", p, full, steps+1)
	}
}

// replayed replays s and counts the prompts and the tool outputs shown
// whole.
func replayed(st *stored, s *session.Session) (prompts, whole int) {
	st.host.mu.Lock()
	st.host.updates = nil
	st.host.mu.Unlock()
	s.Replay()
	want := strings.Repeat("line of output\n", 266)
	for _, u := range st.host.all() {
		switch u.Kind {
		case "user_message_chunk":
			prompts++
		case session.UpdateToolCallUpd:
			// Shown as it was live ("read"), with the whole output the
			// model was given as its raw output, whatever compression cut.
			var raw struct{ Output string }
			if json.Unmarshal(u.RawOutput, &raw) == nil && raw.Output == want {
				whole++
			}
		}
	}
	return prompts, whole
}

// A model whose real window is smaller than model.contextWindow refuses a
// request as too long: the session compresses and retries once, and the
// turn succeeds.
func TestContextLengthErrorCompressesAndRetries(t *testing.T) {
	st := newStored(t)
	// The setting claims a large window; the model allows 6000 tokens.
	cm := &countingModel{limit: 6000}
	st.model.SetSide(cm.answer)
	m := st.manager(t, []tools.Tool{bigRead()})
	s := newSess(t, m, "yolo")
	for i := 0; i < 8; i++ {
		if res := prompt(t, s, fmt.Sprintf("step %d: read the big file", i)); res.StopReason != session.StopEndTurn {
			t.Fatalf("step %d stopped with %s", i, res.StopReason)
		}
	}
	reqs := cm.all()
	refusals := 0
	for i, r := range reqs {
		if !r.refused {
			continue
		}
		refusals++
		j := i + 1
		for j < len(reqs) && reqs[j].summary {
			j++
		}
		if j == len(reqs) || reqs[j].refused || reqs[j].tokens >= r.tokens {
			var seq []string
			for _, r := range reqs[i:] {
				seq = append(seq, fmt.Sprintf("{tokens %d, summary %v, refused %v}", r.tokens, r.summary, r.refused))
			}
			t.Fatalf("after the refusal: %s", strings.Join(seq, " "))
		}
	}
	if refusals == 0 {
		t.Fatalf("the model never refused a request; the test did not reach its limit")
	}
	compressed := 0
	for _, u := range st.host.all() {
		if u.Kind == session.UpdateCompressed {
			compressed++
		}
	}
	if compressed < refusals {
		t.Fatalf("%d refusals but %d context_compressed updates", refusals, compressed)
	}
}

// The first request of a session is already too long for the model (a
// small local window, say): there is nothing older to compress and no tool
// output to cut, so the turn ends at once with an error that says what
// took the room and what to change, not the server's bare message.
func TestContextLengthWithNothingToCompressSaysWhatToDo(t *testing.T) {
	st := newStored(t)
	cm := &countingModel{limit: 40}
	st.model.SetSide(cm.answer)
	m := st.manager(t, []tools.Tool{bigRead()})
	s := newSess(t, m, "yolo")
	_, err := s.Prompt(context.Background(), []session.ContentBlock{{Type: "text", Text: "hello"}})
	if err == nil {
		t.Fatal("the turn succeeded against a 40-token window")
	}
	msg := err.Error()
	t.Logf("message: %s", msg)
	for _, want := range []string{"does not fit the model's context window", "window of 40", "model.contextWindow",
		"model.generationConfig.contextWindowSize", "smaller request", "system prompt and tool declarations take about",
		"maximum context length is 40 tokens"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message lacks %q", want)
		}
	}
	var me *session.ModelError
	if !errors.As(err, &me) || me.Status != 400 {
		t.Errorf("the error is not the model's 400: %#v", err)
	}
	if reqs := cm.all(); len(reqs) != 1 {
		t.Errorf("%d requests, want the one refused (nothing to retry with)", len(reqs))
	}
}

// One huge tool output in the first turn: nothing older to compress, so
// the session cuts that output to what fits, keeping its start and end
// and saying how much it cut, and the retried request succeeds.
func TestContextLengthCutsTheCurrentTurnsHugeOutput(t *testing.T) {
	st := newStored(t)
	const limit = 6000
	cm := &countingModel{limit: limit}
	st.model.SetSide(cm.answer)
	var out strings.Builder
	out.WriteString("FIRST LINE\n")
	for i := 0; out.Len() < 200_000; i++ {
		fmt.Fprintf(&out, "row %06d of the huge listing\n", i)
	}
	out.WriteString("LAST LINE\n")
	huge := readOnly("big_read", func(context.Context) (tools.Result, error) {
		return tools.TextResult(out.String(), tools.Markdown("read")), nil
	})
	m := st.manager(t, []tools.Tool{huge})
	s := newSess(t, m, "yolo")
	if res := prompt(t, s, "read the huge listing"); res.StopReason != session.StopEndTurn {
		t.Fatalf("stopped with %s", res.StopReason)
	}
	reqs := cm.all()
	var seq []string
	for _, r := range reqs {
		seq = append(seq, fmt.Sprintf("{tokens %d, summary %v, refused %v}", r.tokens, r.summary, r.refused))
	}
	t.Logf("requests: %s", strings.Join(seq, " "))
	if len(reqs) != 3 || !reqs[1].refused || reqs[2].refused || reqs[2].summary {
		t.Fatalf("want: the call, the refusal, one retry that fits; got %s", strings.Join(seq, " "))
	}
	last := reqs[2].messages
	tool := last[len(last)-1]
	text := tool.Text()
	t.Logf("the %d-character output was cut to %d characters", out.Len(), len(text))
	if tool.Role != "tool" || !strings.HasPrefix(text, "FIRST LINE\n") || !strings.HasSuffix(text, "LAST LINE\n") {
		t.Fatalf("the cut output lost its start or end: %.200q ... %.200q", text, text[max(0, len(text)-200):])
	}
	if !strings.Contains(text, fmt.Sprintf("of this output's %d characters were cut here because the whole did not fit the model's context window", out.Len())) {
		t.Errorf("the cut output does not say what was cut")
	}
	// Cut to the room the window leaves, not to a fixed sliver.
	if len(text) < 4*limit/4 {
		t.Errorf("the output was cut to %d characters, far less than a %d-token window leaves", len(text), limit)
	}
	var cuts int
	for _, u := range st.host.all() {
		if u.Kind == session.UpdateCompressed {
			cuts += u.TruncatedOutputs
		}
	}
	if cuts != 1 {
		t.Errorf("context_compressed updates report %d cut outputs, want 1", cuts)
	}
	// The editor's replay still shows the call as it was shown live, and
	// its raw output is the whole output, not the cut one.
	st.host.mu.Lock()
	st.host.updates = nil
	st.host.mu.Unlock()
	s.Replay()
	whole := false
	for _, u := range st.host.all() {
		var raw struct{ Output string }
		c, ok := u.Content.([]session.ToolContent)
		if ok && u.Kind == session.UpdateToolCallUpd && len(c) == 1 && c[0].Content != nil && c[0].Content.Text == "read" &&
			json.Unmarshal(u.RawOutput, &raw) == nil && raw.Output == out.String() {
			whole = true
		}
	}
	if !whole {
		t.Error("the replay does not show the call as it was shown, with the whole output")
	}
}
