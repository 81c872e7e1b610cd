package workspace

import (
	"errors"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// The reference model: a plain string, analysed the slow and obvious way
// each time it changes. The tests hold every conversion and edit of the
// package against it.

type refLine struct{ start, end int } // end excludes the line break

type refDoc struct {
	text  string
	lines []refLine
	// bounds are the offsets where code points start, as ranging over the
	// string decodes them, followed by len(text); units and widths give the
	// size of the code point starting at each bound.
	bounds []int
	units  []int
	widths []int
}

func newRefDoc(text string) *refDoc {
	d := &refDoc{text: text}
	start := 0
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\n':
			d.lines = append(d.lines, refLine{start, i})
			start = i + 1
		case '\r':
			d.lines = append(d.lines, refLine{start, i})
			if i+1 < len(text) && text[i+1] == '\n' {
				i++
			}
			start = i + 1
		}
	}
	d.lines = append(d.lines, refLine{start, len(text)})
	for i, r := range text {
		d.bounds = append(d.bounds, i)
		d.units = append(d.units, utf16.RuneLen(r))
	}
	d.bounds = append(d.bounds, len(text))
	for k := 0; k+1 < len(d.bounds); k++ {
		d.widths = append(d.widths, d.bounds[k+1]-d.bounds[k])
	}
	return d
}

func (d *refDoc) size(k int, enc Encoding) int {
	if enc == UTF8 {
		return d.widths[k]
	}
	return d.units[k]
}

// lineLen is the length of a line in enc.
func (d *refDoc) lineLen(line int, enc Encoding) int {
	ln := d.lines[line]
	n := 0
	for k := d.boundIndex(ln.start); d.bounds[k] < ln.end; k++ {
		n += d.size(k, enc)
	}
	return n
}

// boundIndex is the index of the first bound at or after off.
func (d *refDoc) boundIndex(off int) int {
	k, _ := slices.BinarySearch(d.bounds, off)
	return k
}

// offset converts a position; ok is false when it is not in the text.
func (d *refDoc) offset(pos Position, enc Encoding) (int, bool) {
	if pos.Line < 0 || pos.Character < 0 || pos.Line >= len(d.lines) {
		return 0, false
	}
	ln := d.lines[pos.Line]
	count := 0
	for k := d.boundIndex(ln.start); k < len(d.bounds); k++ {
		b := d.bounds[k]
		if count == pos.Character {
			return b, true
		}
		if count > pos.Character || b >= ln.end {
			return 0, false
		}
		count += d.size(k, enc)
	}
	return 0, false
}

// position converts an offset, rounding it back to the start of the code
// point or line break it falls in.
func (d *refDoc) position(off int, enc Encoding) Position {
	off = max(0, min(off, len(d.text)))
	// Back to the largest bound not after off.
	if k := d.boundIndex(off); d.bounds[k] != off {
		off = d.bounds[k-1]
	}
	for l, ln := range d.lines {
		if off < ln.start {
			continue
		}
		if l+1 < len(d.lines) && off >= d.lines[l+1].start {
			continue
		}
		if off > ln.end { // inside the line break
			off = ln.end
		}
		ch := 0
		for k := d.boundIndex(ln.start); d.bounds[k] < off; k++ {
			ch += d.size(k, enc)
		}
		return Position{Line: l, Character: ch}
	}
	panic("unreachable")
}

// validPositions lists every position in the text.
func (d *refDoc) validPositions(enc Encoding) []Position {
	var out []Position
	for l, ln := range d.lines {
		ch := 0
		for k := d.boundIndex(ln.start); ; k++ {
			out = append(out, Position{l, ch})
			if d.bounds[k] == ln.end {
				break
			}
			ch += d.size(k, enc)
		}
	}
	return out
}

// apply applies a batch to the model: the new text, or ok false when some
// change does not fit (and then the text is unchanged).
func (d *refDoc) apply(changes []Change, enc Encoding) (*refDoc, bool) {
	cur := d
	for _, c := range changes {
		if c.Range == nil {
			cur = newRefDoc(c.Text)
			continue
		}
		s, ok1 := cur.offset(c.Range.Start, enc)
		e, ok2 := cur.offset(c.Range.End, enc)
		if !ok1 || !ok2 || e < s {
			return d, false
		}
		cur = newRefDoc(cur.text[:s] + c.Text + cur.text[e:])
	}
	return cur, true
}

