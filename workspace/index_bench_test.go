package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// BenchmarkIndexBuildGOROOT measures the first build of the index over the
// Go installation (about 15k files). Figures are reported, never asserted.
//
//	build        the walk alone (no watcher), with the default worker count
//	build+watch  the same, adding every directory to a real watcher
//	workers=N    the walk alone with N walkers
//	files        Files() after a change, i.e. rebuilding the sorted snapshot
func BenchmarkIndexBuildGOROOT(b *testing.B) {
	//lint:ignore SA1019 go test builds and runs a test binary in place, so its build-time GOROOT is the toolchain at hand
	goroot := runtime.GOROOT()
	if goroot == "" {
		b.Skip("no GOROOT")
	}
	if _, err := os.Stat(filepath.Join(goroot, "src")); err != nil {
		b.Skipf("GOROOT has no sources: %v", err)
	}
	root := RealPath(goroot)
	ctx := context.Background()
	build := func(w *Watcher, workers int) *Index {
		rs := newRoots(root)
		ix := newIndex(rs, newIgnorer(rs), w)
		if workers > 0 {
			ix.workers = workers
		}
		ix.Start(ctx)
		<-ix.Ready()
		return ix
	}

	b.Run("build", func(b *testing.B) {
		files := 0
		for b.Loop() {
			ix := build(nil, 0)
			files = countFiles(ix)
			ix.Close()
		}
		b.ReportMetric(float64(files), "files/op")

		// Memory held by a built index, with and without its snapshot.
		runtime.GC()
		var before, built, snap runtime.MemStats
		runtime.ReadMemStats(&before)
		ix := build(nil, 0)
		runtime.GC()
		runtime.ReadMemStats(&built)
		ix.Walk(func(FileEntry) bool { return true })
		runtime.GC()
		runtime.ReadMemStats(&snap)
		b.ReportMetric(float64(built.HeapAlloc-before.HeapAlloc)/(1<<20), "MB-index")
		b.ReportMetric(float64(snap.HeapAlloc-before.HeapAlloc)/(1<<20), "MB-with-snapshot")
		ix.Close()
	})

	b.Run("build+watch", func(b *testing.B) {
		w, err := newWatcher()
		if err != nil {
			b.Skipf("no watcher: %v", err)
		}
		defer w.Close()
		files := 0
		for b.Loop() {
			ix := build(w, 0)
			files = countFiles(ix)
			if err := ix.Err(); err != nil {
				b.Logf("watch error: %v", err)
			}
			ix.Close()
		}
		b.ReportMetric(float64(files), "files/op")
	})

	for _, n := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			for b.Loop() {
				build(nil, n).Close()
			}
		})
	}

	b.Run("files", func(b *testing.B) {
		ix := build(nil, 0)
		defer ix.Close()
		n := 0
		for b.Loop() {
			ix.mu.Lock()
			ws := ix.changedLocked()
			ix.mu.Unlock()
			wakeAll(ws)
			n = len(ix.Files())
		}
		b.ReportMetric(float64(n), "files/op")
	})
}

// countFiles counts without building the snapshot, so "build" times the
// walk only.
func countFiles(ix *Index) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	n := 0
	for _, files := range ix.dirs {
		n += len(files)
	}
	return n
}
