package session_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/session"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// openSessionFDs counts this process's open descriptors of session files
// (the in-process model server's sockets would blur a count of all).
func openSessionFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range ents {
		if l, _ := os.Readlink("/proc/self/fd/" + e.Name()); strings.HasSuffix(l, ".jsonl") {
			n++
		}
	}
	return n
}

// Many stored sessions in one process hold a bounded number of session
// files open, and a session whose file was closed to make room writes to
// it again on its next prompt.
func TestManySessionsHoldFewFiles(t *testing.T) {
	const n = 60
	var script []modeltest.Response
	for i := 0; i < n+1; i++ {
		script = append(script, modeltest.Response{Text: "ok"})
	}
	st := newStored(t, script...)
	m := st.manager(t, nil)
	before := openSessionFDs(t)
	var ss []*session.Session
	for i := 0; i < n; i++ {
		s := newSess(t, m, "")
		prompt(t, s, "task "+s.ID())
		ss = append(ss, s)
	}
	after := openSessionFDs(t)
	t.Logf("%d sessions with a file each: %d session files open before, %d after", n, before, after)
	if after-before > 16 {
		t.Fatalf("%d sessions hold %d session files open", n, after-before)
	}
	// The first session's file was closed long ago: its next prompt is
	// written all the same.
	prompt(t, ss[0], "again")
	m.Close()
	m2 := st.manager(t, nil)
	lr, err := m2.Load(ss[0].ID())
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, msg := range lr.Session.History() {
		texts = append(texts, msg.Text)
	}
	if got := strings.Join(texts, "|"); !strings.Contains(got, "task "+ss[0].ID()) || !strings.Contains(got, "again") {
		t.Fatalf("the reloaded history is %q", got)
	}
}

// A session whose file this process had closed to save descriptors, and
// that another process loaded and continued meanwhile, is not written
// again here: its history would fork inside one file.
func TestASuspendedSessionContinuedElsewhereIsNotForked(t *testing.T) {
	var script []modeltest.Response
	for i := 0; i < 40; i++ {
		script = append(script, modeltest.Response{Text: "ok"})
	}
	st := newStored(t, script...)
	m1 := st.manager(t, nil)
	first := newSess(t, m1, "")
	prompt(t, first, "first")
	for i := 0; i < 20; i++ {
		prompt(t, newSess(t, m1, ""), "filler")
	}
	m2 := st.manager(t, nil)
	lr, err := m2.Load(first.ID())
	if err != nil {
		t.Fatalf("a session whose file was closed could not be loaded elsewhere: %v", err)
	}
	prompt(t, lr.Session, "elsewhere")
	m2.Close()
	before, _ := os.ReadFile(lr.Session.SessionFile())
	prompt(t, first, "here again")
	after, _ := os.ReadFile(lr.Session.SessionFile())
	if string(before) != string(after) {
		t.Fatalf("the first process wrote into a session continued elsewhere:\n%s", after[len(before):])
	}
}

// Closing a session forgets it and releases its file, so another process
// can load it; deleting removes the file.
func TestCloseAndDeleteSession(t *testing.T) {
	st := newStored(t, modeltest.Response{Text: "ok"})
	m1 := st.manager(t, nil)
	s := newSess(t, m1, "")
	prompt(t, s, "task")
	file := s.SessionFile()
	if err := m1.CloseSession(s.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := m1.Session(s.ID()); !errors.Is(err, session.ErrUnknownSession) {
		t.Fatalf("a closed session is still there: %v", err)
	}
	if err := m1.CloseSession(s.ID()); !errors.Is(err, session.ErrUnknownSession) {
		t.Fatalf("closing twice: %v", err)
	}
	m2 := st.manager(t, nil)
	if _, err := m2.Load(s.ID()); err != nil {
		t.Fatalf("a closed session could not be loaded by another process: %v", err)
	}
	if err := m1.DeleteSession(s.ID()); !errors.Is(err, session.ErrSessionInUse) {
		t.Fatalf("deleting a session open in another process: %v", err)
	}
	if err := m2.DeleteSession(s.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the deleted session's file is still there: %v", err)
	}
	if err := m2.DeleteSession(s.ID()); !errors.Is(err, session.ErrUnknownSession) {
		t.Fatalf("deleting an unknown session: %v", err)
	}
}
