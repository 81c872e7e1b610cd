//go:build unix

package procgroup

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// SignalName is the name of a signal as a person knows it: "SIGKILL".
func SignalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return sig.String()
}
