//go:build !linux && !darwin

package sandbox

import (
	"os/exec"
	"runtime"
	"sync"
)

// Supervised is, without a supervisor, the command itself. What it
// starts is kept together by its process group (on Windows a job object,
// tools/procgroup), not by a lingering supervisor.
type Supervised struct {
	Cmd    *exec.Cmd
	Policy Policy

	once    sync.Once
	exited  chan struct{}
	waitErr error
}

// Wrap leaves cmd as it is: this system has no sandbox (Probe says so,
// and read-only commands then ask).
func Wrap(cmd *exec.Cmd, p Policy) (*Supervised, error) {
	return &Supervised{Cmd: cmd, Policy: Policy{Mode: None}, exited: make(chan struct{})}, cmd.Err
}

// WrapWith is Wrap: there is no supervisor binary to name.
func WrapWith(_ string, cmd *exec.Cmd, p Policy) (*Supervised, error) { return Wrap(cmd, p) }

// Started is called after a caller started the command itself. Without
// a supervisor there is nothing to tie to its end.
func (s *Supervised) Started() {}

// Start starts the command, and a goroutine that waits for it.
func (s *Supervised) Start() error {
	if err := s.Cmd.Start(); err != nil {
		return err
	}
	go func() {
		s.waitErr = s.Cmd.Wait()
		close(s.exited)
	}()
	return nil
}

// WaitMain returns when the command has ended, and how it ended.
func (s *Supervised) WaitMain() Status {
	<-s.exited
	return StatusOf(s.Cmd.ProcessState, s.waitErr)
}

// Exited is closed when the command has exited.
func (s *Supervised) Exited() <-chan struct{} { return s.exited }

// Probe reports no sandbox.
func Probe() Support {
	return Support{OS: runtime.GOOS, Reason: "no sandbox on " + runtime.GOOS}
}

// Denials: without a sandbox nothing is refused.
func (s *Supervised) Denials() []Denial { return nil }
