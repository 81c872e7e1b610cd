package workspace

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// A rope holds a buffer's text as an immutable B+tree whose leaves are
// chunks of at most about 1 KiB. Every node records the metrics of its
// subtree (bytes, UTF-16 units, line breaks), so finding a line, converting
// a UTF-16 offset and replacing a range cost O(log n) plus the work on one
// or two leaves, instead of a pass over the whole text.
//
// Nodes never change once built: an edit copies the path from the root down
// to the leaves it touches and shares everything else. That makes a batch of
// changes atomic for free (the overlay keeps the old root until every change
// of the batch has succeeded), and a reader can materialise a snapshot
// without holding the overlay's lock.
//
// Two invariants let the metrics of the leaves add up to those of the text:
//   - every leaf boundary is a code point boundary of the whole text, so a
//     leaf decoded on its own yields the same code points;
//   - no leaf boundary falls between the "\r" and the "\n" of a pair, so a
//     leaf that ends in "\r" ends with a lone-CR line break.
//
// Whether an offset satisfies them depends only on the bytes within
// utf8.UTFMax of it. An edit therefore rebuilds the leaves that lie within
// that distance of the replaced range, choosing new boundaries that satisfy
// both, and every other boundary keeps its neighbourhood and its validity.
type rope struct {
	root  *ropeNode  // nil for the empty text
	shape *ropeShape // nil for defaultRopeShape
}

// ropeShape sets the sizes of a rope's nodes. Every rope of the server uses
// defaultRopeShape; tests build small shapes to get deep trees out of short
// texts.
type ropeShape struct {
	// maxLeaf bounds the leaves an edit produces; the leaves of a freshly
	// loaded text are smaller (buildLeaf) so that typing does not split
	// them at once.
	maxLeaf, buildLeaf int
	// minLeaf is the size below which an edit merges a leaf with its
	// neighbours, so deletions do not leave a trail of tiny leaves.
	minLeaf int
	// Inner nodes hold up to maxKids children; one that falls under
	// minKids after an edit is merged with its neighbours.
	maxKids, minKids int
}

// defaultRopeShape: a keystroke copies and scans about one leaf and copies a
// path of inner nodes, so smaller leaves make edits cheaper until the tree's
// depth starts to show; leaves of 256 bytes to 1 KiB measured best on a 5 MB
// buffer (overlay_bench_test.go), and cost about 10% in node overhead.
var defaultRopeShape = &ropeShape{maxLeaf: 1024, buildLeaf: 768, minLeaf: 256, maxKids: 32, minKids: 8}

func (r rope) sh() *ropeShape {
	if r.shape == nil {
		return defaultRopeShape
	}
	return r.shape
}

type ropeNode struct {
	m      textMetrics
	height int         // 0 for a leaf
	leaf   string      // a leaf's text
	kids   []*ropeNode // an inner node's children, all of height-1
}

func newRope(s string) rope { return newShapedRope(s, nil) }

func newShapedRope(s string, shape *ropeShape) rope {
	r := rope{shape: shape}
	r.root = r.sh().buildUp(chunkRopeLeaves(s, r.sh().buildLeaf))
	return r
}

func newRopeLeaf(s string) *ropeNode {
	return &ropeNode{m: measureText(s), leaf: s}
}

func newRopeInner(kids []*ropeNode) *ropeNode {
	n := &ropeNode{height: kids[0].height + 1, kids: kids}
	for _, k := range kids {
		n.m.add(k.m)
	}
	return n
}

// chunkRopeLeaves cuts s into leaves of at most about size bytes, at
// offsets that keep the invariants.
func chunkRopeLeaves(s string, size int) []*ropeNode {
	if s == "" {
		return nil
	}
	n := (len(s) + size - 1) / size
	leaves := make([]*ropeNode, 0, n)
	start := 0
	for k := 1; k < n; k++ {
		cut := len(s) * k / n
		for cut > start && !safeLeafCut(s, cut) {
			cut--
		}
		if cut > start {
			leaves = append(leaves, newRopeLeaf(s[start:cut]))
			start = cut
		}
	}
	return append(leaves, newRopeLeaf(s[start:]))
}

// safeLeafCut reports whether a leaf boundary may fall at offset p of s.
func safeLeafCut(s string, p int) bool {
	return isCodePointStart(s, p) && !(p > 0 && p < len(s) && s[p-1] == '\r' && s[p] == '\n')
}

// buildUp stacks inner nodes over nodes of equal height until one remains.
func (sh *ropeShape) buildUp(nodes []*ropeNode) *ropeNode {
	if len(nodes) == 0 {
		return nil
	}
	for len(nodes) > 1 {
		nodes = sh.groupNodes(nodes)
	}
	return nodes[0]
}

