package workspace

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

// newOverlay returns an empty overlay with the running system's path rules.
func newOverlay() *Overlay { return newOverlayFor(NativePaths()) }

func lspRange(sl, sc, el, ec int) *Range {
	return &Range{Start: Position{sl, sc}, End: Position{el, ec}}
}

func mustGetBuffer(t *testing.T, o *Overlay, path string) Buffer {
	t.Helper()
	b, ok := o.Get(path)
	if !ok {
		t.Fatalf("Get(%s): not open", path)
	}
	return b
}

func TestApplyIncremental(t *testing.T) {
	tests := []struct {
		name    string
		enc     Encoding
		text    string
		changes []Change
		want    string
	}{
		{"crlf insert utf-16", UTF16, "ab\r\ncd\r\n", []Change{{lspRange(1, 1, 1, 1), "X"}}, "ab\r\ncXd\r\n"},
		{"crlf insert utf-8", UTF8, "ab\r\ncd\r\n", []Change{{lspRange(1, 1, 1, 1), "X"}}, "ab\r\ncXd\r\n"},
		{"crlf join lines utf-16", UTF16, "ab\r\ncd\r\nef", []Change{{lspRange(0, 2, 1, 0), ""}}, "abcd\r\nef"},
		{"crlf join lines utf-8", UTF8, "ab\r\ncd\r\nef", []Change{{lspRange(0, 1, 2, 1), "-"}}, "a-f"},
		{"crlf end of text utf-16", UTF16, "ab\r\n", []Change{{lspRange(1, 0, 1, 0), "z"}}, "ab\r\nz"},
		{"lone cr utf-16", UTF16, "ab\rcd", []Change{{lspRange(1, 0, 1, 1), "C"}}, "ab\rCd"},
		{"lone cr becomes crlf utf-8", UTF8, "ab\rcd", []Change{{lspRange(1, 0, 1, 0), "\n"}, {lspRange(1, 0, 1, 2), "x"}}, "ab\r\nx"},
		{"combining utf-16", UTF16, "cafe\u0301 ok", []Change{{lspRange(0, 4, 0, 5), ""}}, "cafe ok"},
		{"combining utf-8", UTF8, "cafe\u0301 ok", []Change{{lspRange(0, 4, 0, 6), "\u0300"}}, "cafe\u0300 ok"},
		{"combining insert between base and mark utf-16", UTF16, "e\u0301", []Change{{lspRange(0, 1, 0, 1), "x"}}, "ex\u0301"},
		{"cjk utf-16", UTF16, "中文字\n漢字", []Change{{lspRange(0, 1, 0, 2), "国"}, {lspRange(1, 2, 1, 2), "!"}}, "中国字\n漢字!"},
		{"cjk utf-8", UTF8, "中文字\n漢字", []Change{{lspRange(0, 3, 0, 6), "国"}, {lspRange(1, 6, 1, 6), "!"}}, "中国字\n漢字!"},
		{"emoji utf-16", UTF16, "a😀b😀c", []Change{{lspRange(0, 3, 0, 6), "-"}}, "a😀-c"},
		{"emoji utf-8", UTF8, "a😀b😀c", []Change{{lspRange(0, 5, 0, 10), "-"}}, "a😀-c"},
		{"emoji with modifier utf-16", UTF16, "👍🏽!", []Change{{lspRange(0, 2, 0, 4), ""}}, "👍!"},
		{"emoji across lines utf-16", UTF16, "😀\r\n😀\n", []Change{{lspRange(0, 2, 1, 2), "🎉"}}, "😀🎉\n"},
		{"emoji across lines utf-8", UTF8, "😀\r\n😀\n", []Change{{lspRange(0, 4, 1, 4), "🎉"}}, "😀🎉\n"},
		{"sequential positions see earlier changes", UTF16, "abc", []Change{{lspRange(0, 0, 0, 0), "\n"}, {lspRange(1, 3, 1, 3), "d"}}, "\nabcd"},
		{"empty batch", UTF16, "abc", nil, "abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOverlay()
			o.Open("/f", 1, tt.text)
			if err := o.Apply("/f", 2, tt.changes, tt.enc); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			b := mustGetBuffer(t, o, "/f")
			if b.Text != tt.want || b.Version != 2 || !b.Dirty || b.Path != "/f" {
				t.Errorf("got %q v%d dirty=%v path=%s, want %q v2 dirty", b.Text, b.Version, b.Dirty, b.Path, tt.want)
			}
			if n, _ := o.Len("/f"); n != len(tt.want) {
				t.Errorf("Len = %d, want %d", n, len(tt.want))
			}
		})
	}
}

