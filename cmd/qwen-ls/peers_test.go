package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// TestComparePeers times one headless prompt with one read_file call in
// Qwen Code's CLI (`qwen -p`) and in `qwen-ls exec`, against the same
// scripted model on loopback, in one run, and prints a table of wall time,
// CPU time and peak memory with the ratios qwen-ls/qwen. It runs only when
// QWEN_CLI names the qwen executable (.ci/bench-peers installs it).
// QWEN_PEERS_RUNS (default 3) is how many times each tool runs, the two
// alternating so that both see the same machine load; QWEN_PEERS_VERBOSE=1
// logs every model request, each run's output and its processes. It
// reports figures and asserts none of them; it fails only when a run did
// not do the work: it exited non-zero, the model never got the file's
// content back in a tool message, or the answer was not printed.
//
// Qwen Code also sends requests that are not the conversation (when a
// turn ends without a tool call, for instance, a memory-extraction request
// that replays it). Those are answered by the side handler and leave the
// script alone; the conversation itself is served by two scripted
// responses per run: a read_file call, then a short answer.
func TestComparePeers(t *testing.T) {
	qwen := os.Getenv("QWEN_CLI")
	if qwen == "" {
		t.Skip("set QWEN_CLI to the qwen executable to compare with Qwen Code (.ci/bench-peers does)")
	}
	if _, err := os.Stat(qwen); err != nil {
		t.Fatalf("QWEN_CLI=%s: %v", qwen, err)
	}
	runs := 3
	if v := os.Getenv("QWEN_PEERS_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("QWEN_PEERS_RUNS=%q: want a positive number", v)
		}
		runs = n
	}
	verbose := os.Getenv("QWEN_PEERS_VERBOSE") != ""

	loadBefore := peerLoadAverage()
	m := modeltest.Start(t)
	fake := &peerModel{t: t, verbose: verbose}
	m.SetSide(fake.side)

	timeBin := ""
	if p, err := exec.LookPath("/usr/bin/time"); err == nil {
		timeBin = p
	}
	if out, err := exec.Command(qwen, "--version").Output(); err == nil {
		t.Logf("qwen --version: %s", strings.TrimSpace(string(out)))
	}

	peers := []*peer{
		{name: "qwen -p", command: func(ws, prompt string) []string {
			return []string{qwen, "--auth-type", "openai", "--openai-base-url", m.URL, "--openai-api-key", "sk-bench",
				"-m", "scripted", "--yolo", "-p", prompt}
		}},
		{name: "qwen-ls exec", command: func(ws, prompt string) []string {
			return []string{binPath, "exec", "--approval-mode", "yolo", "--cwd", ws, "-p", prompt}
		}},
	}
	// One untimed run of each warms the page cache and the build cache's
	// binary, and tells how each client names read_file's path parameter
	// (absolute_path, file_path): the conversation is answered by the side
	// handler there, which reads it from the request's declaration.
	for _, p := range peers {
		p.pathParam = warmUpPeer(t, m, fake, p)
		t.Logf("%s: read_file's path parameter is %q", p.name, p.pathParam)
	}
	for i := 0; i < runs; i++ {
		for _, p := range peers {
			r := runPeer(t, m, fake, p, i, timeBin)
			p.results = append(p.results, r)
			t.Logf("%-13s run %d: %6.0f ms, CPU %6.0f ms (first model request at %5.0f ms, last at %5.0f ms)  max RSS %5.1f MB  tree peak PSS %5.1f MB (%d processes at once)  %d model requests (%d side)",
				p.name, i+1, peerMS(r.wall), peerMS(r.cpu), peerMS(r.firstReq), peerMS(r.lastReq), peerMB(r.maxrssKB), peerMB(r.pssKB), r.procs, r.requests, r.side)
		}
	}

	qw, ours := peers[0], peers[1]
	wall := func(r peerResult) float64 { return peerMS(r.wall) }
	cpu := func(r peerResult) float64 { return peerMS(r.cpu) }
	rss := func(r peerResult) float64 { return peerMB(r.maxrssKB) }
	pss := func(r peerResult) float64 { return peerMB(r.pssKB) }
	reqs := func(r peerResult) float64 { return float64(r.requests) }
	var b strings.Builder
	fmt.Fprintf(&b, "\nOne prompt with one read_file call, instant scripted model; %d runs of each, alternating (1-min load average %s before, %s after).\n", runs, loadBefore, peerLoadAverage())
	fmt.Fprintf(&b, "%-14s %13s %12s %12s %12s %13s %9s\n", "", "mean wall ms", "min wall ms", "mean CPU ms", "max RSS MB", "peak PSS MB", "requests")
	for _, p := range peers {
		fmt.Fprintf(&b, "%-14s %13.0f %12.0f %12.0f %12.1f %13.1f %9.1f\n", p.name, p.mean(wall), p.min(wall), p.mean(cpu), p.mean(rss), p.mean(pss), p.mean(reqs))
	}
	fmt.Fprintf(&b, "%-14s %13.3f %12.3f %12.3f %12.3f %13.3f\n", "qwen-ls/qwen",
		ours.mean(wall)/qw.mean(wall), ours.min(wall)/qw.min(wall), ours.mean(cpu)/qw.mean(cpu), ours.mean(rss)/qw.mean(rss), ours.mean(pss)/qw.mean(pss))
	fmt.Fprintf(&b, "CPU: user + system time of the whole process tree; max RSS: the largest single process of the run (%s); peak PSS: the process tree's largest PSS sum, sampled every %s.\n",
		map[bool]string{true: "/usr/bin/time -v", false: "wait4 rusage"}[timeBin != ""], peerSampleEvery)
	fmt.Print(b.String())
}

