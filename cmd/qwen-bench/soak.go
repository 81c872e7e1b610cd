package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// soakSample is the server's state at one point of the soak.
type soakSample struct {
	procStats
	Goroutines int // -1 when the binary cannot tell
	HeapKB     int // live Go heap after a collection; -1 when unknown
	// Where the rest of the Go runtime's memory is, from the same
	// collection: heap spans in use (live objects and the free slots
	// between them), freed heap not yet returned to the system, goroutine
	// stacks, the collector's own metadata, and the heap size at which the
	// next collection starts.
	InuseKB, UnreturnedKB, StacksKB, GCMetaKB, GoalKB int
}

// settledSample drops the server's connections to the model, then samples
// every 300 ms, keeping the smallest of each count, until RSS stops
// falling: at least three samples, at most twenty (6 s). Each sample
// collects garbage first, and the Go runtime hands freed pages back to the
// system over the next second or so, so a single early reading mostly
// measures how far that return has got.
func (s *server) settledSample(proxy *connProxy) (soakSample, error) {
	proxy.dropAll()
	var best soakSample
	prev := -1
	for i := 0; i < 20; i++ {
		time.Sleep(300 * time.Millisecond)
		cur, err := s.sample()
		if err != nil {
			return cur, err
		}
		if i == 0 {
			best = cur
		} else {
			if cur.RSSKB < best.RSSKB {
				best.RSSKB, best.AnonKB, best.FileKB = cur.RSSKB, cur.AnonKB, cur.FileKB
				best.InuseKB, best.UnreturnedKB, best.StacksKB, best.GCMetaKB, best.GoalKB = cur.InuseKB, cur.UnreturnedKB, cur.StacksKB, cur.GCMetaKB, cur.GoalKB
			}
			best.Threads = min(best.Threads, cur.Threads)
			best.FDs = min(best.FDs, cur.FDs)
			best.Children = min(best.Children, cur.Children)
			best.Goroutines = min(best.Goroutines, cur.Goroutines)
			best.HeapKB = min(best.HeapKB, cur.HeapKB)
		}
		// Settled: the last reading is within 1% of the one before.
		if i >= 2 && prev-cur.RSSKB < prev/100 {
			break
		}
		prev = cur.RSSKB
	}
	return best, nil
}