func TestApplyFullText(t *testing.T) {
	o := newOverlay()
	o.Open("/f", 1, "old\r\ntext")
	if err := o.Apply("/f", 5, []Change{{Text: "new 😀\ntext"}}, UTF16); err != nil {
		t.Fatal(err)
	}
	b := mustGetBuffer(t, o, "/f")
	if b.Text != "new 😀\ntext" || b.Version != 5 {
		t.Fatalf("got %q v%d", b.Text, b.Version)
	}
	// The new text is what later positions are counted against.
	if err := o.Apply("/f", 6, []Change{{lspRange(0, 6, 0, 6), "!"}}, UTF16); err != nil {
		t.Fatal(err)
	}
	if b := mustGetBuffer(t, o, "/f"); b.Text != "new 😀!\ntext" {
		t.Fatalf("got %q", b.Text)
	}
	if err := o.Apply("/f", 7, []Change{{Text: ""}}, UTF8); err != nil {
		t.Fatal(err)
	}
	if b := mustGetBuffer(t, o, "/f"); b.Text != "" || b.Version != 7 {
		t.Fatalf("got %q v%d", b.Text, b.Version)
	}
}

func TestApplyMixedBatch(t *testing.T) {
	for _, enc := range posEncodings {
		o := newOverlay()
		o.Open("/f", 1, "first\nsecond\n")
		batch := []Change{
			{lspRange(0, 0, 0, 5), "1st"},
			{Text: "alpha\r\nbeta\r\n"},
			{lspRange(1, 0, 1, 4), "BETA"},
			{lspRange(2, 0, 2, 0), "中"},
			{lspRange(0, 5, 1, 0), " "},
		}
		if err := o.Apply("/f", 2, batch, enc); err != nil {
			t.Fatalf("%v: %v", enc, err)
		}
		if b := mustGetBuffer(t, o, "/f"); b.Text != "alpha BETA\r\n中" {
			t.Fatalf("%v: got %q", enc, b.Text)
		}
	}
}

