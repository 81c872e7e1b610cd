// Package procgroup starts a command together with everything it starts,
// and stops them together: a process group on Unix, a Job Object on
// Windows. Its entry point is Prepare, called before exec.Cmd.Start, with
// Adopt right after it; Terminate then stops the command and all its
// descendants, and Registry keeps the groups that may outlive a call.
//
// A group is named by the pid of the process that leads it (on Unix its
// process group id). WaitExit waits for one process to exit without
// reaping it (pidfd on Linux, kqueue on macOS and the BSDs, the process
// handle on Windows), so that its pid stays reserved until its owner
// waits for it.
package procgroup

import (
	"sync"
	"time"
)

// KillGrace is how long a group has between SIGTERM and SIGKILL
// (tools.md §3.8). Windows has no SIGTERM for a console-less process: a
// job is terminated at once.
const KillGrace = 200 * time.Millisecond

// TerminateAll stops several groups at once, sharing the grace period.
func TerminateAll(ids []int) {
	if len(ids) > 0 {
		terminateAll(ids)
	}
}

// waitGone polls until the group id has no live process or d passes.
func waitGone(id int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !Alive(id) {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Registry keeps the groups that may outlive a tool call: background
// commands and whatever a foreground command left running (tools.md
// §3.8), each with the session that started it. The server calls KillAll
// when it exits and KillSession when a session ends. The zero value is
// ready to use.
type Registry struct {
	mu sync.Mutex
	// groups maps a group id to the session that started it.
	groups map[int]string
}

// Track records the group id started for sessionID.
func (r *Registry) Track(id int, sessionID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.groups == nil {
		r.groups = map[int]string{}
	}
	r.groups[id] = sessionID
}

// Forget drops a group that has ended, and releases what holds it.
func (r *Registry) Forget(id int) {
	r.mu.Lock()
	delete(r.groups, id)
	r.mu.Unlock()
	Release(id)
}

// PGIDs lists the groups tracked, those of one session when sessionID is
// not "".
func (r *Registry) PGIDs(sessionID string) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for g, s := range r.groups {
		if sessionID == "" || s == sessionID {
			out = append(out, g)
		}
	}
	return out
}

// KillSession stops every group of the session (SIGTERM, then SIGKILL
// KillGrace later) and forgets them.
func (r *Registry) KillSession(sessionID string) {
	if sessionID == "" {
		return
	}
	TerminateAll(r.take(sessionID))
}

// KillAll stops every tracked group and forgets them; it returns when they
// are gone (at most about twice KillGrace).
func (r *Registry) KillAll() {
	TerminateAll(r.take(""))
}

func (r *Registry) take(sessionID string) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for g, s := range r.groups {
		if sessionID == "" || s == sessionID {
			out = append(out, g)
			delete(r.groups, g)
		}
	}
	return out
}
