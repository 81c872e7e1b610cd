//go:build linux

package sandbox

import (
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// pdeathSignal is the supervisor's parent-death signal, one the server
// never sends otherwise. The kernel sends it when the server thread that
// started the supervisor ends, which happens when the server dies.
const pdeathSignal = syscall.Signal(40) // SIGRTMIN+6

// watchServer makes the supervisor a child subreaper, so that the orphans
// of the command come back to it, and returns a channel closed when the
// server process has exited, and a test of whether it has. The server is
// watched through a pidfd: the one it passed (p.ServerFD; in a PID
// namespace the parent cannot be named by its pid), else one opened on
// the parent. Without pidfds (before Linux 5.3) the channel is nil and
// the parent-death signal, set by the server when it started the
// supervisor (serverAttr), is the only watch.
func watchServer(p Policy, parent int) (<-chan struct{}, func() bool, error) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, nil, err
	}
	fd := p.ServerFD
	if fd > 0 {
		unix.CloseOnExec(fd)
	} else if parent > 0 {
		var err error
		if fd, err = unix.PidfdOpen(parent, 0); err != nil {
			fd = -1
		}
	} else {
		fd = -1
	}
	if fd < 0 {
		return nil, func() bool { return os.Getppid() != parent }, nil
	}
	gone := func() bool {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 0)
		return err == nil && n > 0
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
	return died, gone, nil
}

var (
	pidfdOnce sync.Once
	pidfdFile *os.File
)

// serverPidfd is a pidfd of this process, which the supervisor watches
// to learn that the server died; nil where the kernel has none.
func serverPidfd() *os.File {
	pidfdOnce.Do(func() {
		fd, err := unix.PidfdOpen(os.Getpid(), 0)
		if err == nil {
			pidfdFile = os.NewFile(uintptr(fd), "qwen-ls pidfd")
		}
	})
	return pidfdFile
}

// armParentDeath asks the kernel for pdeathSignal when the server thread
// that started the supervisor ends. It must run on the main thread, the
// one that thread started.
func armParentDeath() {
	_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(pdeathSignal), 0, 0, 0)
}
