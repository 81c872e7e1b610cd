//go:build unix

package main

import (
	"os"
	"syscall"
)

// askDebug asks the qwenbench build of the server for its goroutine count
// and Go memory (SIGUSR1).
func askDebug(p *os.Process) error { return p.Signal(syscall.SIGUSR1) }
