//go:build linux

package launch

const sysSeccomp = 317
