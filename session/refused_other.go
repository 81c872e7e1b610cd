//go:build !windows

package session

import "syscall"

// errConnRefused is the error a refused connection carries.
var errConnRefused error = syscall.ECONNREFUSED
