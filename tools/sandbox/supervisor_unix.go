//go:build linux || darwin

package sandbox

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/qwen-ls/qwen-ls/tools/procgroup"
)

// The supervisor starts when a binary that links this package runs as
// `BINARY sandbox-exec -- PROGRAM ARGS...` with the policy in envPolicy:
// package initialisation hands the process over before main runs.
func init() {
	if len(os.Args) < 4 || os.Args[1] != Arg || os.Args[2] != "--" {
		return
	}
	enc, ok := os.LookupEnv(envPolicy)
	if !ok {
		return
	}
	// The runtime keeps the main goroutine on the main thread while the
	// packages initialise, and the supervisor never leaves init: every
	// time the main goroutine blocked and woke, the runtime handed the
	// thread over and back. The supervisor runs on goroutines of its own,
	// and the main goroutine waits for ever (os.Exit ends the process).
	go supervise(enc, os.Args[3:])
	select {}
}

// statusFD is the descriptor a lingering supervisor reports the command's
// exit status on (the first of exec.Cmd.ExtraFiles).
const statusFD = 3

// supervise never returns.
func supervise(enc string, argv []string) {
	p, err := decodePolicy(enc)
	if err != nil {
		fail("%v", err)
	}
	_ = os.Unsetenv(envPolicy)
	parent := os.Getppid()

	// Signals first: a parent-death signal that arrives from here on is
	// handled; one that came before would have killed us, and nothing
	// was started then.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGCONT, pdeathSignal)
	died, gone, err := watchServer(p, parent)
	if err != nil {
		fail("cannot watch the server: %v", err)
	}
	if gone() {
		os.Exit(exitCode)
	}
	var status *os.File
	if p.Linger {
		// The command must not write the report.
		syscall.CloseOnExec(statusFD)
		status = os.NewFile(statusFD, "status")
	}
	rep := &reporter{status: status}
	pid, err := confineAndStart(p, argv, rep)
	if err != nil {
		fail("%v", err)
	}
	if p.ProbeOnly {
		os.Exit(0)
	}
	exited := make(chan syscall.WaitStatus, 1)
	go reap(pid, exited)
	var ws syscall.WaitStatus
	mainDone := false
	for {
		select {
		case ws = <-exited:
			if !mainDone {
				mainDone = true
				if status == nil {
					exitLike(ws)
				}
				rep.finish(encodeStatus(ws))
				continue
			}
			// Every descendant is gone (reap saw ECHILD).
			exitLike(ws)
		case <-died:
			killDescendants()
			os.Exit(exitCode)
		case s := <-sigs:
			sig := s.(syscall.Signal)
			if sig == pdeathSignal {
				// A thread of the server that started us ended; the
				// server may be dying (died then fires) or not.
				if died == nil && awaitGone(gone) {
					killDescendants()
					os.Exit(exitCode)
				}
				continue
			}
			if !mainDone {
				_ = syscall.Kill(pid, sig)
			} else {
				for _, pid := range descendants() {
					_ = syscall.Kill(pid, sig)
				}
			}
		}
	}
}