// peer is one tool under comparison.
type peer struct {
	name      string
	pathParam string
	command   func(workspace, prompt string) []string
	results   []peerResult
}

type peerResult struct {
	wall     time.Duration
	cpu      time.Duration // user + system, the whole tree's
	maxrssKB float64       // the largest single process (rusage)
	pssKB    float64       // the process tree's peak PSS sum (sampled)
	procs    int           // most processes seen in the tree at once
	requests int           // model requests during the run
	// firstReq and lastReq are when the first and the last model request
	// arrived, from the process's start: start-up, and start-up plus the
	// turn.
	firstReq, lastReq time.Duration
	side              int // of which answered by the side handler
}

func (p *peer) mean(f func(peerResult) float64) float64 {
	var s float64
	for _, r := range p.results {
		s += f(r)
	}
	return s / float64(len(p.results))
}

func (p *peer) min(f func(peerResult) float64) float64 {
	m := f(p.results[0])
	for _, r := range p.results[1:] {
		m = min(m, f(r))
	}
	return m
}

// peerLoadAverage is the machine's 1-minute load average, for the record.
func peerLoadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return "unknown"
	}
	return f[0] + " on " + strconv.Itoa(runtime.NumCPU()) + " CPUs"
}

const peerPrompt = "Read the file notes.txt in the current folder and tell me its secret word."

