package session

import (
	"runtime"
	"strings"
)

// answerText gathers the text of a streamed answer, piece by piece, and
// gives it as one string at the end. A strings.Builder grows by copying
// everything it holds, a quarter more each time once it is big: an answer
// of 50 MB allocated some 290 MB on the way, and held twice its size at
// each growth. The pieces go into blocks that are never copied, and the
// string is made once, at its exact size.
//
// Past its first blocks, an answer's blocks live outside the Go heap
// (blockmem_unix.go) and are unmapped the moment the string is made:
// blocks on the heap would stay until a collection found them, so a
// 50 MB answer held its blocks, its string and whatever the turn
// allocated next all at once (3.1× its size at the peak).
type answerText struct {
	joined string // what String returned last
	blocks []*answerPiece
	n      int // bytes in blocks
}

// answerPiece is one block; mapped says its bytes are outside the heap.
type answerPiece struct {
	b      []byte
	mapped bool
}

// answerBlock is the size of the blocks; the first ones are smaller, so
// that a short answer costs little. offHeapAfter is the size past which
// new blocks are mapped outside the heap.
const (
	answerBlock  = 64 << 10
	offHeapAfter = 1 << 20
)

func (t *answerText) WriteString(s string) {
	for len(s) > 0 {
		k := len(t.blocks) - 1
		if k < 0 || len(t.blocks[k].b) == cap(t.blocks[k].b) {
			t.blocks = append(t.blocks, t.newBlock())
			k++
		}
		blk := t.blocks[k]
		w := min(len(s), cap(blk.b)-len(blk.b))
		blk.b = append(blk.b, s[:w]...)
		t.n += w
		s = s[w:]
	}
}

// newBlock makes the next block: on the heap while the text is short,
// else outside it where the system allows.
func (t *answerText) newBlock() *answerPiece {
	if t.n >= offHeapAfter {
		if b := mapBlock(answerBlock); b != nil {
			blk := &answerPiece{b: b[:0], mapped: true}
			// An answer dropped before String (a cancelled or failed
			// stream) still gives its blocks back.
			runtime.AddCleanup(blk, unmapBlock, b)
			return blk
		}
	}
	return &answerPiece{b: make([]byte, 0, min(answerBlock, max(256, 2*t.n)))}
}

// String returns the text so far, and lets go of the blocks.
func (t *answerText) String() string {
	if len(t.blocks) == 0 {
		return t.joined
	}
	var sb strings.Builder
	sb.Grow(len(t.joined) + t.n)
	sb.WriteString(t.joined)
	for _, blk := range t.blocks {
		sb.Write(blk.b)
	}
	t.release()
	t.joined = sb.String()
	return t.joined
}

// release gives the blocks back: mapped ones at once.
func (t *answerText) release() {
	for i, blk := range t.blocks {
		if blk.mapped {
			b := blk.b[:cap(blk.b)]
			blk.b, blk.mapped = nil, false
			unmapBlock(b)
		}
		t.blocks[i] = nil
	}
	t.blocks, t.n = nil, 0
}
