//go:build linux

package launch

const sysSeccomp = 317

// sysOpen is open(2), which only some architectures have (-1: none).
const sysOpen = 2

// sysProcessVMReadv is process_vm_readv(2).
const sysProcessVMReadv = 310
