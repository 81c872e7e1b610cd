package session

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/qwen-ls/qwen-ls/tools"
)

// PromptResult is how a turn ended.
type PromptResult struct {
	StopReason string
	Usage      Usage
	// LastText is the model's last reply text in the turn.
	LastText string
}

// loopStopped tells the editor why the loop guard ended the turn.
var loopStopped = fmt.Sprintf("\n[The model made the same tool call %d times in a row, so the turn was stopped.]\n", LoopLimit)

// connectionLost is shown after text that a cut stream left on screen; it
// is not part of the history (protocol.md §10).
const connectionLost = "\n[connection lost; retrying]\n"

// Prompt runs one turn: the user's prompt, then model requests and tool
// batches until the model answers without tool calls, the turn is
// cancelled, or a limit is reached. A second prompt while one runs gets
// ErrBusy; with no model configured, a *NoModelError.
func (s *Session) Prompt(ctx context.Context, blocks []ContentBlock) (PromptResult, error) {
	return s.PromptAs(ctx, blocks, "")
}

// PromptAs is Prompt for a prompt the person typed as typed, which the
// server turned into blocks (a custom command, /init): the session keeps
// typed as what the person said, for its title and its replay, and sends
// blocks to the model. typed "" is Prompt.
func (s *Session) PromptAs(ctx context.Context, blocks []ContentBlock, typed string) (PromptResult, error) {
	st := s.mgr.opts.Env.Settings()
	model, err := s.newModel()
	if err != nil {
		return PromptResult{}, err
	}
	s.mu.Lock()
	if s.busy {
		s.mu.Unlock()
		return PromptResult{}, ErrBusy
	}
	if max := st.Int("model.maxSessionTurns", 0); max > 0 && s.turns >= max {
		s.mu.Unlock()
		return PromptResult{}, ErrMaxSessionTurns
	}
	ctx, cancel := context.WithCancel(ctx)
	s.busy, s.cancel = true, cancel
	s.turns++
	turn := s.turns
	s.mu.Unlock()
	titled := typed
	if titled == "" {
		titled = titleText(blocks)
	}
	s.beginTurn(turn, titled)
	defer func() {
		cancel()
		s.mu.Lock()
		s.busy, s.cancel = false, nil
		s.mu.Unlock()
	}()
	s.takeUsage()
	start := time.Now()
	res, err := s.runTurn(ctx, model, blocks, typed)
	extra := s.takeUsage()
	res.Usage = res.Usage.Add(extra)
	s.countTurn(time.Since(start), extra)
	return res, err
}

