package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// startupBench starts the real binary b.runs times: the time from starting
// the process to the initialize answer, and the resident memory once it is
// idle after initialize (measured as BenchmarkIdleRSS does: after a
// shutdown request is answered and 200 ms more).
func startupBench(b *bench) error {
	home := filepath.Join(b.tmp, "startup-home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	env := append(os.Environ(), "HOME="+home, "QWEN_HOME="+filepath.Join(home, ".qwen"))
	var initMS, rssMB, anonMB []float64
	for r := 0; r < b.runs+1; r++ {
		root, err := os.MkdirTemp(b.tmp, "startup-root")
		if err != nil {
			return err
		}
		srv, err := startServer(b.bin, env)
		if err != nil {
			return err
		}
		if err := srv.initialize(root, nil); err != nil {
			_ = srv.stop()
			return err
		}
		d := time.Since(srv.started)
		if _, err := srv.call("shutdown", nil, 10*time.Second); err != nil {
			_ = srv.stop()
			return err
		}
		time.Sleep(200 * time.Millisecond)
		st, err := readProc(srv.pid())
		if serr := srv.stop(); err == nil {
			err = serr
		}
		if err != nil {
			return err
		}
		if r == 0 {
			continue // the first run pages the binary in
		}
		initMS = append(initMS, millis(d))
		rssMB = append(rssMB, mb(st.RSSKB))
		anonMB = append(anonMB, mb(st.AnonKB))
	}
	b.logf("startup: initialize answered after %v ms; idle RSS %v MB, of which anonymous %v MB", roundAll(initMS), roundAll(rssMB), roundAll(anonMB))
	b.add(row{section: "start-up", what: "initialize answered, from process start", ours: median(initMS), unit: "ms", target: "< 20 ms", limit: 20, limited: true})
	b.add(row{section: "start-up", what: fmt.Sprintf("idle RSS after initialize (anonymous %.1f MB)", median(anonMB)), ours: median(rssMB), unit: "MB", target: "< 20 MB", limit: 20, limited: true})
	return nil
}

func roundAll(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(int(x*10+0.5)) / 10
	}
	return out
}
