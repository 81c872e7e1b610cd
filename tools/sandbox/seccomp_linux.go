//go:build linux

package sandbox

import (
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// call is a system call the guard handles for a command that may write.
type call int

const (
	callOpenat call = iota + 1
	callOpen
	callCreat
	callMkdirat
	callMkdir
	callMknodat
	callMknod
	callSymlinkat
	callSymlink
	callLinkat
	callLink
	callRenameat2
	callRenameat
	callRename
	callTruncate
	callFchmodat
	callFchmodat2
	callChmod
	callFchmod
	callUnlinkat
	callUnlink
	callRmdir
)

// guardedCalls maps the system calls the guard sees to what they are:
// every call that creates, replaces, renames, links, removes, truncates or
// changes the mode of a file by name (open and openat only when they
// write or create).
func guardedCalls() map[uint32]call {
	m := map[uint32]call{
		unix.SYS_OPENAT: callOpenat, unix.SYS_MKDIRAT: callMkdirat, unix.SYS_MKNODAT: callMknodat,
		unix.SYS_SYMLINKAT: callSymlinkat, unix.SYS_LINKAT: callLinkat, unix.SYS_RENAMEAT2: callRenameat2,
		unix.SYS_RENAMEAT: callRenameat, unix.SYS_TRUNCATE: callTruncate, unix.SYS_FCHMODAT: callFchmodat,
		unix.SYS_FCHMODAT2: callFchmodat2, unix.SYS_FCHMOD: callFchmod, unix.SYS_UNLINKAT: callUnlinkat,
	}
	for nr, c := range legacyCalls {
		m[nr] = c
	}
	return m
}

// openWrites are the open flags that make an open a write.
const openWrites = unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC

// refusedCalls are refused to every confined command, with the error
// each gets: ENOSYS where a library falls back to an older call (clone3,
// openat2, io_uring), EPERM elsewhere. They would change the mount
// table, leave the namespaces, bypass the filter (io_uring runs opens
// and sockets without system calls), reach the kernel's key rings, or
// open a file by handle around the path checks.
var refusedCalls = map[uint32]unix.Errno{
	unix.SYS_CLONE3: unix.ENOSYS, unix.SYS_OPENAT2: unix.ENOSYS,
	unix.SYS_IO_URING_SETUP: unix.ENOSYS, unix.SYS_IO_URING_ENTER: unix.ENOSYS, unix.SYS_IO_URING_REGISTER: unix.ENOSYS,
	unix.SYS_MOUNT: unix.EPERM, unix.SYS_UMOUNT2: unix.EPERM, unix.SYS_PIVOT_ROOT: unix.EPERM,
	unix.SYS_MOVE_MOUNT: unix.EPERM, unix.SYS_OPEN_TREE: unix.EPERM, unix.SYS_OPEN_TREE_ATTR: unix.EPERM,
	unix.SYS_FSOPEN: unix.EPERM, unix.SYS_FSCONFIG: unix.EPERM, unix.SYS_FSMOUNT: unix.EPERM,
	unix.SYS_FSPICK: unix.EPERM, unix.SYS_MOUNT_SETATTR: unix.EPERM,
	unix.SYS_UNSHARE: unix.EPERM, unix.SYS_SETNS: unix.EPERM, unix.SYS_CHROOT: unix.EPERM,
	unix.SYS_OPEN_BY_HANDLE_AT: unix.EPERM, unix.SYS_NAME_TO_HANDLE_AT: unix.EPERM,
	unix.SYS_KEYCTL: unix.EPERM, unix.SYS_ADD_KEY: unix.EPERM, unix.SYS_REQUEST_KEY: unix.EPERM,
	unix.SYS_BPF: unix.EPERM, unix.SYS_USERFAULTFD: unix.EPERM,
}

// newNamespaces are clone's flags that make namespaces.
const newNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP

// Offsets in struct seccomp_data.
const (
	dataNr   = 0
	dataArch = 4
	dataArgs = 16
)

func retErrno(e unix.Errno) bpf.Instruction {
	return bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(e)}
}

