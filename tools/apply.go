package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/qwen-ls/qwen-ls/tools/diff"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// This file carries out an accepted change of edit, write_file and
// save_memory (tools.md §2.11, protocol.md §6.2–6.3): the hunks the editor
// reviews, what the user's answer means, the rebase onto text typed during
// the review, the write itself (into the open buffer through the editor, or
// to disk), and the message that tells the model what really happened.

// reviewOutcome is what an answer to an edit review means (tools.md §2.11).
type reviewOutcome int

const (
	// reviewAsProposed: no final text, or the proposed one.
	reviewAsProposed reviewOutcome = iota
	// reviewModified: the user changed the proposal in some other way.
	reviewModified
	// reviewPartial: the final text is the old one with a non-empty
	// proper subset of the hunks applied.
	reviewPartial
	// reviewRejected: the final text is the old text.
	reviewRejected
)

// review is an accepted answer, classified.
type review struct {
	Outcome reviewOutcome
	// Text is the text to write: the proposed text or the user's final
	// text (the old text when rejected).
	Text string
	// Report says, hunk by hunk, what the person kept and rejected: set
	// for reviewPartial, and for a proposal of several hunks that the
	// person accepted one by one.
	Report *ReviewReport
}

// classifyReview tells what an accepted review answer means (d nil: no
// review, as proposed). applyChange calls it before writing, and answers a
// "rejected" that arrives as an acceptance whose final text is the old
// text with rejectionMessage, writing nothing. The hunks kept are those d
// names, else those the final text shows.
func classifyReview(oldText, newText string, d *EditDecision) review {
	var finalText *string
	var kept []bool
	var reasons map[int]string
	if d != nil {
		finalText, kept, reasons = d.FinalText, d.Kept, d.Reasons
	}
	if finalText == nil || *finalText == newText {
		out := review{Outcome: reviewAsProposed, Text: newText}
		if len(kept) > 1 {
			out.Report = ReviewReportOf(oldText, newText, kept, reasons)
		}
		return out
	}
	final := *finalText
	if final == oldText {
		return review{Outcome: reviewRejected, Text: oldText}
	}
	hunks := diff.Hunks(oldText, newText)
	if len(kept) == len(hunks) && applyKept(oldText, hunks, kept) == final {
		return review{Outcome: reviewPartial, Text: final, Report: NewReviewReport(hunks, kept, reasons)}
	}
	if applied, ok := keptHunks(oldText, hunks, final); ok {
		return review{Outcome: reviewPartial, Text: final, Report: NewReviewReport(hunks, applied, reasons)}
	}
	return review{Outcome: reviewModified, Text: final}
}

// ApplyKept is old with only the hunks kept applied (kept has one entry
// per hunk of old → new): the text of a review decided hunk by hunk.
func ApplyKept(oldText, newText string, kept []bool) string {
	return applyKept(oldText, diff.Hunks(oldText, newText), kept)
}

func applyKept(old string, hunks []diff.Hunk, kept []bool) string {
	var b strings.Builder
	at := 0
	for i, hk := range hunks {
		b.WriteString(old[at:hk.Start])
		if i < len(kept) && kept[i] {
			b.WriteString(hk.Text)
		} else {
			b.WriteString(old[hk.Start:hk.End])
		}
		at = hk.End
	}
	b.WriteString(old[at:])
	return b.String()
}

// maxKeptPaths bounds the search of keptHunks. Real answers keep one or
// two candidate positions at a time; only contrived texts could need more,
// and those are then reported as modified.
const maxKeptPaths = 1024

