//go:build linux || darwin

package sandbox

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/qwen-ls/qwen-ls/tools/sandbox/launch"
)

// Supervised is a command that runs under the supervisor.
type Supervised struct {
	Cmd *exec.Cmd
	// Policy is the policy the supervisor applies (Mounts set when it
	// makes its bind mounts).
	Policy Policy

	statusR, statusW *os.File
	// plan and enc are what the supervisor gets (a warm one over its
	// socket); warm is the warm supervisor the command went to.
	plan     *launch.Plan
	enc      string
	warm     *warmSup
	mainOnce sync.Once
	main     Status
	denials  []Denial
	// mainEnded is closed when WaitMain has the command's status.
	mainEnded chan struct{}
	exited    chan struct{}
	waitErr   error
	// group is the cgroup of an unconfined tree (tree_linux.go), nil
	// where there is none.
	group *treeGroup
}

// Wrap changes cmd, made for the real command by exec.Command, so that it
// starts the supervisor, which applies p and runs the command. The
// caller's SysProcAttr (a process group) is kept; the supervisor gets a
// parent-death signal and, where p needs it and the kernel allows it, a
// private mount namespace.
func Wrap(cmd *exec.Cmd, p Policy) (*Supervised, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return WrapWith(self, cmd, p)
}

// WrapWith is Wrap with the supervisor run from the binary self, which
// must link this package (the benchmark measures the real qwen-ls so).
func WrapWith(self string, cmd *exec.Cmd, p Policy) (*Supervised, error) {
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	// Fail here, as exec would, rather than in the supervisor.
	if fi, err := os.Stat(cmd.Path); err != nil {
		return nil, err
	} else if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return nil, &os.PathError{Op: "exec", Path: cmd.Path, Err: syscall.EACCES}
	}
	s := &Supervised{Cmd: cmd, exited: make(chan struct{}), mainEnded: make(chan struct{})}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	serverAttr(cmd.SysProcAttr, &p)
	if !p.Mode.Confined() || !p.Mounts {
		// No PID namespace ends this tree with its supervisor.
		if s.group = newTreeGroup(); s.group != nil {
			s.group.attach(cmd.SysProcAttr)
		}
	}
	ok := false
	defer func() {
		if !ok && s.group != nil {
			s.group.discard()
		}
	}()
	var err error
	if p.Linger {
		if len(cmd.ExtraFiles) > 0 {
			return nil, errors.New("sandbox: a lingering supervisor needs the first extra file")
		}
		s.statusR, s.statusW, err = os.Pipe()
		if err != nil {
			return nil, err
		}
		cmd.ExtraFiles = []*os.File{s.statusW}
	}
	if f := serverPidfd(); f != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, f)
		p.ServerFD = 2 + len(cmd.ExtraFiles)
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	if raceEnabled && !hasEnv(env, "GORACE") {
		// A race-enabled supervisor (test binaries) would otherwise
		// sleep a second at exit; the command does not get this.
		p.UnsetGORACE = true
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	enc, err := encodePolicy(p)
	if err != nil {
		s.closePipes()
		return nil, err
	}
	argv := append([]string{cmd.Path}, cmd.Args[1:]...)
	plan, err := planFor(p, argv)
	if err != nil {
		s.closePipes()
		return nil, err
	}
	s.Policy, s.plan, s.enc = p, plan, enc
	cmd.Args = append([]string{self, Arg, "--"}, argv...)
	cmd.Path = self
	env = setEnv(env, envPolicy, enc)
	if plan != nil {
		env = setEnv(env, launch.EnvPlan, plan.Encode())
	}
	cmd.Env = env
	ok = true
	return s, nil
}

// Started is called by a caller that started the wrapped command itself
// (cmd.Start, or a library's), whether or not that succeeded: from then
// on, whatever is left of the command's tree when its supervisor exits is
// ended, however the supervisor ended.
func (s *Supervised) Started() {
	if s.group == nil {
		return
	}
	if s.Cmd.Process == nil {
		s.group.discard()
	} else {
		s.group.watch(s.Cmd.Process.Pid)
	}
	s.group = nil
}

