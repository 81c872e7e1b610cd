//go:build linux

package sandbox

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// runFilter runs the filter of mode on one system call, in the BPF
// interpreter, and returns the action. The interpreter loads words in
// network order where the kernel loads them in the machine's, so each
// 32-bit word of struct seccomp_data is written as the kernel would read
// it: the low half of an argument at its offset.
func runFilter(t *testing.T, vm *bpf.VM, arch, nr uint32, args ...uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[0:], nr)
	binary.BigEndian.PutUint32(data[4:], arch)
	for i, a := range args {
		binary.BigEndian.PutUint32(data[16+8*i:], uint32(a))
		binary.BigEndian.PutUint32(data[16+8*i+4:], uint32(a>>32))
	}
	out, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(out)
}

// The filter gives every system call the action the policy means: the
// refused ones their error, sockets by mode, the guarded calls to the
// guard (opens only when they write), clone with namespace flags refused,
// and everything else allowed; a call of another ABI kills the process.
func TestFilterActions(t *testing.T) {
	errno := func(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }
	for _, mode := range []Mode{ReadOnly, Protect, WorkspaceWrite} {
		guard := mode.Writes()
		raw, err := filterFor(mode, guard)
		if err != nil {
			t.Fatal(err)
		}
		var prog []bpf.Instruction
		for _, r := range raw {
			prog = append(prog, r.Disassemble())
		}
		vm, err := bpf.NewVM(prog)
		if err != nil {
			t.Fatal(err)
		}
		guarded := guardedCalls()
		for nr := uint32(0); nr < 600; nr++ {
			var want uint32 = unix.SECCOMP_RET_ALLOW
			args := []uint64{0, 0, 0, 0}
			if e, ok := refusedCalls[nr]; ok {
				want = errno(e)
			} else if c, ok := guarded[nr]; ok && guard && c != callOpenat && c != callOpen {
				want = unix.SECCOMP_RET_USER_NOTIF
			} else if nr == unix.SYS_SOCKET && mode == ReadOnly {
				want = errno(unix.EACCES)
			} else if nr == unix.SYS_SOCKET && mode == WorkspaceWrite {
				want = errno(unix.EACCES)
				args[0] = unix.AF_INET
			}
			if got := runFilter(t, vm, auditArch, nr, args...); got != want {
				t.Errorf("%s: system call %d: action %#x, want %#x", mode, nr, got, want)
			}
		}
		// Opens go to the guard only when they write or create.
		for _, flags := range []uint64{unix.O_RDONLY, unix.O_RDONLY | unix.O_CLOEXEC, unix.O_PATH, unix.O_DIRECTORY} {
			if got := runFilter(t, vm, auditArch, unix.SYS_OPENAT, 0, 0, flags); got != unix.SECCOMP_RET_ALLOW {
				t.Errorf("%s: openat(%#x): %#x, want allow", mode, flags, got)
			}
		}
		for _, flags := range []uint64{unix.O_WRONLY, unix.O_RDWR, unix.O_CREAT, unix.O_TRUNC, unix.O_WRONLY | unix.O_APPEND, unix.O_TMPFILE | unix.O_WRONLY} {
			want := uint32(unix.SECCOMP_RET_ALLOW)
			if guard {
				want = unix.SECCOMP_RET_USER_NOTIF
			}
			if got := runFilter(t, vm, auditArch, unix.SYS_OPENAT, 0, 0, flags); got != want {
				t.Errorf("%s: openat(%#x): %#x, want %#x", mode, flags, got, want)
			}
		}
		if mode == WorkspaceWrite {
			if got := runFilter(t, vm, auditArch, unix.SYS_SOCKET, unix.AF_UNIX); got != unix.SECCOMP_RET_ALLOW {
				t.Errorf("workspace-write refuses Unix sockets: %#x", got)
			}
		}
		for _, flags := range []uint64{unix.CLONE_NEWUSER, unix.CLONE_NEWNS | uint64(unix.SIGCHLD), unix.CLONE_NEWPID, unix.CLONE_NEWNET} {
			if got := runFilter(t, vm, auditArch, unix.SYS_CLONE, flags); got != errno(unix.EPERM) {
				t.Errorf("%s: clone(%#x): %#x, want EPERM", mode, flags, got)
			}
		}
		if got := runFilter(t, vm, auditArch, unix.SYS_CLONE, unix.CLONE_VM|unix.CLONE_VFORK|uint64(unix.SIGCHLD)); got != unix.SECCOMP_RET_ALLOW {
			t.Errorf("%s: an ordinary clone: %#x", mode, got)
		}
		if got := runFilter(t, vm, 0x40000003 /* AUDIT_ARCH_I386 */, 1); got != unix.SECCOMP_RET_KILL_PROCESS {
			t.Errorf("%s: a 32-bit system call: %#x, want kill", mode, got)
		}
		if x32Bit != 0 {
			if got := runFilter(t, vm, auditArch, x32Bit|unix.SYS_OPENAT, 0, 0, unix.O_CREAT); got != unix.SECCOMP_RET_KILL_PROCESS {
				t.Errorf("%s: an x32 system call: %#x, want kill", mode, got)
			}
		}
	}
}
