package rpctest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// leakTagVar marks every process a test's server starts: the fake editor
// puts a value unique to the test in the server's environment (the test
// process's own for Start, the child's for StartProcess), children inherit
// it, and after the server stops no live process may still carry it.
const leakTagVar = "QWEN_LS_TEST_LEAK_TAG"

// leakCheck is registered before anything else a Start or StartProcess
// sets up, so it runs after all of that has been torn down: the server
// stopped, its workspace closed. It fails the test when a goroutine started
// since then, or a process started by the server, is still alive.
//
// Goroutines of HTTP connections are let go: the scripted model belongs to
// the test and closes its connections when the test ends, after this check.
type leakCheck struct {
	t   testing.TB
	tag string
	ign goleak.Option
	// wait is how long processes get to exit after the server stopped.
	wait time.Duration
}

func startLeakCheck(t testing.TB) *leakCheck {
	var b [12]byte
	_, _ = rand.Read(b[:])
	lc := &leakCheck{t: t, tag: hex.EncodeToString(b[:]), ign: goleak.IgnoreCurrent(), wait: 5 * time.Second}
	t.Cleanup(lc.check)
	return lc
}

// env is the variable to add to the server's environment.
func (lc *leakCheck) env() string { return leakTagVar + "=" + lc.tag }

func (lc *leakCheck) check() {
	t := lc.t
	deadline := time.Now().Add(lc.wait)
	var left []string
	for {
		left = TaggedProcesses(lc.tag)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("rpctest: processes started by the server outlived it:\n%s", strings.Join(left, "\n"))
	}
	if err := goleak.Find(lc.ign,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*conn).serve"),
	); err != nil {
		t.Errorf("rpctest: goroutines started during the test outlived it: %v", err)
	}
}

// TaggedProcesses lists the live processes (pid and command line) whose
// environment carries the leak tag, other than this process.
func TaggedProcesses(tag string) []string {
	want := []byte(leakTagVar + "=" + tag + "\x00")
	self := os.Getpid()
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, fmt.Sprintf("  pid %d: %s", pid, strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")))
	}
	return out
}
