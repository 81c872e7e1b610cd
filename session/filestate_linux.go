package session

import (
	"io/fs"
	"syscall"
)

// changeStamp is what tells a file's state besides its size and mtime:
// the inode change time, in nanoseconds, and the inode number. A write,
// a chmod or a rename over the file changes one of them.
func changeStamp(fi fs.FileInfo) (ctime int64, id uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Sec*1e9 + st.Ctim.Nsec, st.Ino
	}
	return 0, 0
}
