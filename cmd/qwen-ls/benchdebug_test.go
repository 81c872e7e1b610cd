//go:build unix

package main

import (
	"bufio"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
)

// The qwenbench build answers SIGUSR1 with its goroutine count and live
// heap on stderr
// and keeps serving; cmd/qwen-bench's soak relies on both.
func TestQwenbenchBuildReportsGoroutines(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a second binary")
	}
	bin := filepath.Join(t.TempDir(), "qwen-ls-qwenbench")
	if out, err := exec.Command("go", "build", "-tags", "qwenbench", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags qwenbench: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--stdio")
	// The end-of-input line is an info line, which reaches stderr only
	// when asked for.
	cmd.Env = append(cmd.Environ(), "HOME="+t.TempDir(), "QWEN_LS_LOG=info")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
	}()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for round := range 2 {
		// The handler may not be installed the instant the process starts.
		var got string
		deadline := time.After(10 * time.Second)
		tick := time.NewTicker(100 * time.Millisecond)
	wait:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("round %d: the server stopped (%v)", round, cmd.ProcessState)
				}
				if rest, ok := strings.CutPrefix(l, "qwen-ls-bench: goroutines "); ok {
					got = rest
					break wait
				}
			case <-tick.C:
				if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
					t.Fatal(err)
				}
			case <-deadline:
				t.Fatalf("round %d: no goroutine count on stderr", round)
			}
		}
		tick.Stop()
		var n, heap int
		if _, err := fmt.Sscanf(got, "%d heap %d", &n, &heap); err != nil || n < 2 || heap <= 0 {
			t.Fatalf("round %d: goroutines and heap %q (%v)", round, got, err)
		}
	}
}

// The release build has no such handler: it prints nothing and keeps
// running (the Go runtime catches SIGUSR1 and does nothing with it).
// Events, not waits, order the steps: the answer to initialize shows the
// process is serving (init functions, where a handler would be installed,
// ran before main), and the answer to a request sent after the signal
// shows the server took the signal and kept serving.
func TestReleaseBuildIgnoresSIGUSR1(t *testing.T) {
	cmd := exec.Command(binPath, "--stdio")
	// The end-of-input line is an info line, which reaches stderr only
	// when asked for.
	cmd.Env = append(cmd.Environ(), "HOME="+t.TempDir(), "QWEN_LS_LOG=info")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	e := rpctest.StartProcess(t, cmd)
	e.Initialize(rpctest.InitParams{Roots: []string{t.TempDir()}, Rich: true})
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	// Any request will do; this one has no side effects.
	if _, err := e.Call("qwen/listSessions", map[string]any{}); err != nil {
		t.Fatalf("a request after SIGUSR1: %v", err)
	}
	e.CloseInput()
	// Input closed without shutdown: exit code 1 (LSP), not a signal
	// (ExitCode is -1 for a process a signal ended). Stderr is complete
	// once the process has been waited for.
	code := e.ExitCode()
	if code != 1 || !strings.Contains(stderr.String(), "the editor closed the connection") {
		t.Fatalf("after SIGUSR1 and end of input: exit code %d (stderr %q)", code, stderr.String())
	}
	if strings.Contains(stderr.String(), "qwen-ls-bench:") {
		t.Fatalf("the release build answered SIGUSR1: %q", stderr.String())
	}
}
