package main

import (
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
)

// BenchmarkIdleRSS reports the server process's resident memory once it is
// idle after initialize (target: under 20 MB), measured as the startup
// section of .ci/bench measures it (cmd/qwen-bench/startup.go): the binary
// dropped from the page cache and read back by an untimed first run, then
// initialize, initialized, one second, and VmRSS.
func BenchmarkIdleRSS(b *testing.B) {
	if err := dropFromPageCache(binPath); err != nil {
		b.Logf("could not drop the binary from the page cache: %v", err)
	}
	idle := func() float64 {
		cmd := exec.Command(binPath, "--stdio")
		cmd.Stderr = io.Discard
		e := rpctest.StartProcess(b, cmd)
		e.Initialize(rpctest.InitParams{Roots: []string{b.TempDir()}, Rich: true})
		time.Sleep(time.Second)
		kb, ok := statusField(cmd.Process.Pid, "VmRSS")
		if !ok {
			b.Fatal("no VmRSS")
		}
		if _, err := e.Call("shutdown", nil); err != nil {
			b.Fatal(err)
		}
		e.Notify("exit", nil)
		e.ExitCode()
		return float64(kb) / 1024
	}
	b.StopTimer()
	idle() // pages the binary in
	b.StartTimer()
	var total float64
	for i := 0; i < b.N; i++ {
		total += idle()
	}
	b.ReportMetric(total/float64(b.N), "MB-RSS")
}

// dropFromPageCache writes path back and drops its cached pages, so that
// the next process to map it reads it from disk: how the pages of a file
// sit in the page cache (large folios after large writes) decides how
// many of them the kernel maps on each fault (docs/benchmarks.md, "Idle
// memory").
func dropFromPageCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return err
	}
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
