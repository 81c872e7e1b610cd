package rpctest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// recordingTB keeps what a leak check reports instead of failing the test.
type recordingTB struct {
	testing.TB
	cleanups []func()
	errors   []string
}

func (r *recordingTB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recordingTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recordingTB) runCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// The leak check itself: a goroutine and a tagged process that outlive
// the check are both reported, and nothing is reported when they are gone.
func TestLeakCheckReportsGoroutinesAndProcesses(t *testing.T) {
	rec := &recordingTB{TB: t}
	lc := startLeakCheck(rec)
	lc.wait = 200 * time.Millisecond
	stop := make(chan struct{})
	go func() { <-stop }()
	cmd := exec.Command("sleep", "30")
	cmd.Env = append(os.Environ(), lc.env())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rec.runCleanups()
	close(stop)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	all := strings.Join(rec.errors, "\n")
	if !strings.Contains(all, "processes started by the server outlived it") || !strings.Contains(all, "sleep 30") {
		t.Errorf("the leftover process was not reported: %q", all)
	}
	if !strings.Contains(all, "goroutines started during the test outlived it") || !strings.Contains(all, "TestLeakCheckReportsGoroutinesAndProcesses") {
		t.Errorf("the leftover goroutine was not reported: %q", all)
	}

	clean := &recordingTB{TB: t}
	startLeakCheck(clean)
	done := make(chan struct{})
	go func() { close(done) }()
	<-done
	clean.runCleanups()
	if len(clean.errors) > 0 {
		t.Errorf("a clean test was reported: %v", clean.errors)
	}
}
