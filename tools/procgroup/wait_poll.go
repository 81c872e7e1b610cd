//go:build unix && !linux

package procgroup

import (
	"errors"
	"syscall"
	"time"
)

// waitExitPolling waits for pid's exit where the kernel cannot say: it
// polls the process table until pid is gone or a zombie.
func waitExitPolling(pid int) {
	for {
		if procs, ok := Procs(); ok {
			alive := false
			for _, p := range procs {
				if p.PID == pid {
					alive = true
					break
				}
			}
			if !alive {
				return
			}
		} else if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
