package tools

import (
	"fmt"
	"os"
	"slices"
)

func omittedLine(n int64) string { return fmt.Sprintf("[… %d bytes omitted]\n", n) }

// runeStart moves i forward to the start of a UTF-8 sequence.
func runeStart(s string, i int) int {
	for i < len(s) && i > 0 && s[i]&0xC0 == 0x80 {
		i++
	}
	return i
}

// shellStream is what is kept of stdout or stderr: the byte count, the
// binary verdict, and the cleaned text (ANSI removed, CRLF as LF, invalid
// UTF-8 as U+FFFD) in a spool, with the trailing white space cut off at
// the end.
type shellStream struct {
	total   int64
	sniffed int
	binary  bool
	cleaner textCleaner
	store   *spool
	// kept is the length of store up to its last non-white-space byte.
	kept int64
}

func (st *shellStream) write(p []byte, live *liveView) {
	st.total += int64(len(p))
	if st.binary {
		live.binaryBytes += int64(len(p))
		return
	}
	if st.sniffed < shellSniffLimit {
		n := min(len(p), shellSniffLimit-st.sniffed)
		st.sniffed += n
		if slices.Contains(p[:n], 0) {
			st.binary = true
			st.store.release()
			live.binary = true
			live.binaryBytes += st.total
			return
		}
	}
	clean := st.cleaner.clean(p, false)
	st.keep(clean)
	if !live.binary {
		live.append(clean)
	}
}

// keep appends cleaned text to the store, tracking the last non-white-space
// byte.
func (st *shellStream) keep(clean []byte) {
	if len(clean) == 0 {
		return
	}
	before := st.store.size
	st.store.write(clean)
	for i := len(clean) - 1; i >= 0; i-- {
		if !isSpaceByte(clean[i]) {
			st.kept = before + int64(i) + 1
			break
		}
	}
}

func isSpaceByte(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f'
}

// finish flushes the cleaner and cuts the trailing white space.
func (st *shellStream) finish() {
	if st.binary || st.store == nil {
		return
	}
	st.keep(st.cleaner.clean(nil, true))
	st.store.truncate(st.kept)
}

func (st *shellStream) spilled() bool {
	return !st.binary && st.store.file != nil
}

// inMemoryText is the stream's text for the llmContent when it was not
// spooled.
func (st *shellStream) inMemoryText() string {
	switch {
	case st.binary:
		return fmt.Sprintf("[binary output: %d bytes]", st.total)
	case st.store.size == 0:
		return "(empty)"
	}
	return string(st.store.mem)
}

// writeText writes the stream's text for the llmContent to f.
func (st *shellStream) writeText(f *os.File) error {
	if st.binary || st.store.size == 0 || st.store.file == nil {
		_, err := f.WriteString(st.inMemoryText())
		return err
	}
	return st.store.copyTo(f)
}

// displayText is the end of the stream's text for the display, and the
// size of the whole.
func (st *shellStream) displayText() (string, int64) {
	if st.binary {
		t := fmt.Sprintf("[binary output: %d bytes]", st.total)
		return t, int64(len(t))
	}
	if st.store.size == 0 {
		return "", 0
	}
	tail := st.store.tail(shellLiveLimit)
	return string(tail[runeStart(string(tail), 0):]), st.store.size
}

func (st *shellStream) release() {
	if st.store != nil {
		st.store.release()
	}
}

// liveView is the end of the combined live output.
type liveView struct {
	buf []byte
	// dropped counts bytes cut from the front of buf.
	dropped int64
	// binary stops the text display; binaryBytes counts what the binary
	// streams have sent.
	binary      bool
	binaryShown bool
	binaryBytes int64
}

func (l *liveView) append(p []byte) {
	l.buf = append(l.buf, p...)
	if len(l.buf) > 2*shellLiveLimit {
		cut := len(l.buf) - shellLiveLimit
		l.dropped += int64(cut)
		l.buf = append(l.buf[:0], l.buf[cut:]...)
	}
}

// render is the text of one live update: the whole output so far, cut to
// its last 64 KiB.
func (l *liveView) render() string {
	if l.binary {
		if !l.binaryShown {
			l.binaryShown = true
			return "[binary output: live display stopped]"
		}
		return "[binary output: " + formatBytes(l.binaryBytes) + " received]"
	}
	if len(l.buf) <= shellLiveLimit && l.dropped == 0 {
		return string(l.buf)
	}
	s := string(l.buf)
	cut := runeStart(s, len(s)-min(len(s), shellLiveLimit))
	return omittedLine(l.dropped+int64(cut)) + s[cut:]
}

// formatBytes shows a byte count as KB, MB or GB with one decimal.
func formatBytes(n int64) string {
	switch {
	case n < 1<<20:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.2f GB", float64(n)/(1<<30))
}
