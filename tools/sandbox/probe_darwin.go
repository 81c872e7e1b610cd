//go:build darwin

package sandbox

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

// Probe says which protection this machine gives.
func Probe() Support {
	if os.Getenv(EnvDisable) == "1" {
		return Support{OS: runtime.GOOS, Reason: "turned off by " + EnvDisable}
	}
	s := Support{OS: runtime.GOOS}
	if _, err := os.Stat(SeatbeltPath); err == nil {
		s.Seatbelt = true
	} else {
		s.Reason = SeatbeltPath + " is missing"
	}
	return s
}

// serverAttr: macOS has no parent-death signal; the supervisor watches the
// server with kqueue instead.
func serverAttr(*syscall.SysProcAttr, *Policy) {}

func lookPath(name string) (string, error) { return exec.LookPath(name) }
