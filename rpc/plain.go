package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/qwen-ls/qwen-ls/session"
	"github.com/qwen-ls/qwen-ls/tools/diff"
)

// Plain LSP clients (docs/protocol.md, "Plain LSP clients"): prompts
// through workspace/executeCommand and code actions, the conversation as
// a transcript document, answers in window/showMessage, activity through
// $/progress and window/logMessage.

func (s *Server) plainMethods() map[string]method {
	return map[string]method{
		// Async: a prompt waits on the model and may ask the user.
		"workspace/executeCommand": {Async: true, Handle: s.executeCommand},
		"textDocument/codeAction":  {Handle: s.codeAction},
		// didSave of a transcript may send the question written in it.
		"textDocument/didSave": {Handle: s.didSavePlain},
	}
}

// turnProgress tracks the $/progress of running turns, so tool calls can
// be reported as they start.
type turnProgress struct {
	mu     sync.Mutex
	bySess map[string]*progress
}

func (t *turnProgress) set(sessionID string, p *progress) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bySess == nil {
		t.bySess = map[string]*progress{}
	}
	if p == nil {
		delete(t.bySess, sessionID)
	} else {
		t.bySess[sessionID] = p
	}
}

func (t *turnProgress) get(sessionID string) *progress {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bySess[sessionID]
}

func (s *Server) executeCommand(ctx context.Context, req *request) (any, error) {
	var p struct {
		Command   string            `json:"command"`
		Arguments []json.RawMessage `json:"arguments"`
	}
	if err := unmarshalParams(req, &p); err != nil {
		return nil, err
	}
	arg := func(i int) string {
		if i >= len(p.Arguments) {
			return ""
		}
		var str string
		json.Unmarshal(p.Arguments[i], &str)
		return str
	}
	switch p.Command {
	case "qwen-ls.prompt":
		text := arg(0)
		if strings.TrimSpace(text) == "" {
			return s.promptHelp(ctx, arg(1))
		}
		sid, err := s.sessionOrImplicit(arg(1))
		if err != nil {
			return nil, err
		}
		res, err := s.runPrompt(ctx, sid, text, nil)
		if err != nil {
			return nil, err
		}
		return map[string]any{"text": res.LastText, "stopReason": res.StopReason, "sessionId": sid}, nil
	case "qwen-ls.ask":
		var at struct {
			URI   string          `json:"uri"`
			Range json.RawMessage `json:"range"`
		}
		if len(p.Arguments) > 0 {
			json.Unmarshal(p.Arguments[0], &at)
		}
		return s.askAbout(ctx, at.URI, at.Range)
	case "qwen-ls.checkSetup":
		res, err := s.checkSetup(ctx, req)
		if c, ok := res.(session.SetupCheck); ok && err == nil && !s.clientCaps().Rich {
			// A plain client drops the command's result: the person
			// reads it in a message.
			level := LevelInfo
			if !c.OK {
				level = LevelWarn
			}
			s.showMessage(level, "qwen: "+c.Message)
		}
		return res, err
	case "qwen-ls.cancel":
		sid := arg(0)
		if sid == "" {
			s.mu.Lock()
			sid = s.implicitSession
			s.mu.Unlock()
		}
		if sid != "" {
			if err := s.sessions.Cancel(sid); err != nil {
				return nil, sessionError(err)
			}
		}
		return nil, nil
	}
	return nil, rpcError(codeInvalidParams, "unknown command %q: qwen-ls offers %s", p.Command, strings.Join(plainCommands, ", "))
}

// plainCommands are the commands of executeCommandProvider.
var plainCommands = []string{"qwen-ls.prompt", "qwen-ls.cancel", "qwen-ls.checkSetup", "qwen-ls.ask"}

