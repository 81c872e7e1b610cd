package tools

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMatchEdit(t *testing.T) {
	tests := []struct {
		name       string
		text       string
		spec       editSpec
		wantOld    string // the normalised old_string
		wantNew    string
		wantResult string
		wantFail   matchFailure
		wantCount  int
	}{
		{
			name: "literal", text: "a\nb\nc\n", spec: editSpec{Old: "b", New: "x"},
			wantOld: "b", wantNew: "x", wantResult: "a\nx\nc\n", wantCount: 1,
		},
		{
			name: "curly quotes fold", text: "say “hi”\n", spec: editSpec{Old: `say "hi"`, New: `say 'hi'`},
			wantOld: "say “hi”", wantNew: `say 'hi'`, wantResult: "say 'hi'\n", wantCount: 1,
		},
		{
			name: "dashes, minus and spaces fold", text: "x\u00a0=\u2009a \u2212 b\u2014c\n",
			spec:    editSpec{Old: "x = a - b-c", New: "y"},
			wantOld: "x\u00a0=\u2009a \u2212 b\u2014c", wantNew: "y", wantResult: "y\n", wantCount: 1,
		},
		{
			name: "fold keeps other multi-byte text around the match", text: "é‘ü’ñ", spec: editSpec{Old: "'ü'", New: "u"},
			wantOld: "‘ü’", wantNew: "u", wantResult: "éuñ", wantCount: 1,
		},
		{
			name: "trailing whitespace in the file", text: "  a = 1;   \n  b = 2;\n",
			spec:    editSpec{Old: "  a = 1;\n  b = 2;", New: "  a = 3;\n  b = 4;"},
			wantOld: "  a = 1;   \n  b = 2;", wantNew: "  a = 3;\n  b = 4;", wantResult: "  a = 3;\n  b = 4;\n", wantCount: 1,
		},
		{
			name: "trailing whitespace in old_string", text: "f()\n\tg()\n", spec: editSpec{Old: "f()  \n\tg()\t", New: "h()"},
			wantOld: "f()\n\tg()", wantNew: "h()", wantResult: "h()\n", wantCount: 1,
		},
		{
			name: "folded and trailing whitespace on one line", text: "s = “x”  \nt\n", spec: editSpec{Old: "s = \"x\"\nt\n", New: "u\n"},
			wantOld: "s = “x”  \nt\n", wantNew: "u\n", wantResult: "u\n", wantCount: 1,
		},
		{
			name: "blank lines match whatever whitespace they hold", text: "a\n   \nb\n", spec: editSpec{Old: "a\n\nb", New: "c"},
			wantOld: "a\n   \nb", wantNew: "c", wantResult: "c\n", wantCount: 1,
		},
		{
			name: "indentation must match", text: "    a = 1;\n    b = 2;\n", spec: editSpec{Old: "  a = 1;\n  b = 2;", New: "x"},
			wantOld: "  a = 1;\n  b = 2;", wantNew: "x", wantFail: failNoOccurrence,
		},
		{
			name: "tabs are not spaces", text: "\tx\n", spec: editSpec{Old: "    x\n", New: "y\n"},
			wantOld: "    x\n", wantNew: "y\n", wantFail: failNoOccurrence,
		},
		{
			name: "folding does not turn other indentation into spaces", text: "\u00a0\u00a0a  \nb\n", spec: editSpec{Old: "  a\nb", New: "c"},
			wantOld: "  a\nb", wantNew: "c", wantFail: failNoOccurrence,
		},
		{
			name: "folding inside an indented line", text: "  a \u2013 b  \nc\n", spec: editSpec{Old: "  a - b\nc", New: "d"},
			wantOld: "  a \u2013 b  \nc", wantNew: "d", wantResult: "d\n", wantCount: 1,
		},
		{
			name: "the retry matches whole lines only", text: "foo bar", spec: editSpec{Old: "bar\n", New: "baz\n"},
			wantOld: "bar\n", wantNew: "baz\n", wantFail: failNoOccurrence,
		},
		{
			name: "folding applies to a leading non-breaking space", text: "\u00a0x  \n", spec: editSpec{Old: " x", New: "y"},
			wantOld: "\u00a0x", wantNew: "y", wantResult: "y  \n", wantCount: 1,
		},
		{
			name: "old ending in a newline the file lacks: retried without it", text: "a\nb", spec: editSpec{Old: "b\n", New: "c\n"},
			wantOld: "b", wantNew: "c", wantResult: "a\nc", wantCount: 1,
		},
		{
			name: "retry drops only one newline of new_string", text: "a\n  b  ", spec: editSpec{Old: "  b\n", New: "x\n\n"},
			wantOld: "  b  ", wantNew: "x\n", wantResult: "a\nx\n", wantCount: 1,
		},
		{
			name: "a deleted line takes its line break", text: "a\nb\nc\n", spec: editSpec{Old: "b", New: ""},
			wantOld: "b\n", wantNew: "", wantResult: "a\nc\n", wantCount: 1,
		},
		{
			name: "a deleted last line without break", text: "a\nb", spec: editSpec{Old: "b", New: ""},
			wantOld: "b", wantNew: "", wantResult: "a\n", wantCount: 1,
		},
		{
			name: "ambiguous", text: "foo foo", spec: editSpec{Old: "foo", New: "bar"},
			wantOld: "foo", wantNew: "bar", wantFail: failAmbiguous, wantCount: 2,
		},
		{
			name: "replace_all", text: "foo foo", spec: editSpec{Old: "foo", New: "bar", ReplaceAll: true},
			wantOld: "foo", wantNew: "bar", wantResult: "bar bar", wantCount: 2,
		},
		{
			name: "expected_replacements equal", text: "foo foo", spec: editSpec{Old: "foo", New: "bar", Expected: 2},
			wantOld: "foo", wantNew: "bar", wantResult: "bar bar", wantCount: 2,
		},
		{
			name: "expected_replacements differ", text: "foo foo", spec: editSpec{Old: "foo", New: "bar", Expected: 3},
			wantOld: "foo", wantNew: "bar", wantFail: failExpectedMismatch, wantCount: 2,
		},
		{
			name: "expected_replacements wins over replace_all", text: "foo foo", spec: editSpec{Old: "foo", New: "bar", Expected: 1, ReplaceAll: true},
			wantOld: "foo", wantNew: "bar", wantFail: failExpectedMismatch, wantCount: 2,
		},
		{
			name: "occurrences do not overlap", text: "aaa", spec: editSpec{Old: "aa", New: "b", ReplaceAll: true},
			wantOld: "aa", wantNew: "b", wantResult: "ba", wantCount: 1,
		},
		{
			name: "not found", text: "abc", spec: editSpec{Old: "xyz", New: "q"},
			wantOld: "xyz", wantNew: "q", wantFail: failNoOccurrence,
		},
		{
			name: "same strings", text: "abc", spec: editSpec{Old: "b", New: "b"},
			wantOld: "b", wantNew: "b", wantFail: failSameStrings, wantCount: 1,
		},
		{
			name: "same once normalised", text: "say “hi”", spec: editSpec{Old: `say "hi"`, New: "say “hi”"},
			wantOld: "say “hi”", wantNew: "say “hi”", wantFail: failSameStrings, wantCount: 1,
		},
		{
			name: "replacement patterns are literal", text: "x = 1", spec: editSpec{Old: "1", New: "$1 $& $$"},
			wantOld: "1", wantNew: "$1 $& $$", wantResult: "x = $1 $& $$", wantCount: 1,
		},
		{
			name: "whitespace-only old_string never matches an empty slice", text: "a\n\nb", spec: editSpec{Old: "   ", New: "x"},
			wantOld: "   ", wantNew: "x", wantFail: failNoOccurrence,
		},
		{
			name: "first window of several fuzzy matches, counted exactly", text: "x  \ny\nx \ny\n", spec: editSpec{Old: "x\ny", New: "z"},
			wantOld: "x  \ny", wantNew: "z", wantResult: "z\nx \ny\n", wantCount: 1,
		},
		{
			name: "invalid UTF-8 is compared byte for byte", text: "a\xff\u2019b\n", spec: editSpec{Old: "\xff'b", New: "c"},
			wantOld: "\xff\u2019b", wantNew: "c", wantResult: "ac\n", wantCount: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := matchEdit(tt.text, tt.spec)
			if m.Old != tt.wantOld || m.New != tt.wantNew {
				t.Errorf("normalised old, new = %q, %q; want %q, %q", m.Old, m.New, tt.wantOld, tt.wantNew)
			}
			if m.Failure != tt.wantFail {
				t.Fatalf("failure = %d, want %d", m.Failure, tt.wantFail)
			}
			if m.Count != tt.wantCount {
				t.Errorf("count = %d, want %d", m.Count, tt.wantCount)
			}
			if tt.wantFail == matchOK && m.Result != tt.wantResult {
				t.Errorf("result = %q, want %q", m.Result, tt.wantResult)
			}
		})
	}
}

