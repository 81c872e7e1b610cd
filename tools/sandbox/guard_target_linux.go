//go:build linux

package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The guard's view of the command whose call it handles: reading a path
// from its memory and resolving it, one component at a time, the way the
// kernel would for that process.

// target is the process whose call is being handled, and the
// descriptors opened for it.
type target struct {
	pid      int
	id       uint64
	listener int
	tgid     int
	fds      []int
}

func (t *target) keep(fd int) int {
	t.fds = append(t.fds, fd)
	return fd
}

func (t *target) closeAll() {
	for _, fd := range t.fds {
		_ = unix.Close(fd)
	}
}

// valid reports whether the notification still stands (the process has
// not died and its pid been reused since it was read).
func (t *target) valid() bool {
	id := t.id
	return ioctl(t.listener, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id)) == nil
}

// str reads a NUL-terminated path from the command's memory.
func (t *target) str(addr uint64) (string, unix.Errno) {
	if addr == 0 {
		return "", unix.EFAULT
	}
	var out []byte
	for len(out) < unix.PathMax {
		chunk := 4096 - int(addr%4096)
		buf := make([]byte, chunk)
		n, err := unix.ProcessVMReadv(t.pid, []unix.Iovec{{Base: &buf[0], Len: uint64(chunk)}},
			[]unix.RemoteIovec{{Base: uintptr(addr), Len: chunk}}, 0)
		if err != nil || n <= 0 {
			return "", unix.EFAULT
		}
		if i := bytes.IndexByte(buf[:n], 0); i >= 0 {
			out = append(out, buf[:i]...)
			if !t.valid() {
				return "", unix.ESRCH
			}
			return string(out), 0
		}
		out = append(out, buf[:n]...)
		addr += uint64(n)
	}
	return "", unix.ENAMETOOLONG
}

// status reads the process's thread group and umask.
func (t *target) status() (tgid int, umask uint32) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(t.pid) + "/status")
	umask = 0o022
	if err != nil {
		return t.pid, umask
	}
	tgid = t.pid
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "Umask":
			if u, err := strconv.ParseUint(v, 8, 32); err == nil {
				umask = uint32(u)
			}
		case "Tgid":
			if n, err := strconv.Atoi(v); err == nil {
				tgid = n
			}
		}
	}
	return tgid, umask
}

// start is where path starts for an *at call: "/" for an absolute path,
// the process's current folder for AT_FDCWD, else the folder dirfd is.
func (t *target) start(dirfd int32, path string) (int, unix.Errno) {
	var p string
	switch {
	case strings.HasPrefix(path, "/"):
		p = "/"
	case dirfd == atFDCWD:
		p = "/proc/" + strconv.Itoa(t.pid) + "/cwd"
	case dirfd < 0:
		return -1, unix.EBADF
	default:
		p = "/proc/" + strconv.Itoa(t.pid) + "/fd/" + strconv.Itoa(int(dirfd))
	}
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if p != "/" {
			return -1, unix.EBADF
		}
		return -1, err.(unix.Errno)
	}
	return t.keep(fd), 0
}

// procSelf rewrites /proc/self and /proc/thread-self to the command's own
// entries: the supervisor resolves the path, not the command.
func (t *target) procSelf(path string) string {
	for _, self := range []string{"/proc/self", "/proc/thread-self"} {
		if path == self || strings.HasPrefix(path, self+"/") {
			return "/proc/" + strconv.Itoa(t.pid) + path[len(self):]
		}
	}
	return path
}

// allowedProc reports whether dir, a folder under /proc, belongs to the
// command's own process: the supervisor may open another process's
// descriptors, the command may not.
func (t *target) allowedProc(dir string) bool {
	rest, ok := strings.CutPrefix(dir, "/proc/")
	if !ok {
		return true
	}
	first, _, _ := strings.Cut(rest, "/")
	n, err := strconv.Atoi(first)
	if err != nil {
		return true
	}
	if t.tgid == 0 {
		t.tgid, _ = t.status()
	}
	return n == t.pid || n == t.tgid
}

// fdPath is the path the kernel gives for a descriptor of ours.
func fdPath(fd int) string {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || !strings.HasPrefix(p, "/") || strings.HasSuffix(p, " (deleted)") {
		return ""
	}
	return p
}

// node is a resolved name: the folder it is in (a descriptor), its last
// part, and its path. A name reached through a /proc link to an open file
// (magic) has no folder: fd is the file itself.
type node struct {
	dir   int
	name  string
	path  string
	magic int
}

// splitLast splits path into its folder and last part, dropping
// trailing slashes.
func splitLast(path string) (dir, name string) {
	trimmed := strings.TrimRight(path, "/")
	if trimmed == "" {
		return "/", "."
	}
	i := strings.LastIndexByte(trimmed, '/')
	switch {
	case i < 0:
		return ".", trimmed
	case i == 0:
		return "/", trimmed[1:]
	}
	return trimmed[:i], trimmed[i+1:]
}

// lookup resolves path (from start) as the kernel would: the folders on
// the way are followed by the kernel itself, and the last part, when
// follow is set and it is a link, is followed here, up to 40 links.
func (t *target) lookup(start int, path string, follow bool) (node, unix.Errno) {
	if path == "" {
		return node{}, unix.ENOENT
	}
	base := start
	for hops := 0; hops <= 40; hops++ {
		path = t.procSelf(path)
		dirPart, name := splitLast(path)
		dfd, err := unix.Openat(base, dirPart, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return node{}, err.(unix.Errno)
		}
		t.keep(dfd)
		dpath := fdPath(dfd)
		if strings.HasPrefix(dpath, "/proc/") && !t.allowedProc(dpath) {
			return node{}, unix.EACCES
		}
		n := node{dir: dfd, name: name, path: filepath.Join(dpath, name), magic: -1}
		if dpath == "" {
			n.path = ""
		}
		if !follow || name == "." || name == ".." {
			return n, 0
		}
		var st unix.Stat_t
		if unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
			return n, 0
		}
		if strings.HasPrefix(dpath, "/proc/") {
			// A link under /proc may lead to an open file rather than
			// a path: let the kernel follow it, and work on the file.
			fd, err := unix.Openat(dfd, name, unix.O_PATH|unix.O_CLOEXEC, 0)
			if err != nil {
				return node{}, err.(unix.Errno)
			}
			t.keep(fd)
			return node{dir: -1, path: fdPath(fd), magic: fd}, 0
		}
		buf := make([]byte, unix.PathMax)
		k, err := unix.Readlinkat(dfd, name, buf)
		if err != nil {
			return node{}, err.(unix.Errno)
		}
		base, path = dfd, string(buf[:k])
	}
	return node{}, unix.ELOOP
}

// resolve reads the path at addr and looks it up from dirfd.
func (t *target) resolve(dirfd int32, addr uint64, follow bool) (node, unix.Errno) {
	path, e := t.str(addr)
	if e != 0 {
		return node{}, e
	}
	start, e := t.start(dirfd, path)
	if e != 0 {
		return node{}, e
	}
	return t.lookup(start, path, follow)
}
