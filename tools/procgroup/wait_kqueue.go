//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package procgroup

import "golang.org/x/sys/unix"

// WaitExit returns when process pid has exited, leaving it for its owner
// to reap: kqueue reports the exit without waiting for the process. A
// process that has already exited (the registration fails with ESRCH)
// returns at once.
func WaitExit(pid int) {
	kq, err := unix.Kqueue()
	if err != nil {
		waitExitPolling(pid)
		return
	}
	defer unix.Close(kq)
	ev := []unix.Kevent_t{{}}
	unix.SetKevent(&ev[0], pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	ev[0].Fflags = unix.NOTE_EXIT
	if _, err := unix.Kevent(kq, ev, nil, nil); err != nil {
		if err != unix.ESRCH {
			waitExitPolling(pid)
		}
		return
	}
	out := make([]unix.Kevent_t, 1)
	for {
		n, err := unix.Kevent(kq, nil, out, nil)
		if err == unix.EINTR || (err == nil && n == 0) {
			continue
		}
		return
	}
}