func (s *Session) runTurn(ctx context.Context, model Model, blocks []ContentBlock, typed string) (PromptResult, error) {
	host := s.host()
	st := s.mgr.opts.Env.Settings()
	res := PromptResult{}
	freeAfter := false
	prompt := s.userMessage(blocks)
	prompt.Typed = typed
	s.append(prompt)
	if ready := s.mgr.opts.Ready; ready != nil {
		if err := ready(ctx); err != nil && ctx.Err() != nil {
			res.StopReason = StopCancelled
			return res, nil
		}
	}
	system := s.systemPrompt()
	maxRequests := st.Int("model.maxTurnRequests", 100)
	window, _ := s.contextLimits(model)
	var guard loopGuard
	for n := 0; ; n++ {
		if maxRequests > 0 && n >= maxRequests {
			res.StopReason = StopMaxTurnRequests
			return res, nil
		}
		toolset := s.toolset()
		decls := toolset.Declarations()
		if _, err := s.fitContext(ctx, model, system, decls, false); err != nil {
			if ctx.Err() != nil {
				res.StopReason = StopCancelled
				return res, nil
			}
			// The request may still fit: a failed summary is not the
			// turn's failure.
			s.mgr.logf("session %s: compressing the context failed: %v", s.id, err)
		}
		resp, sent, err := s.request(ctx, model, system, decls)
		for retry := 0; err != nil && isContextExceeded(err) && ctx.Err() == nil; retry++ {
			// The model counted more than we did: cut this turn's
			// oversized outputs or compress, and retry, for as long as
			// that frees room; then say what to change.
			ok := false
			if retry < 3 {
				var cerr error
				ok, cerr = s.fitRefused(ctx, model, system, decls, err)
				if cerr != nil {
					s.mgr.logf("session %s: compressing the context failed: %v", s.id, cerr)
				}
			}
			if !ok {
				err = s.contextTooSmall(err, system, decls)
				break
			}
			resp, sent, err = s.request(ctx, model, system, decls)
		}
		if err != nil {
			if ctx.Err() != nil {
				res.StopReason = StopCancelled
				return res, nil
			}
			return res, err
		}
		res.Usage = res.Usage.Add(resp.Usage)
		used := resp.Usage.InputTokens + resp.Usage.OutputTokens
		if used == 0 {
			used = s.requestTokens(system, decls)
		}
		cached := resp.Usage.CachedTokens
		host.Update(s.id, Update{Kind: UpdateUsage, Used: &used, Size: &window, CachedTokens: &cached})
		s.calibrate(sent, resp.Usage.InputTokens)
		calls, refused, looping := guard.screenCalls(s.fixCallIDs(resp.ToolCalls))
		if (largeArguments(resp.ToolCalls) || len(resp.Text)+len(resp.Reasoning) > largeArgumentBytes) && !freeAfter {
			freeAfter = true
			// A large call makes copies of its arguments (decoded
			// arguments, file text, diffs, messages to the editor,
			// the session file's event) that turn to garbage one
			// after another, and a large answer pieces of itself
			// (the session file's event): collect sooner while the
			// turn runs, and give the memory back when it ends,
			// rather than hold it until the heap grows into it again.
			defer tightenGC()()
			defer debug.FreeOSMemory()
		}
		s.appendCounted(Message{Role: "assistant", Text: resp.Text, Reasoning: resp.Reasoning, ToolCalls: calls}, resp.Usage.OutputTokens)
		res.LastText = resp.Text
		if resp.Refusal != "" || resp.FinishReason == "content_filter" {
			if resp.Refusal != "" && resp.Text == "" {
				host.Update(s.id, Update{Kind: UpdateAgentMessage, Content: textBlock(resp.Refusal)})
				res.LastText = resp.Refusal
			}
			res.StopReason = StopRefusal
			return res, nil
		}
		if len(calls) == 0 {
			res.StopReason = StopEndTurn
			if resp.FinishReason == "length" {
				res.StopReason = StopMaxTokens
			}
			return res, nil
		}
		out := s.runBatch(ctx, toolset, calls, resp.FinishReason == "length", refused)
		s.countCalls(out.runs)
		for _, m := range out.messages {
			s.append(m)
		}
		resp.ToolCalls = nil
		if ctx.Err() != nil {
			res.StopReason = StopCancelled
			return res, nil
		}
		if looping {
			host.Update(s.id, Update{Kind: UpdateAgentMessage, Content: textBlock(loopStopped)})
			res.StopReason = StopMaxTurnRequests
			return res, nil
		}
		if out.allRejected {
			res.StopReason = StopEndTurn
			return res, nil
		}
	}
}

// largeArgumentBytes is the size of one call's arguments past which the
// turn returns the memory of the call's copies to the system once it ran.
const largeArgumentBytes = 1 << 20

// largeCallGCPercent is the GOGC of the process while a turn with a
// large call runs: the heap may grow 25% past what is live, not 100%.
const largeCallGCPercent = 25

var tightGC struct {
	sync.Mutex
	turns int
	saved int
}

// tightenGC sets largeCallGCPercent until the returned function is called;
// concurrent turns share it, and the last one restores the setting.
func tightenGC() (release func()) {
	tightGC.Lock()
	if tightGC.turns == 0 {
		tightGC.saved = debug.SetGCPercent(largeCallGCPercent)
		if tightGC.saved < largeCallGCPercent {
			debug.SetGCPercent(tightGC.saved) // already tighter, or off (GOGC=off)
		}
	}
	tightGC.turns++
	tightGC.Unlock()
	return func() {
		tightGC.Lock()
		tightGC.turns--
		if tightGC.turns == 0 {
			debug.SetGCPercent(tightGC.saved)
		}
		tightGC.Unlock()
	}
}