// sample reads /proc for the server and, from the qwenbench build that
// the soak runs, its goroutine count and Go memory (SIGUSR1 makes it print
// them on stderr).
func (s *server) sample() (soakSample, error) {
	st, err := readProc(s.pid())
	out := soakSample{procStats: st, Goroutines: -1, HeapKB: -1}
	if err != nil {
		return out, err
	}
	for len(s.debug) > 0 {
		<-s.debug
	}
	if err := askDebug(s.cmd.Process); err != nil {
		return out, err
	}
	select {
	case line := <-s.debug:
		var heap, inuse, unret, stacks, meta, goal int
		if _, err := fmt.Sscanf(line, "goroutines %d heap %d inuse %d unreturned %d stacks %d gcmeta %d goal %d",
			&out.Goroutines, &heap, &inuse, &unret, &stacks, &meta, &goal); err != nil {
			return out, fmt.Errorf("the server said %q", line)
		}
		out.HeapKB, out.InuseKB, out.UnreturnedKB, out.StacksKB, out.GCMetaKB, out.GoalKB = heap/1024, inuse/1024, unret/1024, stacks/1024, meta/1024, goal/1024
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

// soakRun is what one soak run measured.
type soakRun struct {
	idle, first, last soakSample
	maxRSS            int
	elapsed           time.Duration
	notes             int
	reqs              []modeltest.Request
}

// runSoak runs b.prompts prompts, each with one tool call, across
// b.sessions sessions of one real server (the qwenbench build), sampling
// it when idle after initialize, after the first round (every session
// prompted once) and at the end. With heapProfile set the server samples
// every 4 KB allocated and writes a heap profile there at each sample.
func runSoak(b *bench, root, home, heapProfile string) (soakRun, error) {
	var run soakRun
	model, err := modeltest.NewServer()
	if err != nil {
		return run, err
	}
	defer model.Close()
	proxy, err := newConnProxy(strings.TrimPrefix(strings.TrimSuffix(model.URL, "/v1"), "http://"))
	if err != nil {
		return run, err
	}
	defer proxy.close()
	modelURL := "http://" + proxy.addr() + "/v1"
	env := append(os.Environ(), "HOME="+home, "QWEN_HOME="+filepath.Join(home, ".qwen"),
		"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+modelURL, "OPENAI_MODEL=scripted")
	if heapProfile != "" {
		env = append(env, "QWEN_LS_BENCH_HEAP_PROFILE="+heapProfile)
	}
	srv, err := startServer(b.debugBin, env)
	if err != nil {
		return run, err
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
		return run, err
	}
	if run.idle, err = srv.settledSample(proxy); err != nil {
		return run, err
	}

	sessions := make([]string, b.sessions)
	for i := range sessions {
		res, err := srv.call("qwen/newSession", map[string]any{}, 30*time.Second)
		if err != nil {
			return run, err
		}
		var ns struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal(res, &ns); err != nil || ns.SessionID == "" {
			return run, fmt.Errorf("qwen/newSession = %s (%v)", res, err)
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
			return run, err
		}
	}
	// The pause to sample is not prompt time.
	roundOne := time.Since(start)
	if run.first, err = srv.settledSample(proxy); err != nil {
		return run, err
	}
	resumed := time.Now()
	for ; i < b.prompts; i++ {
		if err := prompt(i); err != nil {
			return run, err
		}
		if i%100 == 0 {
			if st, err := readProc(srv.pid()); err == nil {
				run.maxRSS = max(run.maxRSS, st.RSSKB)
			}
		}
	}
	run.elapsed = roundOne + time.Since(resumed)
	if run.last, err = srv.settledSample(proxy); err != nil {
		return run, err
	}
	run.maxRSS = max(run.maxRSS, run.last.RSSKB)
	run.notes = srv.notifications()
	run.reqs = model.Requests()
	if left := model.Remaining(); left != 0 || len(run.reqs) != 2*b.prompts {
		return run, fmt.Errorf("soak: %d model requests for %d prompts, %d responses unused", len(run.reqs), b.prompts, left)
	}
	return run, checkSoakResults(run.reqs, b.prompts)
}

// soakBench runs the soak twice on fresh servers: the first run is the
// one judged (RSS, goroutines, descriptors and children after the first
// round and at the end); the second samples every 4 KB allocated and
// prints the live heap at the end, to say what the sessions hold. The
// sampling profiler's own records would be counted in RSS, which is why
// it is not on in the judged run.
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
	run, err := runSoak(b, root, home, "")
	if err != nil {
		return err
	}
	idle, first, last := run.idle, run.first, run.last
	label := fmt.Sprintf("soak %d prompts / %d sessions", b.prompts, b.sessions)
	perPrompt := millis(run.elapsed) / float64(b.prompts)
	b.logf("%s: %s, %.1f ms per prompt (two model requests and one tool call each); %d notifications", label,
		run.elapsed.Round(time.Millisecond), perPrompt, run.notes)
	b.logf("%s: idle before any prompt: RSS %.1f MB, %d threads, %d goroutines, %d fds, %d children; peak RSS sampled %.1f MB",
		label, mb(idle.RSSKB), idle.Threads, idle.Goroutines, idle.FDs, idle.Children, mb(run.maxRSS))
	// What the sessions must keep: the conversation each last sent the
	// model (the second request of each session's last prompt).
	firstHistory := conversationBytes(run.reqs, 0, min(b.sessions, b.prompts))
	history := conversationBytes(run.reqs, max(0, b.prompts-b.sessions), b.prompts)
	heapProfile := filepath.Join(b.tmp, "soak-heap.pprof")
	if prof, err := runSoak(b, root, filepath.Join(b.tmp, "soak-home-profiled"), heapProfile); err != nil {
		b.logf("%s: the profiled run: %v", label, err)
	} else if out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=25", "-sample_index=inuse_space", b.debugBin, heapProfile).CombinedOutput(); err == nil {
		b.logf("%s: live heap at the end of a second, profiled run (RSS %.1f → %.1f MB with the profiler's records; go tool pprof -top -sample_index=inuse_space):\n%s",
			label, mb(prof.first.RSSKB), mb(prof.last.RSSKB), indent(string(out)))
	} else {
		b.logf("%s: go tool pprof: %v\n%s", label, err, out)
	}
	b.logf("%s: the Go runtime's memory after round 1 → at the end: live heap %.1f → %.1f MB, heap spans in use %.1f → %.1f MB, freed but not yet returned %.1f → %.1f MB, stacks %.1f → %.1f MB, collector metadata %.1f → %.1f MB; next collection at %.1f → %.1f MB",
		label, mb(first.HeapKB), mb(last.HeapKB), mb(first.InuseKB), mb(last.InuseKB), mb(first.UnreturnedKB), mb(last.UnreturnedKB),
		mb(first.StacksKB), mb(last.StacksKB), mb(first.GCMetaKB), mb(last.GCMetaKB), mb(first.GoalKB), mb(last.GoalKB))
	b.logf("%s: the %d sessions' conversations as last sent to the model: %.1f MB of JSON", label, b.sessions, float64(history)/(1<<20))
	growth := 100 * (float64(last.RSSKB) - float64(first.RSSKB)) / float64(first.RSSKB)
	b.add(row{section: label, what: "RSS after round 1 → end", text: fmt.Sprintf("%.1f → %.1f MB (%+.1f%%)", mb(first.RSSKB), mb(last.RSSKB), growth),
		ours: growth, unit: "%", target: "≤ +10%", limit: 10, limited: true, inclusive: true})
	b.add(row{section: label, what: "of which anonymous (heap, stacks)", text: fmt.Sprintf("%.1f → %.1f MB", mb(first.AnonKB), mb(last.AnonKB)), target: "—"})
	b.add(row{section: label, what: "of which file pages (the binary's code and data)", text: fmt.Sprintf("%.1f → %.1f MB", mb(first.FileKB), mb(last.FileKB)), target: "—"})
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
	b.add(row{section: label, what: "time per prompt (1 tool call, 2 model requests)", ours: perPrompt, unit: "ms", target: "—"})
	return nil
}

func mb(kb int) float64 { return float64(kb) / 1024 }

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}