// runPrompt runs one turn of session sid. For a plain client the turn is
// also written to the session's transcript, which the editor is asked to
// show beside the code, and the answer is told with window/showMessage.
// taken is the transcript a saved question came from (nil for a command).
func (s *Server) runPrompt(ctx context.Context, sid, text string, taken *transcript) (session.PromptResult, error) {
	sess, err := s.sessions.Session(sid)
	if err != nil {
		return session.PromptResult{}, sessionError(err)
	}
	plain := !s.clientCaps().Rich && !s.opts.ACP
	t := taken
	if plain && t == nil {
		t = s.transcriptFor(sid)
		if t.isRunning() {
			// The running turn keeps the transcript; this prompt is
			// refused as qwen/prompt refuses it.
			err := sessionError(fmt.Errorf("%w (the command qwen-ls.cancel cancels it)", session.ErrBusy))
			s.showMessage(LevelWarn, "qwen: "+errText(err))
			return session.PromptResult{}, err
		}
		s.transcriptStart(t, text)
	}
	var you, qwen int
	if plain {
		// On disk before the progress begins: an editor that reloads the
		// transcript on progress shows the turn's start.
		s.flushTranscript(t)
		you, qwen = t.turnLines()
	}
	prog := s.serverProgress(ctx, "qwen: working")
	// shown says the transcript is in front of the person: the turn was
	// asked in it, or the editor showed it.
	shown := taken != nil
	if plain && taken == nil {
		// The person started this prompt from the code: the conversation
		// comes to the front, beside the code, which keeps the focus.
		shown = s.showTranscript(ctx, t, you, false)
	}
	s.turns.set(sid, prog)
	res, err := sess.Prompt(ctx, []session.ContentBlock{{Type: "text", Text: text}})
	s.turns.set(sid, nil)
	err = sessionError(err)
	if plain {
		s.transcriptEnd(t, res.LastText, err)
	}
	prog.end(res.StopReason)
	if plain {
		// The answer, from its heading, in view; also for a question
		// asked in the transcript, whose answer lands below the view.
		if s.showTranscript(ctx, t, qwen, false) {
			shown = true
		}
		s.showAnswer(t, res, err, shown)
	}
	if err != nil {
		return res, err
	}
	s.log.Infof("qwen: turn ended (%s)", res.StopReason)
	return res, nil
}

// answerShown is how much of an answer window/showMessage carries.
const answerShown = 600

// answerLine is the length of the one-line message that tells an answer
// the person sees in the transcript.
const answerLine = 60

// showAnswer tells the turn's answer (or failure) with
// window/showMessage. When the transcript is in front of the person
// (shown) the message is one line, the answer's first: a longer one would
// stop some editors (Neovim asks to press Enter) to show what the
// transcript already shows.
func (s *Server) showAnswer(t *transcript, res session.PromptResult, err error, shown bool) {
	if err != nil {
		s.showMessage(LevelError, fmt.Sprintf("qwen: %s (transcript: %s)", errText(err), t.path))
		return
	}
	answer := strings.TrimSpace(res.LastText)
	if answer == "" {
		if shown {
			s.showMessage(LevelInfo, fmt.Sprintf("qwen: the turn ended (%s) without an answer", res.StopReason))
			return
		}
		s.showMessage(LevelInfo, fmt.Sprintf("qwen: the turn ended (%s) without an answer; the transcript is %s", res.StopReason, t.path))
		return
	}
	if shown {
		first, rest, _ := strings.Cut(answer, "\n")
		first = strings.TrimSpace(strings.TrimLeft(first, "#"))
		msg := "qwen: " + cut(first, answerLine-len("qwen: "))
		if strings.TrimSpace(rest) != "" && !strings.HasSuffix(msg, "…") {
			msg += " …"
		}
		s.showMessage(LevelInfo, msg)
		return
	}
	if r := []rune(answer); len(r) > answerShown {
		answer = strings.TrimRight(string(r[:answerShown]), " \n") + fmt.Sprintf("… (full text in the transcript %s)", t.path)
	}
	s.showMessage(LevelInfo, "qwen: "+answer)
}

func (s *Server) showMessage(level Level, msg string) {
	_ = s.conn.Notify(context.Background(), "window/showMessage", map[string]any{"type": int(level), "message": s.secrets.scrub(msg)})
}

