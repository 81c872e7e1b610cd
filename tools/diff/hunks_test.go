package diff

import (
	"reflect"
	"strings"
	"testing"
)

// applyHunks rebuilds the new text from the old one and its hunks.
func applyHunks(old string, hunks []Hunk) string {
	var b strings.Builder
	last := 0
	for _, h := range hunks {
		b.WriteString(old[last:h.Start])
		b.WriteString(h.Text)
		last = h.End
	}
	b.WriteString(old[last:])
	return b.String()
}

func TestHunks(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     []Hunk
	}{
		{name: "equal", old: "a\nb\n", new: "a\nb\n", want: nil},
		{
			name: "two separate lines give two hunks",
			old:  "a\nb\nc\nd\ne\n", new: "a\nB\nc\nd\nE\n",
			want: []Hunk{
				{OldStart: 1, OldEnd: 2, Start: 2, End: 4, NewStart: 1, NewEnd: 2, Text: "B\n"},
				{OldStart: 4, OldEnd: 5, Start: 8, End: 10, NewStart: 4, NewEnd: 5, Text: "E\n"},
			},
		},
		{
			name: "adjacent changed lines are one hunk",
			old:  "a\nb\nc\nd\n", new: "a\nB\nC\nd\n",
			want: []Hunk{{OldStart: 1, OldEnd: 3, Start: 2, End: 6, NewStart: 1, NewEnd: 3, Text: "B\nC\n"}},
		},
		{
			name: "an insertion is an empty range at column 0",
			old:  "a\nb\n", new: "a\nx\nb\n",
			want: []Hunk{{OldStart: 1, OldEnd: 1, Start: 2, End: 2, NewStart: 1, NewEnd: 2, Text: "x\n"}},
		},
		{
			name: "a deletion replaces lines with nothing",
			old:  "a\nb\nc\n", new: "a\nc\n",
			want: []Hunk{{OldStart: 1, OldEnd: 2, Start: 2, End: 4, NewStart: 1, NewEnd: 1, Text: ""}},
		},
		{
			name: "the last line without a newline ends at the end of the text",
			old:  "a\nb", new: "a\nc",
			want: []Hunk{{OldStart: 1, OldEnd: 2, Start: 2, End: 3, NewStart: 1, NewEnd: 2, Text: "c"}},
		},
		{
			name: "appending at the end",
			old:  "a\n", new: "a\nb\n",
			want: []Hunk{{OldStart: 1, OldEnd: 1, Start: 2, End: 2, NewStart: 1, NewEnd: 2, Text: "b\n"}},
		},
		{
			name: "a new file is one insertion",
			old:  "", new: "x\ny",
			want: []Hunk{{OldStart: 0, OldEnd: 0, Start: 0, End: 0, NewStart: 0, NewEnd: 2, Text: "x\ny"}},
		},
		{
			name: "CRLF lines keep their endings",
			old:  "a\r\nb\r\n", new: "a\r\nB\r\n",
			want: []Hunk{{OldStart: 1, OldEnd: 2, Start: 3, End: 6, NewStart: 1, NewEnd: 2, Text: "B\r\n"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Hunks(tt.old, tt.new)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Hunks = %+v\nwant %+v", got, tt.want)
			}
			if back := applyHunks(tt.old, got); back != tt.new {
				t.Errorf("applying the hunks gives %q, want %q", back, tt.new)
			}
		})
	}
}

func TestHunksAreSeparatedWholeLines(t *testing.T) {
	pairs := [][2]string{
		{"1\n2\n3\n4\n5\n6\n7\n", "1\nx\n3\n4\ny\nz\n7\n8"},
		{"a\nb\nc", "c\nb\na"},
		{"", ""},
		{"only\n", ""},
		{"x\ny\nx\ny\n", "y\nx\ny\nx\n"},
	}
	for _, p := range pairs {
		hunks := Hunks(p[0], p[1])
		if back := applyHunks(p[0], hunks); back != p[1] {
			t.Errorf("%q → %q: hunks rebuild %q", p[0], p[1], back)
		}
		for i, h := range hunks {
			if h.Start > 0 && p[0][h.Start-1] != '\n' {
				t.Errorf("%q: hunk %d starts inside a line", p[0], i)
			}
			if i > 0 && h.OldStart <= hunks[i-1].OldEnd {
				t.Errorf("%q: hunks %d and %d have no unchanged line between them", p[0], i-1, i)
			}
		}
	}
}
