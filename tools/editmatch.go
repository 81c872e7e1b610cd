package tools

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file is the deterministic matcher of edit (tools.md §3.4, steps 3–5):
// it finds what the model's old_string stands for in the current text and
// computes the replaced text. It works on texts whose "\r\n" are already
// "\n"; edit.go restores the file's line endings afterwards. No model is
// ever consulted, so the same inputs always give the same answer.

// editSpec is one edit request as the model gave it.
type editSpec struct {
	Old, New   string
	ReplaceAll bool
	// Expected is expected_replacements; 0 when it was not given.
	Expected int
}

// matchFailure says why an edit cannot be made; each one has its own
// message in edit.go.
type matchFailure int

const (
	matchOK matchFailure = iota
	// failNoOccurrence: old_string does not occur, even after
	// normalisation.
	failNoOccurrence
	// failExpectedMismatch: the count differs from expected_replacements.
	failExpectedMismatch
	// failAmbiguous: several occurrences, and neither replace_all nor
	// expected_replacements allows changing them all.
	failAmbiguous
	// failSameStrings: the normalised old_string equals new_string.
	failSameStrings
	// failNoEffect: the replacement leaves the text as it was.
	failNoEffect
)

// editMatch is the matcher's answer.
type editMatch struct {
	// Old and New are the strings really used: Old is the slice of the
	// text that old_string stood for; New is new_string, possibly
	// without one trailing "\n" (the trailing-newline retry).
	Old, New string
	// Offsets are the byte offsets of the non-overlapping occurrences of
	// Old in the text, in order. Count is their number.
	Offsets []int
	Count   int
	// Result is the text with every occurrence replaced (when Failure is
	// matchOK).
	Result  string
	Failure matchFailure
}

// matchEdit applies spec to text, an existing file's content with "\n" line
// endings. spec.Old must not be empty: creating a file is edit.go's
// business.
func matchEdit(text string, spec editSpec) editMatch {
	old, repl := normaliseOld(text, spec.Old, spec.New)
	// A deleted line takes its line break with it, so that removing a
	// line does not leave an empty one behind.
	if repl == "" && !strings.HasSuffix(old, "\n") && strings.Contains(text, old+"\n") {
		old += "\n"
	}
	m := editMatch{Old: old, New: repl}
	m.Offsets = occurrences(text, old)
	m.Count = len(m.Offsets)
	switch {
	case m.Count == 0:
		m.Failure = failNoOccurrence
	case spec.Expected > 0 && spec.Expected != m.Count:
		m.Failure = failExpectedMismatch
	case spec.Expected == 0 && m.Count > 1 && !spec.ReplaceAll:
		m.Failure = failAmbiguous
	case old == repl:
		m.Failure = failSameStrings
	}
	if m.Failure != matchOK {
		return m
	}
	// strings.ReplaceAll inserts repl as written: "$1" and "$&" mean
	// nothing here.
	m.Result = strings.ReplaceAll(text, old, repl)
	if m.Result == text {
		m.Failure = failNoEffect
	}
	return m
}

// occurrences returns the offsets of the non-overlapping occurrences of sub
// in s, left to right (the ones strings.Count and strings.ReplaceAll see).
func occurrences(s, sub string) []int {
	var out []int
	for off := 0; off <= len(s); {
		i := strings.Index(s[off:], sub)
		if i < 0 {
			break
		}
		out = append(out, off+i)
		off += i + len(sub)
	}
	return out
}

// normaliseOld is step 3 of §3.4: when old does not occur literally, find
// the slice of text it stands for by Unicode folding, then by line
// matching. When line matching fails and old ends with "\n", it is tried
// once more without that newline (the file's last line may lack one), and
// then one trailing "\n" is dropped from repl as well: the only change ever
// made to new_string. When nothing matches, old and repl come back
// unchanged and counting finds no occurrence.
func normaliseOld(text, old, repl string) (string, string) {
	if strings.Contains(text, old) {
		return old, repl
	}
	if s, ok := foldedMatch(text, old); ok {
		return s, repl
	}
	if s, ok := lineMatch(text, old); ok {
		return s, repl
	}
	if short, ok := strings.CutSuffix(old, "\n"); ok && short != "" {
		if s, ok := lineMatch(text, short); ok {
			return s, strings.TrimSuffix(repl, "\n")
		}
	}
	return old, repl
}

// foldRune maps the typographic look-alikes of step 3(a) to their ASCII
// forms: dashes and the minus sign to '-', single quotes to an apostrophe, double
// quotes to '"', and the non-breaking and fixed-width spaces to ' '. Every
// other code point is its own fold. Each folded code point is one ASCII
// byte, which foldedMatch relies on.
func foldRune(r rune) rune {
	switch {
	case r >= 0x2010 && r <= 0x2015, r == 0x2212:
		return '-'
	case r >= 0x2018 && r <= 0x201B:
		return '\''
	case r >= 0x201C && r <= 0x201F:
		return '"'
	case r == 0x00A0, r >= 0x2002 && r <= 0x200A, r == 0x202F, r == 0x205F, r == 0x3000:
		return ' '
	}
	return r
}

