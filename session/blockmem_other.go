//go:build !unix

package session

// Without mmap the blocks stay on the heap.
func mapBlock(int) []byte { return nil }

func unmapBlock([]byte) {}
