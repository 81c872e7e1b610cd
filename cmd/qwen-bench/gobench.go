package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// goBench is one figure of an existing Go benchmark.
type goBench struct {
	pkg     string
	name    string // benchmark name without -GOMAXPROCS
	metric  string // unit on the benchmark line
	scale   float64
	unit    string
	what    string
	target  string
	limit   float64
	atLeast bool
}

var goBenches = []goBench{
	{pkg: "./rpc", name: "BenchmarkInitializeRoundTrip", metric: "ns/op", scale: 1e-6, unit: "ms", what: "initialize round trip, in process", target: "—"},
	{pkg: "./rpc", name: "BenchmarkToolRoundTrip", metric: "server-ms/roundtrip", scale: 1, unit: "ms", what: "tool round trip, server's share", target: "< 2 ms", limit: 2},
	{pkg: "./rpc", name: "BenchmarkToolRoundTrip", metric: "ms/roundtrip", scale: 1, unit: "ms", what: "tool round trip, with the scripted model", target: "—"},
	{pkg: "./rpc", name: "BenchmarkStreamedChunk", metric: "µs/chunk", scale: 1, unit: "µs", what: "one streamed chunk, to the editor", target: "< 100 µs", limit: 100},
	{pkg: "./workspace", name: "BenchmarkOverlayIncrementalEdits", metric: "edits/s", scale: 1, unit: "edits/s", what: "incremental edits of a 5 MB buffer", target: "> 50000/s", limit: 50000, atLeast: true},
	{pkg: "./workspace", name: "BenchmarkIndexBuildGOROOT/build", metric: "ns/op", scale: 1e-6, unit: "ms", what: "index GOROOT (walk only)", target: "—"},
	{pkg: "./workspace", name: "BenchmarkIndexBuildGOROOT/build+watch", metric: "ns/op", scale: 1e-6, unit: "ms", what: "index GOROOT (walk + watch)", target: "—"},
	{pkg: "./tools", name: "BenchmarkReadFile1MB", metric: "ns/op", scale: 1e-6, unit: "ms", what: "read_file of a 1 MB file", target: "< 2 ms", limit: 2},
	{pkg: "./tools/langserver", name: "BenchmarkDefinitionWarm", metric: "ns/op", scale: 1e-6, unit: "ms", what: "goToDefinition through a started gopls, warm", target: "—"},
	{pkg: "./tools/langserver", name: "BenchmarkDiagnosticsAfterChange", metric: "ns/op", scale: 1e-6, unit: "ms", what: "gopls: a change to its diagnostics for that version", target: "—"},
	{pkg: "./rpc", name: "BenchmarkLSPDefinitionWarm", metric: "ms/definition", scale: 1, unit: "ms", what: "lsp goToDefinition prompt (warm gopls, 2 model requests)", target: "—"},
	{pkg: "./rpc", name: "BenchmarkLSPEditVerdict", metric: "extra-ms", scale: 1, unit: "ms", what: "what the compiler's verdict adds to an edit (warm gopls)", target: "—"},
	{pkg: "./cmd/qwen-ls", name: "BenchmarkLargeWriteArgument/7.5MB-written", metric: "peak-RSS-MiB", scale: 1, unit: "MiB", what: "peak RSS, write_file of 7.5 MB", target: "—"},
	{pkg: "./cmd/qwen-ls", name: "BenchmarkLargeWriteArgument/7.5MB-written", metric: "RSS-3s-after-MiB", scale: 1, unit: "MiB", what: "RSS 3 s after that write", target: "—"},
	{pkg: "./cmd/qwen-ls", name: "BenchmarkLargeWriteArgument/20MB-refused", metric: "peak-RSS-MiB", scale: 1, unit: "MiB", what: "peak RSS, 20 MB arguments refused", target: "—"},
}

// goBenchRuns are the go test runs, by package, -bench filter and
// -benchtime ("" for the default). A filter with a sub-benchmark level
// skips benchmarks that have none, so IndexBuildGOROOT runs apart.
// InitializeRoundTrip starts and stops a server around each timed
// request, so the default one second of timed requests would take half a
// minute; 500 rounds are plenty for a median.
var goBenchRuns = [][3]string{
	{"./rpc", "^BenchmarkInitializeRoundTrip$", "500x"},
	{"./rpc", "^(BenchmarkToolRoundTrip|BenchmarkStreamedChunk)$", ""},
	{"./workspace", "^BenchmarkOverlayIncrementalEdits$", ""},
	{"./workspace", "^BenchmarkIndexBuildGOROOT$/^(build|build\\+watch)$", ""},
	{"./tools", "^BenchmarkReadFile1MB$", ""},
	// The code-intelligence rows skip (no figure) where gopls is missing.
	{"./tools/langserver", "^(BenchmarkDefinitionWarm|BenchmarkDiagnosticsAfterChange)$", ""},
	{"./rpc", "^(BenchmarkLSPDefinitionWarm|BenchmarkLSPEditVerdict)$", "40x"},
	{"./cmd/qwen-ls", "^BenchmarkLargeWriteArgument$", "1x"},
}