// tinyShape makes deep trees of tiny leaves out of short texts, so leaf
// boundaries fall next to every kind of character and line break.
var tinyShape = &ropeShape{maxLeaf: 4, buildLeaf: 3, minLeaf: 2, maxKids: 3, minKids: 2}

// checkRope verifies the rope's structure and invariants against want.
func checkRope(t testing.TB, r rope, want string) {
	t.Helper()
	if got := r.String(); got != want {
		t.Fatalf("rope text = %q, want %q", got, want)
	}
	if r.root == nil {
		if want != "" {
			t.Fatalf("empty rope for %q", want)
		}
		return
	}
	d := newRefDoc(want)
	sh := r.sh()
	off := 0
	var walk func(n *ropeNode, root bool) textMetrics
	walk = func(n *ropeNode, root bool) textMetrics {
		if n.height == 0 {
			if n.leaf == "" {
				t.Fatalf("empty leaf at %d", off)
			}
			if len(n.leaf) > sh.maxLeaf+utf8.UTFMax {
				t.Fatalf("leaf of %d bytes at %d, limit %d", len(n.leaf), off, sh.maxLeaf)
			}
			if n.m != measureText(n.leaf) {
				t.Fatalf("leaf at %d: metrics %+v, want %+v", off, n.m, measureText(n.leaf))
			}
			if off > 0 {
				if _, ok := slices.BinarySearch(d.bounds, off); !ok {
					t.Fatalf("leaf boundary at %d splits a code point of %q", off, want)
				}
				if want[off-1] == '\r' && want[off] == '\n' {
					t.Fatalf("leaf boundary at %d splits a \\r\\n of %q", off, want)
				}
			}
			off += len(n.leaf)
			return n.m
		}
		if len(n.kids) == 0 || len(n.kids) > sh.maxKids {
			t.Fatalf("node with %d children", len(n.kids))
		}
		if root && len(n.kids) == 1 {
			t.Fatalf("root with a single child")
		}
		var sum textMetrics
		for _, k := range n.kids {
			if k.height != n.height-1 {
				t.Fatalf("child of height %d under a node of height %d", k.height, n.height)
			}
			sum.add(walk(k, false))
		}
		if sum != n.m {
			t.Fatalf("node metrics %+v, children sum to %+v", n.m, sum)
		}
		return n.m
	}
	m := walk(r.root, true)
	units := 0
	for _, u := range d.units {
		units += u
	}
	if m.bytes != len(want) || m.breaks != len(d.lines)-1 || m.units != units {
		t.Fatalf("rope metrics %+v, want %d bytes, %d breaks, %d units", m, len(want), len(d.lines)-1, units)
	}
}

// ropeFromPieces builds a rope whose leaves are exactly pieces.
func ropeFromPieces(shape *ropeShape, pieces ...string) rope {
	var leaves []*ropeNode
	for _, p := range pieces {
		leaves = append(leaves, newRopeLeaf(p))
	}
	return rope{root: shape.buildUp(leaves), shape: shape}
}

var posEncodings = []Encoding{UTF16, UTF8}

// trickyDocTexts hold every kind of line break and character the conversions
// care about.
var trickyDocTexts = []string{
	"",
	"a",
	"\n",
	"\r",
	"\r\n",
	"\n\r",
	"\r\r\n\n",
	"hello\nworld",
	"hello\r\nworld\r\n",
	"one\rtwo\r\nthree\nfour\r",
	"e\u0301te\u0301\r\n",
	"中文字\r\n漢字\n",
	"a😀b\n😀😀\r\n👍🏽",
	"mix 中😀e\u0301\r\rend",
	"\xffa\xe4\xb8\n\xe4\xb8\xad\xed\xa0\x80\xf0\x9f\x98",
}