// keptHunks finds which hunks final keeps, when final is old with a
// non-empty proper subset of hunks applied. Final must be the unchanged
// stretches of old with, in each hunk's place, either its old lines or its
// new ones. Since an empty old or new side can make the choice ambiguous,
// the search tracks every position in final that a choice sequence can
// reach, and prefers "applied" when two sequences reach the same place.
func keptHunks(old string, hunks []diff.Hunk, final string) ([]bool, bool) {
	n := len(hunks)
	if n < 2 {
		return nil, false
	}
	// gap(k) is the unchanged text before hunk k; gap(n) follows the last.
	gap := func(k int) string {
		start, end := 0, len(old)
		if k > 0 {
			start = hunks[k-1].End
		}
		if k < n {
			end = hunks[k].Start
		}
		return old[start:end]
	}
	if !strings.HasPrefix(final, gap(0)) {
		return nil, false
	}
	type step struct {
		prev    int
		applied bool
	}
	back := make([]map[int]step, n)
	frontier := []int{len(gap(0))}
	for k, h := range hunks {
		after := gap(k + 1)
		next := map[int]step{}
		var reached []int
		for _, pos := range frontier {
			for _, applied := range [2]bool{true, false} {
				seg := old[h.Start:h.End]
				if applied {
					seg = h.Text
				}
				rest := final[pos:]
				if !strings.HasPrefix(rest, seg) || !strings.HasPrefix(rest[len(seg):], after) {
					continue
				}
				np := pos + len(seg) + len(after)
				if _, seen := next[np]; !seen {
					next[np] = step{prev: pos, applied: applied}
					reached = append(reached, np)
				}
			}
		}
		if len(reached) == 0 || len(reached) > maxKeptPaths {
			return nil, false
		}
		back[k], frontier = next, reached
	}
	if _, ok := back[n-1][len(final)]; !ok {
		return nil, false
	}
	applied := make([]bool, n)
	kept := 0
	for k, pos := n-1, len(final); k >= 0; k-- {
		s := back[k][pos]
		applied[k] = s.applied
		if s.applied {
			kept++
		}
		pos = s.prev
	}
	return applied, kept > 0 && kept < n
}

// rejectionMessage is the reason the model reads when the user rejected a
// proposed change to abs (tools.md §2.11), with the user's feedback when
// there is any. The scheduler makes the call cancelled and sends
// "[Cancelled] " + this text (§5.5).
func rejectionMessage(abs, feedback string) string {
	msg := fmt.Sprintf("The user rejected the proposed change to %s; the file was not modified.", abs)
	if fb := strings.TrimSpace(feedback); fb != "" {
		msg += " The user's feedback: " + fb
	}
	return msg
}

// rejectionDisplay is the display of a rejected change: the proposal, as
// the review showed it.
func rejectionDisplay(c *EditConfirmation) *FileDiff {
	d := &FileDiff{FileName: filepath.Base(c.FilePath), FilePath: c.FilePath, FileDiff: c.FileDiff, NewContent: c.NewText}
	if !c.IsNewFile {
		old := c.OldText
		d.OriginalContent = &old
	}
	return d
}

// bufferDenied is the answer when abs is open and the editor cannot change
// open buffers (protocol.md §6.3), checked before any review and again
// before writing.
func bufferDenied(abs string) *ToolError {
	return Errorf(ErrorExecutionDenied,
		"%s is open in the editor, and this editor cannot apply changes to open files. Ask the user to save and close the file, then try again.", abs)
}

// checkBufferWritable refuses a change to an open buffer that the editor of
// call cannot make.
func checkBufferWritable(call *Call, snap *workspace.Snapshot) *ToolError {
	if snap == nil || snap.Source != workspace.FromBuffer {
		return nil
	}
	if call.Host == nil || !call.Host.CanApplyToBuffers() {
		return bufferDenied(snap.Path)
	}
	return nil
}

// changeProposal builds the edit confirmation of a change of abs from its current
// snapshot (nil for a new file) to newText. titleVerb is "Confirm Edit" or
// "Confirm Write".
func (e *Env) changeProposal(abs, titleVerb string, snap *workspace.Snapshot, newText string) *Confirmation {
	rel := e.Rel(abs)
	c := &EditConfirmation{FilePath: abs, NewText: newText, IsNewFile: snap == nil}
	if snap != nil {
		c.OldText = snap.Text
		if snap.Source == workspace.FromBuffer {
			v := snap.Version
			c.Version = &v
		}
	}
	c.FileDiff = diff.Unified(rel, diff.Current, diff.Proposed, c.OldText, newText)
	return &Confirmation{Title: titleVerb + ": " + readTitlePath(rel), Details: c}
}

