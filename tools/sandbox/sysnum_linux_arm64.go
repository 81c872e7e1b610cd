package sandbox

// auditArch is AUDIT_ARCH_AARCH64: a system call made through the 32-bit
// ABI is refused whole.
const auditArch = 0xC00000B7

// x32Bit does not exist on arm64.
const x32Bit = 0

// legacyCalls: arm64 has only the *at forms.
var legacyCalls = map[uint32]call{}

const guardArch = true
