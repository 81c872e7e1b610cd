package tools

import (
	"fmt"
	"strings"

	"github.com/qwen-ls/qwen-ls/tools/diff"
)

// A review decided hunk by hunk (tools.md §2.11, docs/protocol.md "Reviews
// and permissions"): which hunks the person kept, which they rejected and
// why, as the model is told it and as the editor shows it.

// ReviewReport is the person's decision on each hunk of a proposal, in the
// order of the hunks (the edits of qwen/proposeEdit).
type ReviewReport struct {
	Hunks []HunkReport `json:"hunks"`
}

// HunkReport is the decision on one hunk. StartLine and EndLine are the
// original lines it replaced, 1-based and inclusive; an insertion is named
// by the line it follows (the first line when it comes first).
type HunkReport struct {
	StartLine int  `json:"startLine"`
	EndLine   int  `json:"endLine"`
	Kept      bool `json:"kept"`
	// Feedback is the person's reason for rejecting the hunk, if any.
	Feedback string `json:"feedback,omitempty"`
}

// NewReviewReport describes the decisions kept (one per hunk) on hunks,
// with the reasons by hunk index; a reason for a kept hunk is left out.
func NewReviewReport(hunks []diff.Hunk, kept []bool, reasons map[int]string) *ReviewReport {
	r := &ReviewReport{Hunks: make([]HunkReport, len(hunks))}
	for i, h := range hunks {
		start, end := hunkSpan(h)
		hr := HunkReport{StartLine: start, EndLine: end, Kept: i < len(kept) && kept[i]}
		if !hr.Kept {
			hr.Feedback = oneLine(reasons[i])
		}
		r.Hunks[i] = hr
	}
	return r
}

// ReviewReportOf is NewReviewReport for the hunks of oldText → newText.
func ReviewReportOf(oldText, newText string, kept []bool, reasons map[int]string) *ReviewReport {
	return NewReviewReport(diff.Hunks(oldText, newText), kept, reasons)
}

// Kept counts the hunks kept.
func (r *ReviewReport) Kept() int {
	n := 0
	for _, h := range r.Hunks {
		if h.Kept {
			n++
		}
	}
	return n
}

// Summary is what the editor shows on the call's line: "2 of 3 changes
// kept".
func (r *ReviewReport) Summary() string {
	return fmt.Sprintf("%d of %d changes kept", r.Kept(), len(r.Hunks))
}

// HasReasons reports whether a rejected hunk carries a reason.
func (r *ReviewReport) HasReasons() bool {
	for _, h := range r.Hunks {
		if h.Feedback != "" {
			return true
		}
	}
	return false
}

// lines names a hunk's original lines as the model reads them.
func (h HunkReport) lines() string { return fmt.Sprintf("%d-%d", h.StartLine, h.EndLine) }

// partialSentence tells the model, hunk by hunk, what a partly applied
// review kept and what it rejected, with the person's reasons
// (tools.md §2.11 "partly applied", extended with the kept hunks and the
// reasons: docs/protocol.md "Where the tools differ from the spec").
func partialSentence(r *ReviewReport, feedback string) string {
	var rejected, applied []string
	for _, h := range r.Hunks {
		switch {
		case h.Kept:
			applied = append(applied, h.lines())
		case h.Feedback != "":
			rejected = append(rejected, h.lines()+" (the user's reason: "+h.Feedback+")")
		default:
			rejected = append(rejected, h.lines())
		}
	}
	msg := fmt.Sprintf("The user applied only %d of the %d proposed changes; the changes at original lines %s were rejected and not applied; those at original lines %s were applied.",
		len(applied), len(r.Hunks), strings.Join(rejected, ", "), strings.Join(applied, ", "))
	if fb := oneLine(feedback); fb != "" {
		msg += " The user's feedback: " + fb
		if !strings.HasSuffix(fb, ".") {
			msg += "."
		}
	}
	return msg
}

// RejectionReason is what the model reads when the person rejected the
// whole proposed change to abs (the scheduler sends it after
// "[Cancelled] "): the person's feedback, and when they rejected the hunks
// one by one, the reason they gave for each. The reason of a proposal's
// only hunk is its feedback.
func RejectionReason(abs, feedback string, r *ReviewReport) string {
	fb := strings.TrimSpace(feedback)
	if r != nil && len(r.Hunks) == 1 && fb == "" {
		fb = r.Hunks[0].Feedback
	}
	msg := rejectionMessage(abs, fb)
	if r == nil || len(r.Hunks) < 2 || !r.HasReasons() {
		return msg
	}
	var parts []string
	for _, h := range r.Hunks {
		if h.Feedback != "" {
			parts = append(parts, "original lines "+h.lines()+": "+h.Feedback)
		}
	}
	if !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	return msg + " The user's reasons, by change: " + strings.Join(parts, "; ")
}

// oneLine is a reason on one line, its runs of white space made single
// spaces, so that a list of reasons stays one sentence.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// hunkSpan is a hunk's original lines, 1-based and inclusive. An
// insertion replaces no line, so it is named by the line it follows (the
// first line when it comes first).
func hunkSpan(h diff.Hunk) (int, int) {
	if h.OldEnd > h.OldStart {
		return h.OldStart + 1, h.OldEnd
	}
	l := max(h.OldStart, 1)
	return l, l
}