// proposalOf returns the proposal kept on call, or computes it when the
// caller did not keep one (a direct Execute without ShouldConfirm).
func proposalOf(ctx context.Context, tool Tool, call *Call, params map[string]any) (*EditConfirmation, *ToolError) {
	if call.Confirmation != nil {
		if c, ok := call.Confirmation.Details.(*EditConfirmation); ok {
			return c, nil
		}
	}
	conf, terr := tool.ShouldConfirm(ctx, call, params)
	if terr != nil {
		return nil, terr
	}
	c, ok := conf.Details.(*EditConfirmation)
	if !ok {
		return nil, Errorf(errorUnknown, "the %s tool made no edit proposal", tool.Name())
	}
	return c, nil
}

// applyChange carries out the accepted proposal c (tools.md §2.11) with the
// answer in call.Decision, and returns what the model and the user are
// told. base is the tool's success sentence; snippetAsProposed says whether
// a change applied as proposed shows the changed region (edit) or not
// (write_file, save_memory). The tool's match is never run again here: the
// text written is the proposal's (or the user's), rebased onto the current
// text when the user typed during the review.
func (e *Env) applyChange(ctx context.Context, call *Call, c *EditConfirmation, base string, snippetAsProposed bool) (Result, error) {
	abs := c.FilePath
	review := classifyReview(c.OldText, c.NewText, call.Decision)
	if review.Outcome == reviewRejected {
		// The scheduler answers rejections itself; should one get here,
		// nothing is written and the result is still no success.
		return Result{Error: NewError(ErrorExecutionDenied, rejectionMessage(abs, "")), Display: rejectionDisplay(c)}, nil
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}

	syncBeforeChange(ctx, call, abs)
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	snap, err := e.Workspace.ReadText(abs)
	switch {
	case missing(err):
		snap = nil
	case err != nil:
		return Result{Error: notWritable(abs, err)}, nil
	}
	if terr := checkBufferWritable(call, snap); terr != nil {
		return Result{Error: terr}, nil
	}
	current := ""
	if snap != nil {
		current = snap.Text
	}
	toWrite, proposed := review.Text, c.NewText
	if snap == nil && !c.IsNewFile {
		// Deleted during the review: there is nothing to change any more.
		return Result{Error: changedDuringReview(abs)}, nil
	}
	if current != c.OldText {
		rebased, ok := rebase(c.OldText, toWrite, current)
		if !ok {
			return Result{Error: changedDuringReview(abs)}, nil
		}
		toWrite = rebased
		if p, ok := rebase(c.OldText, c.NewText, current); ok {
			proposed = p
		}
	}

	toWrite, unsaved, terr, err := e.writeChange(ctx, call, abs, snap, toWrite)
	if terr != nil || err != nil {
		return Result{Error: terr}, err
	}

	msg := base
	if unsaved {
		msg += " " + unsavedSentence
	}
	switch review.Outcome {
	case reviewAsProposed:
		if snippetAsProposed {
			msg += " " + changeSnippet(current, toWrite)
		}
	case reviewModified:
		msg += " The user modified your proposal before it was applied, so the file differs from what you proposed. " +
			changeSnippet(proposed, toWrite)
	case reviewPartial:
		feedback := ""
		if call.Decision != nil {
			feedback = call.Decision.Feedback
		}
		msg += " " + partialSentence(review.Report, feedback) + " " + changeSnippet(proposed, toWrite)
	}

	display := &FileDiff{
		FileName:   filepath.Base(abs),
		FilePath:   abs,
		FileDiff:   diff.Unified(e.Rel(abs), diff.Original, diff.Written, current, toWrite),
		NewContent: toWrite,
		Review:     review.Report,
	}
	if snap != nil {
		display.OriginalContent = &current
	}
	return Result{LLMContent: []Part{TextPart(msg)}, Display: display}, nil
}

