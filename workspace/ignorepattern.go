package workspace

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ignoreRule is one pattern line of an ignore file.
type ignoreRule struct {
	negate  bool
	dirOnly bool
	// basename rules (no slash but a trailing one) match the last path
	// component at any depth; the others match the whole relative path.
	basename bool
	segs     []segment
}

type segKind uint8

const (
	segGlob    segKind = iota // general wildcard pattern for one component
	segLiteral                // plain text
	segAny                    // "*": any one component
	segSuffix                 // "*" followed by plain text
	segDeep                   // "**": any number of components
)

type segment struct {
	kind segKind
	text string // the pattern (segGlob), the text (segLiteral) or the suffix
}

// parseIgnore reads an ignore file. A UTF-8 byte order mark and CRLF line
// ends are accepted, as git does.
func parseIgnore(data []byte) []ignoreRule {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var rules []ignoreRule
	for _, line := range strings.Split(string(data), "\n") {
		if r, ok := parseRule(strings.TrimSuffix(line, "\r")); ok {
			rules = append(rules, r)
		}
	}
	return rules
}

// parseRule parses one line; ok is false for blank lines and comments.
func parseRule(line string) (r ignoreRule, ok bool) {
	if line == "" || line[0] == '#' {
		return r, false
	}
	line = trimTrailingSpaces(line)
	if line == "" {
		return r, false
	}
	if line[0] == '!' {
		r.negate = true
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = line[:len(line)-1]
	}
	// A slash at the start or in the middle anchors the pattern at the
	// ignore file's directory; without one it matches a name at any depth.
	anchored := strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	if line == "" {
		return r, false
	}
	if !anchored {
		r.basename = true
		r.segs = []segment{compileSegment(line, false)}
		return r, true
	}
	for _, s := range strings.Split(line, "/") {
		r.segs = append(r.segs, compileSegment(s, true))
	}
	return r, true
}

// trimTrailingSpaces drops unescaped trailing spaces ("a\ " keeps its
// escaped space; tabs are kept, as git keeps them).
func trimTrailingSpaces(s string) string {
	cut := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			if cut < 0 {
				cut = i
			}
		case '\\':
			i++
			cut = -1
		default:
			cut = -1
		}
	}
	if cut >= 0 {
		return s[:cut]
	}
	return s
}

