package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools/diff"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// String names an outcome in test failures.
func (o reviewOutcome) String() string {
	switch o {
	case reviewAsProposed:
		return "as proposed"
	case reviewModified:
		return "modified"
	case reviewPartial:
		return "partly applied"
	case reviewRejected:
		return "rejected"
	}
	return fmt.Sprintf("ReviewOutcome(%d)", int(o))
}

// applyHunks rebuilds the new text from the old one and its hunks.
func applyHunks(old string, hunks []diff.Hunk) string {
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

// keptOf is which hunks a classified review kept.
func keptOf(r review) []bool {
	if r.Report == nil {
		return nil
	}
	out := make([]bool, len(r.Report.Hunks))
	for i, h := range r.Report.Hunks {
		out[i] = h.Kept
	}
	return out
}

func TestClassifyReview(t *testing.T) {
	old := "a\nb\nc\nd\ne\n"
	proposed := "a\nB\nc\nd\nE\n"
	str := func(s string) *EditDecision { return &EditDecision{FinalText: &s} }

	if r := classifyReview(old, proposed, nil); r.Outcome != reviewAsProposed || r.Text != proposed {
		t.Errorf("no final text: %v %q", r.Outcome, r.Text)
	}
	if r := classifyReview(old, proposed, str(proposed)); r.Outcome != reviewAsProposed {
		t.Errorf("final == new: %v", r.Outcome)
	}
	if r := classifyReview(old, proposed, str(old)); r.Outcome != reviewRejected || r.Text != old {
		t.Errorf("final == old: %v", r.Outcome)
	}
	r := classifyReview(old, proposed, str("a\nb\nc\nd\nE\n"))
	if r.Outcome != reviewPartial || r.Text != "a\nb\nc\nd\nE\n" || !reflect.DeepEqual(keptOf(r), []bool{false, true}) || len(r.Report.Hunks) != 2 {
		t.Errorf("one of two hunks: %+v", r)
	}
	if r := classifyReview(old, proposed, str("a\nB\nc\nd\nEE\n")); r.Outcome != reviewModified {
		t.Errorf("typed into a hunk: %v", r.Outcome)
	}
	if r := classifyReview(old, proposed, str("a\nb\nc\nX\ne\n")); r.Outcome != reviewModified {
		t.Errorf("typed outside the hunks: %v", r.Outcome)
	}
	// With a single hunk there is no proper non-empty subset.
	if r := classifyReview("a\nb\n", "a\nc\n", str("a\nd\n")); r.Outcome != reviewModified {
		t.Errorf("single hunk changed: %v", r.Outcome)
	}
}

func TestClassifyReviewWithEmptySides(t *testing.T) {
	// An insertion (empty old side) next to a deletion (empty new side):
	// the kept subset must still be found exactly.
	old := "a\nb\nc\nd\n"
	proposed := "a\nx\nb\nc\n" // insert x after a, delete d
	hunks := diff.Hunks(old, proposed)
	if len(hunks) != 2 {
		t.Fatalf("hunks = %+v", hunks)
	}
	for mask := 1; mask < 3; mask++ {
		var kept []diff.Hunk
		want := make([]bool, 2)
		for i, h := range hunks {
			if mask&(1<<i) != 0 {
				kept = append(kept, h)
				want[i] = true
			}
		}
		final := applyHunks(old, kept)
		r := classifyReview(old, proposed, &EditDecision{FinalText: &final})
		if r.Outcome != reviewPartial || !reflect.DeepEqual(keptOf(r), want) {
			t.Errorf("mask %b: final %q gave %v %v, want partial %v", mask, final, r.Outcome, keptOf(r), want)
		}
	}
}

func TestClassifyReviewEverySubset(t *testing.T) {
	var oldLines, newLines []string
	for i := range 12 {
		oldLines = append(oldLines, fmt.Sprintf("line %d\n", i))
		if i%3 == 1 {
			newLines = append(newLines, fmt.Sprintf("LINE %d\n", i))
		} else {
			newLines = append(newLines, fmt.Sprintf("line %d\n", i))
		}
	}
	old, proposed := strings.Join(oldLines, ""), strings.Join(newLines, "")
	hunks := diff.Hunks(old, proposed)
	if len(hunks) != 4 {
		t.Fatalf("%d hunks", len(hunks))
	}
	for mask := 0; mask < 16; mask++ {
		var kept []diff.Hunk
		for i, h := range hunks {
			if mask&(1<<i) != 0 {
				kept = append(kept, h)
			}
		}
		final := applyHunks(old, kept)
		r := classifyReview(old, proposed, &EditDecision{FinalText: &final})
		want := reviewPartial
		switch mask {
		case 0:
			want = reviewRejected
		case 15:
			want = reviewAsProposed
		}
		if r.Outcome != want {
			t.Errorf("mask %04b: %v, want %v", mask, r.Outcome, want)
			continue
		}
		if want == reviewPartial {
			for i := range hunks {
				if keptOf(r)[i] != (mask&(1<<i) != 0) {
					t.Errorf("mask %04b: applied %v", mask, keptOf(r))
				}
			}
		}
	}
}

func TestRebase(t *testing.T) {
	base := "1\n2\n3\n4\n5\n6\n7\n8\n"
	target := "1\n2\nTWO-THREE\n4\n5\n6\n7\n8\n" // line 3 changed
	tests := []struct {
		name, current, want string
		ok                  bool
	}{
		{name: "unchanged", current: base, want: target, ok: true},
		{name: "typed far below", current: "1\n2\n3\n4\n5\n6\nseven\n8\n", want: "1\n2\nTWO-THREE\n4\n5\n6\nseven\n8\n", ok: true},
		{name: "typed above", current: "one\n2\n3\n4\n5\n6\n7\n8\n", want: "one\n2\nTWO-THREE\n4\n5\n6\n7\n8\n", ok: true},
		{name: "lines inserted above shift the hunk", current: "0\n1\n2\n3\n4\n5\n6\n7\n8\n", want: "0\n1\n2\nTWO-THREE\n4\n5\n6\n7\n8\n", ok: true},
		{name: "typed inside the changed line", current: "1\n2\n3!\n4\n5\n6\n7\n8\n", ok: false},
		{name: "typed on the line just after", current: "1\n2\n3\n4!\n5\n6\n7\n8\n", ok: false},
		{name: "typed on the line just before", current: "1\n2!\n3\n4\n5\n6\n7\n8\n", ok: false},
		{name: "a line inserted right before", current: "1\n2\nnew\n3\n4\n5\n6\n7\n8\n", ok: false},
		{name: "everything deleted", current: "", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := rebase(base, target, tt.current)
			if ok != tt.ok || ok && got != tt.want {
				t.Fatalf("rebase = %q, %v; want %q, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
	// An insertion touches the changes at its position on either side.
	if _, ok := rebase("a\nb\n", "a\nx\nb\n", "a!\nb\n"); ok {
		t.Error("an insertion after a changed line was rebased")
	}
	if got, ok := rebase("a\nb\nc\nd\n", "a\nx\nb\nc\nd\n", "a\nb\nc\nD\n"); !ok || got != "a\nx\nb\nc\nD\n" {
		t.Errorf("insertion far from the typing: %q %v", got, ok)
	}
}

func numbered(from, to int, final bool) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "Line %d", i)
		if i < to || final {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func TestChangeSnippet(t *testing.T) {
	old := numbered(1, 20, false)
	changed := strings.Replace(old, "Line 10\n", "Line ten\n", 1)
	want := "The file now reads (lines 6-14 of 20):\n\n---\n\nLine 6\nLine 7\nLine 8\nLine 9\nLine ten\nLine 11\nLine 12\nLine 13\nLine 14"
	if got := changeSnippet(old, changed); got != want {
		t.Errorf("snippet:\n%s\nwant:\n%s", got, want)
	}
	// Near the edges the context is cut short; a deletion shows the lines
	// around the place where lines went.
	if got := changeSnippet("a\nb\nc\n", "a\nc\n"); got != "The file now reads (lines 1-2 of 2):\n\n---\n\na\nc" {
		t.Errorf("deletion: %q", got)
	}
	if got := changeSnippet("", "x\r\ny\r\n"); got != "The file now reads (lines 1-2 of 2):\n\n---\n\nx\ny" {
		t.Errorf("new file: %q", got)
	}
	if got := changeSnippet("a\n", ""); got != "The file is now empty." {
		t.Errorf("emptied: %q", got)
	}
	long := numbered(1, 1001, true)
	if got := changeSnippet("", long); got != "The changed region is too long to show; read the file again before editing it further." {
		t.Errorf("1001 new lines: %q", got[:60])
	}
	if got := changeSnippet("", numbered(1, 1000, true)); !strings.HasPrefix(got, "The file now reads (lines 1-1000 of 1000):") {
		t.Errorf("1000 new lines: %q", got[:60])
	}
}

func TestHunkLines(t *testing.T) {
	for _, tt := range []struct {
		h    diff.Hunk
		want string
	}{
		{diff.Hunk{OldStart: 4, OldEnd: 7}, "5-7"},
		{diff.Hunk{OldStart: 0, OldEnd: 1}, "1-1"},
		{diff.Hunk{OldStart: 3, OldEnd: 3}, "3-3"},
		{diff.Hunk{OldStart: 0, OldEnd: 0}, "1-1"},
	} {
		start, end := hunkSpan(tt.h)
		if got := fmt.Sprintf("%d-%d", start, end); got != tt.want {
			t.Errorf("hunkSpan(%+v) = %s, want %s", tt.h, got, tt.want)
		}
	}
}

func TestNotWritable(t *testing.T) {
	const abs = "/w/a.txt"
	pathErr := func(errno syscall.Errno) error {
		return fmt.Errorf("write %s: %w", abs, &fs.PathError{Op: "open", Path: abs, Err: errno})
	}
	tests := []struct {
		err  error
		typ  ErrorType
		want string
	}{
		{pathErr(syscall.EACCES), errorPermissionDenied, "Permission denied: cannot write /w/a.txt (EACCES)."},
		{pathErr(syscall.EPERM), errorPermissionDenied, "Permission denied: cannot write /w/a.txt (EACCES)."},
		{pathErr(syscall.ENOSPC), errorNoSpaceLeft, "No space left on device while writing /w/a.txt (ENOSPC)"},
		{pathErr(syscall.EISDIR), errorTargetIsDirectory, "/w/a.txt is a directory, not a file."},
		{&workspace.NotRegularError{Path: abs, Dir: true}, errorTargetIsDirectory, "/w/a.txt is a directory, not a file."},
		{&workspace.NotRegularError{Path: abs}, errorEditRequiresPriorRead, "/w/a.txt is a FIFO, socket or device; this tool cannot change it."},
		{pathErr(syscall.EROFS), errorFileWriteFailure, "Could not write /w/a.txt: read-only file system"},
		{errors.New("disk on fire"), errorFileWriteFailure, "Could not write /w/a.txt: disk on fire"},
	}
	for _, tt := range tests {
		got := notWritable(abs, tt.err)
		if got.Type != tt.typ || got.Message != tt.want {
			t.Errorf("notWritable(%v) = %s %q, want %s %q", tt.err, got.Type, got.Message, tt.typ, tt.want)
		}
	}
}

func TestRejection(t *testing.T) {
	if got := rejectionMessage("/w/a.txt", ""); got != "The user rejected the proposed change to /w/a.txt; the file was not modified." {
		t.Errorf("without feedback: %q", got)
	}
	if got := rejectionMessage("/w/a.txt", "  use tabs \n"); got != "The user rejected the proposed change to /w/a.txt; the file was not modified. The user's feedback: use tabs" {
		t.Errorf("with feedback: %q", got)
	}
	c := &EditConfirmation{FilePath: "/w/d/a.txt", OldText: "a\n", NewText: "b\n", FileDiff: "diff"}
	d := rejectionDisplay(c)
	if d.FileName != "a.txt" || d.FilePath != c.FilePath || d.FileDiff != "diff" || d.NewContent != "b\n" ||
		d.OriginalContent == nil || *d.OriginalContent != "a\n" {
		t.Errorf("display = %+v", d)
	}
	if d := rejectionDisplay(&EditConfirmation{FilePath: "/w/n.txt", NewText: "x", IsNewFile: true}); d.OriginalContent != nil {
		t.Errorf("a new file's display has original content %q", *d.OriginalContent)
	}
}