func TestApplyOutOfRange(t *testing.T) {
	const text = "ab\r\n中😀\ne\u0301\r"
	// Lines: "ab", "中😀", "e\u0301", "". Each bad change follows a good one,
	// which must not be applied either.
	tests := []struct {
		name string
		enc  Encoding
		bad  *Range
		want string
	}{
		{"line past the end", UTF16, lspRange(4, 0, 4, 0), "the text has only 4 lines"},
		{"end line past the end", UTF8, lspRange(0, 0, 9, 0), "range end: position 9:0 is out of range: the text has only 4 lines"},
		{"character past the line end", UTF16, lspRange(0, 3, 0, 3), "past the end of line 0, which has 2 UTF-16 units"},
		{"character on the line break", UTF8, lspRange(0, 0, 0, 3), "past the end of line 0, which has 2 bytes"},
		{"character past a cjk line utf-16", UTF16, lspRange(1, 4, 1, 4), "which has 3 UTF-16 units"},
		{"inside a surrogate pair", UTF16, lspRange(1, 2, 1, 3), "inside a surrogate pair"},
		{"inside a utf-8 sequence", UTF8, lspRange(1, 1, 1, 3), "inside a multi-byte UTF-8 sequence"},
		{"inside an emoji utf-8", UTF8, lspRange(1, 3, 1, 5), "inside a multi-byte UTF-8 sequence"},
		{"inside a combining mark utf-8", UTF8, lspRange(2, 2, 2, 2), "inside a multi-byte UTF-8 sequence"},
		{"end before start", UTF16, lspRange(1, 3, 0, 1), "the range ends before its start 1:3"},
		{"end before start on a line", UTF8, lspRange(0, 2, 0, 1), "the range ends before its start 0:2"},
		{"negative line", UTF16, lspRange(-1, 0, 0, 0), "negative"},
		{"negative character", UTF8, lspRange(0, 0, 0, -2), "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOverlay()
			o.Open("/f", 3, text)
			before := mustGetBuffer(t, o, "/f")
			changed := o.Changed()
			batch := []Change{{lspRange(0, 0, 0, 1), "A"}, {tt.bad, "X"}}
			err := o.Apply("/f", 4, batch, tt.enc)
			if err == nil {
				t.Fatalf("Apply succeeded: %q", mustGetBuffer(t, o, "/f").Text)
			}
			var re *rangeError
			if !errors.As(err, &re) {
				t.Fatalf("error %v (%T) does not wrap *rangeError", err, err)
			}
			for _, s := range []string{"apply change 1 to /f", tt.want} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			after := mustGetBuffer(t, o, "/f")
			if after != before {
				t.Errorf("buffer changed by a failed batch: %+v, was %+v", after, before)
			}
			if v, _ := o.Version("/f"); v != 3 {
				t.Errorf("Version = %d, want 3", v)
			}
			select {
			case <-changed:
				t.Errorf("a failed batch woke the waiters")
			default:
			}
			// The buffer still takes edits.
			if err := o.Apply("/f", 4, batch[:1], tt.enc); err != nil {
				t.Fatal(err)
			}
			if got := mustGetBuffer(t, o, "/f").Text; got != "Ab\r\n中😀\ne\u0301\r" {
				t.Errorf("after a good edit: %q", got)
			}
		})
	}
}

func TestApplyNotOpen(t *testing.T) {
	o := newOverlay()
	err := o.Apply("/nope", 1, []Change{{Text: "x"}}, UTF16)
	if err == nil || !strings.Contains(err.Error(), "not open") {
		t.Fatalf("Apply on a closed path: %v", err)
	}
	if _, err := o.Offset("/nope", Position{}, UTF16); err == nil {
		t.Fatalf("Offset on a closed path succeeded")
	}
	if _, ok := o.Position("/nope", 0, UTF16); ok {
		t.Fatalf("Position on a closed path succeeded")
	}
	if _, ok := o.Version("/nope"); ok {
		t.Fatalf("Version on a closed path succeeded")
	}
}

func TestOverlayLifecycle(t *testing.T) {
	o := newOverlay()
	o.Open("/a", 1, "a")
	o.Open("/b", 1, "b")
	if got := strings.Join(overlayPaths(o), ","); got != "/a,/b" {
		t.Fatalf("Paths = %s", got)
	}
	b := mustGetBuffer(t, o, "/a")
	if b.Dirty || b.Version != 1 || b.Text != "a" || b.Modified.IsZero() {
		t.Fatalf("opened buffer: %+v", b)
	}
	if err := o.Apply("/a", 2, []Change{{lspRange(0, 1, 0, 1), "!"}}, UTF16); err != nil {
		t.Fatal(err)
	}
	if b := mustGetBuffer(t, o, "/a"); !b.Dirty || b.Text != "a!" {
		t.Fatalf("after a change: %+v", b)
	}
	o.Saved("/a")
	if b := mustGetBuffer(t, o, "/a"); b.Dirty || b.Text != "a!" || b.Version != 2 {
		t.Fatalf("after save: %+v", b)
	}
	o.Open("/a", 9, "reopened")
	if b := mustGetBuffer(t, o, "/a"); b.Text != "reopened" || b.Version != 9 {
		t.Fatalf("after reopen: %+v", b)
	}
	o.Close("/a")
	if _, ok := o.Get("/a"); ok {
		t.Fatalf("closed buffer still there")
	}
	if got := strings.Join(overlayPaths(o), ","); got != "/b" {
		t.Fatalf("Paths = %s", got)
	}
}

