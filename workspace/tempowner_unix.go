//go:build unix && !linux

package workspace

import (
	"errors"
	"syscall"
)

// procStart is unknown here: a temp file's name records 0, and a pid alone
// says whether its owner runs.
func procStart(pid int) (uint64, bool) { return 0, true }

// ownerAlive reports whether process pid exists (a reused pid counts as
// the owner, so a leftover may wait for the next restart's sweep by age).
func ownerAlive(pid int, _ uint64) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
