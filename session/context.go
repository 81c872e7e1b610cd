package session

import (
	"github.com/qwen-ls/qwen-ls/tools/lazy"

	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Context management: every message carries a token count (the model's
// own where it reported one, an estimate otherwise). Before each model
// request the session checks the request's size against
// model.chatCompression.contextPercentageThreshold of model.contextWindow
// and, past it, first shortens old tool outputs, then has the model
// summarise the older part of the conversation, keeping the recent turns
// verbatim.

const (
	defaultContextWindow = 131072
	defaultCompressAt    = 0.7
	// keepShare is the part of the window the verbatim recent turns may
	// take after a summary.
	keepShare = 0.3
	// oldToolOutputChars is what an old tool output is cut to.
	oldToolOutputChars = 2000
	// summaryInputShare bounds the summary request's input.
	summaryInputShare = 0.5
)

// calibration is the model's own count for the last request: input prompt
// tokens for a request made of the first count history messages.
type calibration struct {
	input int
	count int
}

// estimateText guesses the tokens of a text: about four bytes a token for
// code and English, one a token for other scripts.
func estimateText(s string) int {
	if s == "" {
		return 0
	}
	n := len(s)
	runes := utf8.RuneCountInString(s)
	wide := n - runes // extra bytes of multi-byte characters
	return (n-wide)/4 + wide/2 + 1
}

// estimateMessage guesses the tokens of one message, with the few tokens
// of framing each message costs. Parts, when set, are what the model is
// sent instead of Text (a prompt with images keeps its text in both).
func estimateMessage(m Message) int {
	n := 4
	if len(m.Parts) == 0 {
		n += estimateText(m.Text)
	}
	for _, tc := range m.ToolCalls {
		n += 8 + estimateText(tc.Name) + estimateText(tc.Arguments)
	}
	for _, p := range m.Parts {
		switch p.Type {
		case "text":
			n += estimateText(p.Text)
		default:
			// Media are counted by the provider in ways that vary; a
			// fixed share keeps the estimate from ignoring them.
			n += 1000
		}
	}
	return n
}

func estimateDecls(decls []ToolDecl) int {
	n := 0
	for _, d := range decls {
		n += 8 + estimateText(d.Name) + estimateText(d.Description) + estimateText(string(d.Parameters))
	}
	return n
}

// requestTokens is the size of the next request: the model's count for
// the last request plus estimates of what was added since, or estimates
// throughout when the model has not counted this history.
func (s *Session) requestTokens(system string, decls []ToolDecl) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.calib; c.input > 0 && c.count <= len(s.tokens) {
		n := c.input
		for _, t := range s.tokens[c.count:] {
			n += t
		}
		return n
	}
	n := estimateText(system) + estimateDecls(decls)
	for _, t := range s.tokens {
		n += t
	}
	return n
}

// contextLimits returns the window and the compression threshold in
// tokens, for the model the request goes to.
func (s *Session) contextLimits(model Model) (window, threshold int) {
	st := s.mgr.opts.Env.Settings()
	window = st.Int("model.contextWindow", 0)
	if window <= 0 {
		// The model's own generationConfig.contextWindowSize, or what its
		// local server says, when the setting says nothing.
		if w, ok := model.(interface{ ConfiguredWindow() int }); ok {
			window = w.ConfiguredWindow()
		}
	}
	if window <= 0 {
		window = defaultContextWindow
	}
	share := defaultCompressAt
	if v, ok := st.Get("model.chatCompression.contextPercentageThreshold"); ok {
		if f, ok := v.(float64); ok && f > 0 && f <= 1 {
			share = f
		}
	}
	return window, int(float64(window) * share)
}

// contextExceeded recognises a provider's "the prompt is too long" error:
// OpenAI and vLLM ("maximum context length"), DashScope ("Range of input
// length should be [1, n]"), llama.cpp ("exceeds the available context
// size"), Anthropic's compatible endpoint ("prompt is too long").
var contextExceeded = lazy.Regexp{Expr: `(?i)context[ _-]?length|context window|context size|maximum context|too many tokens|prompt is too long|input is too long|range of input length|input length should be|reduce the length|exceeds? the (model'?s? )?(maximum|max|context)|token limit`}

// isContextExceeded reports whether a model error says the request did not
// fit the model's context.
func isContextExceeded(err error) bool {
	var me *ModelError
	if !errors.As(err, &me) {
		return false
	}
	if me.Status != 0 && me.Status != 400 && me.Status != 413 && me.Status != 422 {
		return false
	}
	return contextExceeded.Get().MatchString(me.Message)
}

// The numbers a context-length error may give: the model's window, and
// the size of the request it refused.
var (
	refusedLimit = lazy.Value[[]*regexp.Regexp]{Build: func() []*regexp.Regexp {
		return []*regexp.Regexp{
			regexp.MustCompile(`(?i)maximum context length is (\d+)`),
			regexp.MustCompile(`(?i)context length (?:is|of) (\d+)`),
			regexp.MustCompile(`(?i)input length should be \[\d+, ?(\d+)\]`),
			regexp.MustCompile(`(?i)\d+ tokens > (\d+)`),
			regexp.MustCompile(`(?i)n_ctx\W{1,3}(\d+)`),
		}
	}}
	refusedSize = lazy.Value[[]*regexp.Regexp]{Build: func() []*regexp.Regexp {
		return []*regexp.Regexp{
			regexp.MustCompile(`(?i)(?:resulted in|requested|you sent) (\d+) tokens`),
			regexp.MustCompile(`(?i)(\d+) tokens > \d+`),
			regexp.MustCompile(`(?i)n_prompt_tokens\W{1,3}(\d+)`),
		}
	}}
)

// refusedNumbers reads the window and the refused request's size from a
// context-length error; 0 for what it does not say.
func refusedNumbers(err error) (limit, sent int) {
	var me *ModelError
	if !errors.As(err, &me) {
		return 0, 0
	}
	first := func(res []*regexp.Regexp) int {
		for _, re := range res {
			if m := re.FindStringSubmatch(me.Message); m != nil {
				var n int
				if _, err := fmt.Sscan(m[1], &n); err == nil && n > 0 {
					return n
				}
			}
		}
		return 0
	}
	return first(refusedLimit.Get()), first(refusedSize.Get())
}

// turnOutputFloor is the least a tool output of the current turn is cut
// to, in tokens: below that, the output tells the model nothing.
const turnOutputFloor = 500

// fitRefused makes room after the model refused a request as too long
// (refusal). The current turn's own oversized tool outputs are cut first,
// to their start and end: they are what a turn adds at once, and the only
// thing to cut when nothing older is there (one huge output in the first
// turn). Then the older history is compressed as before. It reports
// whether anything changed.
func (s *Session) fitRefused(ctx context.Context, model Model, system string, decls []ToolDecl, refusal error) (bool, error) {
	before := s.requestTokens(system, decls)
	limit, sent := refusedNumbers(refusal)
	// The target is in our own estimate's units: the model's window
	// scaled by how our estimate compares with its count, with room for
	// the answer.
	target := before * 7 / 10
	switch {
	case limit > 0 && sent > 0:
		target = int(float64(limit) * 0.85 * float64(before) / float64(sent))
	case limit > 0:
		target = limit * 85 / 100
	}
	if cut := s.cutTurnOutputs(system, decls, target); cut > 0 {
		after := s.requestTokens(system, decls)
		s.recordCompaction(compaction{before: before, after: after, truncated: cut})
		if after <= target {
			return true, nil
		}
		_, err := s.fitContext(ctx, model, system, decls, true)
		return true, err
	}
	return s.fitContext(ctx, model, system, decls, true)
}

// cutTurnOutputs cuts the tool outputs of the current turn (after its
// prompt, the last user message) that are too big for the request to fit
// target tokens: each output over a quarter of target shares what the
// rest of the request leaves, and is cut to that share (at least
// turnOutputFloor tokens). It returns how many it cut.
func (s *Session) cutTurnOutputs(system string, decls []ToolDecl, target int) int {
	total := s.requestTokens(system, decls)
	s.mu.Lock()
	defer s.mu.Unlock()
	start := -1
	for i := len(s.history) - 1; i >= 0; i-- {
		if s.history[i].Role == "user" {
			start = i
			break
		}
	}
	if start < 0 {
		return 0
	}
	var big []int
	bigTokens := 0
	for i := start + 1; i < len(s.history) && i < len(s.tokens); i++ {
		if s.history[i].Role == "tool" && s.tokens[i] > max(target/4, turnOutputFloor) {
			big = append(big, i)
			bigTokens += s.tokens[i]
		}
	}
	if len(big) == 0 || total <= target {
		return 0
	}
	// Each cut output also carries a note of about 80 tokens.
	share := max((target-(total-bigTokens))/len(big)-100, turnOutputFloor)
	n := 0
	for _, i := range big {
		m := s.history[i]
		// About four bytes a token, as estimateText counts.
		keep := share * 4
		if len(m.Text) <= keep {
			continue
		}
		m.Text = cutTurnOutput(m.Text, keep)
		if n == 0 {
			s.splitTranscript()
		}
		s.history[i] = m
		s.tokens[i] = estimateMessage(m)
		n++
	}
	if n > 0 {
		s.calib = calibration{}
	}
	return n
}

// cutTurnOutput keeps the start and the end of a tool output of the
// current turn, and says how much was cut and how to get the rest: asking
// for the same output again would not fit either.
func cutTurnOutput(text string, limit int) string {
	h, t := headAndTail(text, limit)
	return fmt.Sprintf("%s\n[... %d of this output's %d characters were cut here because the whole did not fit the model's context window; to see them, ask for a smaller part (a line range with offset and limit, a narrower pattern, a filter such as | head) ...]\n%s",
		h, len(text)-len(h)-len(t), len(text), t)
}

// contextTooSmall is the error a turn ends with when the model refused a
// request as too long and nothing could be cut or compressed: it says how
// big the request was, what took the room, and what to change.
func (s *Session) contextTooSmall(refusal error, system string, decls []ToolDecl) error {
	var me *ModelError
	if !errors.As(refusal, &me) {
		return refusal
	}
	fixed := estimateText(system) + estimateDecls(decls)
	total := s.requestTokens(system, decls)
	limit, sent := refusedNumbers(refusal)
	var b strings.Builder
	b.WriteString("The request does not fit the model's context window, and nothing in this conversation is left to cut or compress")
	switch {
	case limit > 0 && sent > 0:
		fmt.Fprintf(&b, " (the server counted %d tokens against a window of %d)", sent, limit)
	case limit > 0:
		fmt.Fprintf(&b, " (the server's window is %d tokens)", limit)
	}
	fmt.Fprintf(&b, ". By qwen-ls's estimate the system prompt and tool declarations take about %d tokens and the conversation about %d. ", fixed, max(total-fixed, 0))
	b.WriteString("Use a model or server with a larger window (for a local server, its context size: llama.cpp --ctx-size, Ollama num_ctx, vLLM --max-model-len) and set model.contextWindow (model.generationConfig.contextWindowSize in Qwen Code's settings) to it, or send a smaller request. The server said: ")
	b.WriteString(me.Message)
	out := *me
	out.Message = b.String()
	return &out
}

// compaction is what one compression did.
type compaction struct {
	before, after int
	truncated     int
	summarised    int
}

// fitContext compresses the history when the next request would pass the
// threshold (or, with force, in any case, after the model said the
// request was too long). It reports false when nothing could be freed.
func (s *Session) fitContext(ctx context.Context, model Model, system string, decls []ToolDecl, force bool) (bool, error) {
	window, threshold := s.contextLimits(model)
	before := s.requestTokens(system, decls)
	if !force && before <= threshold {
		return false, nil
	}
	// Aim well below the threshold, so that the next few requests do not
	// compress again.
	target := threshold * 7 / 10
	if force && before < window {
		// The model refused a request we counted as fitting: its real
		// window is smaller than ours. Size everything by what it
		// refused.
		window = before
		target = before * 7 / 10
	}
	c := compaction{before: before}

	// 1. Shorten old tool outputs: everything before the recent turns.
	keep := int(float64(window) * keepShare)
	c.truncated = s.truncateOldToolOutputs(keepFrom(s.History(), s.tokenCopy(), keep))
	now := s.requestTokens(system, decls)
	if now <= target && c.truncated > 0 {
		c.after = now
		s.recordCompaction(c)
		return true, nil
	}

	// 2. Summarise the older part, keeping less each round when the rest
	// still does not fit.
	for round := 0; round < 4; round++ {
		n, err := s.summarise(ctx, model, window, keep)
		if err != nil {
			if c.truncated > 0 {
				c.after = s.requestTokens(system, decls)
				s.recordCompaction(c)
				return true, nil
			}
			return false, err
		}
		if n == 0 {
			break
		}
		c.summarised += n
		now = s.requestTokens(system, decls)
		if now <= target {
			break
		}
		keep /= 2
	}
	// 3. What remains verbatim may still be too big (one turn with huge
	// outputs): shorten its tool outputs as well.
	if now = s.requestTokens(system, decls); now > target {
		c.truncated += s.truncateOldToolOutputs(len(s.History()))
	}
	c.after = s.requestTokens(system, decls)
	if c.truncated == 0 && c.summarised == 0 {
		return false, nil
	}
	s.recordCompaction(c)
	return true, nil
}

func (s *Session) tokenCopy() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tokens)
}

