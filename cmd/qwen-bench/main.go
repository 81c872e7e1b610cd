// Command qwen-bench runs qwen-ls's benchmarks and its peer comparisons in
// one run and prints one table of medians, with ratios against ripgrep, fd
// and Qwen Code's CLI where they are installed (docs/benchmarks.md, "The
// benchmark command"). It installs nothing: a missing peer is reported as
// "not installed". It reports figures and judges them against their
// targets, but exits non-zero only when a benchmark could not run.
//
//	go run ./cmd/qwen-bench [-files 100000] [-prompts 1000] [-sessions 10] [-runs 10] [-only LIST]
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// sections are the parts of a run, in order; -only picks some.
var sections = []string{"startup", "sandbox", "goroot", "tree", "soak", "big", "qwen", "bytes", "go"}

type bench struct {
	root     string // the module's directory
	tmp      string
	bin      string // qwen-ls, built from the module
	debugBin string // the same with -tags qwenbench (goroutine counts)
	files    int
	prompts  int
	sessions int
	runs     int
	count    int
	peerRuns int
	profile  bool          // CPU profiles of our searches
	hold     time.Duration // how long after a big input its RSS is read
	peers    struct{ rg, fd, qwen string }
	rows     []row
	failed   []string
}

// row is one line of the table.
type row struct {
	section, what string
	ours          float64
	unit          string
	text          string // shown instead of ours when set
	// The peer's figure for the same work, and how to install a missing one.
	peer        string
	peerValue   float64
	peerMissing bool
	peerHint    string
	target      string
	// limit judges ours: under it (at most, when inclusive), or at least it
	// when atLeast. ratioLimit judges ours/peer (at most).
	limit      float64
	limited    bool
	inclusive  bool
	atLeast    bool
	ratioLimit float64
	verdict    string
}

func (b *bench) add(r row) { b.rows = append(b.rows, r) }

func (b *bench) logf(format string, args ...any) {
	fmt.Printf("  "+format+"\n", args...)
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "index-child" {
		os.Exit(indexChild(os.Args[2]))
	}
	b := &bench{}
	flag.IntVar(&b.files, "files", 100000, "files in the synthetic tree")
	flag.IntVar(&b.prompts, "prompts", 1000, "prompts of the soak")
	flag.IntVar(&b.sessions, "sessions", 10, "sessions of the soak")
	flag.IntVar(&b.runs, "runs", 10, "timed runs of each measure (its median is shown)")
	flag.IntVar(&b.count, "count", 5, "-count of the Go benchmarks")
	flag.IntVar(&b.peerRuns, "peer-runs", 3, "runs of each side of the Qwen Code CLI comparison")
	only := flag.String("only", strings.Join(sections, ","), "comma-separated sections to run: "+strings.Join(sections, ","))
	flag.BoolVar(&b.profile, "profile", false, "print CPU profiles of grep_search and glob on each corpus")
	flag.DurationVar(&b.hold, "hold", 30*time.Second, "how long after a big input the server's RSS is read (section big)")
	keep := flag.Bool("keep", false, "keep the temporary folder (the generated tree, logs)")
	flag.Parse()
	want := map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		if s = strings.TrimSpace(s); s != "" {
			if !slices.Contains(sections, s) {
				fmt.Fprintf(os.Stderr, "qwen-bench: unknown section %q (want %s)\n", s, strings.Join(sections, ","))
				os.Exit(2)
			}
			want[s] = true
		}
	}
	if b.runs < 1 || b.files < 1 || b.prompts < 1 || b.sessions < 1 || b.count < 1 || b.peerRuns < 1 {
		fmt.Fprintln(os.Stderr, "qwen-bench: -files, -prompts, -sessions, -runs, -count and -peer-runs must be at least 1")
		os.Exit(2)
	}
	os.Exit(b.run(want, *keep))
}