func compileSegment(s string, deepAllowed bool) segment {
	if s == "**" && deepAllowed {
		return segment{kind: segDeep}
	}
	if !strings.ContainsAny(s, `*?[\`) {
		return segment{kind: segLiteral, text: s}
	}
	if s == "*" || s == "**" {
		return segment{kind: segAny}
	}
	if s[0] == '*' && !strings.ContainsAny(s[1:], `*?[\`) {
		return segment{kind: segSuffix, text: s[1:]}
	}
	return segment{kind: segGlob, text: s}
}

func (s segment) match(name string) bool {
	switch s.kind {
	case segLiteral:
		return name == s.text
	case segAny:
		return true
	case segSuffix:
		return strings.HasSuffix(name, s.text)
	case segGlob:
		return globMatch(s.text, name)
	}
	return false
}

// match tests a path relative to the ignore file's directory ("/"
// separated); base is its last component.
func (r *ignoreRule) match(rel, base string, isDir bool) bool {
	if r.dirOnly && !isDir {
		return false
	}
	if r.basename {
		return r.segs[0].match(base)
	}
	return matchSegments(r.segs, rel)
}

// matchSegments matches path components against pattern segments. "**"
// matches zero or more components, except at the end of the pattern where
// it needs at least one ("dir/**" is what is inside dir, not dir itself).
func matchSegments(segs []segment, path string) bool {
	for len(segs) > 0 {
		s := segs[0]
		if s.kind == segDeep {
			rest := segs[1:]
			if len(rest) == 0 {
				return path != ""
			}
			for {
				if matchSegments(rest, path) {
					return true
				}
				i := strings.IndexByte(path, '/')
				if i < 0 {
					return false
				}
				path = path[i+1:]
			}
		}
		comp, more, found := strings.Cut(path, "/")
		if !s.match(comp) {
			return false
		}
		segs = segs[1:]
		if !found {
			return len(segs) == 0
		}
		path = more
	}
	return false
}

// globMatch matches one path component against a wildcard pattern: "*" any
// run, "?" one character, "[...]" a set ("!" or "^" negates it, ranges,
// [:class:]), a backslash makes the next character literal. Characters are
// UTF-8 characters. A malformed pattern (an unclosed set, a trailing
// backslash) matches nothing.
func globMatch(pat, name string) bool {
	px, nx := 0, 0
	starPx, starNx := -1, -1
	for px < len(pat) || nx < len(name) {
		if px < len(pat) {
			switch c := pat[px]; c {
			case '*':
				for px < len(pat) && pat[px] == '*' {
					px++
				}
				starPx, starNx = px, nx
				continue
			case '?':
				if nx < len(name) {
					_, n := utf8.DecodeRuneInString(name[nx:])
					px++
					nx += n
					continue
				}
			case '[':
				width, ok := classWidth(pat[px:])
				if !ok {
					return false
				}
				if nx < len(name) {
					r, n := utf8.DecodeRuneInString(name[nx:])
					if matchClass(pat[px:px+width], r) {
						px += width
						nx += n
						continue
					}
				}
			case '\\':
				if px+1 >= len(pat) {
					return false
				}
				if nx < len(name) && name[nx] == pat[px+1] {
					px += 2
					nx++
					continue
				}
			default:
				if nx < len(name) && name[nx] == c {
					px++
					nx++
					continue
				}
			}
		}
		if starPx >= 0 && starNx < len(name) {
			_, n := utf8.DecodeRuneInString(name[starNx:])
			starNx += n
			px, nx = starPx, starNx
			continue
		}
		return false
	}
	return true
}

// classWidth returns the length of the set that starts pat ("[...]"), or
// ok=false when it is not closed.
func classWidth(pat string) (int, bool) {
	i := 1
	if i < len(pat) && (pat[i] == '!' || pat[i] == '^') {
		i++
	}
	first := true
	for i < len(pat) {
		switch {
		case pat[i] == ']' && !first:
			return i + 1, true
		case pat[i] == '\\':
			i += 2
		case pat[i] == '[' && i+1 < len(pat) && pat[i+1] == ':':
			end := strings.Index(pat[i+2:], ":]")
			if end < 0 {
				i++
			} else {
				i += end + 4
			}
		default:
			i++
		}
		first = false
	}
	return 0, false
}

// matchClass tests r against a whole set "[...]" (classWidth checked it).
func matchClass(set string, r rune) bool {
	body := set[1 : len(set)-1]
	negate := false
	if body != "" && (body[0] == '!' || body[0] == '^') {
		negate = true
		body = body[1:]
	}
	matched := false
	for i := 0; i < len(body); {
		if body[i] == '[' && i+1 < len(body) && body[i+1] == ':' {
			if end := strings.Index(body[i+2:], ":]"); end >= 0 {
				if posixClass(body[i+2:i+2+end], r) {
					matched = true
				}
				i += end + 4
				continue
			}
		}
		lo, n := classChar(body[i:])
		i += n
		hi := lo
		if i+1 < len(body) && body[i] == '-' {
			hi, n = classChar(body[i+1:])
			i += 1 + n
		}
		if lo <= r && r <= hi {
			matched = true
		}
	}
	return matched != negate
}

func classChar(s string) (rune, int) {
	if s[0] == '\\' && len(s) > 1 {
		r, n := utf8.DecodeRuneInString(s[1:])
		return r, n + 1
	}
	return utf8.DecodeRuneInString(s)
}

func posixClass(name string, r rune) bool {
	switch name {
	case "alnum":
		return unicode.IsLetter(r) || unicode.IsDigit(r)
	case "alpha":
		return unicode.IsLetter(r)
	case "blank":
		return r == ' ' || r == '\t'
	case "cntrl":
		return unicode.IsControl(r)
	case "digit":
		return r >= '0' && r <= '9'
	case "graph":
		return unicode.IsGraphic(r) && !unicode.IsSpace(r)
	case "lower":
		return unicode.IsLower(r)
	case "print":
		return unicode.IsPrint(r)
	case "punct":
		return unicode.IsPunct(r) || unicode.IsSymbol(r)
	case "space":
		return unicode.IsSpace(r)
	case "upper":
		return unicode.IsUpper(r)
	case "xdigit":
		return strings.ContainsRune("0123456789abcdefABCDEF", r)
	}
	return false
}
