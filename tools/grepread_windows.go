package tools

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// grepFD is an open file of the grep scan: a Windows handle.
type grepFD = syscall.Handle

// grepNoFD is no file.
const grepNoFD = syscall.InvalidHandle

// Windows opens no folder as a file: grepOpen refuses grepDirectory, and
// the scan opens each file by its path and checks it (openChecked).
const (
	grepNoFollow  = 1 << 0
	grepDirectory = 1 << 1
)

var (
	errGrepSymlink     = errors.New("the path is a symbolic link")
	errGrepInterrupted = errors.New("interrupted")
)

func grepClose(fd grepFD) { _ = syscall.CloseHandle(fd) }

// grepOpen opens a file for reading. With grepNoFollow a symbolic link
// or junction (a reparse point) fails with errGrepSymlink, as O_NOFOLLOW
// does on Unix.
func grepOpen(path string, flags int) (grepFD, error) {
	if flags&grepDirectory != 0 {
		return grepNoFD, errors.New("folders are not opened on Windows")
	}
	if flags&grepNoFollow != 0 {
		fi, err := os.Lstat(path)
		if err != nil {
			return grepNoFD, err
		}
		if fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) != 0 {
			return grepNoFD, errGrepSymlink
		}
	}
	p, err := syscall.UTF16PtrFromString(path)
	if err != nil {
		return grepNoFD, err
	}
	return syscall.CreateFile(p, syscall.GENERIC_READ,
		syscall.FILE_SHARE_READ|syscall.FILE_SHARE_WRITE|syscall.FILE_SHARE_DELETE,
		nil, syscall.OPEN_EXISTING, syscall.FILE_ATTRIBUTE_NORMAL, 0)
}

// grepOpenAt is never reached on Windows (no folder is open).
func grepOpenAt(_ grepFD, path string, flags int) (grepFD, error) {
	return grepOpen(path, flags)
}

// grepRegularSize is the size of the open file, ok false when it is not a
// regular file (a folder, a device, a pipe).
func grepRegularSize(fd grepFD) (int64, bool) {
	if t, err := syscall.GetFileType(fd); err != nil || t != syscall.FILE_TYPE_DISK {
		return 0, false
	}
	var info syscall.ByHandleFileInformation
	if err := syscall.GetFileInformationByHandle(fd, &info); err != nil ||
		info.FileAttributes&syscall.FILE_ATTRIBUTE_DIRECTORY != 0 {
		return 0, false
	}
	return int64(info.FileSizeHigh)<<32 | int64(info.FileSizeLow), true
}

func grepReadFD(fd grepFD, p []byte) (int, error) {
	n, err := syscall.Read(fd, p)
	if err == syscall.ERROR_BROKEN_PIPE || err == syscall.ERROR_HANDLE_EOF {
		return n, nil
	}
	return n, err
}