// keepFrom is where the verbatim tail of a history starts: the earliest
// message boundary such that the tail stays within budget tokens. A tail
// starts at a user or assistant message, never between a call and its
// result; it holds at least the last such boundary.
func keepFrom(history []Message, tokens []int, budget int) int {
	from := len(history)
	sum := 0
	for i := len(history) - 1; i >= 0; i-- {
		if i < len(tokens) {
			sum += tokens[i]
		}
		if history[i].Role == "tool" {
			continue
		}
		if sum > budget && from < len(history) {
			break
		}
		from = i
	}
	return from
}

// truncateOldToolOutputs cuts tool outputs before index end to their start
// and end, and returns how many it cut.
func (s *Session) truncateOldToolOutputs(end int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for i := 0; i < end && i < len(s.history); i++ {
		m := s.history[i]
		if m.Role != "tool" || len(m.Text) <= oldToolOutputChars {
			continue
		}
		m.Text = shorten(m.Text, oldToolOutputChars)
		s.splitTranscript()
		s.history[i] = m
		if i < len(s.tokens) {
			s.tokens[i] = estimateMessage(m)
		}
		n++
	}
	if n > 0 {
		s.calib = calibration{}
	}
	return n
}

// headAndTail are the first two thirds and the last third of limit bytes
// of text, cut at character boundaries.
func headAndTail(text string, limit int) (head, tail string) {
	head = text[:runeStartAtOrBefore(text, limit*2/3)]
	tail = text[runeStartAtOrAfter(text, len(text)-limit/3):]
	return head, tail
}