func TestOffsetOf(t *testing.T) {
	tests := []struct {
		text    string
		pos     Position
		enc     Encoding
		want    int
		wantErr string
	}{
		{text: "ab\ncd", pos: Position{1, 1}, enc: UTF16, want: 4},
		{text: "ab\ncd", pos: Position{1, 2}, enc: UTF16, want: 5},
		{text: "ab\r\ncd", pos: Position{0, 2}, enc: UTF16, want: 2},
		{text: "ab\r\ncd", pos: Position{1, 0}, enc: UTF8, want: 4},
		{text: "ab\r\ncd", pos: Position{0, 3}, enc: UTF8, wantErr: "past the end of line 0, which has 2 bytes"},
		{text: "ab\r\ncd", pos: Position{0, 3}, enc: UTF16, wantErr: "past the end of line 0, which has 2 UTF-16 units"},
		{text: "ab\rcd", pos: Position{1, 1}, enc: UTF16, want: 4},
		{text: "ab\rcd", pos: Position{0, 3}, enc: UTF16, wantErr: "past the end of line 0"},
		{text: "a\r\n\rb\nc", pos: Position{1, 0}, enc: UTF16, want: 3},
		{text: "a\r\n\rb\nc", pos: Position{2, 1}, enc: UTF8, want: 5},
		{text: "a\r\n\rb\nc", pos: Position{3, 1}, enc: UTF16, want: 7},
		{text: "a\r\n\rb\nc", pos: Position{4, 0}, enc: UTF16, wantErr: "the text has only 4 lines"},
		{text: "a\n", pos: Position{1, 0}, enc: UTF16, want: 2},
		{text: "a\n", pos: Position{2, 0}, enc: UTF16, wantErr: "the text has only 2 lines"},
		{text: "", pos: Position{0, 0}, enc: UTF16, want: 0},
		{text: "", pos: Position{0, 1}, enc: UTF8, wantErr: "which has 0 bytes"},
		{text: "", pos: Position{1, 0}, enc: UTF16, wantErr: "the text has only 1 line"},
		{text: "abc", pos: Position{-1, 0}, enc: UTF16, wantErr: "negative"},
		{text: "abc", pos: Position{0, -1}, enc: UTF8, wantErr: "negative"},
		// A combining mark is a character of its own.
		{text: "e\u0301x", pos: Position{0, 1}, enc: UTF16, want: 1},
		{text: "e\u0301x", pos: Position{0, 2}, enc: UTF16, want: 3},
		{text: "e\u0301x", pos: Position{0, 3}, enc: UTF16, want: 4},
		{text: "e\u0301x", pos: Position{0, 2}, enc: UTF8, wantErr: "inside a multi-byte UTF-8 sequence"},
		{text: "e\u0301x", pos: Position{0, 3}, enc: UTF8, want: 3},
		{text: "中文\n", pos: Position{0, 1}, enc: UTF16, want: 3},
		{text: "中文\n", pos: Position{0, 2}, enc: UTF16, want: 6},
		{text: "中文\n", pos: Position{0, 3}, enc: UTF16, wantErr: "which has 2 UTF-16 units"},
		{text: "中文\n", pos: Position{0, 3}, enc: UTF8, want: 3},
		{text: "中文\n", pos: Position{0, 4}, enc: UTF8, wantErr: "inside a multi-byte UTF-8 sequence"},
		{text: "中文\n", pos: Position{0, 7}, enc: UTF8, wantErr: "which has 6 bytes"},
		// An astral-plane character is two UTF-16 units and four bytes.
		{text: "a😀b", pos: Position{0, 1}, enc: UTF16, want: 1},
		{text: "a😀b", pos: Position{0, 2}, enc: UTF16, wantErr: "inside a surrogate pair"},
		{text: "a😀b", pos: Position{0, 3}, enc: UTF16, want: 5},
		{text: "a😀b", pos: Position{0, 4}, enc: UTF16, want: 6},
		{text: "a😀b", pos: Position{0, 5}, enc: UTF16, wantErr: "which has 4 UTF-16 units"},
		{text: "a😀b", pos: Position{0, 5}, enc: UTF8, want: 5},
		{text: "a😀b", pos: Position{0, 3}, enc: UTF8, wantErr: "inside a multi-byte UTF-8 sequence"},
		// Each byte of invalid UTF-8 is one character.
		{text: "\xffa", pos: Position{0, 1}, enc: UTF16, want: 1},
		{text: "\xe4\xb8a", pos: Position{0, 1}, enc: UTF8, want: 1},
		{text: "\xe4\xb8a", pos: Position{0, 2}, enc: UTF16, want: 2},
	}
	for _, tt := range tests {
		ropes := map[string]rope{
			"default": newRope(tt.text),
			"tiny":    newShapedRope(tt.text, tinyShape),
		}
		check := func(impl string, got int, err error) {
			t.Helper()
			if tt.wantErr != "" {
				var re *rangeError
				if !errors.As(err, &re) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("%s: OffsetOf(%q, %v, %v) = %d, %v; want a *rangeError containing %q", impl, tt.text, tt.pos, tt.enc, got, err, tt.wantErr)
				} else if re.Pos != tt.pos {
					t.Errorf("%s: OffsetOf(%q, %v, %v): error names position %v", impl, tt.text, tt.pos, tt.enc, re.Pos)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("%s: OffsetOf(%q, %v, %v) = %d, %v; want %d", impl, tt.text, tt.pos, tt.enc, got, err, tt.want)
			}
		}
		got, err := OffsetOf(tt.text, tt.pos, tt.enc)
		check("string", got, err)
		for name, r := range ropes {
			got, err := r.offsetOf(tt.pos, tt.enc)
			check(name+" rope", got, err)
		}
	}
}

