package session

import (
	"io/fs"
	"syscall"
)

// changeStamp is what tells a file's state besides its size and mtime.
// Windows keeps no change time or inode in a FileInfo: the creation time
// stands for the file's identity (a file replaced by another has its own),
// and the change is judged by size and mtime, which NTFS keeps to 100 ns.
func changeStamp(fi fs.FileInfo) (ctime int64, id uint64) {
	if d, ok := fi.Sys().(*syscall.Win32FileAttributeData); ok {
		return 0, uint64(d.CreationTime.Nanoseconds())
	}
	return 0, 0
}
