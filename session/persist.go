package session

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/qwen-ls/qwen-ls/tools"
)

// Default retention of stored sessions (general.sessionRetention.*).
const (
	defaultRetentionCount   = 100
	defaultRetentionAgeDays = 30
)

// projectRoot is the workspace root a cwd belongs to, which names the
// session folder; a cwd outside every root names its own.
func (m *Manager) projectRoot(cwd string) string {
	if _, root, err := m.opts.Env.Workspace.Roots.Resolve(cwd); err == nil && root != "" {
		return root
	}
	if cwd != "" {
		return filepath.Clean(cwd)
	}
	return m.opts.Env.Workspace.Roots.Primary()
}

// retention reads general.sessionRetention.{maxCount,maxAgeDays}.
func (m *Manager) retention() Retention {
	st := m.opts.Env.Settings()
	days := st.Int("general.sessionRetention.maxAgeDays", defaultRetentionAgeDays)
	return Retention{
		MaxCount: st.Int("general.sessionRetention.maxCount", defaultRetentionCount),
		MaxAge:   time.Duration(days) * 24 * time.Hour,
	}
}

func (m *Manager) logf(format string, args ...any) {
	if m.opts.Log != nil {
		m.opts.Log(format, args...)
	}
}

// prune applies general.sessionRetention to root before a session file
// is created there (Store.prune), and collects the stored contents that
// only removed sessions named: at the first removal in the root by this
// process, then after every maxCount removals, since a collection reads
// every session file of the root.
func (m *Manager) prune(root string) {
	st := m.opts.Store
	if st == nil {
		return
	}
	m.pruneMu.Lock()
	defer m.pruneMu.Unlock()
	ret := m.retention()
	now := m.opts.Now()
	removed := st.prune(root, ret, now, func(id string) bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		_, live := m.sessions[id]
		return live
	})
	if len(removed) == 0 {
		return
	}
	since, collected := m.removedSince[root]
	since += len(removed)
	every := ret.MaxCount
	if every <= 0 {
		every = defaultRetentionCount
	}
	if collected && since < every {
		m.removedSince[root] = since
		return
	}
	// Logged here too, not at every creation: at the limit each new
	// session removes one, which is no news.
	m.logf("removed %d stored session(s) of %s beyond general.sessionRetention", since, root)
	st.collect(root, now)
	m.removedSince[root] = 0
}

// persistent reports whether a session is written to disk: subagent
// sub-sessions live inside their parent's task call and are not.
func (s *Session) persistent() bool {
	return s.mgr.opts.Store != nil && s.hostOverride == nil
}

// ensureLog creates the session file at the first prompt, so sessions that
// never got a prompt leave nothing behind.
func (s *Session) ensureLog() {
	if !s.persistent() {
		return
	}
	s.mu.Lock()
	have := s.log != nil
	mode, model := s.mode, s.model
	s.mu.Unlock()
	if have {
		return
	}
	root := s.mgr.projectRoot(s.cwd)
	s.mgr.prune(root)
	l, err := s.mgr.opts.Store.create(root, event{ID: s.id, Cwd: s.cwd, Mode: mode, Model: model, Time: s.created.UTC()})
	if err != nil {
		s.mgr.logf("session %s will not be kept on disk: %v", s.id, err)
		return
	}
	s.mu.Lock()
	s.log = l
	s.mu.Unlock()
}

// record appends an event to the session file, if it has one. A failed
// write is logged once; the session goes on in memory.
func (s *Session) record(ev event) {
	s.mu.Lock()
	l := s.log
	s.mu.Unlock()
	if l == nil {
		return
	}
	l.mu.Lock()
	reported := l.err != nil
	l.mu.Unlock()
	if err := l.write(ev); err != nil && !reported {
		s.mgr.logf("session %s: %v; later events may be lost", s.id, err)
	}
}

// beginTurn numbers a new turn, writes it, and titles the session with
// its first prompt.
func (s *Session) beginTurn(turn int, text string) {
	s.ensureLog()
	s.record(event{Type: "turn", Turn: turn})
	s.mu.Lock()
	needTitle := s.title == "" && text != ""
	if needTitle {
		s.title = title(text)
	}
	t := s.title
	s.mu.Unlock()
	if needTitle {
		s.record(event{Type: "title", Title: t})
	}
}

// Close releases the session's file. The session stays usable in memory.
func (s *Session) Close() {
	s.mu.Lock()
	l := s.log
	s.log = nil
	s.mu.Unlock()
	if l != nil {
		l.close()
	}
}

// Close releases every session file this manager holds open.
func (m *Manager) Close() {
	for _, s := range m.all() {
		s.Close()
	}
}

// LoadResult is a session made ready by Load.
type LoadResult struct {
	Session *Session
	// Problems are the lines of its file that could not be read.
	Problems []string
	// FromDisk: the session came from an earlier process's file.
	FromDisk bool
}

