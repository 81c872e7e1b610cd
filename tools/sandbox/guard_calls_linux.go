//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The calls the guard performs for the command: each checks the names it
// would write against the class and the write allow-list, then does the
// call itself on the confined worker.

// refused checks a name the call would write against the class, and
// reports it when it falls in it.
func (g *guard) refused(n node) bool {
	if n.path == "" {
		return false
	}
	if k, ok := g.class.Protected(n.path); ok {
		g.report(Denial{Op: "write", Path: n.path, Kind: k})
		return true
	}
	return false
}

// denied turns a failed call into its outcome, and reports it when the
// sandbox (not the file's own permissions) refused it: the person could
// have made the call, the command could not.
func (g *guard) denied(n node, err error, existing bool) outcome {
	if (err == unix.EACCES || err == unix.EPERM) && n.path != "" {
		could := false
		if n.magic >= 0 {
			could = unix.Faccessat(n.magic, "", unix.W_OK, unix.AT_EMPTY_PATH|unix.AT_EACCESS) == nil
		} else if existing {
			could = unix.Faccessat(n.dir, n.name, unix.W_OK, unix.AT_EACCESS) == nil
		} else {
			could = unix.Faccessat(n.dir, ".", unix.W_OK, unix.AT_EACCESS) == nil
		}
		if could {
			g.report(Denial{Op: "write", Path: n.path})
		}
	}
	return errOutcome(err)
}

// inWritable reports whether path is inside the write allow-list; used
// for what Landlock does not cover (the mode of a file).
func (g *guard) inWritable(path string) bool {
	for _, w := range g.writable {
		if within(path, w) {
			return true
		}
	}
	return strings.HasPrefix(path, "/dev/")
}

// procPath names the node through our descriptor, for calls that take
// only a path.
func (n node) procPath() string {
	if n.magic >= 0 {
		return "/proc/self/fd/" + strconv.Itoa(n.magic)
	}
	return "/proc/self/fd/" + strconv.Itoa(n.dir) + "/" + n.name
}

