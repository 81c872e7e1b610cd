//go:build unix

package tools

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// grepFD is an open file of the grep scan: a plain descriptor.
type grepFD = int

// grepNoFD is no file.
const grepNoFD grepFD = -1

// The open flags of the scan: a symlink in the last component fails with
// ELOOP (errGrepSymlink); a folder opens only as a folder.
const (
	grepNoFollow  = unix.O_NOFOLLOW
	grepDirectory = unix.O_DIRECTORY
)

var (
	errGrepSymlink     error = syscall.ELOOP
	errGrepInterrupted error = syscall.EINTR
)

func grepClose(fd grepFD) { _ = syscall.Close(fd) }

// grepOpen opens a file for reading with extra flags.
func grepOpen(path string, flags int) (grepFD, error) {
	return grepOpenAt(unix.AT_FDCWD, path, flags)
}

// grepOpenAt is grepOpen for a path relative to the open folder dirFD.
// O_NONBLOCK keeps a FIFO from blocking.
func grepOpenAt(dirFD grepFD, path string, flags int) (grepFD, error) {
	for {
		fd, err := unix.Openat(dirFD, path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// grepRegularSize is the size of the open file, ok false when it is not a
// regular file.
func grepRegularSize(fd grepFD) (int64, bool) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return 0, false
	}
	return int64(st.Size), true
}

func grepReadFD(fd grepFD, p []byte) (int, error) { return syscall.Read(fd, p) }
