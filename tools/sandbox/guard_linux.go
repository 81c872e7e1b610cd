//go:build linux

package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/qwen-ls/qwen-ls/tools/sandbox/launch"
)

// The guard keeps the protected class (class.go) of a command that may
// write, by name, whether the file exists or not. The command's system
// calls that create, replace, rename, link, truncate or change the mode
// of a file stop in the kernel (a seccomp filter that notifies, see
// seccomp_linux.go) and come to the supervisor, which reads the path from
// the command's memory, resolves it the way the kernel would, refuses it
// when it falls in the class, and otherwise performs the call itself and
// hands the result back (the file descriptor for an open). It never lets
// the kernel continue the command's own call after a check: the command
// could change the path in between. The calls run on a thread confined by
// the same Landlock rules as the command, so the write allow-list holds
// for them too.

// Kernel structures of seccomp user notification (linux/seccomp.h).
type seccompData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

type seccompNotifAddfd struct {
	ID         uint64
	Flags      uint32
	Srcfd      uint32
	Newfd      uint32
	NewfdFlags uint32
}

const atFDCWD = unix.AT_FDCWD

type guard struct {
	listener int
	class    Class
	writable []string
	calls    map[uint32]call
	// work runs a function on the confined worker thread, which starts
	// with the first call (started; only the serving goroutine reads it).
	work    chan func()
	started bool
	// ruleset and rulesetFlags confine the worker threads.
	ruleset      int
	rulesetFlags uint32
	report       func(Denial)
}

// startGuard starts the goroutine that receives the notifications. The
// worker confined by ruleset, which performs the calls, starts with the
// first call: a command that writes nothing does not wait for it.
func startGuard(listener, ruleset int, rulesetFlags uint32, p Policy, report func(Denial), next func() launch.Notification) error {
	writable := p.Writable
	if p.TempDir != "" {
		writable = append(slices.Clip(writable), p.TempDir)
	}
	g := &guard{
		listener: listener, class: p.Class, writable: writable, calls: guardedCalls(),
		work: make(chan func()), ruleset: ruleset, rulesetFlags: rulesetFlags, report: report,
	}
	go g.serve(next)
	return nil
}

// startWorker starts a thread confined by the guard's ruleset that runs
// what arrives on work, until work is closed.
func (g *guard) startWorker(work <-chan func()) error {
	ready := make(chan error, 1)
	go func() {
		// The thread stays confined and locked: it is never given back
		// to the runtime, and ends with the goroutine.
		runtime.LockOSThread()
		err := restrictWith(g.ruleset, g.rulesetFlags)
		ready <- err
		if err != nil {
			return
		}
		for f := range work {
			f()
		}
	}()
	return <-ready
}

// onWorker runs f on the confined worker and returns its result.
func (g *guard) onWorker(f func() (int, error)) (int, error) {
	if !g.started {
		if err := g.startWorker(g.work); err != nil {
			return -1, unix.EPERM
		}
		g.started = true
	}
	type res struct {
		n   int
		err error
	}
	done := make(chan res, 1)
	g.work <- func() {
		n, err := f()
		done <- res{n, err}
	}
	r := <-done
	return r.n, r.err
}

// serve handles the notifications the supervisor's first stage receives
// and leaves to the guard (next).
func (g *guard) serve(next func() launch.Notification) {
	for {
		ln := next()
		n := seccompNotif{ID: ln.ID, Pid: ln.Pid, Flags: ln.Flags,
			Data: seccompData{Nr: ln.Nr, Arch: ln.Arch, IP: ln.IP, Args: ln.Args}}
		g.handle(&n)
	}
}

func ioctl(fd int, req uint, arg unsafe.Pointer) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
	if e != 0 {
		return e
	}
	return nil
}

// outcome is how a guarded call ends: a descriptor to install in the
// command (fd >= 0), or a value or an error.
type outcome struct {
	fd      int
	cloexec bool
	val     int64
	errno   unix.Errno
}

func failed(e unix.Errno) outcome { return outcome{fd: -1, errno: e} }

// handedOff is the outcome of a call another thread answers.
var handedOff = outcome{fd: -2}

func errOutcome(err error) outcome {
	if e, ok := err.(unix.Errno); ok {
		return failed(e)
	}
	return failed(unix.EIO)
}

var okOutcome = outcome{fd: -1}

func (g *guard) handle(n *seccompNotif) {
	c := g.calls[uint32(n.Data.Nr)]
	t := &target{pid: int(n.Pid), id: n.ID, listener: g.listener}
	var o outcome
	if c == 0 {
		o = failed(unix.ENOSYS)
	} else {
		o = g.do(t, c, n.Data.Args)
	}
	t.closeAll()
	if o == handedOff {
		return
	}
	g.respond(n.ID, o)
}

