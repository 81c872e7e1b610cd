//go:build unix

package session

import "syscall"

// mapBlock maps n bytes of anonymous memory outside the Go heap, or
// returns nil.
func mapBlock(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil
	}
	return b
}

// unmapBlock gives a block from mapBlock back to the system. A block
// already given back (nil) is left alone.
func unmapBlock(b []byte) {
	if b != nil {
		_ = syscall.Munmap(b)
	}
}
