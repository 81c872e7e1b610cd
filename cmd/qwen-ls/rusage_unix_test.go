//go:build unix

package main

import (
	"os"
	"syscall"
)

// maxRSSKB is a finished process's peak resident size in kilobytes (the
// unit of Linux's ru_maxrss).
func maxRSSKB(ps *os.ProcessState) (float64, bool) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, false
	}
	return float64(ru.Maxrss), true
}
