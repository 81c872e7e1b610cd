package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// grepPattern and globPattern are the searches of the peer comparison
// (realclients.md, "Search baselines"): the same on both corpora.
const (
	grepPattern = `func \w+Context\(`
	globPattern = "**/*.go"
)

// indexedEnv builds a workspace over root with its index, as the server
// does, and returns the tools' environment and a function that closes it.
func indexedEnv(root, stateDir string) (*tools.Env, func(), error) {
	ws := workspace.New(workspace.Options{
		Roots: []string{root},
		Settings: workspace.SettingsOptions{
			UserDir:    filepath.Join(stateDir, ".qwen"),
			SystemPath: filepath.Join(stateDir, "settings.json"),
			Getenv:     func(string) (string, bool) { return "", false },
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	ws.Start(ctx)
	closeFn := func() { cancel(); _ = ws.Close() }
	<-ws.Index.Ready()
	if !ws.Index.Covers(root, true) {
		closeFn()
		return nil, nil, fmt.Errorf("the index does not cover %s", root)
	}
	return &tools.Env{Workspace: ws, QwenHome: filepath.Join(stateDir, ".qwen")}, closeFn, nil
}

// toolRun returns a function that runs one prepared tool call and returns
// its wall time, after checking one warm-up call succeeds.
func toolRun(tool tools.Tool, raw string) (func() (time.Duration, error), string, error) {
	params, terr := tools.PrepareArgs(tool, raw)
	if terr != nil {
		return nil, "", fmt.Errorf("%s: %s", tool.Name(), terr.Message)
	}
	run := func() (time.Duration, tools.Result, error) {
		start := time.Now()
		res, err := tool.Execute(context.Background(), &tools.Call{}, params, func(tools.Output) {})
		d := time.Since(start)
		if err == nil && res.Error != nil {
			err = fmt.Errorf("%s: %s", tool.Name(), res.Error.Message)
		}
		return d, res, err
	}
	_, res, err := run()
	if err != nil {
		return nil, "", err
	}
	first, _, _ := strings.Cut(res.Text(), "\n")
	return func() (time.Duration, error) { d, _, err := run(); return d, err }, first, nil
}

// peerRun returns a function that runs a peer command once with its output
// read through a pipe (so that it cannot tell nobody reads it, as ripgrep
// does when stdout is /dev/null) and returns the wall time.
func peerRun(name string, args ...string) func() (time.Duration, error) {
	return func() (time.Duration, error) {
		cmd := exec.Command(name, args...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			return 0, err
		}
		start := time.Now()
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, out)
		err = cmd.Wait()
		d := time.Since(start)
		var ee *exec.ExitError
		if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) { // rg exits 1 on no match
			return d, fmt.Errorf("%s: %v", name, err)
		}
		return d, nil
	}
}

// searchComparison times grep_search against rg and glob against fd on
// root, alternating the four in every round so that all see the same load.
func searchComparison(b *bench, label, root string) error {
	env, closeEnv, err := indexedEnv(root, b.tmp)
	if err != nil {
		return err
	}
	defer closeEnv()
	grep, grepFirst, err := toolRun(tools.NewGrepSearch(env), `{"pattern":`+strconv.Quote(grepPattern)+`}`)
	if err != nil {
		return err
	}
	glob, globFirst, err := toolRun(tools.NewGlob(env), `{"pattern":`+strconv.Quote(globPattern)+`}`)
	if err != nil {
		return err
	}
	b.logf("%s: grep_search says %q; glob says %q", label, grepFirst, globFirst)

	type side struct {
		run   func() (time.Duration, error)
		times []time.Duration
	}
	sides := map[string]*side{"grep": {run: grep}, "glob": {run: glob}}
	order := []string{"grep", "glob"}
	if rg := b.peers.rg; rg != "" {
		sides["rg"] = &side{run: peerRun(rg, "-n", grepPattern, root)}
		order = append(order, "rg")
	}
	if fd := b.peers.fd; fd != "" {
		sides["fd"] = &side{run: peerRun(fd, "-e", "go", ".", root)}
		order = append(order, "fd")
	}
	for _, name := range order { // warm-up: page cache, peers' binaries
		if _, err := sides[name].run(); err != nil {
			return err
		}
	}
	for r := 0; r < b.runs; r++ {
		for _, name := range order {
			d, err := sides[name].run()
			if err != nil {
				return err
			}
			sides[name].times = append(sides[name].times, d)
		}
	}
	ms := func(name string) float64 {
		if s, ok := sides[name]; ok {
			return median(durationsMS(s.times))
		}
		return -1
	}
	if b.profile {
		if err := profileTool(b, label, "grep_search", grep); err != nil {
			return err
		}
		if err := profileTool(b, label, "glob", glob); err != nil {
			return err
		}
	}
	b.add(row{
		section: label, what: "grep_search `" + grepPattern + "`", ours: ms("grep"), unit: "ms",
		peer: "rg -n", peerValue: ms("rg"), peerMissing: b.peers.rg == "", peerHint: "apt-get install -y ripgrep",
		target: "≤ 1.0× rg", ratioLimit: 1.0,
	})
	b.add(row{
		section: label, what: "glob `" + globPattern + "`", ours: ms("glob"), unit: "ms",
		peer: "fd -e go", peerValue: ms("fd"), peerMissing: b.peers.fd == "", peerHint: "apt-get install -y fd-find",
		target: "≤ 0.2× fd", ratioLimit: 0.2,
	})
	return nil
}

// generateTree writes n files below dir: 100 files per directory, ten
// directories per parent, 70% Go sources and the rest Markdown, JSON and
// text, 20 to 80 lines each (about 3 KB); deterministic for a given n.
func generateTree(dir string, n int) error {
	rng := rand.New(rand.NewPCG(uint64(n), 12))
	words := strings.Fields("alpha beta gamma delta request response context buffer index server client session tool prompt model cache value error result")
	exts := []string{".go", ".go", ".go", ".go", ".go", ".go", ".md", ".json", ".txt", ".go"}
	const perDir, perParent = 100, 10
	w := bufio.NewWriterSize(nil, 1<<16)
	for i := 0; i < n; i++ {
		d := i / perDir
		sub := filepath.Join(dir, fmt.Sprintf("pkg%03d", d/perParent), fmt.Sprintf("mod%02d", d%perParent))
		if i%perDir == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				return err
			}
		}
		ext := exts[i%len(exts)]
		f, err := os.Create(filepath.Join(sub, fmt.Sprintf("file%05d%s", i, ext)))
		if err != nil {
			return err
		}
		w.Reset(f)
		lines := 20 + rng.IntN(60)
		// One Go file in 50 has one line that grepPattern matches, about
		// the density of GOROOT (105 lines in 15,000 files), so the search
		// times the scan rather than printing tens of thousands of lines.
		matchLine := -1
		if ext == ".go" && rng.IntN(50) == 0 {
			matchLine = rng.IntN(lines)
		}
		if ext == ".go" {
			fmt.Fprintf(w, "package mod%02d\n\nimport \"context\"\n\n", d%perParent)
		}
		for l := 0; l < lines; l++ {
			a, c := words[rng.IntN(len(words))], words[rng.IntN(len(words))]
			switch {
			case l == matchLine:
				fmt.Fprintf(w, "func %s%dContext(ctx context.Context, %s int) error { return nil }\n", strings.ToUpper(a[:1])+a[1:], l, c)
			case ext == ".go":
				fmt.Fprintf(w, "\t// %s %s %d: the %s keeps its %s for the next call.\n", a, c, l, a, c)
			case ext == ".json":
				fmt.Fprintf(w, "{\"%s\": %d, \"%s\": \"%s\"}\n", a, l, c, a)
			default:
				fmt.Fprintf(w, "The %s and the %s (line %d) are noted here.\n", a, c, l)
			}
		}
		if err := w.Flush(); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// indexChildResult is what `qwen-bench index-child DIR` prints.
type indexChildResult struct {
	Files    int     `json:"files"`
	MS       float64 `json:"ms"`
	RSSMB    float64 `json:"rssMB"`
	BeforeMB float64 `json:"beforeMB"`
	WatchErr string  `json:"watchErr,omitempty"`
}

// indexChild builds the workspace index of dir in this fresh process, as
// the server does (walking, ignore rules, watching every directory), and
// prints the time it took and the process's RSS before and after.
func indexChild(dir string) int {
	before := selfRSSKB()
	stateDir, err := os.MkdirTemp("", "qwen-bench-state")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(stateDir)
	start := time.Now()
	env, closeEnv, err := indexedEnv(dir, stateDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	elapsed := time.Since(start)
	res := indexChildResult{
		Files:    len(env.Workspace.Index.Files()),
		MS:       millis(elapsed),
		RSSMB:    float64(selfRSSKB()) / 1024,
		BeforeMB: float64(before) / 1024,
	}
	if err := env.Workspace.Index.Err(); err != nil {
		res.WatchErr = err.Error()
	}
	closeEnv()
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	return 0
}

// treeBench generates the synthetic tree, times its index in fresh
// processes and compares the searches on it.
func treeBench(b *bench) error {
	dir := filepath.Join(b.tmp, "tree")
	start := time.Now()
	if err := generateTree(dir, b.files); err != nil {
		return fmt.Errorf("generate the tree: %w", err)
	}
	label := fmt.Sprintf("%dk files", b.files/1000)
	if b.files < 1000 {
		label = fmt.Sprintf("%d files", b.files)
	}
	b.logf("%s: generated in %s", label, time.Since(start).Round(time.Millisecond))
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var ms, rss []float64
	var last indexChildResult
	for r := 0; r < max(3, b.runs/2); r++ {
		out, err := exec.Command(self, "index-child", dir).Output()
		if err != nil {
			return fmt.Errorf("index-child: %v", err)
		}
		if err := json.Unmarshal(out, &last); err != nil {
			return fmt.Errorf("index-child said %q: %v", out, err)
		}
		ms = append(ms, last.MS)
		rss = append(rss, last.RSSMB)
	}
	if last.Files < b.files {
		return fmt.Errorf("the index holds %d files, want %d", last.Files, b.files)
	}
	if last.WatchErr != "" {
		b.logf("%s: watching: %s", label, last.WatchErr)
	}
	b.add(row{section: label, what: "index build (walk + watch), fresh process", ours: median(ms), unit: "ms", target: "< 2000 ms", limit: 2000, limited: true})
	b.add(row{section: label, what: fmt.Sprintf("RSS after indexing (%.1f MB before)", last.BeforeMB), ours: median(rss), unit: "MB", target: "< 150 MB", limit: 150, limited: true})
	return searchComparison(b, label, dir)
}

// profileTool runs a tool call b.runs times under the CPU profiler and
// prints the profile's top functions.
func profileTool(b *bench, label, name string, run func() (time.Duration, error)) error {
	path := filepath.Join(b.tmp, strings.NewReplacer(" ", "-", "/", "-").Replace(label)+"-"+name+".pprof")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return err
	}
	for r := 0; r < b.runs; r++ {
		if _, err := run(); err != nil {
			pprof.StopCPUProfile()
			f.Close()
			return err
		}
	}
	pprof.StopCPUProfile()
	if err := f.Close(); err != nil {
		return err
	}
	self, _ := os.Executable()
	out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=20", self, path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("go tool pprof: %v\n%s", err, out)
	}
	b.logf("%s: CPU profile of %s, %d calls (go tool pprof -top):\n%s", label, name, b.runs, indent(string(out)))
	return nil
}
