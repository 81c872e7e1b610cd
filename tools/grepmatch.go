package tools

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The matcher of grep_search: the pattern compiled as RE2, and the literal
// prefilter taken from the parsed pattern that skips files and lines that
// cannot match before the regexp runs.

// grepLookaroundHint is added to the message of a pattern that fails to
// compile and looks like it uses what RE2 lacks.
const grepLookaroundHint = " Lookahead, lookbehind and backreferences are not supported (Go RE2 syntax); rewrite the pattern without them."

// compileGrepPattern compiles pattern as RE2 behind (?i) and prepares its
// literal prefilter.
func compileGrepPattern(pattern string) (*grepMatcher, *ToolError) {
	// Parsing the pattern on its own gives the compiler's message without
	// the (?i) we add.
	parsed, err := syntax.Parse(pattern, syntax.Perl|syntax.FoldCase)
	if err != nil {
		msg := `"` + pattern + `" is not a valid regular expression (` + err.Error() + `).`
		if grepUsesLookaround(pattern) {
			msg += grepLookaroundHint
		}
		return nil, InvalidParams(msg)
	}
	re, err := regexp.Compile("(?i)" + pattern)
	if err != nil {
		return nil, InvalidParams(`"` + pattern + `" is not a valid regular expression (` + err.Error() + `).`)
	}
	return newGrepMatcher(re, parsed.Simplify()), nil
}

// grepUsesLookaround reports whether a pattern holds the Perl constructs that
// RE2 refuses: lookaround groups and backreferences \1 to \9.
func grepUsesLookaround(p string) bool {
	for _, s := range []string{"(?=", "(?!", "(?<=", "(?<!"} {
		if strings.Contains(p, s) {
			return true
		}
	}
	for i := 0; i+1 < len(p); i++ {
		if p[i] == '\\' {
			if p[i+1] >= '1' && p[i+1] <= '9' {
				return true
			}
			i++ // an escaped backslash does not start a backreference
		}
	}
	return false
}

// grepMatcher finds the matching lines of a text.
type grepMatcher struct {
	re *regexp.Regexp
	// lit is a literal that every match contains, or nil when the
	// pattern has none that is safe to scan for; others are the rest of
	// them, checked on a candidate line before the regexp runs.
	lit    *grepLit
	others []*grepLit
	// whole says the pattern is lit and nothing more, so a line that
	// holds lit matches without running the regexp.
	whole bool
}

func newGrepMatcher(re *regexp.Regexp, parsed *syntax.Regexp) *grepMatcher {
	m := &grepMatcher{re: re}
	var lits []*grepLit
	grepCollectLiterals(parsed, &lits)
	if len(lits) == 0 {
		return m
	}
	best := 0
	for i, l := range lits {
		if len(l.text) > len(lits[best].text) ||
			(len(l.text) == len(lits[best].text) && l.freq() < lits[best].freq()) {
			best = i
		}
	}
	m.lit = lits[best]
	m.others = append(lits[:best:best], lits[best+1:]...)
	for parsed.Op == syntax.OpCapture {
		parsed = parsed.Sub[0]
	}
	m.whole = parsed.Op == syntax.OpLiteral && len(lits) == 1 && len(m.lit.text) == len(parsed.Rune)
	return m
}

// grepCollectLiterals appends the literals that every match of re contains.
// Only what is certain counts: alternations, optional and starred parts
// give nothing.
func grepCollectLiterals(re *syntax.Regexp, out *[]*grepLit) {
	switch re.Op {
	case syntax.OpLiteral:
		grepAddLiteral(re.Rune, re.Flags&syntax.FoldCase != 0, out)
	case syntax.OpCapture, syntax.OpPlus:
		grepCollectLiterals(re.Sub[0], out)
	case syntax.OpRepeat:
		if re.Min >= 1 {
			grepCollectLiterals(re.Sub[0], out)
		}
	case syntax.OpConcat:
		// Neighbouring literals (including captured ones) join into one.
		var run []rune
		fold := false
		for _, sub := range grepFlatConcat(re.Sub, nil) {
			lit := sub
			for lit.Op == syntax.OpCapture {
				lit = lit.Sub[0]
			}
			if lit.Op == syntax.OpLiteral {
				run = append(run, lit.Rune...)
				fold = fold || lit.Flags&syntax.FoldCase != 0
				continue
			}
			grepAddLiteral(run, fold, out)
			run, fold = nil, false
			grepCollectLiterals(sub, out)
		}
		grepAddLiteral(run, fold, out)
	}
}

