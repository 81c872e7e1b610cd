//go:build linux

package sandbox

import (
	"runtime"
	"slices"
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
