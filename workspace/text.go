package workspace

import (
	"fmt"
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

// RangeError reports a position that lies outside the text. The buffer is
// left untouched when one is returned.
type RangeError struct {
	Pos    Position
	Reason string
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("position %d:%d is out of range: %s", e.Pos.Line, e.Pos.Character, e.Reason)
}

// OffsetOf converts pos, counted in enc, to a byte offset in text.
// A character offset past the end of its line is an error rather than being
// clamped, so that a client and server that disagree about the text notice it
// instead of silently corrupting the buffer. A position inside a character
// (the middle of a surrogate pair) is an error too.
func OffsetOf(text string, pos Position, enc Encoding) (int, error) {
	if pos.Line < 0 || pos.Character < 0 {
		return 0, &RangeError{Pos: pos, Reason: "negative"}
	}
	start := 0
	for l := 0; l < pos.Line; l++ {
		i := indexNewline(text[start:])
		if i < 0 {
			return 0, &RangeError{Pos: pos, Reason: fmt.Sprintf("the text has only %d lines", l+1)}
		}
		start += i + 1
	}
	return offsetInLine(text, start, pos, enc)
}

// offsetInLine walks the line that begins at byte lineStart.
func offsetInLine(text string, lineStart int, pos Position, enc Encoding) (int, error) {
	end := lineStart + lineLen(text[lineStart:])
	line := text[lineStart:end]
	if enc == UTF8 {
		if pos.Character > len(line) {
			return 0, &RangeError{Pos: pos, Reason: fmt.Sprintf("line %d has %d bytes", pos.Line, len(line))}
		}
		return lineStart + pos.Character, nil
	}
	units := 0
	for i, r := range line {
		if units == pos.Character {
			return lineStart + i, nil
		}
		if units > pos.Character {
			return 0, &RangeError{Pos: pos, Reason: "inside a surrogate pair"}
		}
		units += utf16Len(r)
	}
	if units == pos.Character {
		return end, nil
	}
	if units > pos.Character {
		return 0, &RangeError{Pos: pos, Reason: "inside a surrogate pair"}
	}
	return 0, &RangeError{Pos: pos, Reason: fmt.Sprintf("line %d has %d UTF-16 units", pos.Line, units)}
}

// PositionOf converts a byte offset in text to a position counted in enc.
// Offsets past the end are clamped to the end.
func PositionOf(text string, off int, enc Encoding) Position {
	if off > len(text) {
		off = len(text)
	}
	line, start := 0, 0
	for {
		i := indexNewline(text[start:])
		if i < 0 || start+i >= off {
			break
		}
		start += i + 1
		line++
	}
	seg := text[start:off]
	if enc == UTF8 {
		return Position{Line: line, Character: len(seg)}
	}
	return Position{Line: line, Character: utf16Count(seg)}
}

// lineLen is the length of the first line of s, without its line break.
// Lines end at "\n"; a "\r" before it belongs to the break, as LSP says.
func lineLen(s string) int {
	i := indexNewline(s)
	if i < 0 {
		return len(s)
	}
	if i > 0 && s[i-1] == '\r' {
		return i - 1
	}
	return i
}

func indexNewline(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return i
		}
	}
	return -1
}

func utf16Len(r rune) int {
	if r >= 0x10000 && r <= utf8.MaxRune {
		return 2
	}
	return 1
}

func utf16Count(s string) int {
	n := 0
	for _, r := range s {
		n += utf16Len(r)
	}
	return n
}
