package diff

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     string
	}{
		{
			name: "equal texts give nothing",
			old:  "a\nb\n", new: "a\nb\n",
			want: "",
		},
		{
			name: "one changed line in the middle with three lines of context",
			old:  "1\n2\n3\n4\n5\n6\n7\n8\n9\n",
			new:  "1\n2\n3\n4\nfive\n6\n7\n8\n9\n",
			want: "--- a.txt\tCurrent\n+++ a.txt\tProposed\n" +
				"@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n",
		},
		{
			name: "new file",
			old:  "", new: "x\ny\n",
			want: "--- a.txt\tCurrent\n+++ a.txt\tProposed\n@@ -0,0 +1,2 @@\n+x\n+y\n",
		},
		{
			name: "deleted content",
			old:  "x\n", new: "",
			want: "--- a.txt\tCurrent\n+++ a.txt\tProposed\n@@ -1 +0,0 @@\n-x\n",
		},
		{
			name: "missing final newline on both sides",
			old:  "a\nb", new: "a\nc",
			want: "--- a.txt\tCurrent\n+++ a.txt\tProposed\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n",
		},
		{
			name: "adding the final newline",
			old:  "a\nb", new: "a\nb\n",
			want: "--- a.txt\tCurrent\n+++ a.txt\tProposed\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n",
		},
		{
			name: "insertion at the start",
			old:  "b\nc\n", new: "a\nb\nc\n",
			want: "--- a.txt\tCurrent\n+++ a.txt\tProposed\n@@ -1,2 +1,3 @@\n+a\n b\n c\n",
		},
		{
			name: "changes seven lines apart make two hunks",
			old:  "a\n1\n2\n3\n4\n5\n6\n7\nb\n",
			new:  "A\n1\n2\n3\n4\n5\n6\n7\nB\n",
			want: "--- a.txt\tCurrent\n+++ a.txt\tProposed\n" +
				"@@ -1,4 +1,4 @@\n-a\n+A\n 1\n 2\n 3\n" +
				"@@ -6,4 +6,4 @@\n 5\n 6\n 7\n-b\n+B\n",
		},
		{
			name: "changes six lines apart share a hunk",
			old:  "a\n1\n2\n3\n4\n5\n6\nb\n",
			new:  "A\n1\n2\n3\n4\n5\n6\nB\n",
			want: "--- a.txt\tCurrent\n+++ a.txt\tProposed\n" +
				"@@ -1,8 +1,8 @@\n-a\n+A\n 1\n 2\n 3\n 4\n 5\n 6\n-b\n+B\n",
		},
		{
			name: "CRLF lines are kept as they are",
			old:  "a\r\nb\r\n", new: "a\r\nc\r\n",
			want: "--- a.txt\tCurrent\n+++ a.txt\tProposed\n@@ -1,2 +1,2 @@\n a\r\n-b\r\n+c\r\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Unified("a.txt", Current, Proposed, tt.old, tt.new)
			if got != tt.want {
				t.Errorf("Unified:\ngot:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestUnifiedDiffLabels(t *testing.T) {
	got := Unified("src/x.go", Original, Written, "a\n", "b\n")
	want := "--- src/x.go\tOriginal\n+++ src/x.go\tWritten\n@@ -1 +1 @@\n-a\n+b\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSplitLines(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a", []string{"a"}},
		{"a\n", []string{"a\n"}},
		{"a\nb", []string{"a\n", "b"}},
		{"\n\n", []string{"\n", "\n"}},
		{"a\r\nb\r\n", []string{"a\r\n", "b\r\n"}},
	}
	for _, tt := range tests {
		got := SplitLines(tt.in)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("SplitLines(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLineChanges(t *testing.T) {
	got := LineChanges("a\nb\nc\nd\n", "a\nx\nc\nd\ne\n")
	want := []LineChange{
		{OldStart: 1, OldEnd: 2, NewStart: 1, NewEnd: 2},
		{OldStart: 4, OldEnd: 4, NewStart: 4, NewEnd: 5},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("change %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

// lcsLen is the textbook dynamic program; a shortest edit script has
// len(a)+len(b)-2*lcs edits.
func lcsLen(a, b []string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			switch {
			case a[i-1] == b[j-1]:
				cur[j] = prev[j-1] + 1
			case prev[j] >= cur[j-1]:
				cur[j] = prev[j]
			default:
				cur[j] = cur[j-1]
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// TestLineChangesRandom checks on random inputs that the changes rebuild the
// new text from the old one and that the edit script is as short as the LCS
// says it can be.
func TestLineChangesRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a\n", "b\n", "c\n", "d\n", "e"}
	gen := func() []string {
		n := rng.IntN(14)
		out := make([]string, n)
		for i := range out {
			out[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return out
	}
	for iter := range 3000 {
		a, b := gen(), gen()
		changes := lineChanges(a, b)

		var rebuilt []string
		edits, i := 0, 0
		for _, c := range changes {
			if c.OldStart < i || c.OldEnd < c.OldStart || c.NewEnd < c.NewStart {
				t.Fatalf("iteration %d: malformed change %+v", iter, c)
			}
			if c.OldStart-i != c.NewStart-len(rebuilt) {
				t.Fatalf("iteration %d: unchanged runs do not line up at %+v", iter, c)
			}
			rebuilt = append(rebuilt, a[i:c.OldStart]...)
			rebuilt = append(rebuilt, b[c.NewStart:c.NewEnd]...)
			edits += (c.OldEnd - c.OldStart) + (c.NewEnd - c.NewStart)
			i = c.OldEnd
		}
		rebuilt = append(rebuilt, a[i:]...)
		if strings.Join(rebuilt, "") != strings.Join(b, "") || len(rebuilt) != len(b) {
			t.Fatalf("iteration %d: %q → %q rebuilt as %q via %+v", iter, a, b, rebuilt, changes)
		}
		if want := len(a) + len(b) - 2*lcsLen(a, b); edits != want {
			t.Fatalf("iteration %d: %q → %q took %d edits, the shortest has %d", iter, a, b, edits, want)
		}
	}
}

func TestLineChangesLargeInput(t *testing.T) {
	// Many scattered changes in a long file must stay linear in memory and
	// still be minimal.
	var a, b []string
	for i := range 5000 {
		line := strings.Repeat("x", i%7) + "\n"
		a = append(a, line)
		if i%10 == 0 {
			b = append(b, "changed\n")
		} else {
			b = append(b, line)
		}
	}
	changes := lineChanges(a, b)
	edits := 0
	for _, c := range changes {
		edits += (c.OldEnd - c.OldStart) + (c.NewEnd - c.NewStart)
	}
	if edits != 1000 {
		t.Errorf("got %d edits, want 1000 (500 lines replaced)", edits)
	}
}

// Past maxDiffCost the diff is split heuristically: it must still turn a
// into b exactly. Without the bound, two lines replaced by 100,000 take
// O(n·D) steps (minutes) before review; a model can send that in one
// write_file.
func TestLineChangesPastTheCostBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	gen := func(n, alpha int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = strings.Repeat("l", rng.IntN(alpha)) + "\n"
		}
		return out
	}
	cases := map[string][2][]string{
		"two lines become 100,000": {{"one\n", "two\n"}, slicesRepeat("new\n", 100000)},
		"random 3000 vs 3000":      {gen(3000, 40), gen(3000, 40)},
		"random 500 vs 4000":       {gen(500, 8), gen(4000, 8)},
	}
	for name, c := range cases {
		a, b := c[0], c[1]
		changes := lineChanges(a, b)
		var rebuilt []string
		i := 0
		for _, ch := range changes {
			if ch.OldStart < i || ch.OldEnd < ch.OldStart || ch.NewEnd < ch.NewStart || ch.OldStart-i != ch.NewStart-len(rebuilt) {
				t.Fatalf("%s: malformed change %+v", name, ch)
			}
			rebuilt = append(rebuilt, a[i:ch.OldStart]...)
			rebuilt = append(rebuilt, b[ch.NewStart:ch.NewEnd]...)
			i = ch.OldEnd
		}
		rebuilt = append(rebuilt, a[i:]...)
		if strings.Join(rebuilt, "") != strings.Join(b, "") {
			t.Fatalf("%s: the changes do not rebuild the new text", name)
		}
	}
}

func slicesRepeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}
