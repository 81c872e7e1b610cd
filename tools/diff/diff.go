package diff

import (
	"fmt"
	"io"
	"strings"
)

// The labels of unified diff headers (tools.md §1.2): confirmations compare
// Current with Proposed, results Original with Written.
const (
	Current  = "Current"
	Proposed = "Proposed"
	Original = "Original"
	Written  = "Written"
)

// diffContext is the number of unchanged lines around each change.
const diffContext = 3

// LineChange is one run of changed lines: old lines [OldStart, OldEnd) are
// replaced by new lines [NewStart, NewEnd) (0-based). An empty old range is
// an insertion, an empty new range a deletion.
type LineChange struct {
	OldStart, OldEnd int
	NewStart, NewEnd int
}

// SplitLines splits text into lines that keep their "\n" (and "\r\n"); the
// last line lacks it when the text does not end with a newline. "" has no
// lines.
func SplitLines(text string) []string {
	if text == "" {
		return nil
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// LineChanges returns the changes that turn oldText into newText, in order,
// as found by a shortest (Myers) line diff. Lines compare with their line
// endings, so a lost final newline or a CRLF/LF switch is a change.
func LineChanges(oldText, newText string) []LineChange {
	a, b := SplitLines(oldText), SplitLines(newText)
	return lineChanges(a, b)
}

func lineChanges(a, b []string) []LineChange {
	d := &lineDiff{
		a: a, b: b,
		delA: make([]bool, len(a)),
		insB: make([]bool, len(b)),
	}
	d.compare(0, len(a), 0, len(b))
	var out []LineChange
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		if i < len(a) && j < len(b) && !d.delA[i] && !d.insB[j] {
			i++
			j++
			continue
		}
		c := LineChange{OldStart: i, NewStart: j}
		for i < len(a) && d.delA[i] {
			i++
		}
		for j < len(b) && d.insB[j] {
			j++
		}
		c.OldEnd, c.NewEnd = i, j
		out = append(out, c)
	}
	return out
}

// lineDiff marks which lines of a are deleted and which of b are inserted,
// using Myers' O(ND) algorithm in its linear-space form: find the middle of
// a shortest edit path, then solve the two halves.
type lineDiff struct {
	a, b []string
	delA []bool
	insB []bool
	// v is scratch space for the forward and backward frontiers.
	vf, vb []int
}

func (d *lineDiff) compare(aLo, aHi, bLo, bHi int) {
	for aLo < aHi && bLo < bHi && d.a[aLo] == d.b[bLo] {
		aLo++
		bLo++
	}
	for aLo < aHi && bLo < bHi && d.a[aHi-1] == d.b[bHi-1] {
		aHi--
		bHi--
	}
	if aLo < aHi && bLo < bHi {
		x, y := d.middle(aLo, aHi, bLo, bHi)
		if (x > aLo || y > bLo) && (x < aHi || y < bHi) {
			d.compare(aLo, x, bLo, y)
			d.compare(x, aHi, y, bHi)
			return
		}
		// middle always splits; this only guards against endless recursion.
	}
	for i := aLo; i < aHi; i++ {
		d.delA[i] = true
	}
	for j := bLo; j < bHi; j++ {
		d.insB[j] = true
	}
}

// middle returns a point (x, y) on a shortest edit path from (aLo, bLo) to
// (aHi, bHi). When the ranges are non-empty and start and end with differing
// lines, the point is neither end, so both halves are smaller.
//
// Diagonal k holds the points with x-y = k (relative to aLo, bLo). vf[k] is
// the furthest x a forward path of the current cost reaches on diagonal k,
// -1 when none does; vb[c] is the furthest distance from the end that a
// backward path reaches on backward diagonal c, which is forward diagonal
// delta-c. The two searches alternate until their frontiers overlap.
func (d *lineDiff) middle(aLo, aHi, bLo, bHi int) (int, int) {
	n, m := aHi-aLo, bHi-bLo
	delta := n - m
	odd := delta&1 != 0
	maxD := (n + m + 1) / 2
	off := maxD + 1
	size := 2*maxD + 3
	if cap(d.vf) < size {
		d.vf = make([]int, size)
		d.vb = make([]int, size)
	}
	vf, vb := d.vf[:size], d.vb[:size]

	for cost := 0; cost <= maxD; cost++ {
		if cost > maxDiffCost {
			// Too expensive: a shortest path would cost O((n+m)·D),
			// which for a rewrite of a large file (or 100,000 lines
			// replacing two) is minutes. Split at the point the
			// forward search got furthest instead; the diff stays
			// correct, just not always the smallest.
			return d.furthest(vf, off, cost-1, aLo, bLo, n, m)
		}
		for k := -cost; k <= cost; k += 2 {
			x := frontier(vf, off, k, cost, n, m)
			if x < 0 {
				vf[off+k] = -1
				continue
			}
			y := x - k
			for x < n && y < m && d.a[aLo+x] == d.b[bLo+y] {
				x++
				y++
			}
			vf[off+k] = x
			if c := delta - k; odd && c >= -(cost-1) && c <= cost-1 && vb[off+c] >= 0 && x+vb[off+c] >= n {
				return aLo + x, bLo + y
			}
		}
		for c := -cost; c <= cost; c += 2 {
			u := frontier(vb, off, c, cost, n, m)
			if u < 0 {
				vb[off+c] = -1
				continue
			}
			v := u - c
			for u < n && v < m && d.a[aHi-1-u] == d.b[bHi-1-v] {
				u++
				v++
			}
			vb[off+c] = u
			if k := delta - c; !odd && k >= -cost && k <= cost && vf[off+k] >= 0 && vf[off+k]+u >= n {
				return aHi - u, bHi - v
			}
		}
	}
	// Unreachable: the frontiers meet by cost maxD at the latest.
	panic(fmt.Sprintf("line diff: no middle snake for %d×%d lines", n, m))
}

// maxDiffCost bounds the edit cost one middle search explores. Edits of
// up to this many lines get a shortest diff; beyond it the diff is split
// heuristically, so a diff of any size takes time linear in its size
// times this bound.
const maxDiffCost = 256

// furthest returns the point of the forward frontier of the given cost
// that lies furthest along (largest x+y).
func (d *lineDiff) furthest(vf []int, off, cost, aLo, bLo, n, m int) (int, int) {
	bx, by := 0, 0
	for k := -cost; k <= cost; k += 2 {
		x := vf[off+k]
		if x < 0 {
			continue
		}
		if y := x - k; y >= 0 && y <= m && x <= n && x+y > bx+by {
			bx, by = x, y
		}
	}
	return aLo + bx, bLo + by
}

// frontier returns where a path of the given cost first lands on diagonal k,
// before following equal lines: one step down from diagonal k+1 or one step
// right from diagonal k-1 (whichever goes further), on the n×m grid; -1 when
// neither is possible.
func frontier(v []int, off, k, cost, n, m int) int {
	if cost == 0 {
		return 0
	}
	x := -1
	if k+1 <= cost-1 {
		if down := v[off+k+1]; down >= 0 && down-k <= m {
			x = down
		}
	}
	if k-1 >= -(cost - 1) {
		if right := v[off+k-1]; right >= 0 && right+1 <= n && right+1 > x {
			x = right + 1
		}
	}
	return x
}

// Unified renders the change from oldText to newText as a unified diff
// (tools.md §1.2): headers "--- <rel>\t<oldLabel>" and "+++ <rel>\t<newLabel>",
// hunks with 3 lines of context, and "\ No newline at end of file" after a
// last line without one. Equal texts give "".
func Unified(rel, oldLabel, newLabel, oldText, newText string) string {
	a, b := SplitLines(oldText), SplitLines(newText)
	changes := lineChanges(a, b)
	if len(changes) == 0 {
		return ""
	}
	write := func(w diffWriter) {
		fmt.Fprintf(w, "--- %s\t%s\n+++ %s\t%s\n", rel, oldLabel, rel, newLabel)
		for rest := changes; len(rest) > 0; {
			// A hunk takes changes while the unchanged gap between them
			// is at most twice the context.
			n := 1
			for n < len(rest) && rest[n].OldStart-rest[n-1].OldEnd <= 2*diffContext {
				n++
			}
			writeHunk(w, a, b, rest[:n])
			rest = rest[n:]
		}
	}
	// Measured first, then written into a buffer of that size: a diff of
	// a large file grown by doubling would allocate it about three times.
	var size byteCounter
	write(&size)
	var sb strings.Builder
	sb.Grow(int(size))
	write(&sb)
	return sb.String()
}

// diffWriter is what a diff is written to: a strings.Builder, or a
// byteCounter that only measures it.
type diffWriter interface {
	io.Writer
	io.StringWriter
	io.ByteWriter
}

type byteCounter int

func (c *byteCounter) Write(p []byte) (int, error) { *c += byteCounter(len(p)); return len(p), nil }
func (c *byteCounter) WriteString(s string) (int, error) {
	*c += byteCounter(len(s))
	return len(s), nil
}
func (c *byteCounter) WriteByte(byte) error { *c++; return nil }

func writeHunk(sb diffWriter, a, b []string, changes []LineChange) {
	first, last := changes[0], changes[len(changes)-1]
	pre := min(diffContext, first.OldStart)
	post := min(diffContext, len(a)-last.OldEnd)
	oldStart, oldEnd := first.OldStart-pre, last.OldEnd+post
	newStart, newEnd := first.NewStart-pre, last.NewEnd+post
	fmt.Fprintf(sb, "@@ -%s +%s @@\n", hunkRange(oldStart, oldEnd-oldStart), hunkRange(newStart, newEnd-newStart))
	i := oldStart
	for _, c := range changes {
		for ; i < c.OldStart; i++ {
			writeLine(sb, ' ', a[i])
		}
		for ; i < c.OldEnd; i++ {
			writeLine(sb, '-', a[i])
		}
		for j := c.NewStart; j < c.NewEnd; j++ {
			writeLine(sb, '+', b[j])
		}
	}
	for ; i < oldEnd; i++ {
		writeLine(sb, ' ', a[i])
	}
}

// hunkRange prints a 0-based range as unified diffs do: 1-based start, the
// count left out when it is 1, and for an empty range the line before it.
func hunkRange(start, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, count)
}

func writeLine(sb diffWriter, mark byte, line string) {
	sb.WriteByte(mark)
	sb.WriteString(line)
	if !strings.HasSuffix(line, "\n") {
		sb.WriteString("\n\\ No newline at end of file\n")
	}
}