// promptHelp is the answer of qwen-ls.prompt without text: what to do
// instead. It opens the transcript, ready for a question, when the editor
// can show it.
func (s *Server) promptHelp(ctx context.Context, sid string) (any, error) {
	msg := "qwen-ls.prompt needs the prompt text as its first argument (arguments: [\"your prompt\"]). " +
		"Or select code and use the code actions \"Qwen: explain\", \"Qwen: fix this\" or \"Qwen: ask about selection…\""
	out := map[string]any{}
	if !s.clientCaps().Rich && !s.opts.ACP {
		if id, err := s.sessionOrImplicit(sid); err == nil {
			t := s.transcriptFor(id)
			s.transcriptChanged(ctx, t, func() { s.transcriptAsk(t, "") })
			msg += fmt.Sprintf(", or write your question under the last \"## You\" heading of %s and save it", t.path)
			out["transcript"] = t.path
			s.showTranscript(ctx, t, t.lastLine(), true)
		}
	}
	msg += "."
	out["message"] = msg
	s.showMessage(LevelInfo, "qwen: "+msg)
	return out, nil
}

// didSavePlain is didSave, and for a plain client's transcript with a
// new question under its last "## You" heading, the start of a turn.
func (s *Server) didSavePlain(ctx context.Context, req *request) (any, error) {
	res, err := s.didSave(ctx, req)
	if err != nil || s.clientCaps().Rich || s.opts.ACP {
		return res, err
	}
	var p struct {
		TextDocument struct {
			URI string `json:"uri"`
		} `json:"textDocument"`
	}
	json.Unmarshal(req.Params, &p)
	path, perr := s.uriToPath(p.TextDocument.URI)
	if perr != nil {
		return nil, nil
	}
	t := s.transcriptAt(path)
	if t == nil {
		return nil, nil
	}
	var text string
	if buf, ok := s.ws.Overlay.Get(path); ok {
		text = buf.Text
	} else if data, err := os.ReadFile(path); err == nil {
		text = string(data)
	}
	q := question(text)
	t.mu.Lock()
	busy, quote := t.running || t.draining, t.quote
	t.mu.Unlock()
	if q == "" || q == strings.TrimSpace(htmlComment.ReplaceAllString(quote, "")) {
		return nil, nil
	}
	if busy {
		s.showMessage(LevelWarn, "qwen: a turn is running; save the transcript again after it ends to send your question.")
		return nil, nil
	}
	s.transcriptTake(t, text)
	s.async.Add(1)
	go func() {
		defer s.async.Done()
		if _, err := s.runPrompt(s.baseCtx, t.sessionID, q, t); err != nil {
			s.log.Warnf("qwen: %v", err)
		}
	}()
	return nil, nil
}

// plainUpdate follows a plain client's turn: tool lines in the
// transcript, and a notice for a file written to disk outside the editor.
func (s *Server) plainUpdate(sessionID string, u session.Update) {
	if s.opts.ACP || s.clientCaps().Rich {
		return
	}
	if t := s.transcriptOf(sessionID); t != nil {
		s.transcriptUpdate(t, u)
	}
	if u.Kind != session.UpdateToolCallUpd || u.Status != session.StatusCompleted {
		return
	}
	items, _ := u.Content.([]session.ToolContent)
	for _, it := range items {
		if it.Type != "diff" || it.Path == "" || it.NewText == nil {
			continue
		}
		if _, open := s.ws.Overlay.Get(it.Path); open {
			continue
		}
		old := ""
		if it.OldText != nil {
			old = *it.OldText
		}
		added, removed := lineCounts(old, *it.NewText)
		s.showMessage(LevelInfo, fmt.Sprintf("qwen-ls wrote %s (+%d -%d)", s.env.Rel(it.Path), added, removed))
	}
}

// updateOutcome is how a finished tool call ended: its _meta outcome, or
// its status when it has none.
func updateOutcome(u session.Update) string {
	if u.Meta != nil && u.Meta.Qwen.Outcome != "" {
		return u.Meta.Qwen.Outcome
	}
	if u.Status == session.StatusCompleted {
		return session.OutcomeCompleted
	}
	return session.OutcomeFailed
}

// errText is an error's message for a person: a JSON-RPC error's own
// message, without the library's "code … message" wrapping.
func errText(err error) string {
	var je *jsonrpc2.Error
	if errors.As(err, &je) {
		return je.Message
	}
	return err.Error()
}

// permissionLines caps the details of a plain client's permission
// request.
const permissionLines = 20

