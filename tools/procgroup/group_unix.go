//go:build unix

package procgroup

import (
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// Prepare makes cmd start in a process group of its own, whose id is then
// the process's pid, so that the whole group can be signalled. The
// caller's other SysProcAttr fields are kept.
func Prepare(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// Adopt is called with the pid of a command started after Prepare. On
// Unix the process group exists from the start: nothing is left to do.
func Adopt(pid int) error { return nil }

// Release forgets a group that has ended. Unix keeps nothing for it.
func Release(id int) {}

// Terminate stops the group id: SIGTERM, then SIGKILL to whatever is left
// once KillGrace has passed. It returns when the group has no live
// process left, or shortly after the SIGKILL.
func Terminate(id int) {
	if id <= 0 || !Alive(id) {
		return
	}
	_ = syscall.Kill(-id, syscall.SIGTERM)
	if waitGone(id, KillGrace) {
		return
	}
	_ = syscall.Kill(-id, syscall.SIGKILL)
	waitGone(id, KillGrace)
}

func terminateAll(ids []int) {
	var live []int
	for _, g := range ids {
		if g > 0 && Alive(g) {
			_ = syscall.Kill(-g, syscall.SIGTERM)
			live = append(live, g)
		}
	}
	deadline := time.Now().Add(KillGrace)
	for _, g := range live {
		if waitGone(g, time.Until(deadline)) {
			continue
		}
		_ = syscall.Kill(-g, syscall.SIGKILL)
	}
	for _, g := range live {
		waitGone(g, KillGrace)
	}
}

// Alive reports whether the group has a process that is not a zombie.
func Alive(id int) bool {
	if members, ok := Members(id); ok {
		return len(members) > 0
	}
	// No process table: ask the kernel, which counts zombies too.
	err := syscall.Kill(-id, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Members lists the live (not zombie) processes of the group id, in pid
// order. ok is false when the process table cannot be read.
func Members(id int) (pids []int, ok bool) {
	procs, ok := Procs()
	if !ok {
		return nil, false
	}
	for _, p := range procs {
		if p.PGRP == id {
			pids = append(pids, p.PID)
		}
	}
	return pids, true
}
