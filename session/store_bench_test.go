package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// benchMessage is a typical event: an assistant reply of a few hundred
// bytes, or a tool call and its result.
func benchEvent(i int) event {
	switch i % 3 {
	case 0:
		return event{Type: "message", Message: &storedMessage{Role: "assistant", Text: strings.Repeat("The function parses the header and returns its fields. ", 6),
			ToolCalls: []ToolCall{{ID: fmt.Sprintf("call_%d", i), Name: "read_file", Arguments: `{"absolute_path":"/work/project/internal/parser/header.go"}`}}}, Tokens: 90}
	case 1:
		return event{Type: "message", Message: &storedMessage{Role: "tool", ToolCallID: fmt.Sprintf("call_%d", i-1), Text: strings.Repeat("func parseHeader(b []byte) (Header, error) {\n", 20)}, Tokens: 230}
	}
	return event{Type: "usage", Input: 1000 + i, Count: i}
}

// BenchmarkSessionAppend is the cost of writing one event: encoding, the
// secret check and one write(2).
func BenchmarkSessionAppend(b *testing.B) {
	st := NewStore(b.TempDir(), func() []string { return []string{"sk-0123456789abcdef"} })
	l, err := st.create("/work/project", event{ID: "bench", Cwd: "/work/project", Mode: ModeDefault})
	if err != nil {
		b.Fatal(err)
	}
	defer l.close()
	i := 0
	for b.Loop() {
		if err := l.write(benchEvent(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkSessionLoad5000 reads back a session of 5,000 events.
func BenchmarkSessionLoad5000(b *testing.B) {
	st := NewStore(b.TempDir(), nil)
	l, err := st.create("/work/project", event{ID: "bench", Cwd: "/work/project", Mode: ModeDefault})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 5000; i++ {
		if err := l.write(benchEvent(i)); err != nil {
			b.Fatal(err)
		}
	}
	l.close()
	fi, _ := os.Stat(l.path)
	for b.Loop() {
		ld, err := st.load(l.path)
		if err != nil || len(ld.history) != 3334 {
			b.Fatalf("load: %v (%d messages)", err, len(ld.history))
		}
	}
	b.ReportMetric(float64(fi.Size())/1e6, "MB")
}

// BenchmarkSnapshotGOROOT is a warm shell snapshot of the Go
// distribution's source tree ($GOROOT/src): every tracked file stat'ed,
// none changed since the first snapshot stored them.
func BenchmarkSnapshotGOROOT(b *testing.B) {
	//lint:ignore SA1019 go test builds and runs a test binary in place, so its build-time GOROOT is the toolchain at hand
	root := filepath.Join(runtime.GOROOT(), "src")
	if _, err := os.Stat(root); err != nil {
		b.Skip("no GOROOT source tree")
	}
	base := b.TempDir()
	ws := workspace.New(workspace.Options{Roots: []string{root}, Settings: workspace.SettingsOptions{
		UserDir: filepath.Join(base, "home"), SystemPath: filepath.Join(base, "none.json"), Getenv: func(string) (string, bool) { return "", false }}})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); ws.Close() }()
	ws.Start(ctx)
	sn := NewSnapshotter(filepath.Join(base, "store"))
	start := time.Now()
	stats, err := sn.Snapshot(ctx, ws)
	if err != nil {
		b.Fatal(err)
	}
	cold := time.Since(start)
	// A later session's first snapshot: the store already holds every
	// content.
	start = time.Now()
	if _, err := NewSnapshotter(filepath.Join(base, "store")).Snapshot(ctx, ws); err != nil {
		b.Fatal(err)
	}
	coldShared := time.Since(start)
	for b.Loop() {
		if _, err := sn.Snapshot(ctx, ws); err != nil {
			b.Fatal(err)
		}
	}
	// What the snapshot after a command adds: looking for files the
	// index does not have yet.
	pre := map[string]snapEntry{}
	paths, _ := trackedFiles(ctx, ws)
	for _, p := range paths {
		pre[p] = snapEntry{}
	}
	start = time.Now()
	const scans = 5
	for i := 0; i < scans; i++ {
		if n := len(createdFiles(ws, pre)); n > 50 {
			b.Fatalf("%d files found outside the index", n)
		}
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds())/scans, "created-scan-ms")
	b.ReportMetric(float64(stats.Files), "files")
	b.ReportMetric(float64(cold.Milliseconds()), "cold-ms")
	b.ReportMetric(float64(coldShared.Milliseconds()), "cold-shared-ms")
}

// SnapshotStats is what a benchmark needs to know about a snapshot.
type SnapshotStats struct{ Files int }

// Snapshotter is a shell snapshotter over a directory of its own, for
// benchmarks.
type Snapshotter struct{ sn *snapshotter }

// NewSnapshotter returns a snapshotter storing into dir.
func NewSnapshotter(dir string) *Snapshotter {
	return &Snapshotter{&snapshotter{objs: &objectStore{dir: dir}}}
}

// Snapshot snapshots the tracked files of the workspace.
func (s *Snapshotter) Snapshot(ctx context.Context, ws *workspace.Workspace) (SnapshotStats, error) {
	paths, err := trackedFiles(ctx, ws)
	if err != nil {
		return SnapshotStats{}, err
	}
	snap, err := s.sn.snapshot(paths)
	return SnapshotStats{Files: len(snap)}, err
}