// confineAndStart confines a thread of its own with p and starts the
// command from it, which inherits the confinement (the Landlock domain and
// the system call filter are the thread's, not the process's). The thread
// is never given back to the runtime, so no other code of the supervisor
// runs confined, and it stays, parked, for the supervisor's life: the
// command's parent-death signal fires when the thread that started it
// ends. With ProbeOnly it confines and starts nothing (pid 0).
func confineAndStart(p Policy, argv []string, rep *reporter) (int, error) {
	type started struct {
		pid int
		err error
	}
	ch := make(chan started, 1)
	go func() {
		runtime.LockOSThread()
		name, args, err := apply(p, argv, rep.deny)
		if err != nil || p.ProbeOnly {
			ch <- started{err: err}
			return
		}
		env := os.Environ()
		if p.UnsetGORACE {
			env = removeEnv(env, "GORACE")
		}
		if p.Mode == ReadOnly {
			env = setEnv(env, "GIT_OPTIONAL_LOCKS", "0")
		}
		if p.Mode.Writes() && p.TempDir != "" {
			env = setEnv(env, "TMPDIR", p.TempDir)
		}
		// syscall.ForkExec rather than os.StartProcess: the os package
		// first probes, once per process, whether clone gives pidfds, by
		// starting a throwaway child, and the supervisor is a new
		// process every time. reap waits for the children itself. The
		// command does not inherit the status pipe or the server's
		// pidfd: both are close-on-exec, and ForkExec passes only Files.
		attr := &syscall.ProcAttr{Env: env, Files: []uintptr{0, 1, 2}, Sys: childAttr()}
		pid, err := syscall.ForkExec(name, args, attr)
		if err != nil {
			err = fmt.Errorf("cannot run %s: %w", argv[0], err)
		}
		ch <- started{pid, err}
		select {}
	}()
	s := <-ch
	return s.pid, s.err
}

// awaitGone polls, for a short while, whether the server has gone (used
// where the parent cannot be watched directly).
func awaitGone(gone func() bool) bool {
	for range 100 {
		if gone() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// maxDenials bounds the denials one command reports.
const maxDenials = 20

// reporter writes to the status pipe: the denials as they happen, then
// the command's status, which ends the report.
type reporter struct {
	mu     sync.Mutex
	status *os.File
	seen   map[string]bool
	done   bool
}

// deny reports a denial once per operation and path.
func (r *reporter) deny(d Denial) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status == nil || r.done {
		return
	}
	key := d.Op + " " + d.Path
	if r.seen[key] || len(r.seen) >= maxDenials {
		return
	}
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	r.seen[key] = true
	_, _ = fmt.Fprintln(r.status, "deny", d.Op, strconv.Quote(string(d.Kind)), strconv.Quote(d.Path))
}

// finish writes the status line and closes the pipe.
func (r *reporter) finish(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status == nil || r.done {
		return
	}
	r.done = true
	_, _ = fmt.Fprintln(r.status, line)
	_ = r.status.Close()
}

// reap waits for every child (orphans that come back to a subreaper
// included). It sends the status of main, and then, once no child is
// left, the same status again.
func reap(main int, exited chan<- syscall.WaitStatus) {
	var mainStatus syscall.WaitStatus
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			exited <- mainStatus
			return
		}
		if pid == main {
			mainStatus = ws
			exited <- ws
		}
	}
}

// encodeStatus is the line a lingering supervisor writes: "exit N" or
// "signal N".
func encodeStatus(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return "signal " + strconv.Itoa(int(ws.Signal()))
	}
	return "exit " + strconv.Itoa(ws.ExitStatus())
}

// exitLike ends the supervisor the way the command ended: with its exit
// code, or killed by the same signal.
func exitLike(ws syscall.WaitStatus) {
	if ws.Signaled() {
		sig := ws.Signal()
		signal.Reset(sig)
		_ = syscall.Kill(os.Getpid(), sig)
		os.Exit(128 + int(sig))
	}
	os.Exit(ws.ExitStatus())
}

// descendants lists the live processes below this one, from the
// process table (procgroup.Procs).
func descendants() []int {
	procs, _ := procgroup.Procs()
	children := map[int][]int{}
	for _, p := range procs {
		children[p.PPID] = append(children[p.PPID], p.PID)
	}
	var out []int
	queue := []int{os.Getpid()}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// killDescendants kills every process below the supervisor, again until
// none is left (one may fork while the others die).
func killDescendants() {
	for range 50 {
		ds := descendants()
		if len(ds) == 0 {
			return
		}
		for _, pid := range ds {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		// Let the kernel reparent the orphans of the killed ones.
		reapNoHang()
	}
}

func reapNoHang() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
