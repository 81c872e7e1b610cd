package workspace

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// fuzzScript hands out the fuzzer's bytes as small numbers.
type fuzzScript struct {
	b []byte
	i int
}

func (s *fuzzScript) more() bool { return s.i < len(s.b) }

// next returns the next byte modulo n (n > 0), or 0 when the script is used
// up.
func (s *fuzzScript) next(n int) int {
	if s.i >= len(s.b) {
		return 0
	}
	v := int(s.b[s.i])
	s.i++
	return v % n
}

// text returns either one of the interesting pieces or raw bytes from the
// script, which need not be valid UTF-8.
func (s *fuzzScript) text() string {
	k := s.next(len(docTextPieces) + 3)
	switch {
	case k < len(docTextPieces):
		return docTextPieces[k]
	case k == len(docTextPieces):
		return ""
	default:
		n := s.next(8)
		start := min(s.i, len(s.b))
		end := min(start+n, len(s.b))
		s.i = end
		return string(s.b[start:end])
	}
}

// position picks a position in d: mostly one in range (though perhaps
// inside a character), and for the byte 255 a line or a character just past
// the end.
func (s *fuzzScript) position(d *refDoc, enc Encoding) Position {
	line := len(d.lines)
	if b := s.next(256); b < 255 {
		line = b % len(d.lines)
	}
	n := 0
	if line < len(d.lines) {
		n = d.lineLen(line, enc)
	}
	ch := n + 1
	if b := s.next(256); b < 255 {
		ch = b % (n + 1)
	}
	return Position{Line: line, Character: ch}
}

// batch decodes up to three changes, choosing each position against the
// model's text as the changes before it left it.
func (s *fuzzScript) batch(d *refDoc, enc Encoding) []Change {
	n := 1 + s.next(3)
	var batch []Change
	cur := d
	for range n {
		kind := s.next(256)
		var c Change
		if kind%16 == 0 {
			c = Change{Text: s.text() + s.text() + s.text()}
		} else {
			a := s.position(cur, enc)
			b := a
			if kind&0x20 == 0 {
				b = s.position(cur, enc)
			}
			ao, _ := cur.offset(a, enc)
			bo, _ := cur.offset(b, enc)
			if bo < ao && kind&0xe0 != 0xe0 {
				a, b = b, a
			}
			c = Change{Range: &Range{Start: a, End: b}, Text: s.text()}
		}
		batch = append(batch, c)
		if next, ok := cur.apply([]Change{c}, enc); ok {
			cur = next
		}
	}
	return batch
}

// FuzzApplyChanges drives an overlay, and a rope of tiny leaves, with the
// fuzzer's text and batches of changes, and holds both, and the string
// conversions, to the reference model after every batch.
func FuzzApplyChanges(f *testing.F) {
	f.Add("hello\r\nworld\n", []byte{1, 2, 0, 3, 1, 5, 7, 0x21, 1, 1, 4, 9}, false)
	f.Add("a😀b\n中文\r\ne\u0301\r", []byte{3, 0x11, 0, 2, 0, 3, 12, 2, 0x41, 2, 1, 1, 0, 5, 0x80, 1, 1, 0, 0}, false)
	f.Add("a😀b\n中文\r\ne\u0301\r", []byte{3, 0x11, 0, 2, 0, 3, 12, 2, 0x41, 2, 1, 1, 0, 5, 0x80, 1, 1, 0, 0}, true)
	f.Add("", []byte{0, 0x21, 0, 0, 6, 0x10, 7, 7, 7}, true)
	f.Add("x\ry\r", []byte{2, 0x21, 1, 0, 5, 0x22, 0, 1, 6, 0xa3, 1, 1, 0, 0, 18, 4, 0xe4, 0xb8, 0xad, 0x61}, false)
	f.Add("\xe4\xb8 \xad\xf0\x9f\x98\x80\xff\r\n", []byte{1, 0x23, 0, 1, 18, 2, 0xad, 0x20, 0x23, 0, 3, 18, 1, 0xe4}, true)
	// Longer scripts of pseudo-random bytes over a longer text: dozens of
	// batches, most of them valid.
	rng := rand.New(rand.NewPCG(8, 9))
	for i := range 4 {
		script := make([]byte, 300)
		for j := range script {
			script[j] = byte(rng.IntN(256))
		}
		f.Add(randomDocText(rng, 150), script, i%2 == 1)
	}
	f.Fuzz(func(t *testing.T, text string, script []byte, utf8Enc bool) {
		if len(text) > 2048 || len(script) > 512 {
			t.Skip("keep inputs small")
		}
		enc := UTF16
		if utf8Enc {
			enc = UTF8
		}
		o := newOverlay()
		o.Open("/f", 0, text)
		tiny := newShapedRope(text, tinyShape)
		d := newRefDoc(text)
		s := &fuzzScript{b: script}
		for v := int32(1); s.more() && v <= 32; v++ {
			batch := s.batch(d, enc)
			want, ok := d.apply(batch, enc)
			err := o.Apply("/f", v, batch, enc)
			if ok != (err == nil) {
				t.Fatalf("batch %s on %q: Apply error %v, model ok %v", describeBatch(batch), d.text, err, ok)
			}
			var re *rangeError
			if err != nil && !errors.As(err, &re) {
				t.Fatalf("error %v does not wrap *rangeError", err)
			}
			next, _, err := tiny.apply(batch, enc)
			if ok != (err == nil) {
				t.Fatalf("batch %s on %q: tiny rope error %v, model ok %v", describeBatch(batch), d.text, err, ok)
			}
			if ok {
				d, tiny = want, next
			}
			b, _ := o.Get("/f")
			if b.Text != d.text {
				t.Fatalf("after %s:\n got %q\nwant %q", describeBatch(batch), b.Text, d.text)
			}
			checkRope(t, tiny, d.text)
			o.mu.RLock()
			checkRope(t, o.bufs[o.key("/f")].text, d.text)
			o.mu.RUnlock()

			pos := s.position(d, enc)
			wantOff, okOff := d.offset(pos, enc)
			gotOff, errOff := OffsetOf(d.text, pos, enc)
			if okOff != (errOff == nil) || (okOff && gotOff != wantOff) {
				t.Fatalf("OffsetOf(%q, %v, %v) = %d, %v; model %d, %v", d.text, pos, enc, gotOff, errOff, wantOff, okOff)
			}
			gotOff, errOff = o.Offset("/f", pos, enc)
			if okOff != (errOff == nil) || (okOff && gotOff != wantOff) {
				t.Fatalf("Offset(%q, %v, %v) = %d, %v; model %d, %v", d.text, pos, enc, gotOff, errOff, wantOff, okOff)
			}
			off := (s.next(256)<<8 | s.next(256)) % (len(d.text) + 2)
			wantPos := d.position(off, enc)
			if got := PositionOf(d.text, off, enc); got != wantPos {
				t.Fatalf("PositionOf(%q, %d, %v) = %v, model %v", d.text, off, enc, got, wantPos)
			}
			if got := tiny.positionOf(off, enc); got != wantPos {
				t.Fatalf("tiny rope positionOf(%q, %d, %v) = %v, model %v", d.text, off, enc, got, wantPos)
			}
		}
	})
}
