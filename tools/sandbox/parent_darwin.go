//go:build darwin

package sandbox

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/qwen-ls/qwen-ls/tools/sandbox/launch"
)

// pdeathSignal is not used on macOS (kqueue watches the server): an
// invalid signal, which signal.Notify ignores.
const pdeathSignal = syscall.Signal(-1)

// watchParent asks kqueue for the server's exit and returns a channel
// closed then.
func watchParent(parent int) (<-chan struct{}, error) {
	kq, err := unix.Kqueue()
	if err != nil {
		return nil, err
	}
	ev := unix.Kevent_t{Ident: uint64(parent), Filter: unix.EVFILT_PROC, Flags: unix.EV_ADD | unix.EV_ONESHOT, Fflags: unix.NOTE_EXIT}
	if _, err := unix.Kevent(kq, []unix.Kevent_t{ev}, nil, nil); err != nil {
		_ = unix.Close(kq)
		return nil, err
	}
	died := make(chan struct{})
	go func() {
		out := make([]unix.Kevent_t, 1)
		for {
			n, err := unix.Kevent(kq, nil, out, nil)
			if err == unix.EINTR {
				continue
			}
			if n > 0 || err != nil {
				break
			}
		}
		close(died)
	}()
	return died, nil
}

// watchServer asks kqueue for the server's exit.
func watchServer(_ Policy, parent int) (<-chan struct{}, func() bool, error) {
	died, err := watchParent(parent)
	return died, func() bool { return os.Getppid() != parent }, err
}

// serverPidfd: macOS has no pidfd; kqueue watches the server's pid.
func serverPidfd() *os.File { return nil }

// apply runs the command through sandbox-exec with the policy's profile.
func apply(p Policy, argv []string, _ func(Denial)) (string, []string, error) {
	name, err := lookPath(argv[0])
	if err != nil {
		return "", nil, err
	}
	args := append([]string{"sandbox-exec", "-p", SeatbeltProfile(p), name}, argv[1:]...)
	return SeatbeltPath, args, nil
}

// planFor: macOS has no first stage; the supervisor applies the policy
// itself.
func planFor(Policy, []string) (*launch.Plan, error) { return nil, nil }

// armParentDeath: macOS has no parent-death signal; kqueue watches the
// server.
func armParentDeath() {}
