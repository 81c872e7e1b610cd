package session

import (
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// ListedSession is one entry of qwen/listSessions.
type ListedSession struct {
	ID        string
	Cwd       string
	Title     string
	UpdatedAt time.Time
}

// titleLen bounds a session's title: the start of its first prompt.
const titleLen = 80

// List returns the sessions of this process and those stored on disk for
// the workspace roots, most recently updated first. Subagent sub-sessions
// are not listed.
func (m *Manager) List() []ListedSession { return m.list(nil) }

// ListAlso is List with the sessions stored for the folders dirs too, each
// read as a root is (every session stored under it, whatever its cwd).
// Looking does not make them roots.
func (m *Manager) ListAlso(dirs ...string) []ListedSession { return m.list(dirs) }

func (m *Manager) list(extra []string) []ListedSession {
	m.mu.Lock()
	ss := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		ss = append(ss, s)
	}
	m.mu.Unlock()
	out := make([]ListedSession, 0, len(ss))
	live := map[string]bool{}
	for _, s := range ss {
		s.mu.Lock()
		ls := ListedSession{ID: s.id, Cwd: s.cwd, UpdatedAt: s.updated, Title: s.title}
		s.mu.Unlock()
		if ls.Title == "" {
			ls.Title = "(no prompt yet)"
		}
		if ls.UpdatedAt.IsZero() {
			ls.UpdatedAt = s.created
		}
		live[s.id] = true
		out = append(out, ls)
	}
	out = append(out, m.storedList(live, extra)...)
	sortListed(out)
	return out
}

// ListIn is List for one working directory: the sessions, of this process
// and stored, whose cwd is dir, whether or not dir is a root. Looking does
// not make dir a root.
func (m *Manager) ListIn(dir string) []ListedSession {
	dir = filepath.Clean(dir)
	var out []ListedSession
	for _, ls := range m.List() {
		if filepath.Clean(ls.Cwd) == dir {
			out = append(out, ls)
		}
	}
	// A folder that is not a root has its own project folder in the
	// store; List read only the roots'.
	if m.opts.Store != nil && !slices.Contains(m.opts.Env.Workspace.Roots.List(), dir) {
		seen := map[string]bool{}
		for _, ls := range out {
			seen[ls.ID] = true
		}
		for _, ls := range m.opts.Store.list([]string{dir}) {
			if !seen[ls.ID] && filepath.Clean(ls.Cwd) == dir {
				out = append(out, ls)
			}
		}
		sortListed(out)
	}
	return out
}

// reminderOpen starts a note that renderPrompt appends to a prompt for the
// model only (the editor's focus, notices such as an undone turn).
const reminderOpen = "\n\n<system-reminder>\n"

// withoutReminders is a user message as the user wrote it: the notes that
// renderPrompt appended for the model are cut from its end, so a replayed
// session shows the user's own words.
func withoutReminders(text string) string {
	for strings.HasSuffix(text, "\n</system-reminder>") {
		i := strings.LastIndex(text, reminderOpen)
		if i < 0 {
			break
		}
		text = text[:i]
	}
	return text
}

// title is the first line of a prompt, cut to titleLen characters.
func title(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	if utf8.RuneCountInString(line) <= titleLen {
		return line
	}
	r := []rune(line)
	return string(r[:titleLen-1]) + "…"
}

// allMessages is every message of the session, compressed or not: the
// transcript once a compression has split it from history, history until
// then. The caller holds s.mu.
func (s *Session) allMessages() []Message {
	if s.ownTranscript {
		return s.transcript
	}
	return s.history
}

// splitTranscript keeps the transcript apart from history before history
// is first changed other than by appending. The caller holds s.mu.
func (s *Session) splitTranscript() {
	if !s.ownTranscript {
		s.transcript, s.ownTranscript = slices.Clone(s.history), true
	}
}