func TestPositionOf(t *testing.T) {
	tests := []struct {
		text string
		off  int
		enc  Encoding
		want Position
	}{
		{"ab\ncd", 4, UTF16, Position{1, 1}},
		{"ab\r\ncd", 2, UTF16, Position{0, 2}},
		{"ab\r\ncd", 3, UTF16, Position{0, 2}}, // inside the break
		{"ab\r\ncd", 4, UTF8, Position{1, 0}},
		{"ab\rcd", 3, UTF8, Position{1, 0}},
		{"a\r", 2, UTF8, Position{1, 0}},
		{"a😀b", 5, UTF16, Position{0, 3}},
		{"a😀b", 5, UTF8, Position{0, 5}},
		{"a😀b", 3, UTF16, Position{0, 1}}, // inside the emoji
		{"a😀b", 3, UTF8, Position{0, 1}},
		{"中文\n字", 6, UTF16, Position{0, 2}},
		{"中文\n字", 10, UTF16, Position{1, 1}},
		{"中文\n字", 8, UTF8, Position{1, 0}},
		{"e\u0301x", 3, UTF16, Position{0, 2}},
		{"abc", -4, UTF16, Position{0, 0}},
		{"abc\n", 99, UTF16, Position{1, 0}},
		{"", 0, UTF8, Position{0, 0}},
	}
	for _, tt := range tests {
		if got := PositionOf(tt.text, tt.off, tt.enc); got != tt.want {
			t.Errorf("PositionOf(%q, %d, %v) = %v, want %v", tt.text, tt.off, tt.enc, got, tt.want)
		}
		for _, r := range []rope{newRope(tt.text), newShapedRope(tt.text, tinyShape)} {
			if got := r.positionOf(tt.off, tt.enc); got != tt.want {
				t.Errorf("rope positionOf(%q, %d, %v) = %v, want %v", tt.text, tt.off, tt.enc, got, tt.want)
			}
		}
	}
}

