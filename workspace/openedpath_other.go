//go:build !windows

package workspace

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// OpenedPath returns the path the kernel holds for an open file
// descriptor (Linux's /proc/self/fd): the real path of the file that was
// opened, whatever symlinks the name went through. ok is false where
// /proc is not available.
//
// Checking this path after opening closes the window between checking a
// path and using it: a symlink swapped in after the check is seen here.
func OpenedPath(fd uintptr) (path string, ok bool) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.FormatUint(uint64(fd), 10))
	if err != nil || !filepath.IsAbs(p) {
		return "", false
	}
	return strings.TrimSuffix(p, " (deleted)"), true
}
