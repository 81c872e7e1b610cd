package workspace

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// lockFolder takes an exclusive LockFileEx lock on the folder's lock file,
// waiting for any other holder, and returns its release.
func lockFolder(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFileName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	h := windows.Handle(f.Fd())
	ol := new(windows.Overlapped)
	if err := windows.LockFileEx(h, windows.LOCKFILE_EXCLUSIVE_LOCK, 0, math.MaxUint32, math.MaxUint32, ol); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() {
		_ = windows.UnlockFileEx(h, 0, math.MaxUint32, math.MaxUint32, ol)
		f.Close()
	}, nil
}