// groupNodes spreads nodes evenly over as few parents as can hold them.
func (sh *ropeShape) groupNodes(nodes []*ropeNode) []*ropeNode {
	n := (len(nodes) + sh.maxKids - 1) / sh.maxKids
	out := make([]*ropeNode, 0, n)
	for k := 0; k < n; k++ {
		lo, hi := len(nodes)*k/n, len(nodes)*(k+1)/n
		out = append(out, newRopeInner(nodes[lo:hi:hi]))
	}
	return out
}

func (r rope) metrics() textMetrics {
	if r.root == nil {
		return textMetrics{}
	}
	return r.root.m
}

func (r rope) len() int { return r.metrics().bytes }

func (r rope) String() string { return r.slice(0, r.len()) }

// slice returns the text between byte offsets a and b.
func (r rope) slice(a, b int) string {
	if r.root == nil || a >= b {
		return ""
	}
	var sb strings.Builder
	sb.Grow(b - a)
	appendRopeRange(&sb, r.root, 0, a, b)
	return sb.String()
}

// appendRopeRange writes the part of n's text that lies in [a, b) to sb;
// base is the offset at which n's text begins.
func appendRopeRange(sb *strings.Builder, n *ropeNode, base, a, b int) {
	if a >= b {
		return
	}
	if n.height == 0 {
		sb.WriteString(n.leaf[max(a-base, 0):min(b-base, len(n.leaf))])
		return
	}
	for _, k := range n.kids {
		end := base + k.m.bytes
		if end > a {
			appendRopeRange(sb, k, base, a, b)
		}
		if end >= b {
			return
		}
		base = end
	}
}

// leafSpan returns the bounds of the leaf holding byte off (0 <= off < len).
func (r rope) leafSpan(off int) (start, end int) {
	n := r.root
	for n.height > 0 {
		for i, k := range n.kids {
			if off < start+k.m.bytes || i == len(n.kids)-1 {
				n = k
				break
			}
			start += k.m.bytes
		}
	}
	return start, start + n.m.bytes
}

// prefix returns the metrics of the text before byte off. off must not
// fall between the "\r" and "\n" of a pair.
func (r rope) prefix(off int) textMetrics {
	if r.root == nil || off <= 0 {
		return textMetrics{}
	}
	if off >= r.root.m.bytes {
		return r.root.m
	}
	var acc textMetrics
	n := r.root
	for n.height > 0 {
		for i, k := range n.kids {
			if off < acc.bytes+k.m.bytes || i == len(n.kids)-1 {
				n = k
				break
			}
			acc.add(k.m)
		}
	}
	acc.add(measureText(n.leaf[:off-acc.bytes]))
	return acc
}

// lineStart returns the byte offset at which line begins and the number of
// UTF-16 units before it. line must be at most the number of line breaks.
func (r rope) lineStart(line int) (off, units int) {
	if line == 0 {
		return 0, 0
	}
	var acc textMetrics
	n := r.root
	for n.height > 0 {
		for i, k := range n.kids {
			if acc.breaks+k.m.breaks >= line || i == len(n.kids)-1 {
				n = k
				break
			}
			acc.add(k.m)
		}
	}
	p := afterLineBreak(n.leaf, line-acc.breaks)
	return acc.bytes + p, acc.units + countUnits(n.leaf[:p])
}

// offsetOfUnits returns the byte offset before which the text holds u
// UTF-16 units (u at most the text's units). ok is false when u falls in
// the middle of a surrogate pair; off is then just past that character.
func (r rope) offsetOfUnits(u int) (off int, ok bool) {
	if u == 0 {
		return 0, true
	}
	var acc textMetrics
	n := r.root
	for n.height > 0 {
		for i, k := range n.kids {
			if acc.units+k.m.units >= u || i == len(n.kids)-1 {
				n = k
				break
			}
			acc.add(k.m)
		}
	}
	s, target := n.leaf, u-acc.units
	i, units := 0, 0
	for units < target && i < len(s) {
		du, w := decodeUTF16Units(s[i:])
		units += du
		i += w
	}
	return acc.bytes + i, units == target
}

// offsetOf is OffsetOf on a rope: same rules, same errors.
func (r rope) offsetOf(pos Position, enc Encoding) (int, error) {
	if off, ok := r.quickOffset(pos, enc); ok {
		return off, nil
	}
	return r.fullOffset(pos, enc)
}

