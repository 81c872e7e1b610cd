package workspace

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/windows"
)

// replaceRetryFor is how long a refused replacing rename is retried.
const replaceRetryFor = 2 * time.Second

// replaceFile renames tmp over target. Windows refuses to replace a file
// that another process has open without sharing deletion (a reader, a
// virus scanner, the search indexer) or that is read-only, so a refused
// rename is retried for a short while, and a read-only target has its
// read-only attribute cleared first (the new file keeps the mode the
// write chose).
func replaceFile(tmp, target string) error {
	deadline := time.Now().Add(replaceRetryFor)
	wait := time.Millisecond
	for {
		err := os.Rename(tmp, target)
		if err == nil {
			return nil
		}
		if !errors.Is(err, windows.ERROR_ACCESS_DENIED) && !errors.Is(err, windows.ERROR_SHARING_VIOLATION) {
			return err
		}
		if fi, serr := os.Lstat(target); serr == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o200 == 0 {
			_ = os.Chmod(target, 0o600)
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(wait)
		wait = min(2*wait, 50*time.Millisecond)
	}
}
