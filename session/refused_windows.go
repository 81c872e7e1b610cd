package session

import "golang.org/x/sys/windows"

// errConnRefused is the error a refused connection carries: on Windows,
// Winsock's WSAECONNREFUSED, which syscall.ECONNREFUSED does not match.
var errConnRefused error = windows.WSAECONNREFUSED
