package sandbox

import "golang.org/x/sys/unix"

// auditArch is AUDIT_ARCH_X86_64: a system call made through another
// ABI (32-bit int 0x80) is refused whole.
const auditArch = 0xC000003E

// x32Bit marks the x32 ABI's system call numbers, refused too.
const x32Bit = 0x40000000

// legacyCalls are the path system calls older than their *at forms, which
// amd64 still has.
var legacyCalls = map[uint32]call{
	unix.SYS_OPEN: callOpen, unix.SYS_CREAT: callCreat, unix.SYS_MKDIR: callMkdir,
	unix.SYS_MKNOD: callMknod, unix.SYS_LINK: callLink, unix.SYS_SYMLINK: callSymlink,
	unix.SYS_RENAME: callRename, unix.SYS_CHMOD: callChmod, unix.SYS_UNLINK: callUnlink, unix.SYS_RMDIR: callRmdir,
}

const guardArch = true