// writeChange puts text into the open buffer of abs through the editor, or onto
// the disk, and records it in the ledger. It returns the text as written
// (a CRLF file gets "\r\n" throughout), and whether the editor that took
// it holds it unsaved. A Go error means the turn ends.
func (e *Env) writeChange(ctx context.Context, call *Call, abs string, snap *workspace.Snapshot, text string) (written string, unsaved bool, terr *ToolError, err error) {
	if cf := clientFiles(call); cf != nil {
		out := text
		if snap != nil && snap.Format.CRLF {
			out = crlfText(text)
		}
		handled, werr := cf.WriteFile(ctx, call.SessionID, abs, out)
		if handled {
			if werr != nil {
				if ctx.Err() != nil {
					return "", false, nil, ctx.Err()
				}
				return "", false, Errorf(errorFileWriteFailure, "The editor did not write the change to %s: %s. The file was not modified.", abs, rootCause(werr)), nil
			}
			before := int32(0)
			if snap != nil {
				before = snap.Version
			}
			e.recordBufferWrite(call.Ledger, abs, before, out)
			return out, e.unsavedInEditor(abs, out), nil, nil
		}
	}
	if snap != nil && snap.Source == workspace.FromBuffer {
		if err := call.Host.ApplyToBuffer(ctx, abs, snap.Version, text); err != nil {
			var refused *BufferEditError
			if !errors.As(err, &refused) {
				return "", false, nil, err // cancellation or a lost editor
			}
			reason := refused.Reason
			if reason == "" {
				reason = "no reason given"
			}
			return "", false, Errorf(errorFileWriteFailure, "The editor did not apply the change to %s: %s. The file was not modified.", abs, reason), nil
		}
		e.recordBufferWrite(call.Ledger, abs, snap.Version, text)
		return text, false, nil, nil
	}
	format := e.newFileFormat()
	if snap != nil {
		format = snap.Format
	}
	if format.CRLF {
		// What the disk will hold, so that the display and the snippet
		// show it.
		text = crlfText(text)
	}
	if terr := e.writeDisk(call.Ledger, abs, text, format); terr != nil {
		return "", false, terr, nil
	}
	return text, false, nil, nil
}

// unsavedSentence tells the model that a change written through the editor
// is not on disk yet.
const unsavedSentence = "The editor holds the change but has not saved it to disk yet, so shell commands see the previous version until it is saved."

// unsavedInEditor reports whether abs is a buffer holding text that the
// disk does not (yet) hold.
func (e *Env) unsavedInEditor(abs, text string) bool {
	b, ok := e.Workspace.Overlay.Get(abs)
	return ok && b.Text == text && b.Dirty
}

// changedDuringReview is the conflict answer of §2.11.
func changedDuringReview(abs string) *ToolError {
	return Errorf(errorFileChangedSinceRead,
		"File %s changed while your change was being reviewed, and the change no longer applies cleanly; nothing was written. Re-read the file with read_file and try again.", abs)
}

// rebase applies the line hunks of base → target to current, a later
// version of base (the user typed during the review). It refuses (false)
// when one of those hunks overlaps or touches a region where current
// differs from base.
func rebase(base, target, current string) (string, bool) {
	ours := diff.LineChanges(base, target)
	theirs := diff.LineChanges(base, current)
	for i, j := 0, 0; i < len(ours) && j < len(theirs); {
		o, t := ours[i], theirs[j]
		if o.OldStart <= t.OldEnd && t.OldStart <= o.OldEnd {
			return "", false
		}
		if o.OldEnd < t.OldStart {
			i++
		} else {
			j++
		}
	}
	a, ourLines, theirLines := diff.SplitLines(base), diff.SplitLines(target), diff.SplitLines(current)
	var b strings.Builder
	b.Grow(len(current) + len(target) - len(base))
	next := 0 // the next line of base not yet copied
	take := func(c diff.LineChange, src []string) {
		for ; next < c.OldStart; next++ {
			b.WriteString(a[next])
		}
		for k := c.NewStart; k < c.NewEnd; k++ {
			b.WriteString(src[k])
		}
		next = c.OldEnd
	}
	i, j := 0, 0
	for i < len(ours) || j < len(theirs) {
		if j == len(theirs) || i < len(ours) && ours[i].OldStart < theirs[j].OldStart {
			take(ours[i], ourLines)
			i++
		} else {
			take(theirs[j], theirLines)
			j++
		}
	}
	for ; next < len(a); next++ {
		b.WriteString(a[next])
	}
	return b.String(), true
}

// The limits of a changed-region snippet (tools.md §2.11).
const (
	snippetContext  = 4
	snippetMaxLines = 1000
)

