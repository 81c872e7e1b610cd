package procgroup

import "golang.org/x/sys/unix"

// WaitExit returns when process pid has exited, leaving it for its owner
// to reap (WNOWAIT), so the pid and its group id stay reserved until
// then. A pidfd pins this very process; without one (kernels before 5.3)
// the pid is still the owner's, since nothing else reaps it.
func WaitExit(pid int) {
	fd, fdErr := unix.PidfdOpen(pid, 0)
	var info unix.Siginfo
	for {
		var err error
		if fdErr == nil {
			err = unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOWAIT, nil)
		} else {
			err = unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		}
		if err != unix.EINTR {
			break
		}
	}
	if fdErr == nil {
		_ = unix.Close(fd)
	}
}
