//go:build unix

package session

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes an exclusive lock on the open file f without waiting:
// errLocked when another open file holds it. The lock goes with the file's
// close, or with the process.
func tryLock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errLocked
	}
	return err
}

// removeLocked removes the file at path, which f holds open and locked;
// the lock keeps other servers from opening it as a session meanwhile.
func removeLocked(_ *os.File, path string) error { return os.Remove(path) }