func largeArguments(calls []ToolCall) bool {
	for _, c := range calls {
		if len(c.Arguments) > largeArgumentBytes || c.DroppedBytes > 0 {
			return true
		}
	}
	return false
}

// request sends the history to the model, streaming the answer to the
// editor. sent is how many history messages the request held.
func (s *Session) request(ctx context.Context, model Model, system string, decls []ToolDecl) (resp *ModelResponse, sent int, err error) {
	// A model chosen (qwen/setModel) or configured since the turn began
	// takes over from this request on.
	if m, err := s.newModel(); err == nil {
		model = m
	}
	host := s.host()
	history := s.History()
	msgs := append([]Message{{Role: "system", Text: system}}, history...)
	s.mu.Lock()
	promptID := fmt.Sprintf("%s########%d", s.id, s.turns)
	s.mu.Unlock()
	start := time.Now()
	defer func() {
		if resp != nil {
			s.countRequest(resp.Usage, time.Since(start))
		}
	}()
	// A large answer leaves garbage behind each piece (the decoded event,
	// the update to the editor): once the answer is large, collect sooner
	// until it has been read.
	var streamed struct {
		sync.Mutex
		n       int
		untight func()
	}
	count := func(t string) {
		streamed.Lock()
		defer streamed.Unlock()
		if streamed.n += len(t); streamed.n > largeArgumentBytes && streamed.untight == nil {
			streamed.untight = tightenGC()
		}
	}
	defer func() {
		streamed.Lock()
		defer streamed.Unlock()
		if streamed.untight != nil {
			streamed.untight()
		}
	}()
	resp, err = model.Stream(ctx, ModelRequest{Model: model.Name(), Messages: msgs, Tools: decls, SessionID: s.id, PromptID: promptID}, StreamEvents{
		OnText: func(t string) {
			count(t)
			host.Update(s.id, Update{Kind: UpdateAgentMessage, Content: textBlock(t)})
		},
		OnReasoning: func(t string) {
			count(t)
			host.Update(s.id, Update{Kind: UpdateAgentThought, Content: textBlock(t)})
		},
		OnCut: func() {
			host.Update(s.id, Update{Kind: UpdateAgentMessage, Content: textBlock(connectionLost)})
		},
		OnRetry: func(attempt int, wait time.Duration, err error) {
			host.Update(s.id, Update{Kind: UpdateAgentThought, Content: textBlock(
				fmt.Sprintf("[The model request failed (%v); retry %d in %.1f s.]\n", err, attempt, wait.Seconds()))})
		},
	})
	return resp, len(history), err
}

// calibrate takes the model's count of a request's prompt tokens.
func (s *Session) calibrate(sent, input int) {
	if input <= 0 {
		return
	}
	s.mu.Lock()
	if sent > len(s.history) {
		s.mu.Unlock()
		return
	}
	s.calib = calibration{input: input, count: sent}
	s.mu.Unlock()
	s.record(event{Type: "usage", Input: input, Count: sent})
}

// append adds a message that is not the model's answer (a prompt, a tool
// result) to the history and the session file.
func (s *Session) append(m Message) {
	// Such a message's text is often a slice of a larger buffer: a tool's
	// output builder, a file read whole. The history keeps a copy of just
	// the text, so that a long session holds its conversation and not the
	// buffers it was cut from.
	m.Text = strings.Clone(m.Text)
	m.Reasoning = strings.Clone(m.Reasoning)
	s.appendCounted(m, 0)
}

// appendCounted adds a message to the history and the session file;
// tokens is the model's count for it, or 0 for an estimate. Called for
// the model's answer directly, it keeps the answer's text and reasoning as
// they are: the stream's accumulator made each at its exact size
// (answertext.go), or the provider cut them from it, wasting little; a
// copy would cost their size again, for an answer of 50 MB 50 MB more at
// the moment memory is tightest.
func (s *Session) appendCounted(m Message, tokens int) {
	if tokens <= 0 {
		tokens = estimateMessage(m)
	}
	// The decoded chunks of a tool call are slices of larger buffers:
	// the history keeps copies of just the strings.
	if len(m.ToolCalls) > 0 {
		calls := make([]ToolCall, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			calls[i] = ToolCall{ID: strings.Clone(tc.ID), Name: strings.Clone(tc.Name), Arguments: strings.Clone(tc.Arguments)}
		}
		m.ToolCalls = calls
	}
	now := s.mgr.opts.Now()
	s.mu.Lock()
	s.history = append(s.history, m)
	s.tokens = append(s.tokens, tokens)
	if s.ownTranscript {
		s.transcript = append(s.transcript, m)
	}
	s.updated = now
	s.mu.Unlock()
	s.record(event{Type: "message", Message: storeMessage(m), Tokens: tokens, Time: now.UTC()})
}

