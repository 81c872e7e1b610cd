package rpc_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// lockedLog keeps the server's log for inspection and shows it in the
// test log too.
type lockedLog struct {
	t  *testing.T
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.b.Write(p)
	l.mu.Unlock()
	l.t.Logf("%.2000s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// hostile starts a yolo agent whose log the test can read.
func hostile(t *testing.T, settings map[string]any) (*agent, *lockedLog) {
	t.Helper()
	log := &lockedLog{t: t}
	m := modeltest.Start(t)
	e := rpctest.Start(t, rpc.WithMethods(rpc.Options{Version: "test", Stderr: log}, testMethods()))
	root, _ := filepath.EvalSymlinks(t.TempDir())
	opts := map[string]any{"approvalMode": "yolo", "model": map[string]any{"name": "scripted", "baseUrl": m.URL}}
	if settings != nil {
		opts["settings"] = settings
	}
	e.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true, UTF8: true, InitializationOptions: opts})
	res, err := e.Call("qwen/newSession", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var ns struct{ SessionID string }
	json.Unmarshal(res, &ns)
	return &agent{e: e, model: m, root: root, sid: ns.SessionID}, log
}

func promptStop(t *testing.T, a *agent, text string) string {
	t.Helper()
	res, err := a.prompt(text)
	return stopReason(t, res, err)
}

func waitStop(t *testing.T, a *agent, id json.RawMessage, ch chan rpctest.Message) string {
	t.Helper()
	res, err := a.e.Wait(id, ch)
	return stopReason(t, res, err)
}

func stopReason(t *testing.T, res json.RawMessage, err error) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	var pr struct{ StopReason string }
	json.Unmarshal(res, &pr)
	return pr.StopReason
}

// toolMessages is what the model was told about each call id in request n.
func (a *agent) toolMessages(n int) map[string]string {
	out := map[string]string{}
	reqs := a.model.Requests()
	if n >= len(reqs) {
		return out
	}
	for _, m := range reqs[n].Messages {
		if m.Role == "tool" {
			out[m.ToolCallID] = m.Text()
		}
	}
	return out
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// A 50 MB argument string is refused with a clear error, kept out of the
// history (the model is not sent it again) and out of the editor; the
// server answers the editor while the turn is still running, and the heap
// does not keep the 50 MB.
func TestHostileModelFiftyMBArgument(t *testing.T) {
	a, _ := hostile(t, nil)
	huge := `{"absolute_path":"` + strings.Repeat("a", 50<<20) + `"}`
	hold := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(hold) }) }
	t.Cleanup(release)
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "big", Name: "read_file", Arguments: huge}}, ChunkSize: 1 << 20},
		modeltest.Response{Text: "ok", Hold: hold},
	)
	huge = ""
	before := heapInUse()
	id, ch := a.e.Send("qwen/prompt", map[string]any{"sessionId": a.sid, "prompt": []any{map[string]any{"type": "text", "text": "go"}}})
	// The model has the tool result and is thinking again: the turn runs.
	a.model.WaitRequests(2, rpctest.DefaultTimeout)
	if _, err := a.e.Call("qwen/listSessions", map[string]any{}); err != nil {
		t.Fatalf("a request while the hostile turn runs: %v", err)
	}
	after := heapInUse()
	t.Logf("heap in use: %.1f MiB before the turn, %.1f MiB after the 50 MB call", float64(before)/(1<<20), float64(after)/(1<<20))
	if after > before+24<<20 {
		t.Errorf("the heap grew by %d bytes and kept the 50 MB argument", after-before)
	}
	release()
	if r := waitStop(t, a, id, ch); r != "end_turn" {
		t.Fatalf("stop reason %q", r)
	}
	reqs := a.model.Requests()
	if n := len(reqs[1].Body); n > 1<<20 {
		t.Fatalf("the second model request is %d bytes: the argument was sent back", n)
	}
	msg := a.toolMessages(1)["big"]
	if !strings.Contains(msg, "not run") || !strings.Contains(msg, "8 MiB") {
		t.Fatalf("model told %q", msg)
	}
	for _, n := range a.e.Notifications("qwen/sessionUpdate") {
		if len(n.Params) > 1<<20 {
			t.Fatalf("a session update of %d bytes reached the editor", len(n.Params))
		}
	}
}