// grepFlatConcat appends subs to out with nested concatenations (which
// Simplify makes of counted repeats such as a{3}) spliced in.
func grepFlatConcat(subs []*syntax.Regexp, out []*syntax.Regexp) []*syntax.Regexp {
	for _, s := range subs {
		if s.Op == syntax.OpConcat {
			out = grepFlatConcat(s.Sub, out)
		} else {
			out = append(out, s)
		}
	}
	return out
}

// grepAddLiteral appends the usable pieces of a literal: runs of ASCII that
// a case-insensitive byte comparison finds exactly where the regexp would.
// A non-ASCII rune, a line break, or (when folding) a letter that folds to
// a non-ASCII rune (k to the Kelvin sign, s to the long s) ends a piece.
func grepAddLiteral(runes []rune, fold bool, out *[]*grepLit) {
	var piece []byte
	flush := func() {
		if len(piece) > 0 {
			*out = append(*out, newGrepLit(piece, fold))
			piece = nil
		}
	}
	for _, r := range runes {
		if r >= utf8.RuneSelf || r == '\n' || r == '\r' || (fold && grepFoldsOutOfASCII[r]) {
			flush()
			continue
		}
		piece = append(piece, byte(r))
	}
	flush()
}

// grepFoldsOutOfASCII marks the ASCII runes whose case-fold orbit holds a
// non-ASCII rune.
var grepFoldsOutOfASCII = func() (t [utf8.RuneSelf]bool) {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f >= utf8.RuneSelf {
				t[r] = true
			}
		}
	}
	return t
}()

// grepLit is a literal to scan for. Letters compared without case are
// lower-cased in text and have 0x20 in mask: a byte c matches text[j]
// when c|mask[j] == text[j], which for a letter accepts exactly its two
// cases.
type grepLit struct {
	text []byte
	mask []byte
	// rare is the offset of the byte the scan looks for, chosen as the
	// least frequent in source text; b1 and b2 are its two cases (equal
	// when it has one).
	rare   int
	b1, b2 byte
}

func newGrepLit(piece []byte, fold bool) *grepLit {
	l := &grepLit{text: make([]byte, len(piece)), mask: make([]byte, len(piece))}
	for j, c := range piece {
		if fold && grepIsLetter(c) {
			c |= 0x20
			l.mask[j] = 0x20
		}
		l.text[j] = c
	}
	for j := range l.text {
		if grepByteFreq(l.text[j], l.mask[j]) < grepByteFreq(l.text[l.rare], l.mask[l.rare]) {
			l.rare = j
		}
	}
	l.b1, l.b2 = l.text[l.rare], l.text[l.rare]
	if l.mask[l.rare] != 0 {
		l.b2 = l.b1 &^ 0x20
	}
	return l
}

func grepIsLetter(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }

// freq is the frequency of the literal's rarest byte.
func (l *grepLit) freq() int { return grepByteFreq(l.text[l.rare], l.mask[l.rare]) }

// grepByteFreq is a rough frequency of a byte (both cases with a fold mask)
// in source code.
func grepByteFreq(c, mask byte) int {
	if mask != 0 {
		return grepByteFreqs[c|0x20] + grepByteFreqs[c&^0x20]
	}
	return grepByteFreqs[c]
}

