package tools

import (
	"strings"
	"unicode/utf8"
)

// textCleaner turns raw terminal output into plain text as it streams:
// ANSI escape sequences (CSI, OSC, DCS and other strings, two- and
// three-byte escapes) are removed, "\r\n" becomes "\n", and invalid UTF-8
// becomes U+FFFD. Sequences split across writes are handled.
type textCleaner struct {
	state   uint8
	strEsc  bool // an ESC inside an OSC or DCS string
	cr      bool // a '\r' waits to see whether '\n' follows
	partial []byte
	out     []byte
}

const (
	ansiText uint8 = iota
	ansiEsc
	ansiCSI
	ansiString
	ansiOneMore
)

// clean returns the cleaned text of p; final flushes what is held back.
// The returned slice is valid until the next call.
func (c *textCleaner) clean(p []byte, final bool) []byte {
	c.out = c.out[:0]
	for _, b := range p {
		switch c.state {
		case ansiText:
			if b == 0x1b {
				c.state = ansiEsc
				continue
			}
			c.text(b)
		case ansiEsc:
			switch {
			case b == '[':
				c.state = ansiCSI
			case b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_':
				c.state, c.strEsc = ansiString, false
			case strings.IndexByte("()*+-./#%", b) >= 0:
				c.state = ansiOneMore
			default:
				c.state = ansiText
			}
		case ansiCSI:
			switch {
			case b >= 0x40 && b <= 0x7e:
				c.state = ansiText
			case b >= 0x20 && b <= 0x3f:
			default:
				c.state = ansiText
				c.text(b)
			}
		case ansiString:
			switch {
			case b == 0x07:
				c.state = ansiText
			case c.strEsc && b == '\\':
				c.state = ansiText
			default:
				c.strEsc = b == 0x1b
			}
		case ansiOneMore:
			c.state = ansiText
		}
	}
	if final {
		if c.cr {
			c.cr = false
			c.rune('\r')
		}
		if len(c.partial) > 0 {
			c.partial = c.partial[:0]
			c.out = append(c.out, "\uFFFD"...)
		}
		c.state = ansiText
	}
	return c.out
}

// text handles one byte of text: CRLF first, then UTF-8.
func (c *textCleaner) text(b byte) {
	if c.cr {
		c.cr = false
		if b == '\n' {
			c.rune('\n')
			return
		}
		c.rune('\r')
	}
	if b == '\r' {
		c.cr = true
		return
	}
	c.rune(b)
}

// rune assembles UTF-8 sequences, replacing invalid bytes by U+FFFD.
func (c *textCleaner) rune(b byte) {
	if len(c.partial) == 0 {
		switch {
		case b < 0x80:
			c.out = append(c.out, b)
		case b >= 0xC2 && b <= 0xF4:
			c.partial = append(c.partial, b)
		default:
			c.out = append(c.out, "\uFFFD"...)
		}
		return
	}
	if b&0xC0 != 0x80 {
		// The sequence broke off: replace it, then take b afresh.
		c.partial = c.partial[:0]
		c.out = append(c.out, "\uFFFD"...)
		c.rune(b)
		return
	}
	c.partial = append(c.partial, b)
	if !fullRune(c.partial) {
		return
	}
	if validRune(c.partial) {
		c.out = append(c.out, c.partial...)
		c.partial = c.partial[:0]
		return
	}
	// An overlong or surrogate form: one replacement for the lead byte,
	// then the rest as they come.
	rest := append([]byte(nil), c.partial[1:]...)
	c.partial = c.partial[:0]
	c.out = append(c.out, "\uFFFD"...)
	for _, x := range rest {
		c.rune(x)
	}
}

func fullRune(p []byte) bool {
	switch {
	case p[0] < 0xE0:
		return len(p) >= 2
	case p[0] < 0xF0:
		return len(p) >= 3
	}
	return len(p) >= 4
}

func validRune(p []byte) bool { return utf8.Valid(p) }
