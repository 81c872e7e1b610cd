package main

import (
	"errors"
	"os"
)

// askDebug: Windows has no SIGUSR1, so the soak reads no Go memory there.
func askDebug(*os.Process) error {
	return errors.New("the server's Go memory is read with SIGUSR1, which Windows does not have")
}
