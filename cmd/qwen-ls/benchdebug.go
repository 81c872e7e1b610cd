//go:build qwenbench

package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
)

// Built only with -tags qwenbench, the build cmd/qwen-bench's soak runs: on
// SIGUSR1 the process collects garbage and writes its goroutine count, live
// heap and where the rest of its heap memory is to stderr as
// "qwen-ls-bench: goroutines N heap BYTES inuse BYTES unreturned BYTES
// stacks BYTES gcmeta BYTES goal BYTES", so the soak can tell leaks from
// retained sessions without a protocol method.
// With QWEN_LS_BENCH_HEAP_PROFILE set, it first writes a heap profile
// there (for go tool pprof).
// Release builds leave SIGUSR1 to the Go runtime, which ignores it.
func init() {
	// With a profile asked for, record every 4 KB allocated rather than
	// every 512 KB, so that a profile of a small heap names what holds it.
	// (Not otherwise: the records take memory of their own.)
	if os.Getenv("QWEN_LS_BENCH_HEAP_PROFILE") != "" {
		runtime.MemProfileRate = 4096
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1)
	go func() {
		for range ch {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if path := os.Getenv("QWEN_LS_BENCH_HEAP_PROFILE"); path != "" {
				writeHeapProfile(path)
			}
			fmt.Fprintf(os.Stderr, "qwen-ls-bench: goroutines %d heap %d inuse %d unreturned %d stacks %d gcmeta %d goal %d\n",
				runtime.NumGoroutine(), ms.HeapAlloc, ms.HeapInuse, ms.HeapIdle-ms.HeapReleased, ms.StackInuse, ms.GCSys, ms.NextGC)
		}
	}()
}

func writeHeapProfile(path string) {
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "qwen-ls-bench: heap profile: %v\n", err)
		return
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "qwen-ls-bench: heap profile: %v\n", err)
	}
}
