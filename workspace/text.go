package workspace

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Encoding is the unit that a position's character offset counts. LSP
// clients negotiate it at initialize; inside qwen-ls offsets are bytes.
type Encoding int

const (
	// UTF16 counts UTF-16 code units (the LSP default).
	UTF16 Encoding = iota
	// UTF8 counts bytes.
	UTF8
)

func (e Encoding) String() string {
	if e == UTF8 {
		return "utf-8"
	}
	return "utf-16"
}

// Position is a zero-based line and a character offset on that line, counted
// in some Encoding.
//
// Lines end at "\n", "\r\n" or a lone "\r" (LSP 3.17 counts all three as line
// breaks). The character offset counts within the line and never includes
// the break, so no position points between the "\r" and "\n" of a pair.
// Characters are code points: a combining mark is a character of its own, an
// astral-plane character (most emoji) is two UTF-16 units and four bytes, and
// each byte of invalid UTF-8 counts as one U+FFFD.
type Position struct {
	Line      int
	Character int
}

// Range is a half-open span between two positions.
type Range struct {
	Start, End Position
}

// Change is one content change of a buffer. A nil Range replaces the whole
// text (an LSP full-text change); otherwise Text replaces Range.
type Change struct {
	Range *Range
	Text  string
}

// rangeError reports a position that lies outside the text. The buffer is
// left untouched when one is returned.
type rangeError struct {
	Pos    Position
	Reason string
}

func (e *rangeError) Error() string {
	return fmt.Sprintf("position %d:%d is out of range: %s", e.Pos.Line, e.Pos.Character, e.Reason)
}

// OffsetOf converts pos, counted in enc, to a byte offset in text. Lines and
// characters count as Position describes.
//
// LSP asks a server to treat a character offset past the end of its line as
// the end of the line. qwen-ls deliberately rejects it instead: such a
// position means the client and the server disagree about the text, and
// guessing would silently corrupt the buffer, whereas an error makes the
// client resynchronise. For the same reason a position inside a character
// (the middle of a surrogate pair under UTF-16, or of a multi-byte sequence
// under UTF-8) is an error.
func OffsetOf(text string, pos Position, enc Encoding) (int, error) {
	if pos.Line < 0 || pos.Character < 0 {
		return 0, negativeError(pos)
	}
	start := 0
	for l := 0; l < pos.Line; l++ {
		i, n := nextLineBreak(text[start:])
		if i < 0 {
			return 0, tooFewLinesError(pos, l+1)
		}
		start += i + n
	}
	end := len(text)
	if i, _ := nextLineBreak(text[start:]); i >= 0 {
		end = start + i
	}
	line := text[start:end]
	if enc == UTF8 {
		if pos.Character > len(line) {
			return 0, lineTooShortError(pos, len(line), enc)
		}
		if !isCodePointStart(line, pos.Character) {
			return 0, insideCharError(pos, enc)
		}
		return start + pos.Character, nil
	}
	units, i := 0, 0
	for units < pos.Character && i < len(line) {
		u, w := decodeUTF16Units(line[i:])
		units += u
		i += w
	}
	switch {
	case units == pos.Character:
		return start + i, nil
	case units > pos.Character:
		return 0, insideCharError(pos, enc)
	default:
		return 0, lineTooShortError(pos, units, enc)
	}
}

// PositionOf converts a byte offset in text to a position counted in enc.
// Offsets outside the text are clamped to it. An offset that falls inside a
// character, or between the "\r" and "\n" of a line break, is moved back to
// where that character or break begins, so the result is always a position
// OffsetOf accepts.
func PositionOf(text string, off int, enc Encoding) Position {
	off = max(0, min(off, len(text)))
	for off > 0 && !isCodePointStart(text, off) {
		off--
	}
	if off > 0 && off < len(text) && text[off-1] == '\r' && text[off] == '\n' {
		off--
	}
	line, start := 0, 0
	for {
		// After the adjustment above a "\r" at off-1 is a lone one, so
		// cutting the text at off cannot split a pair.
		i, n := nextLineBreak(text[start:off])
		if i < 0 {
			break
		}
		start += i + n
		line++
	}
	if enc == UTF8 {
		return Position{Line: line, Character: off - start}
	}
	return Position{Line: line, Character: countUnits(text[start:off])}
}

// nextLineBreak finds the first line break in s: its index and its length
// (2 for "\r\n", else 1), or -1 and 0.
func nextLineBreak(s string) (i, n int) {
	i = strings.IndexAny(s, "\r\n")
	if i < 0 {
		return -1, 0
	}
	if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
		return i, 2
	}
	return i, 1
}