func TestFoldRuneTable(t *testing.T) {
	for r := rune(0); r <= 0x3100; r++ {
		want := r
		switch {
		case r >= 0x2010 && r <= 0x2015 || r == 0x2212:
			want = '-'
		case r >= 0x2018 && r <= 0x201B:
			want = '\''
		case r >= 0x201C && r <= 0x201F:
			want = '"'
		case r == 0xA0 || r >= 0x2002 && r <= 0x200A || r == 0x202F || r == 0x205F || r == 0x3000:
			want = ' '
		}
		if got := foldRune(r); got != want {
			t.Errorf("foldRune(%U) = %U, want %U", r, got, want)
		}
	}
	// The ASCII forms themselves and look-alikes outside the table stay.
	if s := "- ' \" \u2016 \u2001 \u200b"; fold(s) != s {
		t.Errorf("fold(%q) = %q", s, fold(s))
	}
	if got := fold("\u201cq\u201d \u2013 \u3000"); got != "\"q\" -  " {
		t.Errorf("fold = %q", got)
	}
}

func TestUnfoldOffset(t *testing.T) {
	text := "é“x”\xffy"
	ft := fold(text)
	if ft != "é\"x\"\xffy" {
		t.Fatalf("fold = %q", ft)
	}
	// Every code-point boundary of the folded text maps to the matching
	// boundary of the original.
	want := map[int]int{0: 0, 2: 2, 3: 5, 4: 6, 5: 9, 6: 10, 7: 11}
	for f, o := range want {
		if got := unfoldOffset(text, f); got != o {
			t.Errorf("unfoldOffset(%d) = %d, want %d", f, got, o)
		}
	}
}

