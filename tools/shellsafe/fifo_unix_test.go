//go:build unix

package shellsafe_test

import "syscall"

func syscallMkfifo(p string) error { return syscall.Mkfifo(p, 0o644) }