// TestConversionsMatchModel compares every conversion, over every position
// near the text, with the reference model, and checks the round trips.
func TestConversionsMatchModel(t *testing.T) {
	texts := append([]string{strings.Repeat("x😀\r\n中e\u0301\r", 300)}, trickyDocTexts...)
	for _, text := range texts {
		d := newRefDoc(text)
		ropes := []rope{newRope(text), newShapedRope(text, tinyShape)}
		for _, enc := range posEncodings {
			for line := -1; line <= len(d.lines); line++ {
				maxCh := 2
				if line >= 0 && line < len(d.lines) {
					maxCh += d.lineLen(line, enc)
				}
				for ch := -1; ch <= maxCh; ch++ {
					pos := Position{line, ch}
					want, ok := d.offset(pos, enc)
					got, err := OffsetOf(text, pos, enc)
					if ok != (err == nil) || (ok && got != want) {
						t.Fatalf("OffsetOf(%q, %v, %v) = %d, %v; model says %d, %v", text, pos, enc, got, err, want, ok)
					}
					for _, r := range ropes {
						got, err := r.offsetOf(pos, enc)
						if ok != (err == nil) || (ok && got != want) {
							t.Fatalf("rope offsetOf(%q, %v, %v) = %d, %v; model says %d, %v", text, pos, enc, got, err, want, ok)
						}
					}
					if ok {
						if back := PositionOf(text, want, enc); back != pos {
							t.Fatalf("PositionOf(%q, OffsetOf(%v) = %d, %v) = %v", text, pos, want, enc, back)
						}
					}
				}
			}
			for off := -1; off <= len(text)+1; off++ {
				want := d.position(off, enc)
				if got := PositionOf(text, off, enc); got != want {
					t.Fatalf("PositionOf(%q, %d, %v) = %v, model says %v", text, off, enc, got, want)
				}
				for _, r := range ropes {
					if got := r.positionOf(off, enc); got != want {
						t.Fatalf("rope positionOf(%q, %d, %v) = %v, model says %v", text, off, enc, got, want)
					}
				}
				back, err := OffsetOf(text, want, enc)
				if err != nil || back > max(off, 0) {
					t.Fatalf("OffsetOf(%q, PositionOf(%d) = %v, %v) = %d, %v", text, off, want, enc, back, err)
				}
			}
		}
		for _, r := range ropes {
			checkRope(t, r, text)
		}
	}
}

// TestRoundTripEveryOffset: an offset that starts a character and is not
// inside a line break survives PositionOf then OffsetOf, in both posEncodings.
func TestRoundTripEveryOffset(t *testing.T) {
	for _, text := range trickyDocTexts {
		for off := 0; off <= len(text); off++ {
			if !refIsCodePointBound(text, off) || (off > 0 && off < len(text) && text[off-1] == '\r' && text[off] == '\n') {
				continue
			}
			for _, enc := range posEncodings {
				pos := PositionOf(text, off, enc)
				back, err := OffsetOf(text, pos, enc)
				if err != nil || back != off {
					t.Errorf("OffsetOf(%q, PositionOf(%d) = %v, %v) = %d, %v", text, off, pos, enc, back, err)
				}
			}
		}
	}
}

func refIsCodePointBound(text string, off int) bool {
	for i := range text {
		if i == off {
			return true
		}
	}
	return off == len(text)
}

func TestRopeBuildsBalancedTree(t *testing.T) {
	var sb strings.Builder
	for i := 0; sb.Len() < 300_000; i++ {
		sb.WriteString("func f() { return \"中文😀\" }\r\n\r")
	}
	text := sb.String()
	r := newRope(text)
	checkRope(t, r, text)
	leaves := (len(text) + defaultRopeShape.buildLeaf - 1) / defaultRopeShape.buildLeaf
	if r.root.height > 3 {
		t.Errorf("a rope of %d leaves has height %d", leaves, r.root.height)
	}
}

