//go:build unix && !linux && !darwin && !dragonfly && !freebsd && !netbsd && !openbsd

package procgroup

// WaitExit returns when process pid has exited; this system has neither
// pidfds nor kqueue, so it polls.
func WaitExit(pid int) { waitExitPolling(pid) }
