//go:build linux

package sandbox

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// pdeathSignal is the supervisor's parent-death signal, one the server
// never sends otherwise. The kernel sends it when the server thread that
// started the supervisor ends, which happens when the server dies.
const pdeathSignal = syscall.Signal(40) // SIGRTMIN+6

// watchParent makes the supervisor a child subreaper, so that the orphans
// of the command come back to it, and returns a channel closed when the
// server process has exited (a pidfd). Without pidfds (before Linux 5.3)
// the channel is nil and the parent-death signal, set by the server when
// it started the supervisor (serverAttr), is the only watch.
func watchParent(parent int) (<-chan struct{}, error) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, err
	}
	fd, err := unix.PidfdOpen(parent, 0)
	if err != nil {
		return nil, nil
	}
	died := make(chan struct{})
	go func() {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, -1)
			if err == unix.EINTR || (err == nil && n == 0) {
				continue
			}
			break
		}
		close(died)
	}()
	return died, nil
}

// parentGone reports whether the server has died (the supervisor was
// reparented).
func parentGone(parent int) bool {
	return os.Getppid() != parent
}

// childAttr makes the command die with the supervisor even when the
// supervisor itself is killed with SIGKILL.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
