package sandbox

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"syscall"

	"github.com/qwen-ls/qwen-ls/tools/sandbox/launch"
)

// startCommand takes over the command package launch started while the
// binary initialised: the end of the supervisor, and the guard when the
// policy has one.
func startCommand(p Policy, _ []string) (command, error) {
	st := launch.Started()
	if st == nil {
		return command{}, errors.New("no launch plan came with the policy: the server and this binary differ")
	}
	if st.Listener >= 0 {
		rep := &reporter{write: st.Report}
		if err := startGuard(st.Listener, st.Ruleset, 0, p, rep.deny, st.Next); err != nil {
			return command{}, fmt.Errorf("guard: %w", err)
		}
	}
	return command{pid: st.Pid, mainDone: st.MainDone}, nil
}

// killSelf passes a death by a signal on to the supervisor itself.
func killSelf(sig syscall.Signal) { launch.KillSelf(sig) }

// attachExit hands the end of the supervisor, which the first stage's
// reaper decides, to exitLike.
func attachExit() {
	if st := startedState(); st != nil {
		st.Attach(exitLike)
	}
}

// holdExit keeps the first stage's reaper from ending the supervisor.
func holdExit() {
	if st := startedState(); st != nil {
		st.Hold()
	}
}

// startedState is the first stage's state once it has started the
// command; nil before (a warm supervisor still waiting for its command)
// and in a process that started none.
func startedState() *launch.State {
	select {
	case <-launch.Ready():
		return launch.Started()
	default:
		return nil
	}
}

// awaitCommand waits, in a warm supervisor, for the command and its
// policy (package launch receives them); a cold one has its policy
// already.
func awaitCommand(enc string) string {
	<-launch.Ready()
	attachExit()
	if pol := launch.Policy(); pol != "" {
		return pol
	}
	return enc
}

// maxDenials bounds the denials one command reports.
const maxDenials = 20

// reporter sends the guard's denials to the server, each once, before the
// command's status: write puts a line on the status pipe, if it still
// takes one.
type reporter struct {
	mu    sync.Mutex
	write func(string) bool
	seen  map[string]bool
}

// deny reports a denial once per operation and path.
func (r *reporter) deny(d Denial) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := d.Op + " " + d.Path
	if r.write == nil || r.seen[key] || len(r.seen) >= maxDenials {
		return
	}
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	r.seen[key] = true
	r.write("deny " + d.Op + " " + strconv.Quote(string(d.Kind)) + " " + strconv.Quote(d.Path))
}
