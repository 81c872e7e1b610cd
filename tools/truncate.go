package tools

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// outputLimits are the limits of tools.md §2.8: tools.truncateToolOutputThreshold
// characters and tools.truncateToolOutputLines lines; a value <= 0 turns
// its check off.
type outputLimits struct {
	Threshold int
	Lines     int
}

// outputLimits returns the workspace's current limits.
func (e *Env) outputLimits() outputLimits {
	return outputLimits{Threshold: e.threshold(), Lines: e.lineLimit()}
}

// over reports whether a text of chars characters and lines lines is over
// the limits.
func (l outputLimits) over(chars, lines int64) bool {
	return (l.Threshold > 0 && chars > int64(l.Threshold)) || (l.Lines > 0 && lines > int64(l.Lines))
}

// TruncatedOutput is the outcome of tools.md §2.8 for one text.
type TruncatedOutput struct {
	// Text is what the model gets: the text itself, or the replacement
	// that shows its start and end.
	Text      string
	Truncated bool
	// File holds the whole text when it was truncated and saved.
	File string
	// SaveError says why the whole text could not be saved.
	SaveError error
}

// DisplayNote is the line a truncated output adds to the display:
// "Output truncated; the whole output is in <file>", or "" when the text
// was not truncated or not saved.
func (t TruncatedOutput) DisplayNote() string {
	if !t.Truncated || t.File == "" {
		return ""
	}
	return "Output truncated; the whole output is in " + t.File
}

// TruncateToolOutput applies tools.md §2.8 to the output of the tool named
// tool (an MCP tool passes mcp__<server>__<tool>), with the workspace's
// limits, saving a long text under the project temp dir.
func (e *Env) TruncateToolOutput(tool, text string) TruncatedOutput {
	return truncateOutput(text, e.ProjectTempDir(), tool, e.outputLimits())
}

// truncateOutput applies tools.md §2.8 to text: a text within lim is
// returned as is; a longer one is saved whole to
// <dir>/<tool>_<12 hex>.output and replaced by its start and end.
func truncateOutput(text, dir, tool string, lim outputLimits) TruncatedOutput {
	chars, lines := int64(utf8.RuneCountInString(text)), int64(strings.Count(text, "\n")+1)
	if !lim.over(chars, lines) {
		return TruncatedOutput{Text: text}
	}
	out := TruncatedOutput{Truncated: true}
	f, err := createOutputFile(dir, tool)
	if err == nil {
		_, err = f.WriteString(text)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(f.Name())
		} else {
			out.File = f.Name()
		}
	}
	out.SaveError = err
	head, tail, rerr := headAndTail(strings.NewReader(text), int64(len(text)), lines, lim)
	if rerr != nil {
		// Reading a string cannot fail.
		panic(rerr)
	}
	out.Text = truncationText(out.File, err, head, tail)
	return out
}

