//go:build linux

package launch

import (
	"sync"
	"syscall"
	"unsafe"
)

// The first stage receives the guard's notifications from the start:
// package sandbox's guard, which judges them against the protected class,
// comes up only once the rest of the binary has initialised, and a shell
// opens /dev/tty for reading and writing before anything else. An open
// of one of the devices the command may write (the terminal, /dev/null)
// concerns no file, so this stage performs it itself; every other
// notification waits in a queue for the guard (Next).

// Notification is a guarded system call: struct seccomp_notif.
type Notification struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

type notifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

type notifAddfd struct {
	ID         uint64
	Flags      uint32
	Srcfd      uint32
	Newfd      uint32
	NewfdFlags uint32
}

const (
	ioctlNotifRecv    = 0xc0502100
	ioctlNotifSend    = 0xc0182101
	ioctlNotifIDValid = 0x40082102
	ioctlNotifAddfd   = 0x40182103
	addfdFlagSend     = 2

	atFDCWD  = -100
	oTmpfile = 0x400000
)

// queue holds the notifications this stage leaves to the guard.
type queue struct {
	mu    sync.Mutex
	cond  *sync.Cond
	items []Notification
}

func ioctlPtr(fd int, req uintptr, arg unsafe.Pointer) syscall.Errno {
	_, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
	return e
}

// serve receives every notification for the supervisor's life.
func (st *State) serve() {
	for {
		var n Notification
		if e := ioctlPtr(st.Listener, ioctlNotifRecv, unsafe.Pointer(&n)); e != 0 {
			if e == syscall.EINTR || e == syscall.ENOENT {
				continue
			}
			return
		}
		if st.device(&n) {
			continue
		}
		st.q.mu.Lock()
		st.q.items = append(st.q.items, n)
		st.q.mu.Unlock()
		st.q.cond.Signal()
	}
}

// Next returns the next notification this stage left to the guard,
// waiting for one.
func (st *State) Next() Notification {
	st.q.mu.Lock()
	defer st.q.mu.Unlock()
	for len(st.q.items) == 0 {
		st.q.cond.Wait()
	}
	n := st.q.items[0]
	st.q.items = st.q.items[1:]
	return n
}

// device performs an open of one of the devices a confined command may
// write (Plan.Devices, the same list its Landlock rules grant: the null
// sink, the terminal), named by an absolute path, and reports whether it
// answered the notification. The path is resolved by the kernel to an
// open file of this process's, which must be a character device that the
// list names; the open is then of that file. Anything else goes to the
// guard.
func (st *State) device(n *Notification) bool {
	var path uint64
	var flags uint64
	switch {
	case n.Nr == syscall.SYS_OPENAT && int32(n.Args[0]) == atFDCWD:
		path, flags = n.Args[1], n.Args[2]
	case sysOpen >= 0 && n.Nr == int32(sysOpen):
		path, flags = n.Args[0], n.Args[1]
	default:
		return false
	}
	if flags&(syscall.O_EXCL|oTmpfile) != 0 || len(st.devices) == 0 {
		return false
	}
	name, ok := readPath(int(n.Pid), path)
	// /dev/stdout, /dev/stderr and /dev/fd lead through /proc/self,
	// which would be this process's here: the guard resolves those.
	if !ok || !hasPrefix(name, "/dev/") || hasPrefix(name, "/dev/std") || hasPrefix(name, "/dev/fd/") || contains(name, "/..") {
		return false
	}
	id := n.ID
	if ioctlPtr(st.Listener, ioctlNotifIDValid, unsafe.Pointer(&id)) != 0 {
		return true
	}
	fd, err := syscall.Open(name, oPath|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	var fi syscall.Stat_t
	if syscall.Fstat(fd, &fi) != nil || fi.Mode&syscall.S_IFMT != syscall.S_IFCHR {
		return false
	}
	buf := make([]byte, 256)
	k, err := syscall.Readlink("/proc/self/fd/"+itoa(fd), buf)
	if err != nil || !st.allowedDevice(string(buf[:k])) {
		return false
	}
	open := int(flags)&^(syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW) | syscall.O_CLOEXEC
	got, err := syscall.Open("/proc/self/fd/"+itoa(fd), open, 0)
	if err != nil {
		resp := notifResp{ID: n.ID, Error: -int32(err.(syscall.Errno))}
		ioctlPtr(st.Listener, ioctlNotifSend, unsafe.Pointer(&resp))
		return true
	}
	add := notifAddfd{ID: n.ID, Flags: addfdFlagSend, Srcfd: uint32(got)}
	if flags&syscall.O_CLOEXEC != 0 {
		add.NewfdFlags = syscall.O_CLOEXEC
	}
	ioctlPtr(st.Listener, ioctlNotifAddfd, unsafe.Pointer(&add))
	syscall.Close(got)
	return true
}

func (st *State) allowedDevice(p string) bool {
	for _, d := range st.devices {
		if p == d {
			return true
		}
	}
	return false
}

// readPath reads a NUL-terminated path of at most 4 KiB from the
// process's memory.
func readPath(pid int, addr uint64) (string, bool) {
	if addr == 0 {
		return "", false
	}
	var out []byte
	for len(out) < 4096 {
		chunk := 4096 - int(addr%4096)
		buf := make([]byte, chunk)
		local := syscall.Iovec{Base: &buf[0]}
		local.SetLen(chunk)
		remote := struct {
			base uintptr
			len  uintptr
		}{uintptr(addr), uintptr(chunk)}
		r, _, e := syscall.Syscall6(sysProcessVMReadv, uintptr(pid), uintptr(unsafe.Pointer(&local)), 1,
			uintptr(unsafe.Pointer(&remote)), 1, 0)
		if e != 0 || r == 0 {
			return "", false
		}
		got := buf[:r]
		if i := indexByte(string(got), 0); i >= 0 {
			return string(append(out, got[:i]...)), true
		}
		out = append(out, got...)
		addr += uint64(r)
	}
	return "", false
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func itoa(n int) string { return string(utoa(nil, uint64(n))) }