// grepByteFreqs is how often each byte occurs in source text, in units of
// 1/10000, as counted over the Go distribution's sources (Go, assembly,
// C, JavaScript, HTML, Markdown). Unlisted bytes count as rarest.
var grepByteFreqs = [256]int{
	' ': 1458, 'e': 500, 't': 410, '\t': 386, 'r': 333, '0': 332, 'n': 318, '\n': 308,
	'a': 297, 'i': 283, 's': 265, 'o': 256, ',': 239, 'x': 213, 'l': 183, 'c': 180,
	'f': 163, 'd': 157, 'u': 153, '1': 135, '.': 130, 'p': 127, '/': 120, '(': 117,
	')': 117, 'm': 106, '2': 104, ':': 100, 'g': 98, 'h': 91, '"': 86, '=': 86, 'b': 80,
	'4': 78, 'S': 77, '_': 75, '3': 73, '6': 70, 'T': 68, 'A': 66, 'E': 66, '{': 65,
	'y': 65, '}': 65, 'R': 64, 'v': 63, '8': 60, 'O': 53, 'C': 53, 'I': 53, '\\': 52,
	'P': 47, '5': 47, 'D': 46, '9': 42, 'M': 41, '7': 40, 'k': 40, 'X': 39, 'L': 38,
	'w': 37, 'F': 36, 'V': 36, 'N': 35, 'B': 33, '[': 25, '-': 25, ']': 25, 'U': 21,
	'*': 20, 'G': 19, 'H': 17, ';': 14, '!': 13, 'W': 12, '+': 12, 'Y': 11, '&': 11,
	'\'': 10, '<': 10, 'z': 10, 'K': 9, '|': 9, '%': 9, 'Q': 8, '>': 8, 'q': 7, 'j': 6,
	'$': 6, 'Z': 5, '`': 5, '#': 3, 'J': 2, '^': 1, '?': 1, '@': 1,
}

// grepCursor remembers where the next occurrences of a literal's rare byte
// (in each case) lie in one text, so that a scan moving forward looks at
// every byte of the text at most once per case. -1 means not looked yet.
type grepCursor struct{ c1, c2 int }

// index returns the offset of the first occurrence of l in data at or
// after from, or -1. Calls on one text must use one cursor and a from that
// never decreases.
func (l *grepLit) index(data []byte, from int, cur *grepCursor) int {
	n := len(l.text)
	for {
		lo := from + l.rare
		if from+n > len(data) {
			return -1
		}
		if cur.c1 < lo {
			cur.c1 = grepIndexByteFrom(data, lo, l.b1)
		}
		p := cur.c1
		if l.b2 != l.b1 {
			if cur.c2 < lo {
				cur.c2 = grepIndexByteFrom(data, lo, l.b2)
			}
			p = min(p, cur.c2)
		}
		start := p - l.rare
		if start+n > len(data) {
			return -1
		}
		if l.at(data[start : start+n]) {
			return start
		}
		from = start + 1
	}
}

// grepIndexByteFrom is the offset of the first c in data at or after from, or
// len(data) when there is none.
func grepIndexByteFrom(data []byte, from int, c byte) int {
	i := bytes.IndexByte(data[from:], c)
	if i < 0 {
		return len(data)
	}
	return from + i
}

// at reports whether s (as long as the literal) is the literal.
func (l *grepLit) at(s []byte) bool {
	for j, c := range l.text {
		if s[j]|l.mask[j] != c {
			return false
		}
	}
	return true
}

// scan calls hit with the 1-based number and the text (without its line
// break and trailing \r) of every matching line of data, in order.
func (m *grepMatcher) scan(data []byte, hit func(n int, line []byte)) {
	if m.lit == nil {
		n := 0
		for start := 0; start < len(data); {
			end, next := len(data), len(data)
			if i := bytes.IndexByte(data[start:], '\n'); i >= 0 {
				end, next = start+i, start+i+1
			}
			n++
			if line := grepTrimCR(data[start:end]); m.re.Match(line) {
				hit(n, line)
			}
			start = next
		}
		return
	}
	cur := grepCursor{-1, -1}
	n, counted := 1, 0
	for pos := 0; pos < len(data); {
		i := m.lit.index(data, pos, &cur)
		if i < 0 {
			return
		}
		// pos is always the start of a line.
		ls := pos + bytes.LastIndexByte(data[pos:i], '\n') + 1
		le := len(data)
		if j := bytes.IndexByte(data[i:], '\n'); j >= 0 {
			le = i + j
		}
		n += bytes.Count(data[counted:ls], []byte{'\n'})
		counted = ls
		if line := grepTrimCR(data[ls:le]); m.lineMatches(line) {
			hit(n, line)
		}
		pos = le + 1
	}
}

// lineMatches runs the rest of the test on a line known to hold lit.
func (m *grepMatcher) lineMatches(line []byte) bool {
	if m.whole {
		return true
	}
	for _, o := range m.others {
		if o.index(line, 0, &grepCursor{-1, -1}) < 0 {
			return false
		}
	}
	return m.re.Match(line)
}

func grepTrimCR(line []byte) []byte {
	if len(line) > 0 && line[len(line)-1] == '\r' {
		return line[:len(line)-1]
	}
	return line
}
