package rpc

import (
	"bytes"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"testing"
)

// lineSource yields n bytes of 'x' and then tail, holding none of them.
type lineSource struct {
	n    int
	tail []byte
}

func (r *lineSource) Read(p []byte) (int, error) {
	if r.n > 0 {
		k := min(len(p), r.n)
		for i := range p[:k] {
			p[i] = 'x'
		}
		r.n -= k
		return k, nil
	}
	if len(r.tail) == 0 {
		return 0, io.EOF
	}
	k := copy(p, r.tail)
	r.tail = r.tail[k:]
	return k, nil
}

// readAfterLongLine reads, from an ACP stream, a line of n bytes and then
// a valid message, and returns the message, what the stream answered and
// how many bytes the reading allocated.
func readAfterLongLine(t *testing.T, n, limit int) (msg json.RawMessage, answers string, alloc uint64) {
	t.Helper()
	ok := `{"jsonrpc":"2.0","id":1,"method":"x","params":{}}`
	var out bytes.Buffer
	s := newStream(&lineSource{n: n, tail: []byte("\n" + ok + "\n")}, &out, nil, true)
	if limit > 0 {
		s.limit = limit
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := s.ReadObject(&msg); err != nil {
		t.Fatalf("ReadObject: %v", err)
	}
	runtime.ReadMemStats(&after)
	if string(msg) != ok {
		t.Fatalf("the message after the long line = %q", msg)
	}
	return msg, out.String(), after.TotalAlloc - before.TotalAlloc
}

// A line past the limit is refused, and reading it costs at most the
// limit: it is gathered in blocks up to the limit and then let go, never
// grown (a slice grown by append up to the limit allocates about five
// times the limit on the way).
func TestOverLongLineIsReadWithinTheLimit(t *testing.T) {
	const limit = 1 << 20
	_, answers, alloc := readAfterLongLine(t, 32<<20, limit)
	if !strings.Contains(answers, `"code":-32600`) || !strings.Contains(answers, `"id":null`) {
		t.Fatalf("answers = %q, want one -32600 with id null", answers)
	}
	t.Logf("allocated %.2f MiB reading a 32 MiB line over a 1 MiB limit", float64(alloc)/(1<<20))
	if alloc > limit+limit/2 {
		t.Fatalf("allocated %d bytes reading a line over a limit of %d", alloc, limit)
	}
}

// The same at the real limit: the 70 MB line of issue 30, which once
// left the server holding 180 MB.
func TestSeventyMBLineIsReadWithinTheLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 70 MB")
	}
	_, answers, alloc := readAfterLongLine(t, 70_000_000, 0)
	if !strings.Contains(answers, "64 MiB") {
		t.Fatalf("answers = %q, want the limit named", answers)
	}
	t.Logf("allocated %.1f MiB reading a 70 MB line", float64(alloc)/(1<<20))
	if alloc > MaxMessageSize+8<<20 {
		t.Fatalf("allocated %d bytes reading a line over the 64 MiB limit", alloc)
	}
}

// A line under the limit but far longer than the reader's buffer comes
// through whole, in one slice of its size.
func TestLongLineUnderTheLimitIsJoinedOnce(t *testing.T) {
	text := strings.Repeat("ab\\\"c", 3<<20/5)
	line := ` {"jsonrpc":"2.0","method":"x","params":{"t":"` + text + `"}} ` + "\r\n"
	var out bytes.Buffer
	s := newStream(strings.NewReader(line), &out, nil, true)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	body, err := s.readLine()
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(line); string(body) != want {
		t.Fatalf("line of %d bytes read as %d bytes", len(want), len(body))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(3*len(line)) {
		t.Fatalf("allocated %d bytes for a line of %d", alloc, len(line))
	}
}