var (
	retAllow  = bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW}
	retNotify = bpf.RetConstant{Val: unix.SECCOMP_RET_USER_NOTIF}
)

// argLow loads the low 32 bits of argument i (both architectures are
// little-endian).
func argLow(i int) bpf.Instruction {
	return bpf.LoadAbsolute{Off: uint32(dataArgs + 8*i), Size: 4}
}

// filterFor is the system call filter of a confined mode: the refused
// calls; sockets (none for read-only, Unix only for workspace-write);
// and, with guard, the calls the guard handles sent to it.
func filterFor(mode Mode, guard bool) ([]bpf.RawInstruction, error) {
	var prog []bpf.Instruction
	// Another ABI (32-bit, x32) is refused whole: its numbers differ.
	prog = append(prog,
		bpf.LoadAbsolute{Off: dataArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArch, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
	)
	if x32Bit != 0 {
		prog = append(prog,
			bpf.LoadAbsolute{Off: dataNr, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpLessThan, Val: x32Bit, SkipTrue: 1},
			bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
		)
	}
	// The rules, by system call number: each is the code that runs for
	// that number, ending in a return.
	rules := map[uint32][]bpf.Instruction{}
	for nr, e := range refusedCalls {
		rules[nr] = []bpf.Instruction{retErrno(e)}
	}
	rules[unix.SYS_CLONE] = []bpf.Instruction{
		argLow(0),
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: newNamespaces, SkipFalse: 1},
		retErrno(unix.EPERM),
		retAllow,
	}
	switch mode {
	case ReadOnly:
		rules[unix.SYS_SOCKET] = []bpf.Instruction{retErrno(unix.EACCES)}
	case WorkspaceWrite:
		rules[unix.SYS_SOCKET] = []bpf.Instruction{
			argLow(0),
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_UNIX, SkipTrue: 1},
			retErrno(unix.EACCES),
			retAllow,
		}
	}
	if guard {
		for nr, c := range guardedCalls() {
			switch c {
			case callOpenat:
				rules[nr] = []bpf.Instruction{argLow(2), bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: openWrites, SkipFalse: 1}, retNotify, retAllow}
			case callOpen:
				rules[nr] = []bpf.Instruction{argLow(1), bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: openWrites, SkipFalse: 1}, retNotify, retAllow}
			default:
				rules[nr] = []bpf.Instruction{retNotify}
			}
		}
	}
	prog = append(prog, dispatch(rules)...)
	return bpf.Assemble(prog)
}

// chunk is how many rules dispatch compares one by one.
const chunk = 8

// dispatch is the code that finds a system call's rule: the numbers in
// order, in groups of chunk, each group skipped with one comparison when
// the number is past it. A call matches in about a dozen instructions, not
// one per rule: the kernel runs the filter for every number when it
// builds its cache of calls always allowed, and on every call.
func dispatch(rules map[uint32][]bpf.Instruction) []bpf.Instruction {
	nrs := sortedKeys(rules)
	out := []bpf.Instruction{bpf.LoadAbsolute{Off: dataNr, Size: 4}}
	for i := 0; i < len(nrs); i += chunk {
		group := nrs[i:min(i+chunk, len(nrs))]
		var body []bpf.Instruction
		for _, nr := range group {
			// The number stays in A between rules: every rule's code
			// ends in a return, so the code that loads an argument
			// never falls through to the next comparison.
			code := rules[nr]
			body = append(body, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: uint8(len(code))})
			body = append(body, code...)
		}
		// A number in this group's range that has no rule is allowed.
		body = append(body, retAllow)
		if i+chunk < len(nrs) {
			out = append(out, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: nrs[i+chunk], SkipTrue: uint8(len(body))})
		}
		out = append(out, body...)
	}
	return append(out, retAllow)
}

func sortedKeys[V any](m map[uint32]V) []uint32 {
	out := make([]uint32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
