package session

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// What the slash commands need of a session (docs/protocol.md "Slash
// commands"): output that is shown and not kept, one tool call run
// outside a model turn, clearing, compressing on request, and the
// session's statistics.

// Say shows markdown text in the session's transcript as the agent's
// message. It is not part of the history: the model never sees it.
func (s *Session) Say(text string) {
	s.host().Update(s.id, Update{Kind: UpdateAgentMessage, Content: textBlock(text)})
}

// Claim holds the session as busy, as a prompt does, while a command works
// on it; qwen/cancel cancels the returned context. A busy session is
// ErrBusy.
func (s *Session) Claim(ctx context.Context) (context.Context, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy {
		return nil, nil, ErrBusy
	}
	ctx, cancel := context.WithCancel(ctx)
	s.busy, s.cancel = true, cancel
	return ctx, func() {
		cancel()
		s.mu.Lock()
		s.busy, s.cancel = false, nil
		s.mu.Unlock()
	}, nil
}

// ToolRun is how a tool call run by a command ended.
type ToolRun struct {
	// Text is what the tool returned (for the model, were it one).
	Text string
	// Rejected: the user said no (or could not be asked); Failed: the
	// tool failed; Cancelled: the command was cancelled.
	Rejected, Failed, Cancelled bool
}

var commandCalls atomic.Int64

// RunTool runs one tool call outside a model turn, through the same steps
// as the model's calls: validation, plan mode, the approval mode, the
// allow and deny rules and the permission request, execution, and the
// tool_call updates the editor shows. The caller holds the session
// (Claim). Nothing is added to the history.
func (s *Session) RunTool(ctx context.Context, name string, args map[string]any) (ToolRun, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return ToolRun{}, err
	}
	tc := ToolCall{ID: fmt.Sprintf("command_%d", commandCalls.Add(1)), Name: name, Arguments: string(raw)}
	out := s.runBatch(ctx, s.toolset(), []ToolCall{tc}, false, nil)
	s.countCalls(out.runs)
	if len(out.runs) != 1 {
		return ToolRun{}, errors.New("the tool call did not run")
	}
	r := out.runs[0]
	tr := ToolRun{Text: r.result.Text()}
	switch {
	case r.state == stateCancelled && r.userRejected:
		tr.Rejected = true
	case r.state == stateCancelled:
		tr.Cancelled = true
	case r.state == stateError:
		tr.Failed = true
		if r.result.Error != nil {
			tr.Text = r.result.Error.Message
		}
	}
	if r.userRejected {
		tr.Rejected = true
	}
	return tr, nil
}

// ShellOutput is the text a command's !{…} puts into its prompt: the
// command's output (stdout, then stderr), and a line saying how it ended
// when that was not exit code 0.
func ShellOutput(command, toolText string) string {
	field := func(name, next string) (string, bool) {
		i := strings.Index(toolText, "\n"+name+": ")
		if i < 0 {
			return "", false
		}
		rest := toolText[i+len(name)+3:]
		j := strings.LastIndex(rest, "\n"+next+": ")
		if j < 0 {
			return "", false
		}
		return rest[:j], true
	}
	stdout, ok1 := field("Stdout", "Stderr")
	stderr, ok2 := field("Stderr", "Error")
	if !ok1 || !ok2 {
		return toolText
	}
	var b strings.Builder
	if stdout != "(empty)" {
		b.WriteString(stdout)
	}
	if stderr != "(empty)" {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteString("\n")
		}
		b.WriteString(stderr)
	}
	code := lineValue(toolText, "Exit Code")
	signal := lineValue(toolText, "Signal")
	switch {
	case code != "" && code != "0" && code != "(none)":
		fmt.Fprintf(&b, "\n[Shell command '%s' exited with code %s]", command, code)
	case signal != "" && signal != "(none)":
		fmt.Fprintf(&b, "\n[Shell command '%s' terminated by signal %s]", command, signal)
	}
	return b.String()
}