func (s *Supervised) closePipes() {
	if s.statusR != nil {
		_ = s.statusR.Close()
		_ = s.statusW.Close()
	}
}

// Start starts the supervisor. With Linger, a goroutine then waits for it
// (Exited); the command's own end is WaitMain.
func (s *Supervised) Start() error {
	eligible, self := s.warmEligible(), s.Cmd.Path
	if eligible {
		if w := pool.take(self); w != nil && s.startOnWarm(w) == nil {
			_ = s.statusW.Close()
			go func() {
				s.waitErr = w.cmd.Wait()
				s.Cmd.ProcessState = w.cmd.ProcessState
				close(s.exited)
			}()
			s.replenishAfter(self)
			return nil
		}
	}
	err := s.Cmd.Start()
	s.Started()
	if s.statusW != nil {
		_ = s.statusW.Close()
	}
	if err != nil {
		if s.statusR != nil {
			_ = s.statusR.Close()
		}
		return err
	}
	if s.statusR != nil {
		go func() {
			s.waitErr = s.Cmd.Wait()
			close(s.exited)
		}()
	}
	if eligible {
		s.replenishAfter(self)
	}
	return nil
}

// replenishAfter has the next warm supervisor started once this command
// has ended: started at once, it would compete with the command for the
// processor just as the command starts.
func (s *Supervised) replenishAfter(self string) {
	go func() {
		select {
		case <-s.mainEnded:
		case <-s.exited:
		}
		pool.replenish(self)
	}()
}

// WaitMain returns when the command itself has ended (with Linger), and
// how it ended. Processes it left may still run under the supervisor.
// Without Linger, use Cmd.Wait.
func (s *Supervised) WaitMain() Status {
	s.mainOnce.Do(func() {
		defer close(s.mainEnded)
		r := bufio.NewReader(s.statusR)
		line, _ := r.ReadString('\n')
		for {
			d, ok := parseDenial(line)
			if !ok {
				break
			}
			s.denials = append(s.denials, d)
			line, _ = r.ReadString('\n')
		}
		_ = s.statusR.Close()
		if st, ok := parseStatus(line); ok {
			s.main = st
			return
		}
		// The supervisor ended without a word: it could not start the
		// command, or was killed.
		<-s.exited
		s.main = StatusOf(s.Cmd.ProcessState, s.waitErr)
	})
	return s.main
}

// Denials are the operations the sandbox refused the command, as the
// supervisor reported them before the command ended (with Linger; call
// WaitMain first).
func (s *Supervised) Denials() []Denial { return s.denials }

// parseDenial reads a line the supervisor's reporter wrote:
// deny OP "KIND" "PATH".
func parseDenial(line string) (Denial, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "deny ")
	if !ok {
		return Denial{}, false
	}
	op, rest, ok := strings.Cut(rest, " ")
	if !ok {
		return Denial{}, false
	}
	kind, rest, err := unquotePrefix(rest)
	if err != nil {
		return Denial{}, false
	}
	path, _, err := unquotePrefix(strings.TrimSpace(rest))
	if err != nil {
		return Denial{}, false
	}
	return Denial{Op: op, Kind: Kind(kind), Path: path}, true
}

// unquotePrefix unquotes the Go string literal at the start of s.
func unquotePrefix(s string) (string, string, error) {
	q, err := strconv.QuotedPrefix(s)
	if err != nil {
		return "", "", err
	}
	v, err := strconv.Unquote(q)
	return v, strings.TrimSpace(s[len(q):]), err
}

// Exited is closed when the supervisor has exited (with Linger).
func (s *Supervised) Exited() <-chan struct{} { return s.exited }

func parseStatus(line string) (Status, bool) {
	kind, num, ok := strings.Cut(strings.TrimSpace(line), " ")
	if !ok {
		return Status{}, false
	}
	n, err := strconv.Atoi(num)
	if err != nil {
		return Status{}, false
	}
	switch kind {
	case "exit":
		return Status{Code: n}, true
	case "signal":
		return Status{Code: -1, Signal: syscall.Signal(n)}, true
	}
	return Status{}, false
}
