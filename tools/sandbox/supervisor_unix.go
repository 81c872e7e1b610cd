//go:build linux || darwin

package sandbox

import (
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/qwen-ls/qwen-ls/tools/procgroup"
)

// The supervisor starts when a binary that links this package runs as
// `BINARY sandbox-exec -- PROGRAM ARGS...` with the policy in envPolicy:
// package initialisation hands the process over before main runs. On
// Linux the command was already started by package launch, which
// initialises before the rest of the binary; this stage does what needs
// more of the standard library: the guard, the server's death, signals,
// what the command left running.
func init() {
	if len(os.Args) < 4 || os.Args[1] != Arg || os.Args[2] != "--" {
		return
	}
	enc, ok := os.LookupEnv(envPolicy)
	if !ok {
		return
	}
	// The end of the supervisor passes to exitLike before the handlers
	// are installed: a command that ends in between is passed on with
	// the handler reset.
	attachExit()
	// Signals first: a parent-death signal that arrives from here on is
	// handled. The parent-death signal is asked for only now, on the
	// main thread (the one the server started, whose parent's end it
	// reports), once its handler is in place: had it been set at the
	// start, a server that died while the binary initialised would have
	// killed the supervisor outright, leaving what the command started
	// behind. A server that died before is seen by supervise's first
	// check.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGCONT, pdeathSignal)
	armParentDeath()
	// The runtime keeps the main goroutine on the main thread while the
	// packages initialise, and the supervisor never leaves init: every
	// time the main goroutine blocked and woke, the runtime handed the
	// thread over and back. The supervisor runs on goroutines of its own,
	// and the main goroutine waits for ever (os.Exit ends the process).
	go supervise(enc, os.Args[3:], sigs)
	select {}
}

// statusFD is the descriptor a lingering supervisor reports the command's
// exit status on (the first of exec.Cmd.ExtraFiles).
const statusFD = 3

// supervise never returns.
func supervise(enc string, argv []string, sigs <-chan os.Signal) {
	enc = awaitCommand(enc)
	p, err := decodePolicy(enc)
	if err != nil {
		fail("%v", err)
	}
	_ = os.Unsetenv(envPolicy)
	parent := os.Getppid()

	died, gone, err := watchServer(p, parent)
	if err != nil {
		fail("cannot watch the server: %v", err)
	}
	if gone() {
		stopAll()
	}
	cmd, err := startCommand(p, argv)
	if err != nil {
		fail("%v", err)
	}
	for {
		select {
		case <-died:
			stopAll()
		case s := <-sigs:
			sig := s.(syscall.Signal)
			if sig == pdeathSignal {
				// A thread of the server that started us ended; the
				// server may be dying (died then fires) or not.
				if died == nil && awaitGone(gone) {
					stopAll()
				}
				continue
			}
			if !cmd.mainDone() {
				_ = syscall.Kill(cmd.pid, sig)
			} else {
				for _, pid := range descendants() {
					_ = syscall.Kill(pid, sig)
				}
			}
		}
	}
}

// command is the command, once started: its pid, and whether it has
// ended (its reaper knows).
type command struct {
	pid      int
	mainDone func() bool
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

// exitLike ends the supervisor the way the command ended: with its exit
// code, or killed by the same signal. What the command left running ends
// first: a supervisor that does not linger (an MCP server's) exits when
// its command does, which for most MCP servers is when the server's end
// closes their input; the supervisor may see that before it sees the
// server gone.
func exitLike(ws syscall.WaitStatus) {
	killDescendants()
	if ws.Signaled() {
		sig := ws.Signal()
		signal.Reset(sig)
		killSelf(sig)
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

// stopAll ends the supervisor and everything below it, when the server
// has died: the reaper must not end the supervisor when the command
// dies of it, before the rest is killed.
func stopAll() {
	holdExit()
	killDescendants()
	os.Exit(exitCode)
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
