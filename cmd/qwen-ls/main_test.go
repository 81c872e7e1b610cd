package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
)

var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "qwen-ls-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "qwen-ls")
	out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build qwen-ls: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestVersionAndHelp(t *testing.T) {
	out, err := exec.Command(binPath, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "qwen-ls ") {
		t.Fatalf("--version: %q %v", out, err)
	}
	out, err = exec.Command(binPath, "--help").Output()
	if err != nil || !strings.Contains(string(out), "--stdio") || !strings.Contains(string(out), "--acp") {
		t.Fatalf("--help: %q %v", out, err)
	}
	cmd := exec.Command(binPath, "--bogus")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "Usage") {
		t.Fatalf("unknown flag: err=%v stderr=%q", err, stderr.String())
	}
}

// The real binary over stdio: initialize, shutdown twice (as Neovim 0.7
// does), exit, and no process of its tree is left.
func TestProcessLifecycleLeavesNoChildren(t *testing.T) {
	cmd := exec.Command(binPath, "--stdio")
	e := rpctest.StartProcess(t, cmd)
	e.Initialize(rpctest.InitParams{Roots: []string{t.TempDir()}, Rich: true})
	pid := cmd.Process.Pid
	before := descendants(pid)
	for i := 0; i < 2; i++ {
		if res, err := e.Call("shutdown", nil); err != nil || string(res) != "null" {
			t.Fatalf("shutdown #%d: %s %v", i+1, res, err)
		}
	}
	e.Notify("exit", nil)
	if code := e.ExitCode(); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	for _, p := range before {
		if alive(p) {
			t.Errorf("process %d started by the server is still alive after exit", p)
		}
	}
	if left := processesInGroup(pid); len(left) > 0 {
		t.Errorf("processes left in the server's group: %v", left)
	}
}

func TestProcessExitsWhenStdinCloses(t *testing.T) {
	cmd := exec.Command(binPath)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err == nil || !asExit(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("exit without shutdown: %v, want exit code 1", err)
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the server did not exit when stdin closed")
	}
}

func asExit(err error, target **exec.ExitError) bool {
	ee, ok := err.(*exec.ExitError)
	if ok {
		*target = ee
	}
	return ok
}

// descendants lists the processes whose parent chain reaches pid.
func descendants(pid int) []int {
	parents := map[int]int{}
	for _, p := range allPIDs() {
		if pp, ok := statusField(p, "PPid"); ok {
			parents[p] = pp
		}
	}
	var out []int
	for p := range parents {
		for q := parents[p]; q > 1; q = parents[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func processesInGroup(pgid int) []int {
	var out []int
	for _, p := range allPIDs() {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		// Fields after the command name, which is in parentheses.
		s := string(data)
		rest := s[strings.LastIndexByte(s, ')')+2:]
		f := strings.Fields(rest)
		if len(f) > 2 {
			if g, _ := strconv.Atoi(f[2]); g == pgid {
				out = append(out, p)
			}
		}
	}
	return out
}

func allPIDs() []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, n)
		}
	}
	return out
}

func statusField(pid int, name string) (int, bool) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+":"); ok {
			n, err := strconv.Atoi(strings.Fields(v)[0])
			return n, err == nil
		}
	}
	return 0, false
}

func alive(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}