// quickOffset converts a valid position whose line starts in the same leaf
// as the position lies, which is nearly every position an editor sends, with
// one descent and a scan of part of that leaf. It reports false for anything
// else, leaving the general case and the errors to fullOffset.
func (r rope) quickOffset(pos Position, enc Encoding) (int, bool) {
	if r.root == nil || pos.Line < 0 || pos.Character < 0 || pos.Line > r.root.m.breaks {
		return 0, false
	}
	// Descend to the leaf that holds the break ending line pos.Line-1 (for
	// line 0, the first leaf).
	n, base, breaks := r.root, 0, 0
	for n.height > 0 {
		for i, k := range n.kids {
			if breaks+k.m.breaks >= pos.Line || i == len(n.kids)-1 {
				n = k
				break
			}
			base += k.m.bytes
			breaks += k.m.breaks
		}
	}
	s, p := n.leaf, 0
	if pos.Line > breaks {
		p = afterLineBreak(s, pos.Line-breaks)
	}
	if enc == UTF8 {
		end := p + pos.Character
		// Past the leaf, across a line break, or inside a character.
		if end > len(s) || strings.ContainsAny(s[p:end], "\r\n") || !isCodePointStart(s, end) {
			return 0, false
		}
		return base + end, true
	}
	i, units := p, 0
	for units < pos.Character {
		if i == len(s) || s[i] == '\n' || s[i] == '\r' {
			return 0, false
		}
		u, w := decodeUTF16Units(s[i:])
		units += u
		i += w
	}
	if units != pos.Character {
		return 0, false
	}
	return base + i, true
}

// fullOffset is offsetOf for every position, with the errors.
func (r rope) fullOffset(pos Position, enc Encoding) (int, error) {
	if pos.Line < 0 || pos.Character < 0 {
		return 0, negativeError(pos)
	}
	total := r.metrics()
	if pos.Line > total.breaks {
		return 0, tooFewLinesError(pos, total.breaks+1)
	}
	start, ustart := r.lineStart(pos.Line)
	end, uend := total.bytes, total.units
	if pos.Line < total.breaks {
		next, unext := r.lineStart(pos.Line + 1)
		brk := 1
		if next >= 2 && r.slice(next-2, next) == "\r\n" {
			brk = 2
		}
		end, uend = next-brk, unext-brk
	}
	if enc == UTF8 {
		if pos.Character > end-start {
			return 0, lineTooShortError(pos, end-start, enc)
		}
		off := start + pos.Character
		lo := max(off-(utf8.UTFMax-1), start)
		if !isCodePointStart(r.slice(lo, min(off+utf8.UTFMax-1, end)), off-lo) {
			return 0, insideCharError(pos, enc)
		}
		return off, nil
	}
	if pos.Character > uend-ustart {
		return 0, lineTooShortError(pos, uend-ustart, enc)
	}
	off, ok := r.offsetOfUnits(ustart + pos.Character)
	if !ok {
		return 0, insideCharError(pos, enc)
	}
	return off, nil
}

// positionOf is PositionOf on a rope.
func (r rope) positionOf(off int, enc Encoding) Position {
	total := r.len()
	off = max(0, min(off, total))
	// The character holding off starts at most utf8.UTFMax-1 bytes back,
	// so this window is enough to find it.
	lo := max(off-(utf8.UTFMax-1), 0)
	w := r.slice(lo, min(off+utf8.UTFMax-1, total))
	p := off - lo
	for p > 0 && !isCodePointStart(w, p) {
		p--
	}
	if p > 0 && p < len(w) && w[p-1] == '\r' && w[p] == '\n' {
		p--
	}
	off = lo + p
	pm := r.prefix(off)
	start, ustart := r.lineStart(pm.breaks)
	if enc == UTF8 {
		return Position{Line: pm.breaks, Character: off - start}
	}
	return Position{Line: pm.breaks, Character: pm.units - ustart}
}

// apply applies changes in order, each counted in enc against the text the
// ones before it produced, and returns the new rope. When a change does not
// fit, it returns the change's index and an error wrapping *rangeError; r
// itself never changes, so the caller simply keeps it.
func (r rope) apply(changes []Change, enc Encoding) (rope, int, error) {
	for i, c := range changes {
		if c.Range == nil {
			r = newShapedRope(c.Text, r.shape)
			continue
		}
		start, err := r.offsetOf(c.Range.Start, enc)
		if err != nil {
			return rope{}, i, fmt.Errorf("range start: %w", err)
		}
		end := start // typing inserts at an empty range
		if c.Range.End != c.Range.Start {
			end, err = r.offsetOf(c.Range.End, enc)
			if err != nil {
				return rope{}, i, fmt.Errorf("range end: %w", err)
			}
		}
		if end < start {
			return rope{}, i, &rangeError{
				Pos:    c.Range.End,
				Reason: fmt.Sprintf("the range ends before its start %d:%d", c.Range.Start.Line, c.Range.Start.Character),
			}
		}
		r = r.replace(start, end, c.Text)
	}
	return r, -1, nil
}