func (b *bench) run(want map[string]bool, keep bool) int {
	var err error
	if b.root, err = moduleRoot(); err != nil {
		fmt.Fprintf(os.Stderr, "qwen-bench: %v\n", err)
		return 1
	}
	if b.tmp, err = os.MkdirTemp("", "qwen-bench"); err != nil {
		fmt.Fprintf(os.Stderr, "qwen-bench: %v\n", err)
		return 1
	}
	if b.tmp, err = filepath.EvalSymlinks(b.tmp); err != nil {
		fmt.Fprintf(os.Stderr, "qwen-bench: %v\n", err)
		return 1
	}
	if keep {
		fmt.Printf("== temporary folder (kept): %s\n", b.tmp)
	} else {
		defer os.RemoveAll(b.tmp)
	}
	b.findPeers()
	loadBefore := loadAverage()
	fmt.Printf("== %s, %d CPUs, %s, load average %s, commit %s\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), runtime.Version(), loadBefore, commit(b.root))
	fmt.Printf("== peers: rg %s, fd %s, qwen %s\n", orMissing(b.peers.rg), orMissing(b.peers.fd), orMissing(b.peers.qwen))

	if want["startup"] || want["soak"] || want["sandbox"] || want["big"] {
		fmt.Println("== building qwen-ls (and its qwenbench variant for the soak)")
		b.bin = filepath.Join(b.tmp, "qwen-ls")
		b.debugBin = filepath.Join(b.tmp, "qwen-ls-qwenbench")
		if err := b.goCmd("build", "-o", b.bin, "./cmd/qwen-ls"); err != nil {
			fmt.Fprintf(os.Stderr, "qwen-bench: %v\n", err)
			return 1
		}
		if err := b.goCmd("build", "-tags", "qwenbench", "-o", b.debugBin, "./cmd/qwen-ls"); err != nil {
			fmt.Fprintf(os.Stderr, "qwen-bench: %v\n", err)
			return 1
		}
	}
	steps := []struct {
		name, title string
		fn          func(*bench) error
	}{
		{"startup", "start-up and idle memory of the real binary", startupBench},
		{"sandbox", "the cost of the command sandbox", sandboxBench},
		{"goroot", "search on the Go distribution, against rg and fd", func(b *bench) error {
			return searchComparison(b, "GOROOT", goRoot())
		}},
		{"tree", fmt.Sprintf("synthetic tree of %d files", b.files), treeBench},
		{"soak", fmt.Sprintf("soak: %d prompts across %d sessions of one server", b.prompts, b.sessions), soakBench},
		{"big", "big inputs: memory and waits (issue 30, item 9)", bigBench},
		{"qwen", "one prompt against Qwen Code's CLI", qwenBench},
		{"bytes", "bytes sent to the model over a scripted 10-step task", bytesBench},
		{"go", "the Go benchmarks of rpc, workspace and tools", goBenchmarks},
	}
	for _, s := range steps {
		if !want[s.name] {
			continue
		}
		fmt.Printf("== %s\n", s.title)
		start := time.Now()
		if err := s.fn(b); err != nil {
			fmt.Printf("  FAILED: %v\n", err)
			b.failed = append(b.failed, s.name)
			continue
		}
		fmt.Printf("  (%s)\n", time.Since(start).Round(100*time.Millisecond))
	}
	fmt.Println()
	b.printTable(os.Stdout)
	fmt.Printf("\nLoad average %s before, %s after, on %d CPUs. Medians of %d runs (Go benchmarks: of -count %d).\n",
		loadBefore, loadAverage(), runtime.NumCPU(), b.runs, b.count)
	if len(b.failed) > 0 {
		fmt.Printf("qwen-bench: sections that could not run: %s\n", strings.Join(b.failed, ", "))
		return 1
	}
	return 0
}

// printTable prints every row with its ratio and verdict.
func (b *bench) printTable(w *os.File) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "section\tmeasure\tqwen-ls\tpeer\tpeer's\tratio\ttarget\tverdict")
	section := ""
	for _, r := range b.rows {
		sec := r.section
		if sec == section {
			sec = ""
		}
		section = r.section
		value := r.text
		if value == "" {
			value = formatValue(r.ours, r.unit)
		}
		peerValue, ratio := "", ""
		verdict := r.verdict
		switch {
		case r.peer == "":
		case r.peerMissing:
			peerValue = "not installed"
			if r.peerHint != "" {
				peerValue += " (" + r.peerHint + ")"
			}
		default:
			peerValue = formatValue(r.peerValue, r.unit)
			if r.peerValue > 0 {
				q := r.ours / r.peerValue
				ratio = fmt.Sprintf("%.2f×", q)
				if q < 0.095 {
					ratio = fmt.Sprintf("%.3f×", q)
				}
				if r.ratioLimit > 0 && verdict == "" {
					verdict = metOrMissed(q <= r.ratioLimit)
				}
			}
		}
		if verdict == "" && r.limited {
			switch {
			case r.atLeast:
				verdict = metOrMissed(r.ours >= r.limit)
			case r.inclusive:
				verdict = metOrMissed(r.ours <= r.limit)
			default:
				verdict = metOrMissed(r.ours < r.limit)
			}
		}
		if verdict == "" {
			verdict = "—"
		}
		target := r.target
		if target == "" {
			target = "—"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", sec, r.what, value, r.peer, peerValue, ratio, target, verdict)
	}
	tw.Flush()
}

