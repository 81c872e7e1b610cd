package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// Status is how the command ended.
type Status struct {
	// Code is the exit code (-1 when killed by a signal, or when it could
	// not be read).
	Code int
	// Signal is the signal that killed it, 0 if none (always on Windows,
	// where no signal ends a process).
	Signal syscall.Signal
	// Err is a failure to wait for it, other than a non-zero status.
	Err error
}

// StatusOf reads a finished process's state.
func StatusOf(ps *os.ProcessState, waitErr error) Status {
	st := Status{Code: -1}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		st.Err = waitErr
	}
	if ps == nil {
		return st
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		st.Signal = ws.Signal()
		return st
	}
	st.Code = ps.ExitCode()
	return st
}
