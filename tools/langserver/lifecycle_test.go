package langserver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/tools/procgroup"
)

// waitExited waits for s's process to end (its Wait to return).
func waitExited(t *testing.T, ctx context.Context, s *Server) {
	t.Helper()
	select {
	case <-s.exited:
	case <-ctx.Done():
		t.Fatalf("%s (pid %d) still runs: %v", s.Name(), s.pid, ctx.Err())
	}
	if procgroup.Alive(s.pid) {
		t.Errorf("%s's process group %d outlived it", s.Name(), s.pid)
	}
}

func symbols(ctx context.Context, s *Server, path string) error {
	_, err := s.Call(ctx, "textDocument/documentSymbol", map[string]any{"textDocument": map[string]string{"uri": fileURI(path)}})
	return err
}

// An idle server stops (its process is gone) and the next use starts
// another.
func TestIdleServerStopsAndStartsAgain(t *testing.T) {
	root := module(t)
	m := goplsManager(t, Options{IdleTimeout: 300 * time.Millisecond})
	a := filepath.Join(root, "a.go")
	ctx := testCtx(t)
	s, err := m.For(ctx, root, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := symbols(ctx, s, a); err != nil {
		t.Fatal(err)
	}
	waitExited(t, ctx, s)
	if n := len(m.Servers()); n != 0 {
		t.Errorf("%d servers running after the idle time", n)
	}
	if err := symbols(ctx, s, a); !errors.Is(err, errStopped) {
		t.Errorf("a call on the stopped server: %v, want %v", err, errStopped)
	}
	s2, err := m.For(ctx, root, a)
	if err != nil {
		t.Fatal(err)
	}
	if s2 == s || s2.pid == s.pid {
		t.Fatalf("For gave the stopped server back")
	}
	if err := symbols(ctx, s2, a); err != nil {
		t.Fatal(err)
	}
}

// Close stops every server and returns once they have ended.
func TestCloseLeavesNoProcess(t *testing.T) {
	root := module(t)
	m := goplsManager(t, Options{})
	ctx := testCtx(t)
	s, err := m.For(ctx, root, filepath.Join(root, "b.go"))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.exited:
	default:
		t.Fatal("Close returned while gopls still ran")
	}
	if procgroup.Alive(s.pid) {
		t.Errorf("gopls's process group %d outlived Close", s.pid)
	}
	if _, err := m.For(ctx, root, filepath.Join(root, "b.go")); !errors.Is(err, errClosed) {
		t.Errorf("For after Close: %v", err)
	}
}

// A server killed under the manager is reported with how it ended, and
// the next For starts a new one.
func TestKilledServerIsReportedAndRestarted(t *testing.T) {
	root := module(t)
	m := goplsManager(t, Options{})
	b := filepath.Join(root, "b.go")
	ctx := testCtx(t)
	s, err := m.For(ctx, root, b)
	if err != nil {
		t.Fatal(err)
	}
	p, err := os.FindProcess(s.pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	<-s.exited
	err = symbols(ctx, s, b)
	if err == nil || !strings.Contains(err.Error(), "language server gopls exited") {
		t.Errorf("a call on the killed server: %v", err)
	}
	s2, err := m.For(ctx, root, b)
	if err != nil {
		t.Fatal(err)
	}
	if s2 == s {
		t.Fatal("For gave the dead server back")
	}
	if err := symbols(ctx, s2, b); err != nil {
		t.Fatal(err)
	}
}

// A server that dies at start is reported with its stderr, started
// again on the next use, and no more after MaxRestarts.
func TestCrashingServerIsReportedAndBounded(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the dying server is a sh script")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "f.dies")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := Spec{Name: "dies", Command: []string{"sh", "-c", "echo 'boom: no such thing' >&2; exit 3"},
		Extensions: map[string]string{".dies": "dies"}}
	m := New(Options{Specs: []Spec{spec}, MaxRestarts: 1, Logf: t.Logf})
	defer m.Close()
	ctx := testCtx(t)
	for i := range 2 {
		_, err := m.For(ctx, dir, file)
		if err == nil || !strings.Contains(err.Error(), "boom: no such thing") || !strings.Contains(err.Error(), "exit status 3") {
			t.Fatalf("start %d: %v, want the exit status and stderr", i+1, err)
		}
	}
	_, err := m.For(ctx, dir, file)
	if err == nil || !strings.Contains(err.Error(), "crashed 2 times") || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("third For: %v, want no more restarts", err)
	}
}

// A cancelled call returns the context's error and leaves the server
// working.
func TestCancelledCall(t *testing.T) {
	root := module(t)
	m := goplsManager(t, Options{})
	b := filepath.Join(root, "b.go")
	ctx := testCtx(t)
	s, err := m.For(ctx, root, b)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := symbols(cctx, s, b); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	if err := symbols(ctx, s, b); err != nil {
		t.Errorf("the call after: %v", err)
	}
}

func TestNoServer(t *testing.T) {
	dir := t.TempDir()
	missing := Spec{Name: "nothere", Command: []string{"qwen-ls-test-no-such-server"}, Extensions: map[string]string{".nt": "nt"}}
	m := New(Options{Specs: []Spec{missing}})
	defer m.Close()
	ctx := testCtx(t)
	var ns *NoServerError
	_, err := m.For(ctx, dir, filepath.Join(dir, "x.nt"))
	if !errors.As(err, &ns) || len(ns.Missing) != 1 || !strings.Contains(err.Error(), "qwen-ls-test-no-such-server") {
		t.Errorf("For a file of an uninstalled server: %v", err)
	}
	_, err = m.For(ctx, dir, filepath.Join(dir, "x.unknown"))
	if !errors.As(err, &ns) || len(ns.Missing) != 0 {
		t.Errorf("For a file no server covers: %v", err)
	}
	if _, err := m.For(ctx, dir, "/elsewhere/x.nt"); err == nil || !strings.Contains(err.Error(), "not inside") {
		t.Errorf("For a file outside the root: %v", err)
	}
}