// peerDirs makes a fresh folder dir holding a workspace (ws) with
// notes.txt (file) and a home with Qwen Code's settings.
func peerDirs(t *testing.T, content string) (dir, ws, file string) {
	t.Helper()
	dir = t.TempDir()
	ws = filepath.Join(dir, "work")
	home := filepath.Join(dir, "home")
	for _, d := range []string{ws, filepath.Join(home, ".qwen")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ws, _ = filepath.EvalSymlinks(ws)
	// Qwen Code's settings: no usage statistics, telemetry or update
	// check, which would reach for a network this machine does not have,
	// and time that instead of the agent.
	settings := `{"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},"general":{"enableAutoUpdate":false,"disableAutoUpdate":true,"disableUpdateNag":true}}`
	if err := os.WriteFile(filepath.Join(home, ".qwen", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(ws, "notes.txt")
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, ws, file
}

// peerProcess is one finished process with what was measured of it.
type peerProcess struct {
	start          time.Time
	cpu            time.Duration // user and system, the waited-for children's included
	wall           time.Duration
	pssKB          float64
	maxrssKB       float64
	procs          int
	seen           map[int]string
	atPeak         map[int]float64
	stdout, stderr string
	err            error
}

// launchPeer runs p once in ws with home and state under dir, measuring wall
// time and memory.
func launchPeer(t *testing.T, m *modeltest.Server, p *peer, dir, ws, timeBin string) peerProcess {
	t.Helper()
	home := filepath.Join(dir, "home")
	argv := p.command(ws, peerPrompt)
	usageFile := filepath.Join(dir, "time.txt")
	if timeBin != "" {
		argv = append([]string{timeBin, "-v", "-o", usageFile}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(),
		"HOME="+home,
		"QWEN_HOME="+filepath.Join(home, ".qwen"),
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"OPENAI_BASE_URL="+m.URL,
		"OPENAI_API_KEY=sk-bench",
		"OPENAI_MODEL=scripted",
		"NO_COLOR=1",
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr

	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	smp := startPeerSampler(cmd.Process.Pid, timeBin != "")
	err := cmd.Wait()
	l := peerProcess{start: start, wall: time.Since(start), cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), stdout: stdout.String(), stderr: stderr.String(), err: err}
	got := smp.stop()
	l.pssKB, l.procs, l.seen, l.atPeak = got.peakKB, got.procs, got.seen, got.atPeak
	if timeBin != "" {
		if err == nil {
			l.maxrssKB = peerTimeMaxRSS(t, usageFile)
		}
	} else if kb, ok := maxRSSKB(cmd.ProcessState); ok {
		l.maxrssKB = kb
	}
	return l
}

// warmUpPeer runs p once, untimed, with the conversation answered by the side
// handler at once, and returns read_file's path parameter as p declares it.
func warmUpPeer(t *testing.T, m *modeltest.Server, fake *peerModel, p *peer) string {
	t.Helper()
	dir, ws, _ := peerDirs(t, "warm-up\n")
	fake.learn()
	l := launchPeer(t, m, p, dir, ws, "")
	tools := fake.learned()
	if l.err != nil || tools == nil {
		t.Fatalf("%s warm-up: %v (conversation seen: %v)\nstdout:\n%s\nstderr:\n%s", p.name, l.err, tools != nil, l.stdout, peerTail(l.stderr, 4000))
	}
	param, err := peerReadFileParam(tools)
	if err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	return param
}

// runPeer runs p once, timed, on a fresh workspace and home, and checks
// that the model got the file back.
func runPeer(t *testing.T, m *modeltest.Server, fake *peerModel, p *peer, i int, timeBin string) peerResult {
	t.Helper()
	marker := fmt.Sprintf("peer-marker-%d-%d", i, time.Now().UnixNano())
	dir, ws, file := peerDirs(t, "These are the notes of run "+strconv.Itoa(i+1)+".\nThe secret word is "+marker+".\n")
	fake.serve()
	before := len(m.Requests())
	sideBefore := fake.sideCount()
	fake.resetArrivals()
	args, _ := json.Marshal(map[string]string{p.pathParam: file})
	m.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "call_read_" + strconv.Itoa(i), Name: "read_file", Arguments: string(args)}}},
		modeltest.Response{Text: "The secret word is " + marker + "."},
	)
	l := launchPeer(t, m, p, dir, ws, timeBin)
	if l.err != nil {
		t.Fatalf("%s run %d: %v\nstdout:\n%s\nstderr:\n%s", p.name, i+1, l.err, l.stdout, peerTail(l.stderr, 4000))
	}
	if fake.verbose {
		t.Logf("%s stdout: %s", p.name, strings.TrimSpace(l.stdout))
		for pid, cmdline := range l.seen {
			t.Logf("%s process %d (PSS at the peak %.1f MB): %.160s", p.name, pid, peerMB(l.atPeak[pid]), cmdline)
		}
	}

	// The honesty check: this run's conversation carried the file's
	// content back in a tool message, and used exactly the two scripted
	// responses.
	reqs := m.Requests()[before:]
	read := false
	for _, r := range reqs {
		for _, msg := range r.Messages {
			if msg.Role == "tool" && strings.Contains(msg.Text(), marker) {
				read = true
			}
		}
	}
	if !read {
		t.Fatalf("%s run %d: no model request carried a tool message with notes.txt's content (%d requests)\nstdout:\n%s\nstderr:\n%s",
			p.name, i+1, len(reqs), l.stdout, peerTail(l.stderr, 4000))
	}
	arrivals := fake.arrivalTimes()
	if len(arrivals) == 0 {
		t.Fatalf("%s run %d: no model request arrived", p.name, i+1)
	}
	if left := m.Remaining(); left != 0 {
		t.Fatalf("%s run %d: %d scripted responses unused\nstdout:\n%s", p.name, i+1, left, l.stdout)
	}
	if !strings.Contains(l.stdout, marker) {
		t.Fatalf("%s run %d: the answer with the secret word was not printed:\n%s", p.name, i+1, l.stdout)
	}
	return peerResult{
		wall: l.wall, cpu: l.cpu, maxrssKB: l.maxrssKB, pssKB: l.pssKB, procs: l.procs,
		requests: len(reqs), side: fake.sideCount() - sideBefore,
		firstReq: arrivals[0].Sub(l.start), lastReq: arrivals[len(arrivals)-1].Sub(l.start),
	}
}

