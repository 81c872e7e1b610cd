package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// soakSample is the server's state at one point of the soak.
type soakSample struct {
	procStats
	Goroutines int // -1 when the binary cannot tell
	HeapKB     int // live Go heap after a collection; -1 when unknown
}

// settledSample drops the server's connections to the model, then takes
// three samples 300 ms apart and keeps the smallest of each count.
func (s *server) settledSample(proxy *connProxy) (soakSample, error) {
	proxy.dropAll()
	var best soakSample
	for i := 0; i < 3; i++ {
		time.Sleep(300 * time.Millisecond)
		cur, err := s.sample(true)
		if err != nil {
			return cur, err
		}
		if i == 0 {
			best = cur
			continue
		}
		best.RSSKB = min(best.RSSKB, cur.RSSKB)
		best.Threads = min(best.Threads, cur.Threads)
		best.FDs = min(best.FDs, cur.FDs)
		best.Children = min(best.Children, cur.Children)
		best.Goroutines = min(best.Goroutines, cur.Goroutines)
		best.HeapKB = min(best.HeapKB, cur.HeapKB)
	}
	return best, nil
}

// sample reads /proc for the server and, from the qwenbench build, its
// goroutine count (SIGUSR1 makes it print the count on stderr).
func (s *server) sample(debugBuild bool) (soakSample, error) {
	st, err := readProc(s.pid())
	out := soakSample{procStats: st, Goroutines: -1, HeapKB: -1}
	if err != nil || !debugBuild {
		return out, err
	}
	for len(s.debug) > 0 {
		<-s.debug
	}
	if err := s.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		return out, err
	}
	select {
	case line := <-s.debug:
		var heap int
		if _, err := fmt.Sscanf(line, "goroutines %d heap %d", &out.Goroutines, &heap); err != nil {
			return out, fmt.Errorf("the server said %q", line)
		}
		out.HeapKB = heap / 1024
		// The collection it ran changes RSS; read it again.
		if st, err := readProc(s.pid()); err == nil {
			out.procStats = st
		}
	case <-time.After(5 * time.Second):
		return out, fmt.Errorf("no goroutine count from the server")
	}
	return out, nil
}

// conversationBytes sums the JSON size of the conversations that the
// second request of each of the prompts [from, to) sent (two requests per
// prompt: the tool call, then the answer after its result).
func conversationBytes(reqs []modeltest.Request, from, to int) int {
	n := 0
	for p := from; p < to; p++ {
		if k := 2*p + 1; k < len(reqs) {
			if raw, err := json.Marshal(reqs[k].Messages); err == nil {
				n += len(raw)
			}
		}
	}
	return n
}

// soakMarkers are what each kind of soak call's result must hold, so that
// the soak counts only calls that did their work.
var soakMarkers = [5]func(i int) string{
	func(int) string { return "a line of notes for the soak" },
	func(int) string { return "Context(ctx context.Context" },
	func(int) string { return ".md" },
	func(int) string { return "notes.txt" },
	func(i int) string { return "soak " + strconv.Itoa(i) },
}

// checkSoakResults checks that the answer request of every prompt carried
// its tool call's result, and that the result holds the call's marker.
func checkSoakResults(reqs []modeltest.Request, prompts int) error {
	for i := 0; i < prompts; i++ {
		if 2*i+1 >= len(reqs) {
			return fmt.Errorf("prompt %d: no second model request", i)
		}
		id, found := "call_"+strconv.Itoa(i), false
		for _, m := range reqs[2*i+1].Messages {
			if m.Role != "tool" || m.ToolCallID != id {
				continue
			}
			found = true
			if want := soakMarkers[i%5](i); !strings.Contains(m.Text(), want) {
				return fmt.Errorf("prompt %d: the %s result lacks %q: %.300s", i, soakCall(i, "").Name, want, m.Text())
			}
		}
		if !found {
			return fmt.Errorf("prompt %d: the model never got the result of %s", i, id)
		}
	}
	return nil
}

