package session_test

import (
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// A session whose answer is large, written in pieces, loads back whole,
// with the events written after it.
func TestLargeAnswerLoadsBack(t *testing.T) {
	answer := strings.Repeat("a large answer, line after line\n", 2*(1<<20)/32)
	st := newStored(t, modeltest.Response{Text: answer, ChunkSize: 64 << 10})
	m1 := st.manager(t, nil)
	s := newSess(t, m1, "default")
	prompt(t, s, "say a lot")
	m1.Close()
	m2 := st.manager(t, nil)
	lr, err := m2.Load(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if len(lr.Problems) != 0 {
		t.Fatalf("problems = %q", lr.Problems)
	}
	h := lr.Session.History()
	if len(h) != 2 || h[0].Text != "say a lot" || h[1].Text != answer {
		t.Fatalf("history of %d messages; the large answer came back with %d bytes of %d", len(h), len(h[1].Text), len(answer))
	}
}