// TestRopeLineBreaksAcrossLeaves puts leaf boundaries right at the spots
// where an edit joins or separates the two bytes of "\r\n".
func TestRopeLineBreaksAcrossLeaves(t *testing.T) {
	tests := []struct {
		name   string
		pieces []string
		change Change
		want   string
	}{
		{"insert LF after a CR ending a leaf", []string{"aaaa\r", "bbbb"}, Change{&Range{Position{1, 0}, Position{1, 0}}, "\n"}, "aaaa\r\nbbbb"},
		{"delete a leaf between CR and LF", []string{"aaaa\r", "X", "\nbbbb"}, Change{&Range{Position{1, 0}, Position{1, 1}}, ""}, "aaaa\r\nbbbb"},
		{"delete across leaves up to an LF", []string{"aa", "aa\r", "XX", "X", "\nb"}, Change{&Range{Position{1, 0}, Position{1, 3}}, ""}, "aaaa\r\nb"},
		{"insert CR before an LF starting a leaf", []string{"ab", "\ncd"}, Change{&Range{Position{0, 2}, Position{0, 2}}, "\r"}, "ab\r\ncd"},
		{"insert LF at the end after a lone CR", []string{"ab", "\r"}, Change{&Range{Position{1, 0}, Position{1, 0}}, "\n"}, "ab\r\n"},
		{"delete a CRLF", []string{"a", "b\r\n", "cd"}, Change{&Range{Position{0, 2}, Position{1, 0}}, ""}, "abcd"},
		{"split a CRLF by replacing the line end", []string{"ab\r\n", "cd"}, Change{&Range{Position{0, 1}, Position{1, 0}}, "\r\r"}, "a\r\rcd"},
		{"insert between halves of an emoji pair", []string{"a", "😀", "b"}, Change{&Range{Position{0, 3}, Position{0, 3}}, "\r"}, "a😀\rb"},
		{"join invalid bytes into a character", []string{"x\xe4", "y", "\xadz"}, Change{&Range{Position{0, 2}, Position{0, 3}}, "\xb8"}, "x中z"},
		{"complete a character with leaves before", []string{"x", "\xe4", "\xb8", "y"}, Change{&Range{Position{0, 3}, Position{0, 3}}, "\xad"}, "x中y"},
		{"complete a character with leaves after", []string{"a", "\xb8", "\xad", "z"}, Change{&Range{Position{0, 1}, Position{0, 1}}, "\xe4"}, "a中z"},
		{"complete an emoji two leaves back", []string{"a", "\xf0", "\x9f\x98", "b"}, Change{&Range{Position{0, 4}, Position{0, 4}}, "\x80"}, "a😀b"},
		{"complete an emoji with leaves after", []string{"a", "\x9f", "\x98", "\x80", "z"}, Change{&Range{Position{0, 0}, Position{0, 1}}, "\xf0"}, "😀z"},
	}
	for _, tt := range tests {
		for _, enc := range posEncodings {
			r := ropeFromPieces(tinyShape, tt.pieces...)
			text := strings.Join(tt.pieces, "")
			checkRope(t, r, text)
			d := newRefDoc(text)
			// The test positions are written in UTF-16; convert them for UTF-8.
			c := tt.change
			rg := *c.Range
			s, _ := d.offset(rg.Start, UTF16)
			e, _ := d.offset(rg.End, UTF16)
			rg.Start, rg.End = d.position(s, enc), d.position(e, enc)
			c.Range = &rg
			got, i, err := r.apply([]Change{c}, enc)
			if err != nil {
				t.Errorf("%s (%v): change %d: %v", tt.name, enc, i, err)
				continue
			}
			checkRope(t, got, tt.want)
			// The old rope is untouched.
			checkRope(t, r, text)
		}
	}
}

// TestRopeRandomEdits drives ropes of tiny and default shape with random
// batches and checks their structure and text after each.
func TestRopeRandomEdits(t *testing.T) {
	for _, enc := range posEncodings {
		for _, shape := range []*ropeShape{tinyShape, nil} {
			rng := rand.New(rand.NewPCG(7, uint64(enc)))
			pieces := slices.Concat(docTextPieces, brokenTextPieces)
			text := randomDocTextFrom(rng, 200, pieces)
			if shape == nil {
				text = strings.Repeat(text, 40)
			}
			r, d := newShapedRope(text, shape), newRefDoc(text)
			for step := 0; step < 600; step++ {
				batch := randomDocBatch(rng, d, enc, pieces)
				next, i, err := r.apply(batch, enc)
				want, ok := d.apply(batch, enc)
				if ok != (err == nil) {
					t.Fatalf("step %d, %v: batch %v on %q: error %v (change %d), model ok %v", step, enc, batch, d.text, err, i, ok)
				}
				if ok {
					r, d = next, want
				}
				checkRope(t, r, d.text)
			}
		}
	}
}