// soakTools are the tool calls the soak's prompts make, in turn: reads,
// searches, a listing and a shell command (a child process each time).
func soakCall(i int, root string) modeltest.ToolCall {
	id := "call_" + strconv.Itoa(i)
	switch i % 5 {
	case 0:
		// A window that moves, since a whole file read twice unchanged is
		// answered with a note instead of its text.
		return modeltest.ToolCall{ID: id, Name: "read_file", Arguments: `{"absolute_path":` + strconv.Quote(filepath.Join(root, "notes.txt")) +
			`,"offset":` + strconv.Itoa(i%30) + `,"limit":10}`}
	case 1:
		return modeltest.ToolCall{ID: id, Name: "grep_search", Arguments: `{"pattern":"Context\\(ctx"}`}
	case 2:
		return modeltest.ToolCall{ID: id, Name: "glob", Arguments: `{"pattern":"**/*.md"}`}
	case 3:
		return modeltest.ToolCall{ID: id, Name: "list_directory", Arguments: `{"path":` + strconv.Quote(root) + `}`}
	default:
		return modeltest.ToolCall{ID: id, Name: "run_shell_command", Arguments: `{"command":"echo soak ` + strconv.Itoa(i) + ` && wc -l notes.txt"}`}
	}
}

// soakBench runs b.prompts prompts, each with one tool call, across
// b.sessions sessions of one real server, and compares the server's RSS,
// threads, goroutines, descriptors and children after the first round
// (every session prompted once) with the end.
func soakBench(b *bench) error {
	root := filepath.Join(b.tmp, "soak")
	if err := generateTree(filepath.Join(root, "src"), 300); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte(strings.Repeat("a line of notes for the soak\n", 40)), 0o644); err != nil {
		return err
	}
	home := filepath.Join(b.tmp, "soak-home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	model, err := modeltest.NewServer()
	if err != nil {
		return err
	}
	defer model.Close()
	proxy, err := newConnProxy(strings.TrimPrefix(strings.TrimSuffix(model.URL, "/v1"), "http://"))
	if err != nil {
		return err
	}
	defer proxy.close()
	modelURL := "http://" + proxy.addr() + "/v1"
	heapProfile := filepath.Join(b.tmp, "soak-heap.pprof")
	env := append(os.Environ(), "QWEN_LS_BENCH_HEAP_PROFILE="+heapProfile, "HOME="+home, "QWEN_HOME="+filepath.Join(home, ".qwen"),
		"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+modelURL, "OPENAI_MODEL=scripted")
	srv, err := startServer(b.debugBin, env)
	if err != nil {
		return err
	}
	defer func() {
		if err := srv.stop(); err != nil {
			b.logf("soak: stopping the server: %v", err)
		}
	}()
	if err := srv.initialize(root, map[string]any{
		"approvalMode": "yolo",
		"model":        map[string]any{"name": "scripted", "baseUrl": modelURL},
	}); err != nil {
		return err
	}
	idle, err := srv.settledSample(proxy)
	if err != nil {
		return err
	}

	sessions := make([]string, b.sessions)
	for i := range sessions {
		res, err := srv.call("qwen/newSession", map[string]any{}, 30*time.Second)
		if err != nil {
			return err
		}
		var ns struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal(res, &ns); err != nil || ns.SessionID == "" {
			return fmt.Errorf("qwen/newSession = %s (%v)", res, err)
		}
		sessions[i] = ns.SessionID
	}
	prompt := func(i int) error {
		model.Push(
			modeltest.Response{ToolCalls: []modeltest.ToolCall{soakCall(i, root)}, ChunkSize: 64},
			modeltest.Response{Text: "Done with step " + strconv.Itoa(i) + ".", ChunkSize: 64},
		)
		res, err := srv.call("qwen/prompt", map[string]any{
			"sessionId": sessions[i%len(sessions)],
			"prompt":    []any{map[string]any{"type": "text", "text": "step " + strconv.Itoa(i)}},
		}, 2*time.Minute)
		if err != nil {
			return fmt.Errorf("prompt %d: %w", i, err)
		}
		var pr struct {
			StopReason string `json:"stopReason"`
		}
		if err := json.Unmarshal(res, &pr); err != nil || pr.StopReason != "end_turn" {
			return fmt.Errorf("prompt %d: result %s (%v)", i, res, err)
		}
		return nil
	}
	start := time.Now()
	i := 0
	for ; i < min(len(sessions), b.prompts); i++ {
		if err := prompt(i); err != nil {
			return err
		}
	}
	first, err := srv.settledSample(proxy)
	if err != nil {
		return err
	}
	firstHistory := conversationBytes(model.Requests(), 0, i)
	var maxRSS int
	for ; i < b.prompts; i++ {
		if err := prompt(i); err != nil {
			return err
		}
		if i%100 == 0 {
			if st, err := readProc(srv.pid()); err == nil {
				maxRSS = max(maxRSS, st.RSSKB)
			}
		}
	}
	elapsed := time.Since(start)
	last, err := srv.settledSample(proxy)
	if err != nil {
		return err
	}
	maxRSS = max(maxRSS, last.RSSKB)
	all := model.Requests()
	reqs := len(all)
	if left := model.Remaining(); left != 0 || reqs != 2*b.prompts {
		return fmt.Errorf("soak: %d model requests for %d prompts, %d responses unused", reqs, b.prompts, left)
	}
	if err := checkSoakResults(all, b.prompts); err != nil {
		return err
	}
	label := fmt.Sprintf("soak %d prompts / %d sessions", b.prompts, b.sessions)
	b.logf("%s: %s, %.1f ms per prompt (two model requests and one tool call each); %d notifications", label,
		elapsed.Round(time.Millisecond), float64(elapsed.Microseconds())/1000/float64(b.prompts), srv.notes)
	b.logf("%s: idle before any prompt: RSS %.1f MB, %d threads, %d goroutines, %d fds, %d children; peak RSS sampled %.1f MB",
		label, mb(idle.RSSKB), idle.Threads, idle.Goroutines, idle.FDs, idle.Children, mb(maxRSS))
	// What the sessions must keep: the conversation each last sent the
	// model (the second request of each session's last prompt).
	history := conversationBytes(all, max(0, b.prompts-len(sessions)), b.prompts)
	if out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=25", "-sample_index=inuse_space", b.debugBin, heapProfile).CombinedOutput(); err == nil {
		b.logf("%s: live heap at the end (go tool pprof -top -sample_index=inuse_space):\n%s", label, indent(string(out)))
	} else {
		b.logf("%s: go tool pprof: %v\n%s", label, err, out)
	}
	b.logf("%s: the %d sessions' conversations as last sent to the model: %.1f MB of JSON", label, len(sessions), float64(history)/(1<<20))
	growth := 100 * (float64(last.RSSKB) - float64(first.RSSKB)) / float64(first.RSSKB)
	b.add(row{section: label, what: "RSS after round 1 → end", text: fmt.Sprintf("%.1f → %.1f MB (%+.1f%%)", mb(first.RSSKB), mb(last.RSSKB), growth),
		ours: growth, unit: "%", target: "≤ +10%", limit: 10, limited: true, inclusive: true})
	if first.HeapKB >= 0 && last.HeapKB >= 0 {
		b.add(row{section: label, what: "live Go heap after GC, round 1 → end", text: fmt.Sprintf("%.1f → %.1f MB", mb(first.HeapKB), mb(last.HeapKB)), target: "—"})
		b.add(row{section: label, what: "sessions' conversations (JSON), round 1 → end", text: fmt.Sprintf("%.1f → %.1f MB", float64(firstHistory)/(1<<20), float64(history)/(1<<20)), target: "—"})
		if dh := history - firstHistory; dh > 0 {
			ratio := float64(last.HeapKB-first.HeapKB) * 1024 / float64(dh)
			b.add(row{section: label, what: "live heap growth / conversations' growth", text: fmt.Sprintf("%.2f", ratio), target: "—"})
		}
	}
	count := func(what string, a, z int, judged bool) {
		r := row{section: label, what: what + " after round 1 → end", text: fmt.Sprintf("%d → %d", a, z), ours: float64(z - a), target: "—"}
		if judged {
			r.target, r.limit, r.limited, r.inclusive = "no growth", 0, true, true
		}
		if a < 0 || z < 0 {
			r.text, r.verdict = "not measured", "—"
		}
		b.add(r)
	}
	count("goroutines", first.Goroutines, last.Goroutines, true)
	count("OS threads", first.Threads, last.Threads, false)
	count("open descriptors", first.FDs, last.FDs, true)
	count("child processes", first.Children, last.Children, true)
	b.add(row{section: label, what: "time per prompt (1 tool call, 2 model requests)", ours: float64(elapsed.Microseconds()) / 1000 / float64(b.prompts), unit: "ms", target: "—"})
	return nil
}

func mb(kb int) float64 { return float64(kb) / 1024 }

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}