// Load returns a session of this process, or reads it back from its file:
// its history (as last compressed), approval mode, todo list, turn count
// and checkpoints. Later events are appended to the same file.
func (m *Manager) Load(id string) (LoadResult, error) {
	if s, err := m.Session(id); err == nil {
		return LoadResult{Session: s}, nil
	}
	if m.opts.Store == nil {
		return LoadResult{}, fmt.Errorf("%w %q", ErrUnknownSession, id)
	}
	m.loadMu.Lock()
	defer m.loadMu.Unlock()
	if s, err := m.Session(id); err == nil {
		// Loaded while this load waited.
		return LoadResult{Session: s}, nil
	}
	path, err := m.opts.Store.find(id)
	if err != nil {
		return LoadResult{}, err
	}
	// Take the file first: a session another process has open is not
	// read, since it is still changing.
	l, err := m.opts.Store.reopen(path)
	if err != nil {
		return LoadResult{}, err
	}
	ld, err := m.opts.Store.load(path)
	if err != nil {
		l.close()
		return LoadResult{}, err
	}
	m.opts.Store.keepOpen(l)
	ld.history, ld.tokens = closeDanglingCalls(ld.history, ld.tokens)
	if ld.ownTranscript {
		ld.transcript, _ = closeDanglingCalls(ld.transcript, nil)
	}
	mode := ld.mode
	if !slices.Contains(Modes, mode) {
		mode = ModeDefault
	}
	cwd := ld.cwd
	if cwd == "" {
		cwd = m.opts.Env.Workspace.Roots.Primary()
	}
	model := ld.model
	if model != "" && m.opts.KnownModel != nil {
		if err := m.opts.KnownModel(model); err != nil {
			// The settings no longer offer it: the session goes on
			// with the default model.
			m.logf("session %s: its model %q is no longer configured; it uses the default model", id, model)
			model = ""
		}
	}
	s := &Session{id: ld.id, cwd: cwd, mode: mode, model: model, mgr: m, created: ld.created,
		history: ld.history, tokens: ld.tokens, transcript: ld.transcript, ownTranscript: ld.ownTranscript, calib: ld.calib,
		turns: ld.turns, updated: ld.updated, title: ld.title, checkpoints: ld.checkpoint, reverted: ld.reverted, shown: ld.shown}
	s.ledger = tools.NewLedger()
	if ld.hasTodos {
		s.plan = ld.todos
	}
	s.system = m.buildSystemPrompt(cwd)
	s.log = l
	m.mu.Lock()
	m.sessions[id] = s
	m.mu.Unlock()
	for _, p := range ld.problems {
		m.logf("session %s: %s", id, p)
	}
	return LoadResult{Session: s, Problems: ld.problems, FromDisk: true}, nil
}

// storedList is the sessions on disk for the workspace roots, and the
// folders extra, that this process does not hold.
func (m *Manager) storedList(live map[string]bool, extra []string) []ListedSession {
	if m.opts.Store == nil {
		return nil
	}
	roots := append(slices.Clone(m.opts.Env.Workspace.Roots.List()), extra...)
	var out []ListedSession
	for _, ls := range m.opts.Store.list(roots) {
		if !live[ls.ID] {
			out = append(out, ls)
		}
	}
	return out
}

// sortListed orders sessions most recent first, then by id.
func sortListed(out []ListedSession) {
	sort.Slice(out, func(i, j int) bool {
		if !out[i].UpdatedAt.Equal(out[j].UpdatedAt) {
			return out[i].UpdatedAt.After(out[j].UpdatedAt)
		}
		return out[i].ID < out[j].ID
	})
}

// SessionFile returns the path of a session's file, or "" when it has
// none (yet).
func (s *Session) SessionFile() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log == nil {
		return ""
	}
	return s.log.path
}

// Cwd is the session's working directory.
func (s *Session) Cwd() string { return s.cwd }

// interruptedResult answers a call whose result was never written: the
// server stopped while it ran or waited for the user.
const interruptedResult = "[Interrupted] qwen-ls stopped before this call finished, so its result is unknown. Check the files it may have touched before relying on them."

// closeDanglingCalls gives every tool call without a result an
// "interrupted" one, since a model request with an unanswered call is
// refused by the endpoint.
func closeDanglingCalls(history []Message, tokens []int) ([]Message, []int) {
	answered := map[string]bool{}
	for _, m := range history {
		if m.Role == "tool" {
			answered[m.ToolCallID] = true
		}
	}
	var outH []Message
	var outT []int
	changed := false
	for i, m := range history {
		outH = append(outH, m)
		if i < len(tokens) {
			outT = append(outT, tokens[i])
		} else {
			outT = append(outT, estimateMessage(m))
		}
		if m.Role != "assistant" {
			continue
		}
		// The missing results go right after the call; the results that
		// exist follow, so the call's results stay together.
		for _, tc := range m.ToolCalls {
			if answered[tc.ID] {
				continue
			}
			changed = true
			answered[tc.ID] = true
			r := Message{Role: "tool", ToolCallID: tc.ID, Text: interruptedResult}
			outH = append(outH, r)
			outT = append(outT, estimateMessage(r))
		}
	}
	if !changed {
		return history, tokens
	}
	return outH, outT
}