// shorten keeps the start and the end of a long text.
func shorten(text string, limit int) string {
	h, t := headAndTail(text, limit)
	return fmt.Sprintf("%s\n[... %d characters of this old tool output were removed to save context; run the tool again if you need them ...]\n%s", h, len(text)-len(h)-len(t), t)
}

const summarySystem = `You compress a coding agent's conversation so that the agent can continue the work without the full transcript.
Write a dense summary that keeps: the user's goals and every instruction or preference they stated; decisions made and why; what was done, file by file; what was learned about the code (names, paths, behaviours); errors met and how they were resolved; and what remains to do, in order. Keep exact file paths, identifiers and commands. Do not invent anything. Answer with the summary only.`

// runeStartAtOrBefore moves a cut at byte i of s back to the start of the
// character it falls in, so the text before it ends on a whole character.
// It looks at most utf8.UTFMax bytes back: invalid bytes elsewhere in s do
// not matter, and the cost does not grow with s.
func runeStartAtOrBefore(s string, i int) int {
	if i >= len(s) {
		return len(s)
	}
	for k := 0; k < utf8.UTFMax && i > 0 && !utf8.RuneStart(s[i]); k++ {
		i--
	}
	return i
}

// runeStartAtOrAfter moves a cut at byte i of s forward past the rest of
// the character it falls in; see runeStartAtOrBefore.
func runeStartAtOrAfter(s string, i int) int {
	if i <= 0 {
		return 0
	}
	for k := 0; k < utf8.UTFMax && i < len(s) && !utf8.RuneStart(s[i]); k++ {
		i++
	}
	return i
}

