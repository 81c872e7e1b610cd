//go:build linux && !amd64 && !arm64

package launch

// No filter on other architectures: package sandbox plans none there.
const sysSeccomp = ^uintptr(0)

// sysOpen is open(2), which only some architectures have (-1: none).
const sysOpen = -1

// sysProcessVMReadv is process_vm_readv(2).
const sysProcessVMReadv = ^uintptr(0)