// isCodePointStart reports whether byte offset p of s is a boundary
// between code points as a left-to-right decode of s sees them (invalid
// bytes are one code point each). It only looks at the few bytes around p:
// a valid sequence's lead byte never lies inside another valid sequence, so
// the nearest lead byte before p decides.
func isCodePointStart(s string, p int) bool {
	if p <= 0 || p >= len(s) || utf8.RuneStart(s[p]) {
		return true
	}
	for k := 1; k <= utf8.UTFMax-1 && p-k >= 0; k++ {
		if utf8.RuneStart(s[p-k]) {
			_, w := utf8.DecodeRuneInString(s[p-k:])
			return w <= k
		}
	}
	return true
}

// decodeUTF16Units decodes the code point at the start of s and returns
// its length in UTF-16 units and in bytes.
func decodeUTF16Units(s string) (units, width int) {
	if s[0] < utf8.RuneSelf {
		return 1, 1
	}
	_, w := utf8.DecodeRuneInString(s)
	if w == 4 {
		// Every valid four-byte sequence is outside the BMP.
		return 2, 4
	}
	return 1, w
}

// textMetrics summarises a stretch of text: its length in bytes, in UTF-16
// units, and the number of line breaks it holds.
type textMetrics struct {
	bytes, units, breaks int
}

func (m *textMetrics) add(o textMetrics) {
	m.bytes += o.bytes
	m.units += o.units
	m.breaks += o.breaks
}

func (m *textMetrics) sub(o textMetrics) {
	m.bytes -= o.bytes
	m.units -= o.units
	m.breaks -= o.breaks
}

// measureText computes the metrics of s. A "\r" at the very end of s
// counts as a lone line break: callers never measure a stretch that ends
// between the two bytes of a "\r\n".
func measureText(s string) textMetrics {
	m := textMetrics{bytes: len(s), units: countUnits(s), breaks: strings.Count(s, "\n")}
	if cr := strings.Count(s, "\r"); cr > 0 {
		m.breaks += cr - strings.Count(s, "\r\n")
	}
	return m
}

// countUnits is the length of s in UTF-16 units.
func countUnits(s string) int {
	n, i := 0, 0
	for i < len(s) {
		// Source text is mostly ASCII: take it eight bytes at a time.
		if i+8 <= len(s) && (s[i]|s[i+1]|s[i+2]|s[i+3]|s[i+4]|s[i+5]|s[i+6]|s[i+7]) < utf8.RuneSelf {
			n += 8
			i += 8
			continue
		}
		u, w := decodeUTF16Units(s[i:])
		n += u
		i += w
	}
	return n
}

// afterLineBreak returns the offset just past the n-th (1-based) line
// break of s, which must hold at least n breaks.
func afterLineBreak(s string, n int) int {
	off := 0
	if strings.IndexByte(s, '\r') < 0 {
		// Only "\n" breaks: let IndexByte do the scanning.
		for ; n > 0; n-- {
			i := strings.IndexByte(s[off:], '\n')
			if i < 0 {
				panic("workspace: afterLineBreak: too few line breaks")
			}
			off += i + 1
		}
		return off
	}
	for ; n > 0; n-- {
		i, w := nextLineBreak(s[off:])
		if i < 0 {
			panic("workspace: afterLineBreak: too few line breaks")
		}
		off += i + w
	}
	return off
}

func negativeError(pos Position) error {
	return &rangeError{Pos: pos, Reason: "a line or character is negative"}
}

func tooFewLinesError(pos Position, lines int) error {
	if lines == 1 {
		return &rangeError{Pos: pos, Reason: "the text has only 1 line"}
	}
	return &rangeError{Pos: pos, Reason: fmt.Sprintf("the text has only %d lines", lines)}
}

func lineTooShortError(pos Position, length int, enc Encoding) error {
	unit := "UTF-16 units"
	if enc == UTF8 {
		unit = "bytes"
	}
	return &rangeError{Pos: pos, Reason: fmt.Sprintf("the character is past the end of line %d, which has %d %s", pos.Line, length, unit)}
}

func insideCharError(pos Position, enc Encoding) error {
	if enc == UTF8 {
		return &rangeError{Pos: pos, Reason: "the character offset is inside a multi-byte UTF-8 sequence"}
	}
	return &rangeError{Pos: pos, Reason: "the character offset is inside a surrogate pair"}
}
