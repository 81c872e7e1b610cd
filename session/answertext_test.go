package session

import (
	"runtime"
	"strings"
	"testing"
)

func TestAnswerTextKeepsThePiecesInOrder(t *testing.T) {
	var a answerText
	if a.String() != "" {
		t.Fatal("empty text is not empty")
	}
	var want strings.Builder
	for i := 0; want.Len() < 300<<10; i++ {
		p := strings.Repeat(string(rune('a'+i%26)), i%700)
		a.WriteString(p)
		want.WriteString(p)
	}
	if got := a.String(); got != want.String() {
		t.Fatalf("text of %d bytes differs from the %d written", len(got), want.Len())
	}
	a.WriteString("tail")
	want.WriteString("tail")
	if got := a.String(); got != want.String() || a.String() != got {
		t.Fatal("text after String and more pieces differs")
	}
}

// Gathering a text allocates about its size twice (the blocks, then the
// string), not the five times a growing builder does.
func TestAnswerTextAllocatesItsSizeTwice(t *testing.T) {
	piece := strings.Repeat("x", 4<<10)
	const size = 16 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var a answerText
	for range size / len(piece) {
		a.WriteString(piece)
	}
	if len(a.String()) != size {
		t.Fatal("wrong length")
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 2*size+size/8 {
		t.Fatalf("allocated %d bytes for a text of %d", alloc, size)
	}
}

// Past its first megabyte, an answer's blocks are outside the Go heap
// where the system can map memory: gathering 16 MB allocates on the heap
// about the string and the first blocks, not the blocks twice over.
func TestAnswerTextKeepsItsBlocksOffTheHeap(t *testing.T) {
	probe := mapBlock(answerBlock)
	if probe == nil {
		t.Skip("no anonymous mappings on this system: the blocks stay on the heap")
	}
	unmapBlock(probe)
	piece := strings.Repeat("y", 4<<10)
	const size = 16 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var a answerText
	for range size / len(piece) {
		a.WriteString(piece)
	}
	got := a.String()
	runtime.ReadMemStats(&after)
	if len(got) != size || got[size-1] != 'y' {
		t.Fatal("wrong text")
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size+2*offHeapAfter+size/16 {
		t.Fatalf("allocated %d heap bytes for a text of %d", alloc, size)
	}
	if len(a.blocks) != 0 {
		t.Fatal("blocks kept after String")
	}
}
