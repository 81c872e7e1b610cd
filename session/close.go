package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Ending sessions: qwen/closeSession and ACP's session/close forget a
// session of this process and release what it holds; ACP's session/delete
// removes a stored one.

// closeWait bounds how long CloseSession waits for a cancelled prompt to
// wind down before it lets the session go anyway.
const closeWait = 10 * time.Second

// CloseSession ends a session of this process: its running prompt is
// cancelled (and given up to closeWait to end), its file is closed and
// unlocked, and the manager forgets it. A stored session can be loaded
// again later. An id this process does not hold is ErrUnknownSession.
func (m *Manager) CloseSession(id string) error {
	s, err := m.Session(id)
	if err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.sessions, id)
	m.mu.Unlock()
	s.Cancel()
	deadline := time.Now().Add(closeWait)
	for s.busyNow() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	s.Close()
	s.mu.Lock()
	s.snaps = nil
	s.mu.Unlock()
	return nil
}

func (s *Session) busyNow() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.busy
}

// DeleteSession removes a session's file: a session of this process is
// closed first. A session another process has open is ErrSessionInUse; an
// id with no file and no session here is ErrUnknownSession.
func (m *Manager) DeleteSession(id string) error {
	_, notHere := m.Session(id)
	here := notHere == nil
	if here {
		if err := m.CloseSession(id); err != nil {
			return err
		}
	}
	if m.opts.Store == nil {
		if here {
			return nil
		}
		return fmt.Errorf("%w %q", ErrUnknownSession, id)
	}
	path, err := m.opts.Store.find(id)
	if err != nil {
		if here {
			// Never stored (no prompt yet): closing it was all.
			return nil
		}
		return err
	}
	if !m.opts.Store.removeIfUnused(filepath.Dir(path), id) {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return ErrSessionInUse
	}
	return nil
}

// StoreNow writes the session's file now rather than at its first prompt,
// so that another process can load or resume the session at once (ACP
// clients that create a session in one process and prompt it from the
// next).
func (s *Session) StoreNow() {
	s.ensureLog()
}

// Title is the session's title: the first line of its first prompt, or ""
// before one.
func (s *Session) Title() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.title
}

// UpdatedAt is when the session last changed.
func (s *Session) UpdatedAt() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.updated.IsZero() {
		return s.created
	}
	return s.updated
}
