package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// startCommand applies the policy (a Seatbelt profile) and starts the
// command, with a goroutine that reaps it and what it leaves behind.
func startCommand(p Policy, argv []string) (command, error) {
	var status *os.File
	if p.Linger {
		// The command must not write the report.
		syscall.CloseOnExec(statusFD)
		status = os.NewFile(statusFD, "status")
	}
	name, args, err := apply(p, argv, nil)
	if err != nil {
		return command{}, err
	}
	if p.ProbeOnly {
		os.Exit(0)
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
	pid, err := syscall.ForkExec(name, args, &syscall.ProcAttr{Env: env, Files: []uintptr{0, 1, 2}})
	if err != nil {
		return command{}, fmt.Errorf("cannot run %s: %w", argv[0], err)
	}
	var mu sync.Mutex
	done := false
	go func() {
		var main syscall.WaitStatus
		for {
			var ws syscall.WaitStatus
			got, err := syscall.Wait4(-1, &ws, 0, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				// Every descendant is gone.
				if stopping.Load() {
					return
				}
				exitLike(main)
			}
			if got != pid {
				continue
			}
			main = ws
			mu.Lock()
			done = true
			mu.Unlock()
			if stopping.Load() {
				continue
			}
			if status == nil {
				exitLike(ws)
			}
			_, _ = status.WriteString(encodeStatus(ws) + "\n")
			_ = status.Close()
		}
	}()
	return command{pid: pid, mainDone: func() bool { mu.Lock(); defer mu.Unlock(); return done }}, nil
}

// killSelf passes a death by a signal on to the supervisor itself, and
// gives the signal time to arrive before the caller exits otherwise.
func killSelf(sig syscall.Signal) {
	_ = syscall.Kill(os.Getpid(), sig)
	time.Sleep(100 * time.Millisecond)
}

// stopping keeps the reaper from ending the supervisor once stopAll runs.
var stopping atomic.Bool

// holdExit keeps the reaper from ending the supervisor.
func holdExit() { stopping.Store(true) }

// attachExit: on macOS the supervisor's own reaper calls exitLike.
func attachExit() {}

// awaitCommand: a supervisor on macOS has its policy from the start.
func awaitCommand(enc string) string { return enc }

// encodeStatus is the line a lingering supervisor writes: "exit N" or
// "signal N".
func encodeStatus(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return "signal " + strconv.Itoa(int(ws.Signal()))
	}
	return "exit " + strconv.Itoa(ws.ExitStatus())
}