// goBenchmarks runs the existing Go benchmarks -count times and adds the
// median of each figure.
func goBenchmarks(b *bench) error {
	values := map[string][]float64{} // name + " " + metric
	for _, run := range goBenchRuns {
		args := []string{"test", run[0], "-run", "^$", "-bench", run[1], "-count", strconv.Itoa(b.count)}
		if run[2] != "" {
			args = append(args, "-benchtime", run[2])
		}
		b.logf("go %s", strings.Join(args, " "))
		cmd := exec.Command("go", args...)
		cmd.Dir = b.root
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		parseBenchOutput(string(out), values)
	}
	for _, g := range goBenches {
		vs := values[g.name+" "+g.metric]
		if len(vs) == 0 {
			b.logf("no %s figure from %s", g.metric, g.name)
			continue
		}
		v := median(vs) * g.scale
		b.add(row{section: "Go benchmarks", what: g.what, ours: v, unit: g.unit, target: g.target, limit: g.limit, limited: g.limit > 0, atLeast: g.atLeast})
	}
	return nil
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+\d+\s+(.*)$`)

// parseBenchOutput adds every "value unit" pair of each benchmark line to
// values, keyed by "name unit".
func parseBenchOutput(out string, values map[string][]float64) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		f := strings.Fields(m[3])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			key := m[1] + " " + f[i+1]
			values[key] = append(values[key], v)
		}
	}
}

var peerRunLine = regexp.MustCompile(`(qwen -p|qwen-ls exec)\s+run \d+:\s+(\d+) ms, CPU\s+(\d+) ms.*max RSS\s+([\d.]+) MB\s+tree peak PSS\s+([\d.]+) MB`)

// qwenBench runs TestComparePeers (cmd/qwen-ls/peers_test.go): qwen -p and
// qwen-ls exec on the same prompt and scripted model, and adds the medians.
func qwenBench(b *bench) error {
	rows := []struct {
		what, unit string
		field      int
	}{
		{"one prompt, one read_file: wall time", "ms", 2},
		{"one prompt, one read_file: CPU time", "ms", 3},
		{"one prompt, one read_file: peak PSS", "MB", 5},
	}
	if b.peers.qwen == "" {
		for _, r := range rows {
			b.add(row{section: "agent vs Qwen Code", what: r.what, text: "—", peer: "qwen -p", peerMissing: true,
				peerHint: "npm install --prefix .peers @qwen-code/qwen-code"})
		}
		return nil
	}
	args := []string{"test", "./cmd/qwen-ls", "-run", "^TestComparePeers$", "-v", "-count=1", "-timeout", "30m"}
	b.logf("QWEN_CLI=%s QWEN_PEERS_RUNS=%d go %s", b.peers.qwen, b.peerRuns, strings.Join(args, " "))
	cmd := exec.Command("go", args...)
	cmd.Dir = b.root
	cmd.Env = append(os.Environ(), "QWEN_CLI="+b.peers.qwen, "QWEN_PEERS_RUNS="+strconv.Itoa(b.peerRuns))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("TestComparePeers: %v\n%s", err, out)
	}
	vals := map[string][][]float64{}
	for _, m := range peerRunLine.FindAllStringSubmatch(string(out), -1) {
		var fs []float64
		for _, s := range m[2:] {
			v, _ := strconv.ParseFloat(s, 64)
			fs = append(fs, v)
		}
		vals[m[1]] = append(vals[m[1]], fs)
	}
	if len(vals["qwen -p"]) == 0 || len(vals["qwen-ls exec"]) == 0 {
		return fmt.Errorf("TestComparePeers printed no runs:\n%s", out)
	}
	col := func(side string, field int) float64 {
		var xs []float64
		for _, fs := range vals[side] {
			xs = append(xs, fs[field-2])
		}
		return median(xs)
	}
	for _, r := range rows {
		b.add(row{section: "agent vs Qwen Code", what: r.what, ours: col("qwen-ls exec", r.field), unit: r.unit,
			peer: "qwen -p", peerValue: col("qwen -p", r.field), target: "—"})
	}
	return nil
}