func (g *guard) open(t *target, dirfd int32, addr uint64, flags int, mode uint32) outcome {
	follow := flags&unix.O_NOFOLLOW == 0 && flags&(unix.O_CREAT|unix.O_EXCL) != unix.O_CREAT|unix.O_EXCL
	n, e := t.resolve(dirfd, addr, follow)
	if e != 0 {
		return failed(e)
	}
	if g.refused(n) {
		return failed(unix.EACCES)
	}
	cloexec := flags&unix.O_CLOEXEC != 0
	var st unix.Stat_t
	exists := false
	if n.magic >= 0 {
		exists = true
		_ = unix.Fstat(n.magic, &st)
	} else {
		exists = unix.Fstatat(n.dir, n.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
	}
	run := func() (int, error) {
		if n.magic >= 0 {
			return unix.Open(n.procPath(), (flags|unix.O_CLOEXEC)&^unix.O_CREAT, 0)
		}
		nf := flags | unix.O_CLOEXEC
		if follow {
			// The last link was followed here; a link that appears
			// there now is not followed.
			nf |= unix.O_NOFOLLOW
		}
		return unix.Openat(n.dir, n.name, nf, mode)
	}
	if flags&unix.O_CREAT != 0 {
		_, umask := t.status()
		inner := run
		run = func() (int, error) {
			old := unix.Umask(int(umask))
			defer unix.Umask(old)
			return inner()
		}
	}
	if exists && st.Mode&unix.S_IFMT == unix.S_IFIFO && flags&unix.O_NONBLOCK == 0 {
		// Opening a pipe waits for the other end: do it on a worker of
		// its own, so that other calls go on meanwhile.
		work := make(chan func(), 1)
		if err := g.startWorker(work); err != nil {
			return errOutcome(err)
		}
		id := t.id
		fds := t.fds
		t.fds = nil
		work <- func() {
			fd, err := run()
			for _, f := range fds {
				_ = unix.Close(f)
			}
			if err != nil {
				g.respond(id, g.denied(n, err, true))
			} else {
				g.respond(id, outcome{fd: fd, cloexec: cloexec})
			}
			close(work)
		}
		return handedOff
	}
	fd, err := g.onWorker(run)
	if err != nil {
		return g.denied(n, err, exists)
	}
	return outcome{fd: fd, cloexec: cloexec}
}

// create resolves a name the call makes (it never follows a last link)
// and makes it on the worker.
func (g *guard) create(t *target, dirfd int32, addr uint64, mk func(node) error) outcome {
	n, e := t.resolve(dirfd, addr, false)
	if e != 0 {
		return failed(e)
	}
	if g.refused(n) {
		return failed(unix.EACCES)
	}
	_, umask := t.status()
	_, err := g.onWorker(func() (int, error) {
		old := unix.Umask(int(umask))
		defer unix.Umask(old)
		return 0, mk(n)
	})
	if err != nil {
		return g.denied(n, err, false)
	}
	return okOutcome
}

func (g *guard) link(t *target, olddirfd int32, oldaddr uint64, newdirfd int32, newaddr uint64, flags int) outcome {
	var old node
	if s, e := t.str(oldaddr); e == 0 && s == "" && flags&unix.AT_EMPTY_PATH != 0 {
		if olddirfd < 0 {
			return failed(unix.EBADF)
		}
		fd, err := unix.Open("/proc/"+strconv.Itoa(t.pid)+"/fd/"+strconv.Itoa(int(olddirfd)), unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return failed(unix.EBADF)
		}
		t.keep(fd)
		old = node{dir: -1, path: fdPath(fd), magic: fd}
	} else {
		var e unix.Errno
		old, e = t.resolve(olddirfd, oldaddr, flags&unix.AT_SYMLINK_FOLLOW != 0)
		if e != 0 {
			return failed(e)
		}
	}
	n, e := t.resolve(newdirfd, newaddr, false)
	if e != 0 {
		return failed(e)
	}
	// A second name for a protected file would let a later write
	// through it change the file.
	if g.refused(old) || g.refused(n) {
		return failed(unix.EACCES)
	}
	if old.magic < 0 && n.path != "" {
		// A hard link to a symbolic link is a symbolic link with the
		// same target under the new name.
		var st unix.Stat_t
		buf := make([]byte, unix.PathMax)
		if unix.Fstatat(old.dir, old.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			if k, err := unix.Readlinkat(old.dir, old.name, buf); err != nil || g.linkLeadsOut(n, string(buf[:k])) {
				return failed(unix.EACCES)
			}
		}
	}
	_, err := g.onWorker(func() (int, error) {
		if old.magic >= 0 {
			return 0, unix.Linkat(atFDCWD, old.procPath(), n.dir, n.name, unix.AT_SYMLINK_FOLLOW)
		}
		return 0, unix.Linkat(old.dir, old.name, n.dir, n.name, 0)
	})
	if err != nil {
		return g.denied(n, err, false)
	}
	return okOutcome
}

func (g *guard) rename(t *target, olddirfd int32, oldaddr uint64, newdirfd int32, newaddr uint64, flags uint) outcome {
	old, e := t.resolve(olddirfd, oldaddr, false)
	if e != 0 {
		return failed(e)
	}
	n, e := t.resolve(newdirfd, newaddr, false)
	if e != 0 {
		return failed(e)
	}
	// Moving a protected file or folder away is refused as well as
	// moving something into its place.
	if g.refused(old) || g.refused(n) {
		return failed(unix.EACCES)
	}
	// A folder or a link brings what is below it (Class.TreeMoveKeeps);
	// an exchange moves both ways.
	if !g.treeMoveKeeps(old, n) || (flags&unix.RENAME_EXCHANGE != 0 && !g.treeMoveKeeps(n, old)) {
		return failed(unix.EXDEV)
	}
	_, err := g.onWorker(func() (int, error) {
		return 0, unix.Renameat2(old.dir, old.name, n.dir, n.name, flags)
	})
	if err != nil {
		return g.denied(n, err, false)
	}
	return okOutcome
}

// treeMoveKeeps reports whether from, when it is a folder or a link, may
// be renamed to to.
func (g *guard) treeMoveKeeps(from, to node) bool {
	var st unix.Stat_t
	if to.path == "" || from.magic >= 0 || unix.Fstatat(from.dir, from.name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		// The kernel will say what a rename from nothing, or to a
		// folder that is gone, comes to.
		return true
	}
	if k := st.Mode & unix.S_IFMT; k != unix.S_IFDIR && k != unix.S_IFLNK {
		return true
	}
	return g.class.TreeMoveKeeps(from.path, to.path)
}

// linkLeadsOut reports whether a symbolic link n, made where the class is
// kept, with target dest, would lead into a folder the command may write
// outside the roots (its temporary folder, a cache, or a folder above
// one) or into /proc. The names below the link would then be reached from
// inside the roots (a .envrc, a .vscode folder, a git directory) without
// the guard seeing them made.
func (g *guard) linkLeadsOut(n node, dest string) bool {
	if n.path == "" || !g.class.Within(n.path) {
		return false
	}
	abs := dest
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(filepath.Dir(n.path), dest)
	}
	abs = filepath.Clean(abs)
	real := realPath(abs)
	for _, p := range []string{abs, real} {
		if within(p, "/proc") || within(p, "/dev/fd") {
			return true
		}
	}
	for _, w := range g.writable {
		if g.class.Within(w) {
			continue
		}
		for _, wr := range []string{w, realPath(w)} {
			if within(real, wr) || within(wr, real) {
				return true
			}
		}
	}
	return false
}

