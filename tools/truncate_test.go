package tools

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func numberedLines(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		if i > from {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "line %02d", i)
	}
	return b.String()
}

func TestTruncateOutputKeepsShortText(t *testing.T) {
	dir := t.TempDir()
	for _, lim := range []outputLimits{{100, 10}, {0, 0}, {-1, -1}, {7, 0}} {
		text := "line 1\nline 2"
		if lim.Threshold > 0 && lim.Threshold < 13 {
			text = "1234567"
		}
		got := truncateOutput(text, dir, "t", lim)
		if got.Text != text || got.Truncated || got.File != "" || got.DisplayNote() != "" {
			t.Errorf("limits %+v changed %q: %+v", lim, text, got)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a short text was saved: %v", entries)
	}
}

// TestTruncateOutputText pins the replacement text of tools.md §2.8.
func TestTruncateOutputText(t *testing.T) {
	dir := t.TempDir()
	text := numberedLines(1, 30)
	got := truncateOutput(text, dir, "run_shell_command", outputLimits{Threshold: 100, Lines: 10})
	if !got.Truncated || got.File == "" {
		t.Fatalf("not truncated and saved: %+v", got)
	}
	if filepath.Dir(got.File) != dir || !strings.HasPrefix(filepath.Base(got.File), "run_shell_command_") ||
		!strings.HasSuffix(got.File, ".output") || len(filepath.Base(got.File)) != len("run_shell_command_")+12+len(".output") {
		t.Errorf("file name %s", got.File)
	}
	// L = 10, h = 2: the head is 2 lines within 20 characters, the tail 8
	// within 80.
	want := `The output is too long, so only its start and end are shown; the line "... [CONTENT TRUNCATED] ..." marks the gap.
The whole output is in ` + got.File + `; read it with read_file, using offset and limit.

line 01
line 02

---
... [CONTENT TRUNCATED] ...
---

` + numberedLines(23, 30)
	if got.Text != want {
		t.Errorf("text =\n%s\nwant\n%s", got.Text, want)
	}
	if saved, err := os.ReadFile(got.File); err != nil || string(saved) != text {
		t.Errorf("saved file holds %q, %v", saved, err)
	}
	if got.DisplayNote() != "Output truncated; the whole output is in "+got.File {
		t.Errorf("display note %q", got.DisplayNote())
	}
}

func TestTruncateOutputCutsLongLines(t *testing.T) {
	long := strings.Repeat("TAIL", 11) // 44 characters
	text := "0123456789ABCDEF\nx\ny\nz\n" + long + "\nend"
	got := truncateOutput(text, t.TempDir(), "t", outputLimits{Threshold: 50, Lines: 1000})
	// 6 lines: h = 1. The head budget is 10 and the first line is cut; the
	// tail budget is 40: "end", then the long line cut to what is left.
	_, body, _ := strings.Cut(got.Text, "limit.\n\n")
	want := "0123456...\n\n---\n... [CONTENT TRUNCATED] ...\n---\n\n" + long[:33] + "...\nend"
	if body != want {
		t.Errorf("body = %q\nwant %q", body, want)
	}
}

func TestTruncateOutputLineLimitOnly(t *testing.T) {
	got := truncateOutput(numberedLines(1, 30), t.TempDir(), "t", outputLimits{Threshold: 0, Lines: 10})
	_, body, _ := strings.Cut(got.Text, "limit.\n\n")
	want := "line 01\nline 02\n\n---\n... [CONTENT TRUNCATED] ...\n---\n\n" + numberedLines(23, 30)
	if body != want {
		t.Errorf("body = %q\nwant %q", body, want)
	}
}

func TestTruncateOutputSaveFailure(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got := truncateOutput(numberedLines(1, 30), notDir, "t", outputLimits{Threshold: 100, Lines: 10})
	lines := strings.Split(got.Text, "\n")
	if !got.Truncated || got.File != "" || got.SaveError == nil || got.DisplayNote() != "" ||
		lines[1] != "The whole output could not be saved ("+got.SaveError.Error()+")." {
		t.Errorf("result %+v, second line %q", got, lines[1])
	}
}

// TestTruncateOutputFileMatchesString: the file path (as the shell takes
// it, keeping the file) reads only the start
// and end of a saved output, and gives the same text as the string path.
func TestTruncateOutputFileMatchesString(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	truncated := 0
	for i := range 200 {
		var b strings.Builder
		for range rng.IntN(60) {
			b.WriteString(strings.Repeat(string([]rune("ab é€😀 ")[rng.IntN(7)]), rng.IntN(40)))
			b.WriteByte('\n')
		}
		b.WriteString("last")
		text := b.String()
		lim := outputLimits{Threshold: rng.IntN(300) - 20, Lines: rng.IntN(30) - 3}
		fromString := truncateOutput(text, dir, "s", lim)

		f, err := createOutputFile(dir, "f")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(text); err != nil {
			t.Fatal(err)
		}
		f.Close()
		fromFile, err := truncateFile(f.Name(), true, nil, lim)
		if err != nil {
			t.Fatal(err)
		}
		if fromString.Truncated != fromFile.Truncated {
			t.Fatalf("case %d: truncated %v vs %v", i, fromString.Truncated, fromFile.Truncated)
		}
		if !fromFile.Truncated {
			if fromFile.Text != text {
				t.Fatalf("case %d: file path changed a short text", i)
			}
			if _, err := os.Stat(f.Name()); !os.IsNotExist(err) {
				t.Fatalf("case %d: a short output's file was kept", i)
			}
			continue
		}
		if strings.Replace(fromString.Text, fromString.File, "F", 1) != strings.Replace(fromFile.Text, fromFile.File, "F", 1) {
			t.Fatalf("case %d (limits %+v): string and file paths differ:\n%q\n%q", i, lim, fromString.Text, fromFile.Text)
		}
		truncated++
		if !utf8.ValidString(fromFile.Text) {
			t.Fatalf("case %d: a cut split a character", i)
		}
		if lim.Threshold > 0 {
			_, body, _ := strings.Cut(fromFile.Text, "limit.\n\n")
			head, tail, _ := strings.Cut(body, "\n\n---\n... [CONTENT TRUNCATED] ...\n---\n\n")
			if n := utf8.RuneCountInString(head); n > lim.Threshold/5 {
				t.Fatalf("case %d: head of %d characters over %d", i, n, lim.Threshold/5)
			}
			if n := utf8.RuneCountInString(tail); n > lim.Threshold-lim.Threshold/5 {
				t.Fatalf("case %d: tail of %d characters over %d", i, n, lim.Threshold-lim.Threshold/5)
			}
		}
	}
	if truncated < 50 || truncated > 190 {
		t.Errorf("%d of 200 cases truncated: the cases do not cover both outcomes", truncated)
	}
}

// TestSpoolBoundsMemory writes 10 MB through a spool and checks that it
// never held more than its limit in memory, yet keeps every byte.
func TestSpoolBoundsMemory(t *testing.T) {
	const limit = 25000
	s := &spool{limit: limit}
	defer s.release()
	var want bytes.Buffer
	chunk := make([]byte, 32<<10)
	for i := 0; want.Len() < 10<<20; i++ {
		for j := range chunk {
			chunk[j] = byte('a' + (i+j)%26)
		}
		s.write(chunk)
		want.Write(chunk)
	}
	if s.err != nil {
		t.Fatal(s.err)
	}
	if s.peak > 2*limit {
		t.Errorf("the spool held %d bytes in memory, limit %d", s.peak, limit)
	}
	if s.file == nil || s.mem != nil || s.size != int64(want.Len()) {
		t.Fatalf("spilled %v, mem %d, size %d of %d", s.file != nil, len(s.mem), s.size, want.Len())
	}
	var got bytes.Buffer
	if err := s.copyTo(&got); err != nil || !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("copy differs (%v)", err)
	}
	if !bytes.Equal(s.tail(100), want.Bytes()[want.Len()-100:]) {
		t.Error("tail differs")
	}
	s.truncate(10)
	got.Reset()
	if err := s.copyTo(&got); err != nil || got.String() != want.String()[:10] {
		t.Errorf("after truncate: %q", got.String())
	}
	name := s.file.Name()
	s.release()
	if _, err := os.Stat(name); !os.IsNotExist(err) {
		t.Error("release kept the temporary file")
	}
}