// titleText is the text of a prompt's text blocks, for the title.
func titleText(blocks []ContentBlock) string {
	for _, b := range blocks {
		if b.Type == "text" && strings.TrimSpace(b.Text) != "" {
			return b.Text
		}
	}
	return ""
}

// fixCallIDs replaces empty or duplicate call ids with call_<n>, unique in
// the session (tools.md §5.1).
func (s *Session) fixCallIDs(calls []ToolCall) []ToolCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	for _, m := range s.history {
		for _, c := range m.ToolCalls {
			seen[c.ID] = true
		}
	}
	out := make([]ToolCall, len(calls))
	for i, c := range calls {
		if c.ID == "" || seen[c.ID] {
			for n := len(seen) + 1; ; n++ {
				id := fmt.Sprintf("call_%d", n)
				if !seen[id] {
					c.ID = id
					break
				}
			}
		}
		seen[c.ID] = true
		out[i] = c
	}
	return out
}

// userMessage is the prompt as the model's user message: its text, and the
// prompt's images as parts after it when the model accepts images (else a
// note says one was left out).
func (s *Session) userMessage(blocks []ContentBlock) Message {
	text := s.renderPrompt(blocks)
	var images []Part
	for _, blk := range blocks {
		if blk.Type != "image" || blk.Data == "" {
			continue
		}
		if !s.acceptsModality("image") {
			text += fmt.Sprintf("\n\n[an image (%s) was attached, but the model does not accept images, so it was left out]", blk.MimeType)
			continue
		}
		images = append(images, Part{Type: "image", MIME: blk.MimeType, Data: blk.Data, Name: "image"})
	}
	if len(images) == 0 {
		return Message{Role: "user", Text: text}
	}
	return Message{Role: "user", Text: text, Parts: append([]Part{{Type: "text", Text: text}}, images...)}
}

// renderPrompt turns the prompt's content blocks, and the editor's focus,
// into the user message.
func (s *Session) renderPrompt(blocks []ContentBlock) string {
	var b strings.Builder
	for _, blk := range blocks {
		switch blk.Type {
		case "text":
			b.WriteString(blk.Text)
		case "resource_link":
			fmt.Fprintf(&b, "@%s", pathOf(blk.URI))
		case "resource":
			if blk.Resource != nil {
				fmt.Fprintf(&b, "\n\n--- Content of %s (as open in the editor) ---\n%s\n--- End of %s ---\n", pathOf(blk.Resource.URI), blk.Resource.Text, pathOf(blk.Resource.URI))
			}
		}
	}
	if f := s.mgr.currentFocus(); f != nil && f.Path != "" {
		fmt.Fprintf(&b, "%sThe user is looking at %s", reminderOpen, f.Path)
		if f.StartLine > 0 {
			fmt.Fprintf(&b, ", with lines %d-%d selected", f.StartLine, f.EndLine)
			if f.Selected != "" {
				fmt.Fprintf(&b, ":\n%s", f.Selected)
			}
		}
		b.WriteString("\n</system-reminder>")
	}
	for _, n := range s.takeNotes() {
		fmt.Fprintf(&b, "%s%s\n</system-reminder>", reminderOpen, n)
	}
	return b.String()
}

func pathOf(uri string) string {
	return strings.TrimPrefix(uri, "file://")
}

// kindOf maps a tool's Kind to the ACP kind of a tool_call.
func kindOf(t tools.Tool) string {
	if t == nil {
		return string(tools.KindOther)
	}
	if t.Name() == "exit_plan_mode" {
		return "switch_mode"
	}
	return string(t.Kind())
}