// truncateFile applies tools.md §2.8 to a text that is already written
// to the file name (made with createOutputFile, so it sits where a saved
// output belongs): within lim the text is read back and the file removed;
// over it the file stays as the saved output and only its start and end
// are read. A huge output is thus never held in memory whole. With keep
// false the file is only a scratch copy (saving failed with saveErr) and
// is removed in every case.
func truncateFile(name string, keep bool, saveErr error, lim outputLimits) (TruncatedOutput, error) {
	if !keep {
		defer os.Remove(name)
	}
	f, err := os.Open(name)
	if err != nil {
		return TruncatedOutput{}, fmt.Errorf("open tool output: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return TruncatedOutput{}, fmt.Errorf("open tool output: %w", err)
	}
	chars, lines, err := countText(io.NewSectionReader(f, 0, fi.Size()))
	if err != nil {
		return TruncatedOutput{}, fmt.Errorf("read tool output: %w", err)
	}
	if !lim.over(chars, lines) {
		b, err := io.ReadAll(io.NewSectionReader(f, 0, fi.Size()))
		if err != nil {
			return TruncatedOutput{}, fmt.Errorf("read tool output: %w", err)
		}
		_ = os.Remove(name)
		return TruncatedOutput{Text: string(b)}, nil
	}
	head, tail, err := headAndTail(f, fi.Size(), lines, lim)
	if err != nil {
		return TruncatedOutput{}, fmt.Errorf("read tool output: %w", err)
	}
	if !keep {
		return TruncatedOutput{Text: truncationText("", saveErr, head, tail), Truncated: true, SaveError: saveErr}, nil
	}
	return TruncatedOutput{Text: truncationText(name, nil, head, tail), Truncated: true, File: name}, nil
}

// createOutputFile creates <dir>/<tool>_<12 hex>.output for writing,
// making dir if needed.
func createOutputFile(dir, tool string) (*os.File, error) {
	return createUniqueFile(dir, tool+"_", ".output")
}

func createUniqueFile(dir, prefix, suffix string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for range 8 {
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(filepath.Join(dir, prefix+hex.EncodeToString(b[:])+suffix),
			os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, errors.New("could not find a free file name")
}

// truncationText is the replacement text of tools.md §2.8.
func truncationText(file string, saveErr error, head, tail string) string {
	var b strings.Builder
	b.WriteString(`The output is too long, so only its start and end are shown; the line "... [CONTENT TRUNCATED] ..." marks the gap.` + "\n")
	if file != "" {
		b.WriteString("The whole output is in " + file + "; read it with read_file, using offset and limit.\n")
	} else {
		reason := "unknown reason"
		if saveErr != nil {
			reason = saveErr.Error()
		}
		b.WriteString("The whole output could not be saved (" + reason + ").\n")
	}
	b.WriteString("\n" + head + "\n\n---\n... [CONTENT TRUNCATED] ...\n---\n\n" + tail)
	return b.String()
}

// countText counts the characters and the lines (newlines + 1) of a text.
func countText(r io.Reader) (chars, lines int64, err error) {
	br := bufio.NewReaderSize(r, 64*1024)
	lines = 1
	for {
		c, _, err := br.ReadRune()
		if err == io.EOF {
			return chars, lines, nil
		}
		if err != nil {
			return 0, 0, err
		}
		chars++
		if c == '\n' {
			lines++
		}
	}
}

// lineSpan is one line of a text: where it starts, its length in bytes
// and in characters (without the newline).
type lineSpan struct {
	off, bytes, chars int64
}

// headAndTail builds the head and the tail of tools.md §2.8 from a text of
// size bytes and lines lines, reading it through r. With
// L = min(lines, lim.Lines) and h = max(1, L/5), the head is the first h
// lines within Threshold/5 characters, the tail the last L-h lines within
// the rest; a line longer than what is left of its budget is cut and ends
// "...", and no line after it is taken. Memory stays within the budgets.
func headAndTail(r io.ReaderAt, size, lines int64, lim outputLimits) (head, tail string, err error) {
	L := lines
	if lim.Lines > 0 && int64(lim.Lines) < L {
		L = int64(lim.Lines)
	}
	h := max(1, L/5)
	headBudget, tailBudget := int64(-1), int64(-1)
	if lim.Threshold > 0 {
		headBudget = int64(lim.Threshold / 5)
		tailBudget = int64(lim.Threshold) - headBudget
	}
	tailFrom := lines - (L - h) // index of the first tail line

	var hb strings.Builder
	headUsed, headDone := int64(0), false
	// cur is the head line being read; keep at most what the budget needs.
	var cur []rune
	curChars := int64(0)
	var ring []lineSpan
	ringCost := int64(0)
	cost := func(s lineSpan, first bool) int64 {
		if first {
			return s.chars
		}
		return s.chars + 1
	}

	br := bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 64*1024)
	var idx, off, lineStart, lineBytes int64
	finishLine := func() {
		if idx < h && !headDone {
			sep := int64(0)
			if idx > 0 {
				sep = 1
			}
			switch {
			case headBudget < 0 || headUsed+sep+curChars <= headBudget:
				if idx > 0 {
					hb.WriteByte('\n')
				}
				hb.WriteString(string(cur))
				headUsed += sep + curChars
			default:
				room := headBudget - headUsed - sep
				if room > 3 {
					if idx > 0 {
						hb.WriteByte('\n')
					}
					hb.WriteString(string(cur[:room-3]) + "...")
				}
				headDone = true
			}
		}
		if idx >= tailFrom {
			span := lineSpan{off: lineStart, bytes: lineBytes, chars: curChars}
			ring = append(ring, span)
			ringCost += span.chars + 1
			// Drop lines from the front that the budget can no longer
			// reach: the lines after them already fill it.
			for tailBudget >= 0 && len(ring) > 1 && ringCost-(ring[0].chars+1) > tailBudget+1 {
				ringCost -= ring[0].chars + 1
				ring = ring[1:]
			}
		}
		idx++
		cur, curChars, lineBytes = cur[:0], 0, 0
	}
	lineStart = 0
	for {
		c, n, rerr := br.ReadRune()
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return "", "", rerr
		}
		off += int64(n)
		if c == '\n' {
			finishLine()
			lineStart = off
			continue
		}
		lineBytes += int64(n)
		curChars++
		if idx < h && !headDone && (headBudget < 0 || int64(len(cur)) <= headBudget) {
			cur = append(cur, c)
		}
	}
	finishLine()

	// The tail, from its last line backwards, within its budget.
	var parts []string
	used := int64(0)
	for i := len(ring) - 1; i >= 0; i-- {
		s := ring[i]
		c := cost(s, i == len(ring)-1)
		if tailBudget < 0 || used+c <= tailBudget {
			b := make([]byte, s.bytes)
			if _, err := r.ReadAt(b, s.off); err != nil && err != io.EOF {
				return "", "", err
			}
			parts = append(parts, string(b))
			used += c
			continue
		}
		room := tailBudget - used - (c - s.chars)
		if room > 3 {
			b := make([]byte, min(s.bytes, (room-3)*utf8.UTFMax))
			if _, err := r.ReadAt(b, s.off); err != nil && err != io.EOF {
				return "", "", err
			}
			rs := []rune(string(b))
			parts = append(parts, string(rs[:min(int64(len(rs)), room-3)])+"...")
		}
		break
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return hb.String(), strings.Join(parts, "\n"), nil
}

// spool keeps a stream of bytes in memory up to limit bytes and moves it to
// a temporary file past that, so that a long output costs disk, not memory.
type spool struct {
	limit int
	mem   []byte
	file  *os.File
	size  int64
	// err is the first failure to write the file; later bytes are lost.
	err error
	// peak is the most memory mem has held, for tests of the bound.
	peak int
}

func (s *spool) write(p []byte) {
	if s.err != nil || len(p) == 0 {
		return
	}
	if s.file == nil && len(s.mem)+len(p) <= s.limit {
		s.mem = append(s.mem, p...)
		s.size += int64(len(p))
		s.peak = max(s.peak, cap(s.mem))
		return
	}
	if s.file == nil {
		f, err := os.CreateTemp("", "qwen-output-*.tmp")
		if err != nil {
			s.err = err
			return
		}
		s.file = f
		if _, err := f.Write(s.mem); err != nil {
			s.err = err
			return
		}
		s.mem = nil
	}
	if _, err := s.file.Write(p); err != nil {
		s.err = err
		return
	}
	s.size += int64(len(p))
}

// truncate cuts the spool to n bytes.
func (s *spool) truncate(n int64) {
	if n >= s.size {
		return
	}
	if s.file == nil {
		s.mem = s.mem[:n]
	} else if err := s.file.Truncate(n); err != nil {
		s.err = err
		return
	}
	s.size = n
}

// tail returns the last n bytes at most.
func (s *spool) tail(n int64) []byte {
	if s.file == nil {
		return s.mem[max(0, int64(len(s.mem))-n):]
	}
	n = min(n, s.size)
	b := make([]byte, n)
	k, _ := s.file.ReadAt(b, s.size-n)
	return b[:k]
}

// copyTo writes the whole content to w.
func (s *spool) copyTo(w io.Writer) error {
	if s.file == nil {
		_, err := w.Write(s.mem)
		return err
	}
	_, err := io.Copy(w, io.NewSectionReader(s.file, 0, s.size))
	return err
}

// release drops the content and removes the file.
func (s *spool) release() {
	if s.file != nil {
		_ = s.file.Close()
		_ = os.Remove(s.file.Name())
		s.file = nil
	}
	s.mem = nil
}