// TestRopeStaysShallow deletes most of a deep rope piece by piece; merging
// the nodes that deletions empty keeps its height in line with its size.
func TestRopeStaysShallow(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	text := randomDocTextFrom(rng, 3000, []string{"abc", "中", "\r\n", "😀"})
	r, d := newShapedRope(text, tinyShape), newRefDoc(text)
	for len(d.text) > 200 {
		a := rng.IntN(len(d.bounds) - 1)
		b := min(a+rng.IntN(40), len(d.bounds)-1)
		ps, pe := d.position(d.bounds[a], UTF16), d.position(d.bounds[b], UTF16)
		batch := []Change{{Range: &Range{ps, pe}}}
		next, _, err := r.apply(batch, UTF16)
		if err != nil {
			t.Fatal(err)
		}
		r, d = next, mustModel(d.apply(batch, UTF16))
	}
	checkRope(t, r, d.text)
	leaves := 0
	var count func(n *ropeNode)
	count = func(n *ropeNode) {
		if n.height == 0 {
			leaves++
		}
		for _, k := range n.kids {
			count(k)
		}
	}
	count(r.root)
	// A B-tree whose inner nodes have at least two children is at most
	// log2(leaves) high; allow one level for the runts an edit may leave.
	if limit := 1 + bits.Len(uint(leaves)); r.root.height > limit {
		t.Errorf("rope of %d leaves is %d high, limit %d", leaves, r.root.height, limit)
	}
}

func mustModel(d *refDoc, ok bool) *refDoc {
	if !ok {
		panic("model rejected a batch built from its own positions")
	}
	return d
}

// docTextPieces are the bits random texts are made of.
var docTextPieces = []string{
	"a", "xyz", "func f() {", "\t", " ", "\n", "\r\n", "\r", "\r\n\r\n",
	"é", "e\u0301", "中文", "漢", "😀", "👍🏽", "\U0001F9D1\u200D\U0001F4BB",
}

// brokenTextPieces are fragments of UTF-8 sequences. Editors never send
// them, but a rope must keep its invariants when edits join them into
// characters or split them apart.
var brokenTextPieces = []string{"\xe4", "\xb8", "\xad", "\xf0\x9f", "\x98\x80", "\xff"}

func randomDocText(rng *rand.Rand, pieces int) string {
	return randomDocTextFrom(rng, pieces, docTextPieces)
}

func randomDocTextFrom(rng *rand.Rand, pieces int, from []string) string {
	var sb strings.Builder
	for range pieces {
		sb.WriteString(from[rng.IntN(len(from))])
	}
	return sb.String()
}

// randomDocPosition picks a position in d, or, with probability bad, one that
// is not: past a line's end, past the last line, inside a character.
func randomDocPosition(rng *rand.Rand, d *refDoc, enc Encoding, bad float64) Position {
	if rng.Float64() < bad {
		line := rng.IntN(len(d.lines))
		switch rng.IntN(3) {
		case 0:
			return Position{line, d.lineLen(line, enc) + 1 + rng.IntN(3)}
		case 1:
			return Position{len(d.lines) + rng.IntN(2), 0}
		default:
			// Any character count; the model says whether it fits.
			return Position{line, rng.IntN(d.lineLen(line, enc) + 2)}
		}
	}
	ps := d.validPositions(enc)
	return ps[rng.IntN(len(ps))]
}

// randomDocBatch makes one to three changes: mostly edits of a few characters,
// some deletions across lines, rarely a full-text change, and now and then a
// change that does not fit.
func randomDocBatch(rng *rand.Rand, d *refDoc, enc Encoding, pieces []string) []Change {
	n := 1
	if rng.IntN(4) == 0 {
		n += rng.IntN(3)
	}
	var batch []Change
	cur := d
	for range n {
		if rng.IntN(50) == 0 {
			c := Change{Text: randomDocTextFrom(rng, rng.IntN(40), pieces)}
			batch = append(batch, c)
			cur, _ = cur.apply([]Change{c}, enc)
			continue
		}
		bad := 0.0
		if rng.IntN(10) == 0 {
			bad = 0.5
		}
		a := randomDocPosition(rng, cur, enc, bad)
		b := a
		if rng.IntN(2) == 0 {
			b = randomDocPosition(rng, cur, enc, bad)
		}
		ao, _ := cur.offset(a, enc)
		bo, _ := cur.offset(b, enc)
		if bo < ao && rng.IntN(10) != 0 {
			a, b = b, a
		}
		var ins string
		if rng.IntN(3) != 0 {
			ins = randomDocTextFrom(rng, rng.IntN(4), pieces)
		}
		c := Change{Range: &Range{a, b}, Text: ins}
		batch = append(batch, c)
		if next, ok := cur.apply([]Change{c}, enc); ok {
			cur = next
		}
	}
	return batch
}
