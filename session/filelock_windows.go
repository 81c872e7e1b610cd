package session

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lockOffset is where the lock's one byte lies: far past the end of any
// session file. Windows locks are mandatory, so a lock on the content
// would stop other readers; one past the end stops only other lockers.
const lockOffset = 1 << 62

// tryLock takes an exclusive lock on the open file f without waiting:
// errLocked when another open file holds it. The lock goes with the file's
// close, or with the process.
func tryLock(f *os.File) error {
	ol := windows.Overlapped{Offset: uint32(lockOffset & 0xFFFFFFFF), OffsetHigh: uint32(lockOffset >> 32)}
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) || errors.Is(err, windows.ERROR_IO_PENDING) {
		return errLocked
	}
	return err
}

// removeLocked removes the file at path, which f holds open and locked.
// Windows removes no file another handle holds open, ours included, so f
// is closed first; a server that opens the file in between holds it open,
// and the removal then fails, which keeps the session.
func removeLocked(f *os.File, path string) error {
	_ = f.Close()
	return os.Remove(path)
}
