package diff

// Hunk is one line hunk of a change from an old text to a new one, as
// qwen/proposeEdit sends it (protocol.md §6.2): whole lines, no context,
// changes with no unchanged line between them merged. Hunks are the units
// the user accepts or rejects one by one.
type Hunk struct {
	// OldStart and OldEnd are the 0-based lines [OldStart, OldEnd) of the
	// old text that the hunk replaces; an insertion has OldStart == OldEnd.
	OldStart, OldEnd int
	// Start and End are the same range as byte offsets in the old text:
	// column 0 of line OldStart, and column 0 of line OldEnd (the end of
	// the text when there is no such line). An insertion is the empty
	// range at column 0 of line OldStart.
	Start, End int
	// NewStart and NewEnd are the lines of the new text that replace them.
	NewStart, NewEnd int
	// Text is the replacement: lines [NewStart, NewEnd) of the new text,
	// with their line endings.
	Text string
}

// Hunks returns the line hunks of oldText → newText, in order; none when
// the texts are equal. The rpc layer turns Start and End into LSP ranges.
func Hunks(oldText, newText string) []Hunk {
	changes := LineChanges(oldText, newText)
	if len(changes) == 0 {
		return nil
	}
	oldOff := lineOffsets(SplitLines(oldText))
	newOff := lineOffsets(SplitLines(newText))
	out := make([]Hunk, len(changes))
	for i, c := range changes {
		out[i] = Hunk{
			OldStart: c.OldStart, OldEnd: c.OldEnd,
			Start: oldOff[c.OldStart], End: oldOff[c.OldEnd],
			NewStart: c.NewStart, NewEnd: c.NewEnd,
			Text: newText[newOff[c.NewStart]:newOff[c.NewEnd]],
		}
	}
	return out
}

// lineOffsets returns the byte offset at which each line starts, plus the
// length of the text as a last element.
func lineOffsets(lines []string) []int {
	off := make([]int, len(lines)+1)
	for i, l := range lines {
		off[i+1] = off[i] + len(l)
	}
	return off
}