// checkMatch asserts the invariants of matchEdit for one input.
func checkMatch(t *testing.T, text string, spec editSpec) {
	t.Helper()
	m := matchEdit(text, spec)
	if m.Old == "" {
		t.Fatalf("normalised old_string is empty")
	}
	// new_string changes at most by losing one trailing newline.
	if m.New != spec.New && !(strings.HasSuffix(spec.New, "\n") && m.New == spec.New[:len(spec.New)-1]) {
		t.Fatalf("new_string %q became %q", spec.New, m.New)
	}
	// A literal occurrence is always used as it is (the deleted-line rule
	// aside).
	if strings.Contains(text, spec.Old) && m.Old != spec.Old && m.Old != spec.Old+"\n" {
		t.Fatalf("old_string %q occurs literally but became %q", spec.Old, m.Old)
	}
	if m.Count != len(m.Offsets) || m.Count != strings.Count(text, m.Old) {
		t.Fatalf("count %d, offsets %v, strings.Count %d", m.Count, m.Offsets, strings.Count(text, m.Old))
	}
	prevEnd := 0
	for _, off := range m.Offsets {
		if off < prevEnd || off+len(m.Old) > len(text) || text[off:off+len(m.Old)] != m.Old {
			t.Fatalf("bad occurrence at %d of %q in %q", off, m.Old, text)
		}
		prevEnd = off + len(m.Old)
	}
	if (m.Count == 0) != (m.Failure == failNoOccurrence) {
		t.Fatalf("count %d with failure %d", m.Count, m.Failure)
	}
	if m.Failure == failAmbiguous && (spec.ReplaceAll || spec.Expected != 0 || m.Count < 2) {
		t.Fatalf("ambiguous reported for %+v with %d occurrences", spec, m.Count)
	}
	if m.Failure == failExpectedMismatch && (spec.Expected == 0 || spec.Expected == m.Count) {
		t.Fatalf("mismatch reported for expected %d with %d occurrences", spec.Expected, m.Count)
	}
	if m.Failure != matchOK {
		return
	}
	if m.Old == m.New || m.Result == text {
		t.Fatalf("success without a change: old %q new %q", m.Old, m.New)
	}
	if spec.Expected > 0 && m.Count != spec.Expected || spec.Expected == 0 && !spec.ReplaceAll && m.Count != 1 {
		t.Fatalf("success with %d occurrences for %+v", m.Count, spec)
	}
	// The result is exactly the text with the reported occurrences
	// replaced, new_string inserted verbatim.
	var b strings.Builder
	last := 0
	for _, off := range m.Offsets {
		b.WriteString(text[last:off])
		b.WriteString(m.New)
		last = off + len(m.Old)
	}
	b.WriteString(text[last:])
	if b.String() != m.Result {
		t.Fatalf("result %q, want %q", m.Result, b.String())
	}
	// Folding changes code points, never their number.
	if utf8.ValidString(text) && utf8.RuneCountInString(fold(text)) != utf8.RuneCountInString(text) {
		t.Fatalf("fold changed the number of code points of %q", text)
	}
}

func FuzzEditMatch(f *testing.F) {
	seeds := []struct {
		text, old, new string
		all            bool
		expected       uint8
	}{
		{"a\nb\nc\n", "b", "x", false, 0},
		{"say “hi”\n", `say "hi"`, "say 'hi'", false, 0},
		{"  a = 1;   \n  b = 2;\n", "  a = 1;\n  b = 2;", "  a = 3;\n  b = 4;", false, 0},
		{"    a\n", "  a", "b", false, 0},
		{"a\nb", "b\n", "c\n", false, 0},
		{"a\nb\nc\n", "b", "", false, 0},
		{"foo foo", "foo", "bar", false, 0},
		{"foo foo", "foo", "bar", true, 0},
		{"foo foo", "foo", "bar", false, 3},
		{"x = 1", "1", "$1 $&", false, 0},
		{"a\n\n\nb", "\n", "", true, 0},
		{"\u00a0\u2014\xff\n \n", " -\xff\n\n", "z", false, 1},
		{"aaaa", "aa", "a", true, 2},
		{"x\n", "x\n\n", "", false, 0},
	}
	for _, s := range seeds {
		f.Add(s.text, s.old, s.new, s.all, s.expected)
	}
	f.Fuzz(func(t *testing.T, text, old, repl string, all bool, expected uint8) {
		if old == "" {
			return // creation is not the matcher's business
		}
		checkMatch(t, text, editSpec{Old: old, New: repl, ReplaceAll: all, Expected: int(expected % 5)})
	})
}
