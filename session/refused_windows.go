package session

import (
	"errors"
	"syscall"

	"golang.org/x/sys/windows"
)

// connRefused reports whether err is a refused connection: on Windows,
// Winsock's WSAECONNREFUSED, which syscall.ECONNREFUSED does not match.
func connRefused(err error) bool {
	return errors.Is(err, windows.WSAECONNREFUSED) || errors.Is(err, syscall.ECONNREFUSED)
}
