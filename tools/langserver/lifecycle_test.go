package langserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
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

// A server that answers initialize with an error is reported in its
// own words, not as a crash without a cause.
func TestServerRefusingInitializeIsReportedInItsWords(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the refusing server is a sh script")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "f.refuses")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"no go.mod above this folder"}}`
	// It answers once the request has begun to arrive.
	script := fmt.Sprintf("dd bs=1 count=1 2>/dev/null >/dev/null; printf 'Content-Length: %d\\r\\n\\r\\n%%s' '%s'; exec cat >/dev/null", len(body), body)
	spec := Spec{Name: "refuses", Command: []string{"sh", "-c", script},
		Extensions: map[string]string{".refuses": "refuses"}}
	m := New(Options{Specs: []Spec{spec}, MaxRestarts: 1, Logf: t.Logf})
	defer m.Close()
	_, err := m.For(testCtx(t), dir, file)
	if err == nil || !strings.Contains(err.Error(), "refused initialize: no go.mod above this folder") {
		t.Fatalf("For: %v, want the server's own refusal", err)
	}
}

// A server that never answers initialize is killed, with whatever it
// started, once StartTimeout has passed.
func TestUnresponsiveServerIsKilled(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the silent server is a sh script")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "f.mute")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := Spec{Name: "mute", Command: []string{"sh", "-c", "sleep 1000; echo"}, Extensions: map[string]string{".mute": "mute"}}
	m := New(Options{Specs: []Spec{spec}, StartTimeout: 300 * time.Millisecond, Logf: t.Logf})
	_, err := m.For(testCtx(t), dir, file)
	if err == nil || !strings.Contains(err.Error(), "did not answer initialize") {
		t.Errorf("For: %v", err)
	}
	// Close waits for the process; the group's sleep is gone with it
	// (goleak and the process table would show a leftover).
	if err := m.Close(); err != nil {
		t.Fatal(err)
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

// helperMain is the test binary standing in for qwen-ls: it starts gopls
// for the module at root, prints its pid and waits to be killed.
func helperMain(root string) {
	spec := Builtin()[0]
	spec.Command = []string{os.Getenv("QWEN_TEST_GOPLS")}
	m := New(Options{Specs: []Spec{spec}})
	s, err := m.For(context.Background(), root, filepath.Join(root, "a.go"))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("pid", s.pid)
	select {}
}

// A language server does not outlive qwen-ls killed with SIGKILL: it
// reads the end of its stdin and exits.
func TestNothingSurvivesKillOfTheParent(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("process groups are Job Objects there, which procgroup tests")
	}
	root := module(t)
	gopls := goplsPath(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(goEnv(t), "QWEN_LANGSERVER_HELPER="+root, "QWEN_TEST_GOPLS="+gopls)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	var pid int
	if _, serr := fmt.Sscanf(line, "pid %d", &pid); err != nil || serr != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper said %q (%v)", line, err)
	}
	if !procgroup.Alive(pid) {
		t.Fatalf("gopls (pid %d) is not running under the helper", pid)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	// Not a timing assertion: the bound only keeps a failure from hanging.
	deadline := time.Now().Add(time.Minute)
	for procgroup.Alive(pid) {
		if time.Now().After(deadline) {
			procgroup.Terminate(pid)
			t.Fatalf("gopls (pid %d) outlived its parent by a minute", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