// peerModel tells the conversation's requests (served by the script) from
// the others (answered here). In learning mode it answers the
// conversation too, with text and no tool call, and keeps its tool
// declarations.
type peerModel struct {
	t       *testing.T
	verbose bool

	mu       sync.Mutex
	learning bool
	tools    json.RawMessage
	sides    int
	arrivals []time.Time
}

func (f *peerModel) learn() {
	f.mu.Lock()
	f.learning, f.tools = true, nil
	f.mu.Unlock()
}

func (f *peerModel) learned() json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tools
}

func (f *peerModel) serve() {
	f.mu.Lock()
	f.learning = false
	f.mu.Unlock()
}

func (f *peerModel) resetArrivals() {
	f.mu.Lock()
	f.arrivals = nil
	f.mu.Unlock()
}

// arrivalTimes are when the requests since resetArrivals arrived.
func (f *peerModel) arrivalTimes() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.arrivals...)
}

func (f *peerModel) sideCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sides
}

// side answers every request that is not the conversation. A conversation
// request declares read_file and carries the user's prompt as a user
// message; anything else (no tools, or a prompt of the client's own) is a
// side request.
func (f *peerModel) side(r modeltest.Request) (modeltest.Response, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.arrivals = append(f.arrivals, time.Now())
	if f.verbose {
		f.t.Logf("model request: %s", describePeerRequest(r))
	}
	if isPeerConversation(r) {
		if f.learning {
			if f.tools == nil {
				f.tools = r.ToolsRaw
			}
			return modeltest.Response{Text: "Warmed up."}, true
		}
		return modeltest.Response{}, false
	}
	f.sides++
	return modeltest.Response{Text: "{}"}, true
}

func isPeerConversation(r modeltest.Request) bool {
	hasRead := false
	for _, name := range r.Tools {
		if name == "read_file" {
			hasRead = true
		}
	}
	if !hasRead || len(r.Messages) == 0 {
		return false
	}
	// The conversation's requests end with the user's prompt or with the
	// tool result; a side task that replays the conversation (Qwen Code's
	// memory extraction does) ends with a prompt of its own.
	last := r.Messages[len(r.Messages)-1]
	return last.Role == "tool" || last.Role == "user" && strings.Contains(last.Text(), peerPrompt)
}