// Arguments nested 100,000 arrays deep are an argument error for the
// model, not a crash.
func TestHostileModelDeeplyNestedArguments(t *testing.T) {
	a, _ := hostile(t, nil)
	deep := `{"absolute_path":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "deep", Name: "read_file", Arguments: deep}}, ChunkSize: 64 << 10},
		modeltest.Response{Text: "ok"},
	)
	if r := promptStop(t, a, "go"); r != "end_turn" {
		t.Fatalf("stop reason %q", r)
	}
	msg := a.toolMessages(1)["deep"]
	if msg == "" || !strings.Contains(strings.ToLower(msg), "argument") {
		t.Fatalf("model told %q", msg)
	}
	if _, err := a.e.Call("qwen/listSessions", map[string]any{}); err != nil {
		t.Fatal(err)
	}
}

// 500 calls in one response: the first MaxCallsPerResponse run, the rest
// are answered with an error that says why, and every call gets an answer.
func TestHostileModelFiveHundredCalls(t *testing.T) {
	a, _ := hostile(t, nil)
	p := filepath.Join(a.root, "a.txt")
	os.WriteFile(p, []byte("hello\n"), 0o644)
	var calls []modeltest.ToolCall
	for i := range 500 {
		// Different arguments, so the loop guard stays out of it.
		calls = append(calls, modeltest.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "read_file",
			Arguments: fmt.Sprintf(`{"absolute_path":%q,"offset":%d}`, p, i%2)})
	}
	a.model.Push(modeltest.Response{ToolCalls: calls, ChunkSize: 4096}, modeltest.Response{Text: "ok"})
	if r := promptStop(t, a, "go"); r != "end_turn" {
		t.Fatalf("stop reason %q", r)
	}
	msgs := a.toolMessages(1)
	if len(msgs) != 500 {
		t.Fatalf("%d tool messages, want 500", len(msgs))
	}
	for i := range 500 {
		msg := msgs[fmt.Sprintf("c%d", i)]
		capped := strings.Contains(msg, fmt.Sprintf("at most %d tool calls", session.MaxCallsPerResponse))
		if capped != (i >= session.MaxCallsPerResponse) {
			t.Fatalf("call %d: model told %q", i, msg)
		}
	}
}

// A tool name with control characters is refused; the model, the editor
// and the log see it escaped, never raw.
func TestHostileModelControlCharacterToolName(t *testing.T) {
	a, log := hostile(t, nil)
	name := "read_file\x1b[2J\x07\r\nFAKE LOG LINE"
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "ctl", Name: name, Arguments: `{}`}}},
		modeltest.Response{Text: "ok"},
	)
	if r := promptStop(t, a, "go"); r != "end_turn" {
		t.Fatalf("stop reason %q", r)
	}
	msg := a.toolMessages(1)["ctl"]
	if !strings.Contains(msg, "not valid") || !strings.Contains(msg, `\x1b`) || strings.ContainsAny(msg, "\x1b\x07\r") {
		t.Fatalf("model told %q", msg)
	}
	for _, n := range a.e.Notifications("") {
		var v any
		json.Unmarshal(n.Params, &v)
		if s := findControl(v); s != "" {
			t.Fatalf("%s reached the editor with a raw control character: %q", n.Method, s)
		}
	}
	if strings.Contains(log.String(), "\x1b") || strings.Contains(log.String(), "FAKE LOG LINE\n") {
		t.Fatalf("the log holds the raw name: %q", log.String())
	}
}

// findControl returns a string inside v that holds a control character
// other than newline and tab.
func findControl(v any) string {
	switch v := v.(type) {
	case string:
		for _, r := range v {
			if unicode.IsControl(r) && r != '\n' && r != '\t' {
				return v
			}
		}
	case []any:
		for _, x := range v {
			if s := findControl(x); s != "" {
				return s
			}
		}
	case map[string]any:
		for _, x := range v {
			if s := findControl(x); s != "" {
				return s
			}
		}
	}
	return ""
}

// A model that calls the same tool forever: the loop guard stops the
// identical call on its LoopLimit-th repetition, and a model that varies
// the arguments forever is stopped by model.maxTurnRequests.
func TestHostileModelCallsForever(t *testing.T) {
	t.Run("same call", func(t *testing.T) {
		a, _ := hostile(t, nil)
		p := filepath.Join(a.root, "a.txt")
		os.WriteFile(p, []byte("hello\n"), 0o644)
		a.model.SetSide(func(modeltest.Request) (modeltest.Response, bool) {
			return modeltest.Response{ToolCalls: []modeltest.ToolCall{{Name: "read_file", Arguments: fmt.Sprintf(`{"absolute_path":%q}`, p)}}}, true
		})
		if r := promptStop(t, a, "go"); r != "max_turn_requests" {
			t.Fatalf("stop reason %q, want max_turn_requests", r)
		}
		if n := len(a.model.Requests()); n != session.LoopLimit {
			t.Fatalf("%d model requests, want %d", n, session.LoopLimit)
		}
		// The last call was not run; the session still answers.
		a.e.WaitNotification("qwen/sessionUpdate", func(p json.RawMessage) bool {
			return strings.Contains(string(p), "same tool call") && strings.Contains(string(p), "agent_message_chunk")
		})
		a.model.SetSide(nil)
		a.model.Push(modeltest.Response{Text: "fine"})
		if r := promptStop(t, a, "again"); r != "end_turn" {
			t.Fatalf("next prompt: %q", r)
		}
		last := a.model.Requests()[session.LoopLimit]
		for _, m := range last.Messages {
			if m.Role == "tool" && strings.Contains(m.Text(), "not run") {
				return
			}
		}
		t.Fatal("the model was not told that the repeated call was not run")
	})
	t.Run("varying calls", func(t *testing.T) {
		a, _ := hostile(t, map[string]any{"model": map[string]any{"maxTurnRequests": 12}})
		p := filepath.Join(a.root, "a.txt")
		os.WriteFile(p, []byte("1\n2\n3\n"), 0o644)
		n := 0
		var mu sync.Mutex
		a.model.SetSide(func(modeltest.Request) (modeltest.Response, bool) {
			mu.Lock()
			n++
			i := n
			mu.Unlock()
			return modeltest.Response{ToolCalls: []modeltest.ToolCall{{Name: "read_file", Arguments: fmt.Sprintf(`{"absolute_path":%q,"offset":%d}`, p, i%3)}}}, true
		})
		if r := promptStop(t, a, "go"); r != "max_turn_requests" {
			t.Fatalf("stop reason %q, want max_turn_requests", r)
		}
		if got := len(a.model.Requests()); got != 12 {
			t.Fatalf("%d model requests, want 12", got)
		}
	})
}
