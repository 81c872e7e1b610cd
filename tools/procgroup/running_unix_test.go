//go:build unix

package procgroup

import (
	"errors"
	"syscall"
)

// running reports whether process pid runs (a zombie does not).
func running(pid int) bool {
	if procs, ok := Procs(); ok {
		for _, p := range procs {
			if p.PID == pid {
				return true
			}
		}
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