// summaryTag marks a summary message in the history.
const summaryTag = "<conversation-summary>"

// summarise replaces the history before the verbatim tail (at most keep
// tokens) with a summary written by the model. It returns how many
// messages it replaced.
func (s *Session) summarise(ctx context.Context, model Model, window, keep int) (int, error) {
	history := s.History()
	tokens := s.tokenCopy()
	from := keepFrom(history, tokens, keep)
	if from <= 1 || (from == 2 && strings.HasPrefix(history[0].Text, summaryTag)) {
		return 0, nil
	}
	old := history[:from]
	input := renderForSummary(old, int(float64(window)*summaryInputShare)*4)
	s.host().Update(s.id, Update{Kind: UpdateAgentThought, Content: textBlock(
		fmt.Sprintf("[Summarising the %d oldest messages so the conversation fits the model's context.]\n", from))})
	resp, err := model.Complete(ctx, ModelRequest{Model: model.Name(), Messages: []Message{
		{Role: "system", Text: summarySystem},
		{Role: "user", Text: input},
	}})
	if err != nil {
		return 0, fmt.Errorf("summarise the conversation: %w", err)
	}
	// The summary's tokens count toward the turn that needed it.
	s.addUsage(resp.Usage)
	summary := strings.TrimSpace(resp.Text)
	if summary == "" {
		return 0, errors.New("summarise the conversation: the model answered with no text")
	}
	var b strings.Builder
	b.WriteString(summaryTag + "\nThe earlier part of this conversation was compressed into this summary:\n\n")
	b.WriteString(summary)
	if files := s.changedFiles(); len(files) > 0 {
		b.WriteString("\n\nFiles changed by the agent in this session so far:\n")
		for _, f := range files {
			b.WriteString("- " + f + "\n")
		}
	}
	b.WriteString("\n</conversation-summary>")
	head := []Message{{Role: "user", Text: b.String()}}
	if from < len(history) && history[from].Role == "user" {
		head = append(head, Message{Role: "assistant", Text: "Understood. I will continue from this summary."})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.history) < from {
		return 0, errors.New("summarise the conversation: the history changed meanwhile")
	}
	newHist := append(slices.Clone(head), s.history[from:]...)
	newToks := make([]int, 0, len(newHist))
	for _, m := range head {
		newToks = append(newToks, estimateMessage(m))
	}
	newToks = append(newToks, s.tokens[from:]...)
	s.splitTranscript()
	s.history, s.tokens, s.calib = newHist, newToks, calibration{}
	return from, nil
}

