package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"github.com/qwen-ls/qwen-ls/tools/sandbox/launch"
)

// The server keeps one supervisor started ahead, in the namespaces of a
// confined command, waiting for its command with the Go runtime and the
// whole binary initialised (package launch, warm_linux.go). A shell
// command that runs confined takes it and does not wait for a process to
// start; the next one is started when that command has ended. The first
// confined command of a server starts cold, and its end starts the first
// warm one: a server that runs no command keeps none.

type warmSup struct {
	cmd  *exec.Cmd
	sock *os.File
}

type warmPool struct {
	mu       sync.Mutex
	self     string
	ready    *warmSup
	starting bool
}

var pool warmPool

// take returns the warm supervisor for a command of the binary self, if
// one is ready. The next one starts once the command has ended
// (replenish): started at once, it would compete with the command for
// the processor just when the command starts.
func (wp *warmPool) take(self string) *warmSup {
	if os.Getenv(EnvNoWarm) == "1" {
		return nil
	}
	wp.mu.Lock()
	defer wp.mu.Unlock()
	w := wp.ready
	if wp.self != self {
		// Another binary plays the supervisor (a test's): start over.
		if w != nil {
			w.discard()
		}
		w = nil
		wp.self = self
	}
	wp.ready = nil
	return w
}

// replenish starts a warm supervisor for the binary self unless one is
// ready or starting.
func (wp *warmPool) replenish(self string) {
	if os.Getenv(EnvNoWarm) == "1" {
		return
	}
	wp.mu.Lock()
	defer wp.mu.Unlock()
	if wp.self != self || wp.ready != nil || wp.starting {
		return
	}
	wp.starting = true
	go wp.refill(self)
}

// refill starts a warm supervisor.
func (wp *warmPool) refill(self string) {
	w, err := startWarm(self)
	wp.mu.Lock()
	defer wp.mu.Unlock()
	wp.starting = false
	if err != nil || wp.self != self {
		if w != nil {
			w.discard()
		}
		return
	}
	wp.ready = w
}

// startWarm starts a supervisor that waits for its command. Its own
// environment holds nothing of the server's (the command's comes with
// the request); its process group is its own, as a command's is.
func startWarm(self string) (*warmSup, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "warm"), os.NewFile(uintptr(fds[1]), "warm")
	defer theirs.Close()
	cmd := exec.Command(self, Arg, "--", "(waiting for a command)")
	cmd.Env = []string{launch.EnvWarm + "=1", envPolicy + "=warm"}
	if raceEnabled {
		cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := Policy{Mode: Protect}
	serverAttr(cmd.SysProcAttr, &p)
	if !p.Mounts {
		ours.Close()
		return nil, errors.New("no namespaces")
	}
	cmd.ExtraFiles = []*os.File{theirs}
	if f := serverPidfd(); f != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	}
	if err := cmd.Start(); err != nil {
		ours.Close()
		return nil, err
	}
	return &warmSup{cmd: cmd, sock: ours}, nil
}

// discard ends a warm supervisor nobody will use: closing its socket
// tells it so, and it exits.
func (w *warmSup) discard() {
	_ = w.sock.Close()
	go func() { _ = w.cmd.Wait() }()
}

// warmEligible reports whether the command can go to a warm supervisor:
// a confined shell command (lingering, with its status on a pipe), in the
// namespaces a warm one has, with its output on files and no input.
func (s *Supervised) warmEligible() bool {
	p := s.Policy
	if !p.Mode.Confined() || !p.Linger || !p.Mounts || p.ProbeOnly || s.plan == nil {
		return false
	}
	c := s.Cmd
	if c.Stdin != nil || len(c.ExtraFiles) != 2 {
		return false
	}
	_, out := c.Stdout.(*os.File)
	_, errOut := c.Stderr.(*os.File)
	return out && errOut
}

// startOnWarm hands the command to a warm supervisor: the plan (with the
// command's environment and folder), the policy, and its standard input
// (/dev/null), output, error and status pipe.
func (s *Supervised) startOnWarm(w *warmSup) error {
	plan := *s.plan
	plan.Env = s.Cmd.Env
	plan.Dir = s.Cmd.Dir
	// The policy names the server's pidfd where the warm supervisor has
	// it (the same place as a cold one's: after the status pipe).
	null, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer null.Close()
	out, errOut := s.Cmd.Stdout.(*os.File), s.Cmd.Stderr.(*os.File)
	rights := syscall.UnixRights(int(null.Fd()), int(out.Fd()), int(errOut.Fd()), int(s.statusW.Fd()))
	msg := launch.EncodeRequest(plan.Encode(), s.enc)
	if err := syscall.Sendmsg(int(w.sock.Fd()), msg, rights, nil, 0); err != nil {
		w.discard()
		return err
	}
	_ = w.sock.Close()
	s.Cmd.Process = w.cmd.Process
	s.warm = w
	return nil
}