// changeSnippet is <snippet(A→B)> of tools.md §2.11: the lines of b where
// it differs from a (lines compared from both ends), with 4 lines of
// context each side, numbered from 1. Line endings are shown as "\n".
func changeSnippet(a, b string) string {
	la, lb := diff.SplitLines(a), diff.SplitLines(b)
	if len(lb) == 0 {
		return "The file is now empty."
	}
	p := 0
	for p < len(la) && p < len(lb) && la[p] == lb[p] {
		p++
	}
	s := 0
	for s < len(la)-p && s < len(lb)-p && la[len(la)-1-s] == lb[len(lb)-1-s] {
		s++
	}
	from, to := p, len(lb)-s
	if to-from > snippetMaxLines {
		return "The changed region is too long to show; read the file again before editing it further."
	}
	start, end := max(0, from-snippetContext), min(len(lb), to+snippetContext)
	shown := make([]string, 0, end-start)
	for _, l := range lb[start:end] {
		l = strings.TrimSuffix(l, "\n")
		shown = append(shown, strings.TrimSuffix(l, "\r"))
	}
	return fmt.Sprintf("The file now reads (lines %d-%d of %d):\n\n---\n\n%s", start+1, end, len(lb), strings.Join(shown, "\n"))
}

// newFileFormat is the format of a file the tools create: UTF-8, with a BOM
// only when general.defaultFileEncoding is utf-8-bom (tools.md §2.5), and
// the system's line endings (CRLF on Windows).
func (e *Env) newFileFormat() workspace.TextFormat {
	f := workspace.TextFormat{CRLF: e.Workspace.Paths.PathFlavor().CRLF()}
	if strings.EqualFold(e.Settings().String("general.defaultFileEncoding", "utf-8"), "utf-8-bom") {
		f.BOM = []byte(workspace.BOMUTF8)
	}
	return f
}

// crlfText gives every line ending of s the form "\r\n" (tools.md §2.5).
func crlfText(s string) string {
	return string(workspace.EncodeText(s, workspace.TextFormat{CRLF: true}))
}

// writeDisk writes text to abs in format f, atomically (tools.md §2.5), and
// records the text as the file now holds it in the ledger.
func (e *Env) writeDisk(l *Ledger, abs, text string, f workspace.TextFormat) *ToolError {
	if err := workspace.WriteTextIn(abs, text, f, e.openedInsideFor(abs, pathOptions{})); err != nil {
		return notWritable(abs, err)
	}
	// Read back through the tools' own view, so that the entry is what a
	// later read sees: the text really written, with its mtime and size.
	if snap, err := e.Workspace.ReadText(abs); err == nil {
		l.record(abs, entryFor(snap, true, true, ""))
	}
	return nil
}

// recordBufferWrite records a change made to an open buffer. The editor
// gave the buffer a new version; if the buffer already moved past the
// written text, the entry keeps the version the change was made on, which
// the buffer no longer has, so the hash decides.
func (e *Env) recordBufferWrite(l *Ledger, abs string, before int32, text string) {
	entry := ledgerEntry{Source: workspace.FromBuffer, Version: before, Hash: hashText(text), Full: true, Editable: true}
	if b, ok := e.Workspace.Overlay.Get(abs); ok && b.Text == text {
		entry.Version = b.Version
	}
	l.record(abs, entry)
}

// notWritable maps a failed write (or a failed look at the target before
// it) to the errors of tools.md §2.11.
func notWritable(abs string, err error) *ToolError {
	var nr *workspace.NotRegularError
	switch {
	case errors.As(err, &nr) && nr.Dir, errors.Is(err, syscall.EISDIR):
		return Errorf(errorTargetIsDirectory, "%s is a directory, not a file.", abs)
	case errors.As(err, &nr):
		return notRegularFile(abs)
	case errors.Is(err, fs.ErrPermission):
		return Errorf(errorPermissionDenied, "Permission denied: cannot write %s (EACCES).", abs)
	case errors.Is(err, syscall.ENOSPC):
		return Errorf(errorNoSpaceLeft, "No space left on device while writing %s (ENOSPC)", abs)
	}
	return Errorf(errorFileWriteFailure, "Could not write %s: %s", abs, rootCause(err))
}

// rootCause is the text of the innermost error err wraps: "not a
// directory" rather than the whole chain of operations.
func rootCause(err error) string {
	for {
		inner := errors.Unwrap(err)
		if inner == nil {
			return err.Error()
		}
		err = inner
	}
}