// fold applies foldRune code point for code point. Bytes that are not
// valid UTF-8 are copied as they are, so the folded text lines up with the
// original one code point for code point.
func fold(s string) string {
	// Most texts hold nothing to fold: find the first code point that
	// does before building anything.
	i := 0
	for i < len(s) {
		r, w := utf8.DecodeRuneInString(s[i:])
		if w > 1 && foldRune(r) != r {
			break
		}
		i += w
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for i < len(s) {
		r, w := utf8.DecodeRuneInString(s[i:])
		if f := foldRune(r); w > 1 && f != r {
			b.WriteByte(byte(f))
		} else {
			b.WriteString(s[i : i+w])
		}
		i += w
	}
	return b.String()
}

// foldedMatch is step 3(a): if the folded old occurs in the folded text,
// the text's slice at the same code-point positions is what old stands
// for.
func foldedMatch(text, old string) (string, bool) {
	ft, fo := fold(text), fold(old)
	if ft == text && fo == old {
		return "", false // folding changed nothing, and old does not occur
	}
	i := strings.Index(ft, fo)
	if i < 0 {
		return "", false
	}
	start, end := unfoldOffset(text, i), unfoldOffset(text, i+len(fo))
	return text[start:end], true
}

// unfoldOffset maps a byte offset of fold(text) back to text. A folded code
// point is one byte standing for its whole multi-byte original; every other
// byte stands for itself.
func unfoldOffset(text string, folded int) int {
	o, f := 0, 0
	for o < len(text) && f < folded {
		r, w := utf8.DecodeRuneInString(text[o:])
		if foldRune(r) != r && w > 1 {
			o += w
			f++
			continue
		}
		if f+w > folded {
			// The offset falls inside a code point copied as it is.
			return o + folded - f
		}
		o += w
		f += w
	}
	return o
}

// lineMatch is step 3(b): the first window of whole lines of text that
// matches old line for line, where two lines match when they are equal, or
// equal once trailing whitespace is removed from both, or once both are
// also folded. Leading indentation must be the same (blank lines aside).
// When old ends with "\n", the window's last line must have a line break,
// which is part of the slice returned. An empty slice never counts.
//
// Removing trailing whitespace commutes with folding (every folded space
// is whitespace, nothing else folds to whitespace), so two lines match
// exactly when their lineKeys are equal: the search is a plain substring
// search over line ids, linear in the size of the text.
func lineMatch(text, old string) (string, bool) {
	body, endsNL := strings.CutSuffix(old, "\n")
	want := strings.Split(body, "\n")
	lines := strings.Split(text, "\n")
	last := len(lines) - len(want) // the last window start
	if endsNL {
		// The final element of lines has no "\n" after it.
		last--
	}
	if last < 0 {
		return "", false
	}
	ids := map[lineKey]int{}
	idOf := func(line string) int {
		k := keyOf(line)
		id, ok := ids[k]
		if !ok {
			id = len(ids)
			ids[k] = id
		}
		return id
	}
	pattern := make([]int, len(want))
	for i, l := range want {
		pattern[i] = idOf(l)
	}
	// Lines past the last window's end cannot take part in a match.
	lines = lines[:last+len(want)]
	seq := make([]int, len(lines))
	starts := make([]int, len(lines)+1) // starts[i] is the offset of lines[i]
	for i, l := range lines {
		seq[i] = idOf(l)
		starts[i+1] = starts[i] + len(l) + 1
	}
	for _, i := range windows(seq, pattern) {
		end := starts[i+len(want)] - 1 // the end of the window's last line
		if endsNL {
			end++
		}
		if end > starts[i] {
			return text[starts[i]:end], true
		}
	}
	return "", false
}

// lineKey is what line matching compares of a line: its indentation
// (leading spaces and tabs, none for a blank line) and the folded line
// without trailing whitespace. Both are usually substrings of the line, so
// making a key allocates nothing.
type lineKey struct {
	indent, folded string
}

func keyOf(line string) lineKey {
	trimmed := strings.TrimRightFunc(line, unicode.IsSpace)
	return lineKey{
		indent: trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, " \t"))],
		folded: fold(trimmed),
	}
}

// windows returns the start of every occurrence of pattern in seq, in
// order (Knuth–Morris–Pratt). Occurrences may overlap.
func windows(seq, pattern []int) []int {
	// fail[k] is the length of the longest proper border of pattern[:k+1].
	fail := make([]int, len(pattern))
	for k, b := 1, 0; k < len(pattern); k++ {
		for b > 0 && pattern[k] != pattern[b] {
			b = fail[b-1]
		}
		if pattern[k] == pattern[b] {
			b++
		}
		fail[k] = b
	}
	var out []int
	for i, m := 0, 0; i < len(seq); i++ {
		for m > 0 && seq[i] != pattern[m] {
			m = fail[m-1]
		}
		if seq[i] == pattern[m] {
			m++
		}
		if m == len(pattern) {
			out = append(out, i-m+1)
			m = fail[m-1]
		}
	}
	return out
}