func overlayPaths(o *Overlay) []string {
	ps := o.Paths()
	for i := range ps {
		for j := i + 1; j < len(ps); j++ {
			if ps[j] < ps[i] {
				ps[i], ps[j] = ps[j], ps[i]
			}
		}
	}
	return ps
}

// TestApplyRandomEditsMatchModel applies a thousand random batches (typing,
// deletions across lines, CRLF, emoji, CJK, combining marks, now and then a
// full-text change or a change that does not fit) and compares the buffer
// with the reference model after each.
func TestApplyRandomEditsMatchModel(t *testing.T) {
	for _, enc := range posEncodings {
		t.Run(enc.String(), func(t *testing.T) {
			r := rand.New(rand.NewPCG(2024, uint64(enc)))
			// Several leaves' worth, so edits cross leaf boundaries.
			text := randomDocText(r, 1500)
			o := newOverlay()
			o.Open("/f", 0, text)
			d := newRefDoc(text)
			failures := 0
			for step := 1; step <= 1000; step++ {
				batch := randomDocBatch(r, d, enc, docTextPieces)
				err := o.Apply("/f", int32(step), batch, enc)
				want, ok := d.apply(batch, enc)
				if ok != (err == nil) {
					t.Fatalf("step %d: batch %s: Apply error %v, model ok %v", step, describeBatch(batch), err, ok)
				}
				if ok {
					d = want
				} else {
					failures++
					var re *rangeError
					if !errors.As(err, &re) {
						t.Fatalf("step %d: error %v does not wrap *rangeError", step, err)
					}
				}
				// Read back only every few steps, so most edits land on a
				// buffer whose snapshot is stale, as in the server.
				if step%3 == 0 || !ok {
					b := mustGetBuffer(t, o, "/f")
					if b.Text != d.text {
						t.Fatalf("step %d: after %s:\n got %q\nwant %q", step, describeBatch(batch), b.Text, d.text)
					}
				}
				// Spot-check conversions against the buffer.
				pos := randomDocPosition(r, d, enc, 0.3)
				wantOff, okOff := d.offset(pos, enc)
				gotOff, errOff := o.Offset("/f", pos, enc)
				if okOff != (errOff == nil) || (okOff && gotOff != wantOff) {
					t.Fatalf("step %d: Offset(%v) = %d, %v; model %d, %v", step, pos, gotOff, errOff, wantOff, okOff)
				}
				off := r.IntN(len(d.text) + 1)
				if got, _ := o.Position("/f", off, enc); got != d.position(off, enc) {
					t.Fatalf("step %d: Position(%d) = %v, model %v", step, off, got, d.position(off, enc))
				}
			}
			o.mu.RLock()
			checkRope(t, o.bufs[o.key("/f")].text, d.text)
			o.mu.RUnlock()
			if failures == 0 {
				t.Errorf("no batch was rejected; the generator lost its bad changes")
			}
		})
	}
}