func metOrMissed(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

func formatValue(v float64, unit string) string {
	switch {
	case unit == "%":
		return fmt.Sprintf("%+.1f%%", v)
	case unit == "share":
		return fmt.Sprintf("%.1f%%", v)
	case v >= 1000:
		return fmt.Sprintf("%.0f %s", v, unit)
	case v >= 100:
		return fmt.Sprintf("%.1f %s", v, unit)
	default:
		return fmt.Sprintf("%.2f %s", v, unit)
	}
}

func orMissing(p string) string {
	if p == "" {
		return "not installed"
	}
	return p
}

// findPeers looks for rg, fd (fdfind on Debian) and Qwen Code's qwen:
// $QWEN_CLI, then .peers/ in the module (npm install --prefix .peers
// @qwen-code/qwen-code), then where .ci/bench-peers installs it, then PATH.
func (b *bench) findPeers() {
	b.peers.rg, _ = exec.LookPath("rg")
	if p, err := exec.LookPath("fdfind"); err == nil {
		b.peers.fd = p
	} else if p, err := exec.LookPath("fd"); err == nil {
		b.peers.fd = p
	}
	candidates := []string{os.Getenv("QWEN_CLI"), filepath.Join(b.root, ".peers", "node_modules", ".bin", "qwen")}
	if cache, err := os.UserCacheDir(); err == nil {
		candidates = append(candidates, filepath.Join(cache, "qwen-ls", "qwen-code", "node_modules", ".bin", "qwen"))
	}
	if p, err := exec.LookPath("qwen"); err == nil {
		candidates = append(candidates, p)
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if st, err := os.Stat(c); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			b.peers.qwen = c
			return
		}
	}
}

func (b *bench) goCmd(args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = b.root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run qwen-bench inside the qwen-ls module (go run ./cmd/qwen-bench)")
	}
	return filepath.Dir(mod), nil
}

func goRoot() string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		//lint:ignore SA1019 without a go command the bench runs where it was built
		return runtime.GOROOT()
	}
	root := strings.TrimSpace(string(out))
	if real, err := filepath.EvalSymlinks(root); err == nil {
		return real
	}
	return root
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func commit(dir string) string {
	cmd := exec.Command("git", "rev-parse", "--short", "HEAD")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "?"
	}
	c := strings.TrimSpace(string(out))
	diff := exec.Command("git", "diff", "--quiet", "HEAD")
	diff.Dir = dir
	if diff.Run() != nil {
		c += " (with uncommitted changes)"
	}
	return c
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return -1
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func durationsMS(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = millis(d)
	}
	return out
}

// millis is d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