// replace returns the rope with bytes [s, e) replaced by text. s and e must
// be code point boundaries not inside a "\r\n" pair.
func (r rope) replace(s, e int, text string) rope {
	total, sh := r.len(), r.sh()
	if total == 0 || (s == 0 && e == total) {
		return newShapedRope(text, r.shape)
	}
	// The leaves to rebuild: those within utf8.UTFMax bytes of the range,
	// grown until the result is not a runt leaf.
	la, _ := r.leafSpan(max(s-utf8.UTFMax, 0))
	_, rb := r.leafSpan(min(e+utf8.UTFMax-1, total-1))
	size := func() int { return rb - la - (e - s) + len(text) }
	for size() < sh.minLeaf && (la > 0 || rb < total) {
		if rb < total {
			_, rb = r.leafSpan(rb)
		} else {
			la, _ = r.leafSpan(la - 1)
		}
	}
	var sb strings.Builder
	sb.Grow(size())
	appendRopeRange(&sb, r.root, 0, la, s)
	sb.WriteString(text)
	appendRopeRange(&sb, r.root, 0, e, rb)
	region := sb.String()
	var leaves []*ropeNode
	switch {
	case region == "":
	case len(region) <= sh.maxLeaf && e-s <= smallRopeEdit && len(text) <= smallRopeEdit:
		// The usual keystroke: one leaf in, one leaf out. Measure only
		// around the edit instead of the whole leaf.
		leaves = []*ropeNode{{m: r.editedMetrics(region, la, rb, s, e, text), leaf: region}}
	default:
		leaves = chunkRopeLeaves(region, sh.maxLeaf)
	}

	root := sh.buildUp(sh.splice(r.root, 0, la, rb, leaves))
	for root != nil && root.height > 0 && len(root.kids) == 1 {
		root = root.kids[0]
	}
	return rope{root: root, shape: r.shape}
}

// smallRopeEdit bounds the edits whose leaf is measured incrementally.
const smallRopeEdit = 64

// editedMetrics returns the metrics of region, the text of bytes [la, rb)
// after bytes [s, e) were replaced by text, from the metrics the rope
// already has, measuring only near the edit. It widens [s, e) to [x, y)
// until both ends are safe leaf boundaries of the new text. They are then
// safe in the old text too: a code point or "\r\n" across x in the old text
// would lie wholly before s, which is a boundary there, and so be in the
// new text as well; likewise for y after e. The parts outside [x, y) thus
// measure the same before and after, and only [x, y) is measured, twice.
func (r rope) editedMetrics(region string, la, rb, s, e int, text string) textMetrics {
	shift := len(text) - (e - s) // old bytes from e on lie shift bytes later in the new text
	x := s
	for x > la && !safeLeafCut(region, x-la) {
		x--
	}
	y := e
	for y < rb && !safeLeafCut(region, y-la+shift) {
		y++
	}
	m := r.prefix(rb)
	m.sub(r.prefix(la))
	m.sub(measureText(r.slice(x, y)))
	m.add(measureText(region[x-la : y-la+shift]))
	return m
}

// splice replaces the leaves of n that lie in [a, b) (offsets that are leaf
// boundaries, relative to the text n is part of; base is where n begins)
// with ins, and returns the nodes, of n's height, that take n's place: none
// when n is left empty, several when it overflowed.
func (sh *ropeShape) splice(n *ropeNode, base, a, b int, ins []*ropeNode) []*ropeNode {
	if n.height == 0 {
		// A leaf reached here lies wholly inside [a, b).
		return ins
	}
	out := make([]*ropeNode, 0, len(n.kids)+len(ins))
	first, last := -1, -1
	placed := false
	for _, k := range n.kids {
		end := base + k.m.bytes
		switch {
		case end <= a || base >= b:
			out = append(out, k)
		case placed && base >= a && end <= b:
			// Wholly replaced, and ins already has its place.
		default:
			if first < 0 {
				first = len(out)
			}
			var in []*ropeNode
			if !placed {
				in, placed = ins, true
			}
			out = append(out, sh.splice(k, base, a, b, in)...)
			last = len(out)
		}
		base = end
	}
	if n.height > 1 && first >= 0 {
		out = sh.mergeRunts(out, first, last)
	}
	if len(out) == 0 {
		return nil
	}
	return sh.groupNodes(out)
}

// mergeRunts regroups the inner nodes out[first:last] that an edit rebuilt,
// and their neighbours, when one of them has fallen under minKids, so that
// deletions do not leave the tree tall and sparse.
func (sh *ropeShape) mergeRunts(out []*ropeNode, first, last int) []*ropeNode {
	runt := false
	for _, k := range out[first:last] {
		if len(k.kids) < sh.minKids {
			runt = true
			break
		}
	}
	if !runt {
		return out
	}
	lo, hi := max(first-1, 0), min(last+1, len(out))
	var grand []*ropeNode
	for _, k := range out[lo:hi] {
		grand = append(grand, k.kids...)
	}
	merged := append(out[:lo:lo], sh.groupNodes(grand)...)
	return append(merged, out[hi:]...)
}
