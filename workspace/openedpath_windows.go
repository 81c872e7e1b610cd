package workspace

import (
	"path/filepath"
	"strings"

	"golang.org/x/sys/windows"
)

// OpenedPath returns the path Windows holds for an open file handle
// (GetFinalPathNameByHandle): the real path of the file that was opened,
// whatever links and junctions the name went through, in its DOS form
// (`C:\...` or `\\server\share\...`). ok is false when Windows cannot say.
//
// Checking this path after opening closes the window between checking a
// path and using it: a link swapped in after the check is seen here.
func OpenedPath(fd uintptr) (path string, ok bool) {
	buf := make([]uint16, 512)
	for {
		n, err := windows.GetFinalPathNameByHandle(windows.Handle(fd), &buf[0], uint32(len(buf)), fileNameNormalized|volumeNameDOS)
		if err != nil || n == 0 {
			return "", false
		}
		if int(n) < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]uint16, n+1)
	}
	p := windows.UTF16ToString(buf)
	switch {
	case strings.HasPrefix(p, `\\?\UNC\`):
		p = `\\` + p[len(`\\?\UNC\`):]
	case strings.HasPrefix(p, `\\?\`):
		p = p[len(`\\?\`):]
	}
	if !filepath.IsAbs(p) {
		return "", false
	}
	return p, true
}

// The flags of GetFinalPathNameByHandle (fileapi.h).
const (
	fileNameNormalized = 0x0
	volumeNameDOS      = 0x0
)
