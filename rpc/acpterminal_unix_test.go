//go:build unix

package rpc_test

import "syscall"

// killGroup ends the terminal's process group at once with SIGKILL, as an
// editor's terminal/kill does.
func killGroup(id int) {
	if id > 0 {
		_ = syscall.Kill(-id, syscall.SIGKILL)
	}
}
