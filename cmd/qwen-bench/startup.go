package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// idleWait is how long the server is left alone after initialized before
// its memory is read: the plain measurement of docs/benchmarks.md
// ("Idle memory") waits the same.
const idleWait = time.Second

// startupBench starts the real binary b.runs times: the time from starting
// the process to the initialize answer, and the resident memory once it is
// idle after initialize: initialize with an empty root, initialized,
// idleWait, then VmRSS of the server's own process (not of the sandbox
// probe it starts, nor of anything else). Nothing else is sent before the
// reading.
//
// Resident file pages depend on how the binary sits in the page cache,
// not only on what start-up touches: a file written in large pieces
// (the system linker's output) is held in large folios, which the kernel
// maps whole on the first touch. So the binary is first dropped from the
// page cache, and the untimed first run reads it back through its own
// page faults, as after a reboot; the figure as the build left it is
// logged beside.
func startupBench(b *bench) error {
	home := filepath.Join(b.tmp, "startup-home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	env := append(os.Environ(), "HOME="+home, "QWEN_HOME="+filepath.Join(home, ".qwen"))
	asBuilt, err := idleServer(b, env)
	if err != nil {
		return err
	}
	if err := dropFromPageCache(b.bin); err != nil {
		b.logf("startup: could not drop the binary from the page cache (%v); the figures depend on how it was written", err)
	}
	var initMS, rssMB, anonMB, fileMB, hugeMB []float64
	for r := 0; r < b.runs+1; r++ {
		st, err := idleServer(b, env)
		if err != nil {
			return err
		}
		if r == 0 {
			continue // the first run pages the binary in
		}
		initMS = append(initMS, millis(st.initialize))
		rssMB = append(rssMB, mb(st.RSSKB))
		anonMB = append(anonMB, mb(st.AnonKB))
		fileMB = append(fileMB, mb(st.FileKB))
		hugeMB = append(hugeMB, mb(st.filePMDKB))
	}
	b.logf("startup: initialize answered after %v ms; idle RSS %v MB, of which anonymous %v MB, file %v MB (mapped from 2 MB folios %v MB)",
		roundAll(initMS), roundAll(rssMB), roundAll(anonMB), roundAll(fileMB), roundAll(hugeMB))
	b.logf("startup: with the binary in the page cache as the build left it (before it was dropped), one run: idle RSS %.1f MB, file %.1f MB, mapped from 2 MB folios %.1f MB",
		mb(asBuilt.RSSKB), mb(asBuilt.FileKB), mb(asBuilt.filePMDKB))
	b.add(row{section: "start-up", what: "initialize answered, from process start", ours: median(initMS), unit: "ms", target: "< 20 ms", limit: 20, limited: true})
	b.add(row{section: "start-up", what: fmt.Sprintf("idle RSS after initialize (anonymous %.1f MB)", median(anonMB)), ours: median(rssMB), unit: "MB", target: "≤ 25 MB", limit: 25, limited: true, inclusive: true})
	return nil
}

// idleStats is one server's memory once idle, and how long it took to
// answer initialize.
type idleStats struct {
	procStats
	filePMDKB  int // FilePmdMapped: file pages mapped 2 MB at a time
	initialize time.Duration
}

// idleServer starts the server, initializes it with a fresh empty root,
// waits idleWait, reads its memory, and stops it.
func idleServer(b *bench, env []string) (idleStats, error) {
	var st idleStats
	root, err := os.MkdirTemp(b.tmp, "startup-root")
	if err != nil {
		return st, err
	}
	srv, err := startServer(b.bin, env)
	if err != nil {
		return st, err
	}
	if err := srv.initialize(root, nil); err != nil {
		_ = srv.stop()
		return st, err
	}
	st.initialize = time.Since(srv.started)
	time.Sleep(idleWait)
	st.procStats, err = readProc(srv.pid())
	if err == nil {
		st.filePMDKB, err = filePMDMappedKB(srv.pid())
	}
	if serr := srv.stop(); err == nil {
		err = serr
	}
	return st, err
}

func roundAll(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(int(x*10+0.5)) / 10
	}
	return out
}
