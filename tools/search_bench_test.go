package tools_test

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// The search benchmarks run over the Go distribution, the corpus of the
// peer comparison in .ci/bench-search (realclients.md, "Search
// baselines"). They report figures only; nothing here asserts a speed.

// goRootEnv returns an environment whose single root is GOROOT, with its
// index built.
func goRootEnv(b *testing.B) *tools.Env {
	b.Helper()
	//lint:ignore SA1019 go test builds and runs a test binary in place, so its build-time GOROOT is the toolchain at hand
	root, err := filepath.EvalSymlinks(runtime.GOROOT())
	if err != nil {
		b.Skipf("GOROOT: %v", err)
	}
	base := b.TempDir()
	ws := workspace.New(workspace.Options{
		Roots: []string{root},
		Settings: workspace.SettingsOptions{
			UserDir:    filepath.Join(base, ".qwen"),
			SystemPath: filepath.Join(base, "settings.json"),
			Getenv:     func(string) (string, bool) { return "", false },
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	ws.Start(ctx)
	b.Cleanup(func() {
		cancel()
		_ = ws.Close()
	})
	<-ws.Index.Ready()
	if !ws.Index.Covers(root, true) {
		b.Fatal("the index does not cover GOROOT")
	}
	return &tools.Env{Workspace: ws, QwenHome: filepath.Join(base, ".qwen")}
}

// benchSearch runs one prepared call per iteration after a warm-up run
// (which also fills the page cache) and reports the first line's count.
func benchSearch(b *testing.B, tool tools.Tool, raw string) {
	params, terr := tools.PrepareArgs(tool, raw)
	if terr != nil {
		b.Fatal(terr.Message)
	}
	ctx := context.Background()
	res, err := tool.Execute(ctx, &tools.Call{}, params, func(tools.Output) {})
	if err != nil || res.Error != nil {
		b.Fatalf("warm-up: %v %v", err, res.Error)
	}
	b.Logf("%s", strings.SplitN(res.Text(), "\n", 2)[0])
	b.ResetTimer()
	for b.Loop() {
		if _, err := tool.Execute(ctx, &tools.Call{}, params, func(tools.Output) {}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGrepGOROOT(b *testing.B) {
	env := goRootEnv(b)
	benchSearch(b, tools.NewGrepSearch(env), `{"pattern":"func \\w+Context\\("}`)
}

func BenchmarkGlobGOROOT(b *testing.B) {
	env := goRootEnv(b)
	benchSearch(b, tools.NewGlob(env), `{"pattern":"**/*.go"}`)
}
