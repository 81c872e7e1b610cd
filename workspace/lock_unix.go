//go:build unix

package workspace

import (
	"fmt"
	"os"
	"syscall"
)

// lockFolder takes an exclusive flock on a folder, waiting for any other
// holder, and returns its release. Locking the folder rather than a lock
// file beside the settings leaves nothing behind in the user's folders.
func lockFolder(dir string) (func(), error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