func (g *guard) respond(id uint64, o outcome) {
	if o.fd >= 0 {
		add := seccompNotifAddfd{ID: id, Flags: unix.SECCOMP_ADDFD_FLAG_SEND, Srcfd: uint32(o.fd)}
		if o.cloexec {
			add.NewfdFlags = unix.O_CLOEXEC
		}
		err := ioctl(g.listener, unix.SECCOMP_IOCTL_NOTIF_ADDFD, unsafe.Pointer(&add))
		_ = unix.Close(o.fd)
		if err == nil || err == unix.ENOENT {
			return
		}
		o = errOutcome(err)
	}
	resp := seccompNotifResp{ID: id, Val: o.val}
	if o.errno != 0 {
		resp.Error = -int32(o.errno)
	}
	_ = ioctl(g.listener, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp))
}

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

func (g *guard) do(t *target, c call, a [6]uint64) outcome {
	switch c {
	case callOpenat:
		return g.open(t, int32(a[0]), a[1], int(a[2]), uint32(a[3]))
	case callOpen:
		return g.open(t, atFDCWD, a[0], int(a[1]), uint32(a[2]))
	case callCreat:
		return g.open(t, atFDCWD, a[0], unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, uint32(a[1]))
	case callMkdirat, callMkdir:
		dirfd, p, mode := int32(a[0]), a[1], uint32(a[2])
		if c == callMkdir {
			dirfd, p, mode = atFDCWD, a[0], uint32(a[1])
		}
		return g.create(t, dirfd, p, func(n node) error { return unix.Mkdirat(n.dir, n.name, mode) })
	case callMknodat, callMknod:
		dirfd, p, mode, dev := int32(a[0]), a[1], uint32(a[2]), int(a[3])
		if c == callMknod {
			dirfd, p, mode, dev = atFDCWD, a[0], uint32(a[1]), int(a[2])
		}
		return g.create(t, dirfd, p, func(n node) error { return unix.Mknodat(n.dir, n.name, mode, dev) })
	case callSymlinkat, callSymlink:
		to, dirfd, p := a[0], int32(a[1]), a[2]
		if c == callSymlink {
			dirfd, p = atFDCWD, a[1]
		}
		dest, e := t.str(to)
		if e != 0 {
			return failed(e)
		}
		return g.create(t, dirfd, p, func(n node) error {
			if g.linkLeadsOut(n, dest) {
				return unix.EACCES
			}
			return unix.Symlinkat(dest, n.dir, n.name)
		})
	case callLinkat:
		return g.link(t, int32(a[0]), a[1], int32(a[2]), a[3], int(a[4]))
	case callLink:
		return g.link(t, atFDCWD, a[0], atFDCWD, a[1], 0)
	case callRenameat2:
		return g.rename(t, int32(a[0]), a[1], int32(a[2]), a[3], uint(a[4]))
	case callRenameat:
		return g.rename(t, int32(a[0]), a[1], int32(a[2]), a[3], 0)
	case callRename:
		return g.rename(t, atFDCWD, a[0], atFDCWD, a[1], 0)
	case callUnlinkat:
		return g.unlink(t, int32(a[0]), a[1], int(a[2]))
	case callUnlink:
		return g.unlink(t, atFDCWD, a[0], 0)
	case callRmdir:
		return g.unlink(t, atFDCWD, a[0], unix.AT_REMOVEDIR)
	case callTruncate:
		n, e := t.resolve(atFDCWD, a[0], true)
		if e != 0 {
			return failed(e)
		}
		if g.refused(n) {
			return failed(unix.EACCES)
		}
		size := int64(a[1])
		_, err := g.onWorker(func() (int, error) { return 0, unix.Truncate(n.procPath(), size) })
		if err != nil {
			return g.denied(n, err, true)
		}
		return okOutcome
	case callFchmodat, callFchmodat2, callChmod:
		dirfd, p, mode, flags := int32(a[0]), a[1], uint32(a[2]), int(a[3])
		if c == callChmod {
			dirfd, p, mode, flags = atFDCWD, a[0], uint32(a[1]), 0
		}
		if c == callFchmodat {
			flags = 0
		}
		if flags&unix.AT_EMPTY_PATH != 0 {
			if s, e := t.str(p); e == 0 && s == "" {
				return g.chmodFD(t, int(dirfd), mode)
			}
		}
		n, e := t.resolve(dirfd, p, flags&unix.AT_SYMLINK_NOFOLLOW == 0)
		if e != 0 {
			return failed(e)
		}
		return g.chmod(n, mode)
	case callFchmod:
		return g.chmodFD(t, int(int32(a[0])), uint32(a[1]))
	}
	return failed(unix.ENOSYS)
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
