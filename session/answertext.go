package session

import "strings"

// answerText gathers the text of a streamed answer, piece by piece, and
// gives it as one string at the end. A strings.Builder grows by copying
// everything it holds, a quarter more each time once it is big: an answer
// of 50 MB allocated some 290 MB on the way, and held twice its size at
// each growth. The pieces go into blocks that are never copied, and the
// string is made once, at its exact size.
type answerText struct {
	joined string // what String returned last
	blocks [][]byte
	n      int // bytes in blocks
}

// answerBlock is the size of the blocks; the first ones are smaller, so
// that a short answer costs little.
const answerBlock = 64 << 10

func (t *answerText) WriteString(s string) {
	for len(s) > 0 {
		k := len(t.blocks) - 1
		if k < 0 || len(t.blocks[k]) == cap(t.blocks[k]) {
			t.blocks = append(t.blocks, make([]byte, 0, min(answerBlock, max(256, 2*t.n))))
			k++
		}
		w := min(len(s), cap(t.blocks[k])-len(t.blocks[k]))
		t.blocks[k] = append(t.blocks[k], s[:w]...)
		t.n += w
		s = s[w:]
	}
}

// String returns the text so far, and lets go of the blocks.
func (t *answerText) String() string {
	if len(t.blocks) == 0 {
		return t.joined
	}
	var sb strings.Builder
	sb.Grow(len(t.joined) + t.n)
	sb.WriteString(t.joined)
	for i, b := range t.blocks {
		sb.Write(b)
		t.blocks[i] = nil
	}
	t.blocks, t.n = nil, 0
	t.joined = sb.String()
	return t.joined
}
