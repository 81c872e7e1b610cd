package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"
)

// largeEventText is the length of a message's text (or reasoning) past
// which its event is written to the session file piece by piece.
// json.Marshal builds the whole line in a buffer that grows by copying
// (about five times the text's size allocated, twice its size live at
// once), copies it out, and keeps the buffer in its pool: a model answer
// of 50 MB cost some 400 MB to write down.
const largeEventText = 1 << 20

// largeLine is an event whose large texts are written apart: the line is
// head[0], texts[0] as a JSON string's inside, head[1], ..., head[n].
type largeLine struct {
	head  [][]byte
	texts []string
}

// splitLargeText encodes ev with its message's large texts left out.
// ok is false when ev holds no large text (or, in the unlikely case that
// another string of the event spells a placeholder, when the split is not
// certain); ev is then written whole.
func splitLargeText(ev event) (line largeLine, ok bool) {
	m := ev.Message
	if m == nil || (len(m.Text) <= largeEventText && len(m.Reasoning) <= largeEventText) {
		return line, false
	}
	c := *m
	ev.Message = &c
	type hole struct {
		marker []byte
		text   string
	}
	var holes []hole
	for _, f := range []*string{&c.Text, &c.Reasoning} {
		if len(*f) > largeEventText {
			placeholder := fmt.Sprintf("\x00qwen-ls large text %d\x00", len(holes))
			marker, _ := json.Marshal(placeholder)
			holes = append(holes, hole{marker, *f})
			*f = placeholder
		}
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return line, false
	}
	type cut struct {
		at   int
		hole hole
	}
	var cuts []cut
	for _, h := range holes {
		i := bytes.Index(b, h.marker)
		if i < 0 || bytes.Count(b, h.marker) != 1 {
			return line, false
		}
		cuts = append(cuts, cut{i, h})
	}
	slices.SortFunc(cuts, func(x, y cut) int { return x.at - y.at })
	at := 0
	for _, c := range cuts {
		// Keep the quotes in the head: the text goes between them.
		line.head = append(line.head, b[at:c.at+1])
		line.texts = append(line.texts, c.hole.text)
		at = c.at + len(c.hole.marker) - 1
	}
	line.head = append(line.head, append(b[at:len(b):len(b)], '\n'))
	return line, true
}

// writeLarge appends line, its texts escaped and redacted a piece at a
// time. It takes several write calls, so a process killed in the middle
// leaves a cut line, which loading skips and the next write ends.
func (l *sessionLog) writeLarge(line largeLine) error {
	secrets := l.st.escapedSecrets()
	defer l.st.keepOpen(l)
	l.mu.Lock()
	defer l.mu.Unlock()
	fail := func(err error) error {
		if l.err == nil {
			l.err = err
		}
		return err
	}
	if err := l.resumeLocked(); err != nil {
		return fail(err)
	}
	if l.needNewline {
		if _, err := l.f.Write([]byte{'\n'}); err != nil {
			return fail(fmt.Errorf("append to %s: %w", l.path, err))
		}
		l.needNewline = false
	}
	for i, h := range line.head {
		// A secret cannot lie across a text's quotes: escaped, it holds
		// no bare quote. So each piece is redacted on its own.
		_, err := l.f.Write(redactWith(h, secrets))
		if err == nil && i < len(line.texts) {
			err = writeJSONText(l.f, line.texts[i], secrets)
		}
		if err != nil {
			l.needNewline = true
			return fail(fmt.Errorf("append to %s: %w", l.path, err))
		}
	}
	return nil
}

// writeJSONText writes s as json.Marshal writes it inside a string, with
// secrets redacted, in pieces of about 64 KiB. Pieces end where a
// character starts, so each escapes as it would within the whole; the
// last bytes of each, as long as a secret but one, wait for the next, so
// that a secret that spans two pieces is found too.
func writeJSONText(w io.Writer, s string, secrets [][]byte) error {
	keep := 0
	for _, sec := range secrets {
		keep = max(keep, len(sec)-1)
	}
	var carry []byte
	for len(s) > 0 {
		n := min(len(s), 64<<10)
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		enc, err := json.Marshal(s[:n])
		if err != nil {
			return err
		}
		s = s[n:]
		buf := redactWith(append(carry, enc[1:len(enc)-1]...), secrets)
		end := len(buf)
		if len(s) > 0 {
			end -= min(keep, len(buf))
		}
		if _, err := w.Write(buf[:end]); err != nil {
			return err
		}
		carry = append([]byte(nil), buf[end:]...)
	}
	return nil
}
