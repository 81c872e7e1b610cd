//go:build unix

package tools

import (
	"errors"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/qwen-ls/qwen-ls/tools/sandbox"
)

// KillGrace is how long a process group has between SIGTERM and SIGKILL
// (tools.md §3.8).
const KillGrace = 200 * time.Millisecond

// SetProcessGroup makes cmd start in a process group of its own, whose id
// is then the process's pid, so that the whole group can be signalled.
func SetProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// TerminateGroup stops the process group pgid: SIGTERM, then SIGKILL to
// whatever is left once KillGrace has passed. It returns when the group
// has no live process left, or shortly after the SIGKILL.
func TerminateGroup(pgid int) {
	if pgid <= 0 || !groupAlive(pgid) {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	if waitGroupGone(pgid, KillGrace) {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	waitGroupGone(pgid, KillGrace)
}

// terminateGroups stops several groups at once, sharing the grace period.
func terminateGroups(pgids []int) {
	var live []int
	for _, g := range pgids {
		if g > 0 && groupAlive(g) {
			_ = syscall.Kill(-g, syscall.SIGTERM)
			live = append(live, g)
		}
	}
	deadline := time.Now().Add(KillGrace)
	for _, g := range live {
		if waitGroupGone(g, time.Until(deadline)) {
			continue
		}
		_ = syscall.Kill(-g, syscall.SIGKILL)
	}
	for _, g := range live {
		waitGroupGone(g, KillGrace)
	}
}

// waitGroupGone polls until the group has no live process or d passes.
func waitGroupGone(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !groupAlive(pgid) {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// groupAlive reports whether the group has a process that is not a zombie.
func groupAlive(pgid int) bool {
	if members, ok := GroupMembers(pgid); ok {
		return len(members) > 0
	}
	// No /proc: ask the kernel, which counts zombies too.
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// GroupMembers lists the live (not zombie) processes of the group pgid, in
// pid order, from /proc. ok is false when /proc cannot be read.
func GroupMembers(pgid int) (pids []int, ok bool) {
	procs, ok := sandbox.Procs()
	if !ok {
		return nil, false
	}
	for _, p := range procs {
		if p.PGRP == pgid {
			pids = append(pids, p.PID)
		}
	}
	return pids, true
}

// ProcessGroups keeps the process groups that may outlive a tool call:
// background commands and whatever a foreground command left running
// (tools.md §3.8). The server calls KillAll when it exits and KillSession
// when a session ends. The zero value is ready to use.
type ProcessGroups struct {
	mu sync.Mutex
	// groups maps a pgid to the session that started it.
	groups map[int]string
}

// Track records the group pgid started for sessionID.
func (p *ProcessGroups) Track(pgid int, sessionID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.groups == nil {
		p.groups = map[int]string{}
	}
	p.groups[pgid] = sessionID
}

// Forget drops a group that has ended.
func (p *ProcessGroups) Forget(pgid int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.groups, pgid)
}

// PGIDs lists the groups tracked, those of one session when sessionID is
// not "".
func (p *ProcessGroups) PGIDs(sessionID string) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int
	for g, s := range p.groups {
		if sessionID == "" || s == sessionID {
			out = append(out, g)
		}
	}
	return out
}

// KillSession stops every group of the session (SIGTERM, then SIGKILL
// KillGrace later) and forgets them.
func (p *ProcessGroups) KillSession(sessionID string) {
	if sessionID == "" {
		return
	}
	p.kill(p.take(sessionID))
}

// KillAll stops every tracked group and forgets them; it returns when they
// are gone (at most about twice KillGrace).
func (p *ProcessGroups) KillAll() {
	p.kill(p.take(""))
}

func (p *ProcessGroups) take(sessionID string) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int
	for g, s := range p.groups {
		if sessionID == "" || s == sessionID {
			out = append(out, g)
			delete(p.groups, g)
		}
	}
	return out
}

func (p *ProcessGroups) kill(pgids []int) {
	if len(pgids) > 0 {
		terminateGroups(pgids)
	}
}
