package rpc

import (
	"bytes"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// unquoteString decodes raw, a valid JSON string with its quotes, into a
// string allocated once at its exact size. It decodes as go.lsp.dev/protocol
// does: an unpaired surrogate escape, and each byte of invalid UTF-8,
// become U+FFFD. The protocol package builds a string with escapes by
// appending to a slice that starts at 32 bytes and then copying it out:
// for a document of 50 MB, about five times its size allocated and twice
// its size live at once. This measures first and writes once.
func unquoteString(raw []byte) string {
	s := raw[1 : len(raw)-1]
	var sb strings.Builder
	sb.Grow(unquote(nil, s))
	unquote(&sb, s)
	return sb.String()
}

// unquote writes the decoded text of s (a valid JSON string's inside) to
// sb and returns its length; with sb nil it only measures.
func unquote(sb *strings.Builder, s []byte) int {
	n := 0
	for len(s) > 0 {
		j := bytes.IndexByte(s, '\\')
		if j < 0 {
			j = len(s)
		}
		n += copyText(sb, s[:j])
		s = s[j:]
		if len(s) == 0 {
			break
		}
		// s[0] is a backslash; the validator checked what follows.
		var c byte
		switch s[1] {
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		case 'u':
			r := rune(hex4(s[2:6]))
			s = s[6:]
			if utf16.IsSurrogate(r) {
				second := r
				r = utf8.RuneError
				if len(s) >= 6 && s[0] == '\\' && s[1] == 'u' {
					if d := utf16.DecodeRune(second, rune(hex4(s[2:6]))); d != utf8.RuneError {
						r = d
						s = s[6:]
					}
				}
			}
			if sb != nil {
				sb.WriteRune(r)
			}
			n += utf8.RuneLen(r)
			continue
		default: // '"', '\\', '/'
			c = s[1]
		}
		s = s[2:]
		if sb != nil {
			sb.WriteByte(c)
		}
		n++
	}
	return n
}

// copyText writes p, which holds no escapes, with each byte of invalid
// UTF-8 replaced by U+FFFD, and returns the length written.
func copyText(sb *strings.Builder, p []byte) int {
	if utf8.Valid(p) {
		if sb != nil {
			sb.Write(p)
		}
		return len(p)
	}
	n := 0
	for len(p) > 0 {
		r, w := utf8.DecodeRune(p)
		if r == utf8.RuneError && w == 1 {
			if sb != nil {
				sb.WriteString("\uFFFD")
			}
			n += 3
		} else {
			if sb != nil {
				sb.Write(p[:w])
			}
			n += w
		}
		p = p[w:]
	}
	return n
}

func hex4(b []byte) uint16 {
	var v uint16
	for _, c := range b[:4] {
		switch {
		case c <= '9':
			v = v<<4 | uint16(c-'0')
		case c >= 'a':
			v = v<<4 | uint16(c-'a'+10)
		default:
			v = v<<4 | uint16(c-'A'+10)
		}
	}
	return v
}
