//go:build linux

package launch

const sysSeccomp = 277

// sysOpen is open(2), which only some architectures have (-1: none).
const sysOpen = -1

// sysProcessVMReadv is process_vm_readv(2).
const sysProcessVMReadv = 270