// permissionPlain asks a plain client with window/showMessageRequest,
// offering the server's options by name, in the server's order: the same
// choices a rich client shows. A dismissed request (null) is cancelled.
func (h *host) permissionPlain(ctx context.Context, r session.PermissionRequest) (session.PermissionAnswer, error) {
	var b strings.Builder
	b.WriteString(r.Title)
	for _, c := range r.Content {
		if c.Content == nil || strings.TrimSpace(c.Content.Text) == "" {
			continue
		}
		lines := strings.Split(strings.TrimSpace(c.Content.Text), "\n")
		if len(lines) == 1 && lines[0] == r.Title {
			continue
		}
		b.WriteString("\n")
		for i, l := range lines {
			if i == permissionLines {
				fmt.Fprintf(&b, "\n… %d more lines", len(lines)-i)
				break
			}
			b.WriteString("\n" + l)
		}
	}
	actions := make([]any, 0, len(r.Options))
	for _, o := range r.Options {
		actions = append(actions, map[string]any{"title": o.Name})
	}
	var res *struct {
		Title string `json:"title"`
	}
	params := map[string]any{"type": int(LevelInfo), "message": b.String(), "actions": actions}
	if err := h.call(ctx, "window/showMessageRequest", params, &res); err != nil {
		return session.PermissionAnswer{}, err
	}
	if res == nil {
		return session.PermissionAnswer{Cancelled: true}, nil
	}
	for _, o := range r.Options {
		if o.Name == res.Title {
			return session.PermissionAnswer{OptionID: o.OptionID}, nil
		}
	}
	// A title that was not offered is never taken as an allow.
	return session.PermissionAnswer{Cancelled: true}, nil
}

// reviewLines caps the diff of an edit confirmation.
const reviewLines = 60

// plainReviewMessage is the text of a plain client's edit confirmation:
// the path once, the line counts and the unified diff, capped.
func (s *Server) plainReviewMessage(r session.EditReview) string {
	rel := s.env.Rel(r.Path)
	added, removed := lineCounts(r.OldText, r.NewText)
	verb := "edit"
	if r.IsNewFile {
		verb = "create"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "qwen-ls wants to %s %s (+%d -%d):\n", verb, rel, added, removed)
	unified := diff.Unified(rel, diff.Current, diff.Proposed, r.OldText, r.NewText)
	lines := strings.Split(strings.TrimRight(unified, "\n"), "\n")
	if len(lines) >= 2 && strings.HasPrefix(lines[0], "--- ") && strings.HasPrefix(lines[1], "+++ ") {
		// The path is named above.
		lines = lines[2:]
	}
	more := 0
	if len(lines) > reviewLines {
		more = len(lines) - reviewLines
		lines = lines[:reviewLines]
	}
	for _, l := range lines {
		b.WriteString("\n" + l)
	}
	if more > 0 {
		fmt.Fprintf(&b, "\n… %d more lines", more)
	}
	return b.String()
}

// sessionOrImplicit returns sid, or the connection's implicit session,
// created on first use.
func (s *Server) sessionOrImplicit(sid string) (string, error) {
	if sid != "" {
		return sid, nil
	}
	// The session is created outside s.mu: creating it reads the
	// negotiated capabilities, which take s.mu.
	s.implicitMu.Lock()
	defer s.implicitMu.Unlock()
	s.mu.Lock()
	id := s.implicitSession
	s.mu.Unlock()
	if id != "" {
		return id, nil
	}
	info, err := s.sessions.NewSession("", "")
	if err != nil {
		return "", sessionError(err)
	}
	s.mu.Lock()
	s.implicitSession = info.ID
	s.mu.Unlock()
	return info.ID, nil
}

// serverProgress starts server-initiated progress when the client
// supports it (window/workDoneProgress/create).
func (s *Server) serverProgress(ctx context.Context, title string) *progress {
	if !s.clientCaps().WorkDoneProgress {
		return &progress{}
	}
	token := fmt.Sprintf("qwen-ls-progress-%d", s.host.seq.Add(1))
	if err := s.host.call(ctx, "window/workDoneProgress/create", map[string]any{"token": token}, nil); err != nil {
		return &progress{}
	}
	raw, _ := json.Marshal(token)
	return s.beginProgress(raw, title)
}

func (p *progress) report(msg string) {
	p.send(map[string]any{"kind": "report", "message": msg})
}
