package procgroup

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// helperEnv makes the test binary act as a helper process: "tree" starts
// a "sleep" child, prints its pid and sleeps; "sleep" sleeps; "exit7"
// exits with code 7.
const helperEnv = "PROCGROUP_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "tree":
		child := helper("sleep")
		if err := child.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		fmt.Println(child.Process.Pid)
		time.Sleep(time.Minute)
		os.Exit(0)
	case "sleep":
		time.Sleep(time.Minute)
		os.Exit(0)
	case "exit7":
		os.Exit(7)
	}
	os.Exit(m.Run())
}

func helper(kind string) *exec.Cmd {
	self, err := os.Executable()
	if err != nil {
		panic(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+kind)
	return cmd
}

// startTree starts a helper that starts a child of its own, in a group,
// and returns the group id and the child's pid.
func startTree(t *testing.T) (*exec.Cmd, int) {
	t.Helper()
	cmd := helper("tree")
	Prepare(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := Adopt(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		Terminate(cmd.Process.Pid)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("no pid from the helper: %v", err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("helper said %q", line)
	}
	return cmd, child
}

func TestTerminateTakesTheChildren(t *testing.T) {
	cmd, child := startTree(t)
	id := cmd.Process.Pid
	if !Alive(id) {
		t.Fatal("the group is not alive after start")
	}
	if members, ok := Members(id); ok {
		if !slices.Contains(members, id) || !slices.Contains(members, child) {
			t.Fatalf("members %v, want %d and %d", members, id, child)
		}
	} else {
		t.Logf("no process table here; Alive asks the kernel")
	}
	start := time.Now()
	Terminate(id)
	t.Logf("Terminate took %v", time.Since(start))
	if Alive(id) {
		t.Fatal("the group is still alive after Terminate")
	}
	// The child, which the helper started and never waits for, is gone
	// too (an orphan may take a moment to be reaped).
	deadline := time.Now().Add(5 * time.Second)
	for running(child) {
		if time.Now().After(deadline) {
			t.Fatalf("the child %d is still running", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = cmd.Wait()
}

func TestWaitExitLeavesTheProcessToItsOwner(t *testing.T) {
	cmd := helper("exit7")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		WaitExit(cmd.Process.Pid)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("WaitExit did not return for a process that exited")
	}
	// Had WaitExit reaped it, Wait would fail rather than read code 7.
	err := cmd.Wait()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 7 {
		t.Fatalf("Wait after WaitExit: %v, state %v", err, cmd.ProcessState)
	}
}

func TestRegistryKillsBySession(t *testing.T) {
	a, _ := startTree(t)
	b, _ := startTree(t)
	var r Registry
	r.Track(a.Process.Pid, "one")
	r.Track(b.Process.Pid, "two")
	if got := r.PGIDs("one"); !slices.Equal(got, []int{a.Process.Pid}) {
		t.Fatalf("PGIDs(one) = %v", got)
	}
	r.KillSession("one")
	if Alive(a.Process.Pid) {
		t.Fatal("session one's group survived KillSession")
	}
	if !Alive(b.Process.Pid) {
		t.Fatal("session two's group died with session one")
	}
	r.KillAll()
	if Alive(b.Process.Pid) || len(r.PGIDs("")) != 0 {
		t.Fatalf("KillAll left %v", r.PGIDs(""))
	}
}