func describeBatch(batch []Change) string {
	var parts []string
	for _, c := range batch {
		if c.Range == nil {
			parts = append(parts, fmt.Sprintf("full %q", c.Text))
			continue
		}
		parts = append(parts, fmt.Sprintf("%v-%v %q", c.Range.Start, c.Range.End, c.Text))
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

func TestChangedWakesWaiters(t *testing.T) {
	o := newOverlay()
	o.Open("/f", 1, "x")
	steps := []struct {
		name string
		do   func() error
	}{
		{"apply", func() error { return o.Apply("/f", 2, []Change{{lspRange(0, 0, 0, 0), "y"}}, UTF16) }},
		{"saved", func() error { o.Saved("/f"); return nil }},
		{"open", func() error { o.Open("/g", 1, ""); return nil }},
		{"close", func() error { o.Close("/g"); return nil }},
	}
	for _, step := range steps {
		ch := o.Changed()
		select {
		case <-ch:
			t.Fatalf("%s: the channel was closed before any change", step.name)
		default:
		}
		var wg sync.WaitGroup
		woken := make(chan int, 3)
		for i := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-ch
				woken <- i
			}()
		}
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: waiters were not woken", step.name)
		}
		if len(woken) != 3 {
			t.Fatalf("%s: %d waiters woke, want 3", step.name, len(woken))
		}
		// The next change needs a fresh channel.
		if next := o.Changed(); next == ch {
			t.Fatalf("%s: Changed returned the closed channel again", step.name)
		}
	}
}

// TestChangedWaitForVersion is the intended use: wait until a buffer
// reaches a version another goroutine applies.
func TestChangedWaitForVersion(t *testing.T) {
	o := newOverlay()
	o.Open("/f", 0, "")
	go func() {
		for v := int32(1); v <= 50; v++ {
			_ = o.Apply("/f", v, []Change{{lspRange(0, 0, 0, 0), "a"}}, UTF8)
		}
	}()
	timeout := time.After(10 * time.Second)
	for {
		ch := o.Changed()
		if v, _ := o.Version("/f"); v == 50 {
			break
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("version 50 never arrived")
		}
	}
	if b := mustGetBuffer(t, o, "/f"); b.Text != strings.Repeat("a", 50) {
		t.Fatalf("text %q", b.Text)
	}
}

// TestConcurrentReadersAndWriter runs Get, Offset and Apply at once; the
// race detector and the final text check the locking and the snapshot
// cache.
func TestConcurrentReadersAndWriter(t *testing.T) {
	o := newOverlay()
	base := strings.Repeat("line 中😀\r\n", 2000)
	o.Open("/f", 0, base)
	const edits = 300
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				b, _ := o.Get("/f")
				// Every snapshot is some prefix of the edits applied.
				n := int(b.Version)
				if want := strings.Repeat("x", n) + base; b.Text != want {
					t.Errorf("version %d: text of %d bytes, want %d", n, len(b.Text), len(want))
					return
				}
				_, _ = o.Offset("/f", Position{1000, 3}, UTF16)
			}
		}()
	}
	for v := int32(1); v <= edits; v++ {
		if err := o.Apply("/f", v, []Change{{lspRange(0, 0, 0, 0), "x"}}, UTF16); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if b := mustGetBuffer(t, o, "/f"); b.Text != strings.Repeat("x", edits)+base {
		t.Fatalf("final text wrong (%d bytes)", len(b.Text))
	}
}

// TestGetSnapshotIsStable: a string from Get does not change when the
// buffer does, and Get after a change sees the change.
func TestGetSnapshotIsStable(t *testing.T) {
	o := newOverlay()
	o.Open("/f", 1, "hello\nworld")
	if err := o.Apply("/f", 2, []Change{{lspRange(1, 0, 1, 5), "there"}}, UTF16); err != nil {
		t.Fatal(err)
	}
	first := mustGetBuffer(t, o, "/f")
	again := mustGetBuffer(t, o, "/f")
	if err := o.Apply("/f", 3, []Change{{lspRange(0, 0, 0, 5), "bye"}}, UTF16); err != nil {
		t.Fatal(err)
	}
	third := mustGetBuffer(t, o, "/f")
	if first.Text != "hello\nthere" || again.Text != first.Text || third.Text != "bye\nthere" || third.Version != 3 {
		t.Fatalf("snapshots %q %q %q", first.Text, again.Text, third.Text)
	}
}