func TestTextCleaner(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"\x1b[31mred\x1b[0m plain", "red plain"},
		{"\x1b[1;32;40mbold\x1b[K", "bold"},
		{"\x1b]0;title\x07text", "text"},
		{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"\x1bPdata\x1b\\after", "after"},
		{"\x1b(Bx\x1b=y", "xy"},
		{"a\r\nb\r\n", "a\nb\n"},
		{"a\rb", "a\rb"},
		{"é€😀", "é€😀"},
		{"a\xffb", "a\uFFFDb"},
		{"\xe2\x82x", "\uFFFDx"},
		{"\xc0\xaf", "\uFFFD\uFFFD"},
		{"end\xe2\x82", "end\uFFFD"},
		{"cr\r", "cr\r"},
	} {
		// Every split point must give the same text.
		for cut := 0; cut <= len(c.in); cut++ {
			var tc textCleaner
			got := string(tc.clean([]byte(c.in[:cut]), false))
			got += string(tc.clean([]byte(c.in[cut:]), false))
			got += string(tc.clean(nil, true))
			if got != c.want {
				t.Errorf("%q split at %d: %q, want %q", c.in, cut, got, c.want)
				break
			}
		}
	}
	var tc textCleaner
	if got := string(tc.clean([]byte("\xed\xa0\x80"), true)); !utf8.ValidString(got) || strings.ContainsRune(got, 0xD800) {
		t.Errorf("a surrogate came through: %q", got)
	}
}

func TestLiveViewKeepsTheEnd(t *testing.T) {
	var l liveView
	l.append([]byte("short"))
	if got := l.render(); got != "short" {
		t.Errorf("render = %q", got)
	}
	total := 5
	line := []byte(strings.Repeat("é", 1000) + "\n") // 2001 bytes
	for range 200 {
		l.append(line)
		total += len(line)
	}
	got := l.render()
	first, rest, _ := strings.Cut(got, "\n")
	if len(rest) > shellLiveLimit || len(rest) < shellLiveLimit-3 || !utf8.ValidString(rest) {
		t.Errorf("kept %d bytes (valid %v)", len(rest), utf8.ValidString(rest))
	}
	if want := fmt.Sprintf("[… %d bytes omitted]", total-len(rest)); first != want {
		t.Errorf("first line %q, want %q", first, want)
	}
	if len(l.buf) > 2*shellLiveLimit+len(line) {
		t.Errorf("the live view holds %d bytes", len(l.buf))
	}

	l.binary, l.binaryBytes = true, 3<<20
	if got := l.render(); got != "[binary output: live display stopped]" {
		t.Errorf("first binary render %q", got)
	}
	if got := l.render(); got != "[binary output: 3.0 MB received]" {
		t.Errorf("later binary render %q", got)
	}
}