// renderForSummary writes messages as a transcript of at most limit
// bytes: long tool outputs are cut, and when it is still too long the
// first prompt and the latest part are kept.
func renderForSummary(msgs []Message, limit int) string {
	var b strings.Builder
	for _, m := range msgs {
		text := m.Text
		if m.Role == "tool" && len(text) > oldToolOutputChars {
			text = shorten(text, oldToolOutputChars)
		}
		if len(m.Parts) > 0 {
			// The parts replace Text, as in a model request.
			text = ""
			for _, p := range m.Parts {
				if p.Type == "text" {
					text += p.Text
				}
			}
		}
		fmt.Fprintf(&b, "[%s]", m.Role)
		if m.ToolCallID != "" {
			fmt.Fprintf(&b, " (result of %s)", m.ToolCallID)
		}
		b.WriteString("\n" + text + "\n")
		for _, tc := range m.ToolCalls {
			args := tc.Arguments
			if len(args) > oldToolOutputChars {
				args = shorten(args, oldToolOutputChars)
			}
			fmt.Fprintf(&b, "(call %s: %s %s)\n", tc.ID, tc.Name, args)
		}
		b.WriteString("\n")
	}
	out := b.String()
	if len(out) <= limit || limit <= 0 {
		return out
	}
	first := out
	if i := strings.Index(out[1:], "\n[") + 1; i > 0 {
		first = out[:i]
	}
	if len(first) > limit/4 {
		first = shorten(first, limit/4)
	}
	rest := out[runeStartAtOrAfter(out, len(out)-(limit-len(first))):]
	return first + "\n[... the middle of the conversation was left out ...]\n" + rest
}

// recordCompaction writes the new history and tells the editor.
func (s *Session) recordCompaction(c compaction) {
	s.mu.Lock()
	hist := make([]storedMessage, len(s.history))
	for i, m := range s.history {
		hist[i] = *storeMessage(m)
	}
	toks := slices.Clone(s.tokens)
	s.mu.Unlock()
	s.record(event{Type: "compressed", History: hist, HistoryToks: toks, TokensBefore: c.before, TokensAfter: c.after})
	before, after := c.before, c.after
	s.host().Update(s.id, Update{Kind: UpdateCompressed, TokensBefore: &before, TokensAfter: &after,
		Summarised: c.summarised, TruncatedOutputs: c.truncated})
}
