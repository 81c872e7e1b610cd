//go:build !windows

package session

import (
	"errors"
	"syscall"
)

// connRefused reports whether err is a refused connection.
func connRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