// realPath is p with the links of its longest existing part resolved.
func realPath(p string) string {
	rest := ""
	for q := p; ; q = filepath.Dir(q) {
		if r, err := filepath.EvalSymlinks(q); err == nil {
			return filepath.Join(r, rest)
		}
		if q == filepath.Dir(q) {
			return p
		}
		rest = filepath.Join(filepath.Base(q), rest)
	}
}

// unlink removes a name (a folder with AT_REMOVEDIR) unless it is in the
// class: read-only means it cannot be removed either, where no read-only
// mount keeps it (a nested repository's git directory, an .envrc below
// the top of a root).
func (g *guard) unlink(t *target, dirfd int32, addr uint64, flags int) outcome {
	n, e := t.resolve(dirfd, addr, false)
	if e != 0 {
		return failed(e)
	}
	if _, ok := g.class.Protected(n.path); ok && n.path != "" {
		// What would fail anyway fails as it would: git removes the
		// folders above a file it deleted until one is not empty, up
		// to the git directory itself.
		if e := unlinkFails(n, flags); e != 0 {
			return failed(e)
		}
	}
	if g.refused(n) {
		return failed(unix.EACCES)
	}
	_, err := g.onWorker(func() (int, error) { return 0, unix.Unlinkat(n.dir, n.name, flags) })
	if err != nil {
		return g.denied(n, err, true)
	}
	return okOutcome
}

// unlinkFails is the error unlinkat would give for a reason of its own:
// the name is missing, a folder is not empty, or the kind is not the
// one asked for.
func unlinkFails(n node, flags int) unix.Errno {
	var st unix.Stat_t
	if err := unix.Fstatat(n.dir, n.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err.(unix.Errno)
	}
	dir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	switch {
	case flags&unix.AT_REMOVEDIR == 0 && dir:
		return unix.EISDIR
	case flags&unix.AT_REMOVEDIR != 0 && !dir:
		return unix.ENOTDIR
	case dir:
		fd, err := unix.Openat(n.dir, n.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0
		}
		f := os.NewFile(uintptr(fd), n.path)
		names, _ := f.Readdirnames(1)
		f.Close()
		if len(names) > 0 {
			return unix.ENOTEMPTY
		}
	}
	return 0
}

func (g *guard) chmod(n node, mode uint32) outcome {
	if g.refused(n) {
		return failed(unix.EACCES)
	}
	if n.path != "" && !g.inWritable(n.path) {
		// Landlock does not cover a file's mode: the allow-list is
		// kept here.
		return g.denied(n, unix.EACCES, true)
	}
	var err error
	if n.magic >= 0 {
		err = unix.Chmod(n.procPath(), mode)
	} else {
		var st unix.Stat_t
		if unix.Fstatat(n.dir, n.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return failed(unix.EOPNOTSUPP)
		}
		err = unix.Fchmodat(n.dir, n.name, mode, 0)
	}
	if err != nil {
		return errOutcome(err)
	}
	return okOutcome
}

func (g *guard) chmodFD(t *target, fd int, mode uint32) outcome {
	if fd < 0 {
		return failed(unix.EBADF)
	}
	pidfd, err := unix.PidfdOpen(t.pid, 0)
	if err != nil {
		return failed(unix.EBADF)
	}
	t.keep(pidfd)
	ours, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		return failed(unix.EBADF)
	}
	t.keep(ours)
	n := node{dir: -1, path: fdPath(ours), magic: ours}
	if g.refused(n) {
		return failed(unix.EACCES)
	}
	if n.path != "" && !g.inWritable(n.path) {
		return g.denied(n, unix.EACCES, true)
	}
	if err := unix.Fchmod(ours, mode); err != nil {
		return errOutcome(err)
	}
	return okOutcome
}