// describePeerRequest summarises a request for the log.
func describePeerRequest(r modeltest.Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s stream=%v tools=%d conversation=%v", r.Path, r.Stream, len(r.Tools), isPeerConversation(r))
	for _, msg := range r.Messages {
		text := strings.ReplaceAll(msg.Text(), "\n", " ")
		if len(text) > 160 {
			text = text[:160] + "…"
		}
		fmt.Fprintf(&b, "\n    %s: %s", msg.Role, text)
		for _, c := range msg.ToolCalls {
			fmt.Fprintf(&b, " [call %s %s]", c.Function.Name, c.Function.Arguments)
		}
	}
	return b.String()
}

// peerReadFileParam finds read_file's path parameter in a request's tool
// declarations: the first required parameter.
func peerReadFileParam(tools json.RawMessage) (string, error) {
	var decls []struct {
		Function struct {
			Name       string `json:"name"`
			Parameters struct {
				Required []string `json:"required"`
			} `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(tools, &decls); err != nil {
		return "", err
	}
	for _, d := range decls {
		if d.Function.Name == "read_file" && len(d.Function.Parameters.Required) > 0 {
			return d.Function.Parameters.Required[0], nil
		}
	}
	return "", fmt.Errorf("no read_file declaration with a required parameter")
}

// peerTimeMaxRSS reads "Maximum resident set size (kbytes)" from the
// output of /usr/bin/time -v.
func peerTimeMaxRSS(t *testing.T, path string) float64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("/usr/bin/time output: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Maximum resident set size (kbytes):"); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return n
			}
		}
	}
	t.Fatalf("/usr/bin/time output has no maximum resident set size:\n%s", data)
	return 0
}

const peerSampleEvery = 10 * time.Millisecond

// peerSampler polls the memory of a process tree. Qwen Code relaunches itself
// in a child node process and forks shells, so no single process's maxrss
// is its footprint. Summing RSS would count a fork's copy-on-write pages
// twice; the sum of PSS (each shared page divided among its sharers, from
// /proc/PID/smaps_rollup) counts them once.
type peerSampler struct {
	done   chan struct{}
	result chan peerSamples
}

type peerSamples struct {
	peakKB float64         // the largest sum of PSS seen
	procs  int             // most processes alive at once
	seen   map[int]string  // every process seen, with its command line
	atPeak map[int]float64 // each process's PSS (kB) in the peak sample
}

// startPeerSampler polls the tree under root (without root itself when it is
// only the /usr/bin/time wrapper).
func startPeerSampler(root int, skipRoot bool) *peerSampler {
	s := &peerSampler{done: make(chan struct{}), result: make(chan peerSamples, 1)}
	go func() {
		res := peerSamples{seen: map[int]string{}}
		tick := time.NewTicker(peerSampleEvery)
		defer tick.Stop()
		for {
			sum, n, each := 0.0, 0, map[int]float64{}
			for _, p := range append(descendants(root), root) {
				if p == root && skipRoot {
					continue
				}
				if kb, ok := peerPSS(p); ok {
					sum += kb
					n++
					each[p] = kb
					if _, ok := res.seen[p]; !ok {
						cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
						res.seen[p] = strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))
					}
				}
			}
			if sum > res.peakKB {
				res.peakKB, res.atPeak = sum, each
			}
			res.procs = max(res.procs, n)
			select {
			case <-s.done:
				s.result <- res
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *peerSampler) stop() peerSamples {
	close(s.done)
	return <-s.result
}

// peerPSS reads a process's proportional set size in kB.
func peerPSS(pid int) (float64, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Pss:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, err := strconv.ParseFloat(f[0], 64)
				return n, err == nil
			}
		}
	}
	return 0, false
}

func peerTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

func peerMS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
func peerMB(kb float64) float64      { return kb / 1024 }
