//go:build linux

package sandbox

import (
	"bytes"
	"os"
	"strconv"
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

// descendants lists the processes below this one, from /proc.
func descendants() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 2 || string(f[0]) == "Z" || string(f[0]) == "X" {
			continue
		}
		if ppid, err := strconv.Atoi(string(f[1])); err == nil {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	queue := []int{os.Getpid()}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}