func lineValue(text, name string) string {
	i := strings.LastIndex(text, "\n"+name+": ")
	if i < 0 {
		return ""
	}
	v := text[i+len(name)+3:]
	if j := strings.IndexByte(v, '\n'); j >= 0 {
		v = v[:j]
	}
	return v
}

// ClearResult is what Clear did.
type ClearResult struct {
	// StoredID is the id under which the conversation so far is kept on
	// disk, "" when there was nothing to keep or no store.
	StoredID string
	// Messages is how many messages the history held.
	Messages int
}

// Clear starts the session's conversation over, keeping its id, mode and
// model. The conversation so far stays on disk as a session of its own
// (listed and loadable under StoredID); the session's next prompt starts
// a new file. The memory files are read again.
func (s *Session) Clear() (ClearResult, error) {
	s.mu.Lock()
	if s.busy {
		s.mu.Unlock()
		return ClearResult{}, ErrBusy
	}
	s.busy = true
	l := s.log
	res := ClearResult{Messages: len(s.history)}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.busy = false
		s.mu.Unlock()
	}()
	if l != nil {
		id := newID()
		l.close()
		if err := renameSessionFile(l.path, id); err != nil {
			// The file stays as it was, under the session's id; the
			// session goes on with it.
			if nl, rerr := s.mgr.opts.Store.reopen(l.path); rerr == nil {
				s.mu.Lock()
				s.log = nl
				s.mu.Unlock()
			} else {
				s.mu.Lock()
				s.log = nil
				s.mu.Unlock()
			}
			return ClearResult{}, fmt.Errorf("keep the conversation on disk: %w", err)
		}
		res.StoredID = id
	}
	now := s.mgr.opts.Now()
	system := s.mgr.buildSystemPrompt(s.cwd)
	s.mu.Lock()
	s.log = nil
	s.history, s.tokens, s.transcript, s.ownTranscript = nil, nil, nil, false
	s.calib = calibration{}
	s.title, s.plan, s.turns = "", nil, 0
	s.checkpoints, s.reverted, s.notes, s.shown = nil, nil, nil, nil
	s.failSig, s.failCount = "", 0
	s.allowed = nil
	s.created, s.updated = now, now
	s.system = system
	s.stats = sessionStats{}
	s.mu.Unlock()
	s.ledger.HistoryCompacted()
	return res, nil
}

// renameSessionFile moves a session file to a new id: the header names
// the new id, the events follow unchanged, and the old file goes away
// only once the new one is complete.
func renameSessionFile(path, id string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	var hdr map[string]any
	if err := json.Unmarshal(first, &hdr); err != nil || hdr["type"] != "session" {
		return fmt.Errorf("%s does not start with a session header", path)
	}
	hdr["id"] = id
	line, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	newPath := filepath.Join(filepath.Dir(path), id+".jsonl")
	f, err := os.OpenFile(newPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	w.Write(line)
	w.WriteByte('\n')
	w.Write(rest)
	err = w.Flush()
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(newPath)
		return err
	}
	// The mtime orders the listing: the kept conversation keeps its own.
	if fi, serr := os.Stat(path); serr == nil {
		_ = os.Chtimes(newPath, fi.ModTime(), fi.ModTime())
	}
	return os.Remove(path)
}

// CompressResult is what Compress did.
type CompressResult struct {
	// Summarised counts the messages replaced by the summary; 0 when
	// there was too little to compress.
	Summarised    int
	Before, After int
}

