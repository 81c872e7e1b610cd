//go:build !linux && !darwin

package sandbox

import (
	"os"
	"os/exec"
	"runtime"
)

// Supervised is, without a supervisor, the command itself.
type Supervised struct {
	Cmd    *exec.Cmd
	Policy Policy
}

// Status is how the command ended.
type Status struct {
	Code   int
	Signal int
	Err    error
}

// Wrap leaves cmd as it is: this system has no sandbox (Probe says so,
// and read-only commands then ask).
func Wrap(cmd *exec.Cmd, p Policy) (*Supervised, error) {
	return &Supervised{Cmd: cmd, Policy: p}, cmd.Err
}

// Probe reports no sandbox.
func Probe() Support {
	return Support{OS: runtime.GOOS, Reason: "no sandbox on " + runtime.GOOS}
}

// StatusOf reads a finished process's state.
func StatusOf(ps *os.ProcessState, waitErr error) Status {
	if ps == nil {
		return Status{Code: -1, Err: waitErr}
	}
	return Status{Code: ps.ExitCode()}
}
