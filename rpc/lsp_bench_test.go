package rpc_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// The code-intelligence benchmarks (issue 32) drive the real server in
// process with a gopls it starts itself, warm: the first, untimed prompt
// starts it. They report figures and assert none; .ci/bench shows their
// medians.

// startLSPBenchAgent is startBenchAgent in a trusted folder holding the
// calc module, or a skip where gopls is not installed.
func startLSPBenchAgent(b *testing.B) *benchAgent {
	b.Helper()
	if _, err := exec.LookPath("gopls"); err != nil {
		b.Skip("gopls is not on PATH: install it with GOBIN=<dir on PATH> go install golang.org/x/tools/gopls@v0.23.0 (.ci/gopls.sh)")
	}
	b.Setenv("GOPROXY", "off")
	b.Setenv("GOTOOLCHAIN", "local")
	b.Setenv("GOFLAGS", "-mod=mod")
	m := modeltest.Start(b)
	e := rpctest.Start(b, rpc.Options{Version: "bench", Stderr: io.Discard})
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for rel, text := range calcModule {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	e.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true, UTF8: true, InitializationOptions: map[string]any{
		"approvalMode":     "yolo",
		"workspaceTrusted": true,
		"model":            map[string]any{"name": "scripted", "baseUrl": m.URL},
	}})
	a := &benchAgent{b: b, e: e, model: m, root: root}
	a.newSession()
	return a
}

// lastToolText is the text of the tool message in the model's last
// request.
func lastToolText(m *modeltest.Server) string {
	reqs := m.Requests()
	if len(reqs) == 0 {
		return ""
	}
	last := ""
	for _, msg := range reqs[len(reqs)-1].Messages {
		if msg.Role == "tool" {
			last = msg.Text()
		}
	}
	return last
}

// BenchmarkLSPDefinitionWarm is one prompt in which the model asks the
// lsp tool for a definition that a warm gopls answers, and then answers
// in text: ms/definition is the whole prompt, two model requests
// included (BenchmarkToolRoundTrip is the same prompt with read_file).
func BenchmarkLSPDefinitionWarm(b *testing.B) {
	a := startLSPBenchAgent(b)
	args := `{"operation":"goToDefinition","filePath":"main.go","line":6,"character":15}`
	push := func(i int) {
		a.model.Push(
			modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "def_" + strconv.Itoa(i), Name: "lsp", Arguments: args}}},
			modeltest.Response{Text: "In calc."},
		)
	}
	push(-1)
	a.prompt("where is Add?")
	if got := lastToolText(a.model); !strings.Contains(got, "calc/calc.go:4:6") {
		b.Fatalf("the warm-up definition: %q", got)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%benchSessionTurns == 0 {
			b.StopTimer()
			a.newSession()
			b.StartTimer()
		}
		push(i)
		a.prompt("where is Add?")
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/definition")
}

// BenchmarkLSPEditVerdict is what the compiler's verdict adds to an edit:
// per iteration, a prompt whose model edits main.go (covered by a warm
// gopls: a baseline before the write, the report on the new text after
// it) and one that makes the same edit in a .txt file (no server, no
// verdict), alternately breaking and mending the build. extra-ms is the
// difference of the two prompts' mean times.
func BenchmarkLSPEditVerdict(b *testing.B) {
	a := startLSPBenchAgent(b)
	main := filepath.Join(a.root, "main.go")
	txt := filepath.Join(a.root, "notes.txt")
	if err := os.WriteFile(txt, []byte(calcModule["main.go"]), 0o644); err != nil {
		b.Fatal(err)
	}
	edit := func(path string, i int) {
		old, repl := "calc.Add(1, 2)", "calc.Sub(1, 2)"
		if i%2 == 1 {
			old, repl = repl, old
		}
		args := `{"file_path":` + strconv.Quote(path) + `,"old_string":` + strconv.Quote(old) + `,"new_string":` + strconv.Quote(repl) + `}`
		a.model.Push(
			modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "edit_" + strconv.Itoa(i), Name: "edit", Arguments: args}}},
			modeltest.Response{Text: "Edited."},
		)
		a.prompt("edit it")
	}
	read := func() {
		a.model.Push(
			modeltest.Response{ToolCalls: []modeltest.ToolCall{
				{ID: "r1", Name: "read_file", Arguments: `{"absolute_path":` + strconv.Quote(main) + `}`},
				{ID: "r2", Name: "read_file", Arguments: `{"absolute_path":` + strconv.Quote(txt) + `}`},
			}},
			modeltest.Response{Text: "Read."},
		)
		a.prompt("read them")
	}
	read()
	// Warm: the first edit starts gopls and checks that the verdict came.
	edit(main, 0)
	if got := lastToolText(a.model); !strings.Contains(got, "undefined: calc.Sub") {
		b.Fatalf("the warm-up edit's verdict: %q", got)
	}
	edit(main, 1)
	edit(txt, 0)
	edit(txt, 1)
	var onGo, onTxt time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%(benchSessionTurns/4) == 0 {
			b.StopTimer()
			a.newSession()
			read()
			b.StartTimer()
		}
		t0 := time.Now()
		edit(main, i)
		t1 := time.Now()
		edit(txt, i)
		onGo += t1.Sub(t0)
		onTxt += time.Since(t1)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(onGo.Microseconds())/1000/n, "go-edit-ms")
	b.ReportMetric(float64(onTxt.Microseconds())/1000/n, "txt-edit-ms")
	b.ReportMetric(float64((onGo-onTxt).Microseconds())/1000/n, "extra-ms")
}