// Compress replaces all of the conversation but its latest exchange with
// a summary the model writes, whatever the context's fill. The caller
// holds the session (Claim).
func (s *Session) Compress(ctx context.Context) (CompressResult, error) {
	model, err := s.newModel()
	if err != nil {
		return CompressResult{}, err
	}
	system := s.systemPrompt()
	decls := s.toolset().Declarations()
	window, _ := s.contextLimits(model)
	before := s.requestTokens(system, decls)
	start := time.Now()
	n, err := s.summarise(ctx, model, window, 0)
	s.countRequest(s.takeUsage(), time.Since(start))
	if err != nil || n == 0 {
		return CompressResult{Before: before, After: before}, err
	}
	after := s.requestTokens(system, decls)
	s.recordCompaction(compaction{before: before, after: after, summarised: n})
	return CompressResult{Summarised: n, Before: before, After: after}, nil
}

// RefreshMemory reads the memory files again for the session's next
// model request, and returns what they hold now.
func (s *Session) RefreshMemory() string {
	system := s.mgr.buildSystemPrompt(s.cwd)
	s.mu.Lock()
	s.system = system
	s.mu.Unlock()
	return s.mgr.Memory()
}

// Memory is the text of the memory files, as the system prompt of a new
// session holds it.
func (m *Manager) Memory() string {
	return loadMemory(m.opts.Env.Workspace, m.opts.Env.QwenHome)
}

// sessionStats are counted for /stats from the session's start (or its
// last /clear) in this process.
type sessionStats struct {
	requests  int
	usage     Usage
	modelTime time.Duration
	turns     int
	turnTime  time.Duration
	calls     int
	succeeded int
	failed    int
	rejected  int
	cancelled int
}

// Stats is a session's statistics.
type Stats struct {
	Started        time.Time
	Turns          int
	TurnTime       time.Duration
	ModelRequests  int
	ModelTime      time.Duration
	InputTokens    int
	OutputTokens   int
	CachedTokens   int
	TotalTokens    int
	ToolCalls      int
	ToolsSucceeded int
	ToolsFailed    int
	ToolsRejected  int
	ToolsCancelled int
	// HistoryMessages and ContextTokens are the conversation now.
	HistoryMessages int
	ContextTokens   int
}

// Stats returns the session's statistics.
func (s *Session) Stats() Stats {
	ctxTokens := 0
	if len(s.History()) > 0 {
		ctxTokens = s.requestTokens(s.systemPrompt(), s.toolset().Declarations())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	return Stats{Started: s.created, Turns: st.turns, TurnTime: st.turnTime, ModelRequests: st.requests, ModelTime: st.modelTime,
		InputTokens: st.usage.InputTokens, OutputTokens: st.usage.OutputTokens, CachedTokens: st.usage.CachedTokens, TotalTokens: st.usage.TotalTokens,
		ToolCalls: st.calls, ToolsSucceeded: st.succeeded, ToolsFailed: st.failed, ToolsRejected: st.rejected, ToolsCancelled: st.cancelled,
		HistoryMessages: len(s.history), ContextTokens: ctxTokens}
}

// countRequest adds one model request (or summary) to the statistics.
func (s *Session) countRequest(u Usage, d time.Duration) {
	s.mu.Lock()
	s.stats.requests++
	s.stats.usage = s.stats.usage.Add(u)
	s.stats.modelTime += d
	s.mu.Unlock()
}

// countTurn adds a finished turn; its usage beyond the counted requests
// (subagents, summaries) is added too.
func (s *Session) countTurn(d time.Duration, extra Usage) {
	s.mu.Lock()
	s.stats.turns++
	s.stats.turnTime += d
	s.stats.usage = s.stats.usage.Add(extra)
	s.mu.Unlock()
}

func (s *Session) countCalls(runs []*callRun) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range runs {
		s.stats.calls++
		switch {
		case r.userRejected:
			s.stats.rejected++
		case r.state == stateSuccess:
			s.stats.succeeded++
		case r.state == stateError:
			s.stats.failed++
		default:
			s.stats.cancelled++
		}
	}
}

// OpenIDs returns the ids of the sessions open in this process.
func (m *Manager) OpenIDs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := make([]string, 0, len(m.sessions))
	for id := range m.sessions {
		ids = append(ids, id)
	}
	return ids
}
