package rpc_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// keptHunksFile is a file whose proposal has three hunks: 2→two, 5→five
// and 9→nine.
const keptHunksFile = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"

func keptHunksProposal() string {
	return strings.NewReplacer("2\n", "two\n", "5\n", "five\n", "9\n", "nine\n").Replace(keptHunksFile)
}

// rewriteFile scripts: read path, write content over it, then a final answer.
func (a *agent) rewriteFile(path, content string) {
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "read", Name: "read_file", Arguments: jsonArgs("absolute_path", path)}}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "w", Name: "write_file", Arguments: jsonArgs("file_path", path, "content", content)}}},
		modeltest.Response{Text: "ok"},
	)
}

// The editor names the hunks it kept; the server builds the answer: none
// kept rejects, all kept accepts the proposal, some kept writes the old
// text with only those hunks. A malformed list is a rejection with a log
// line, and finalText (the person typed in the proposal) wins over
// keptHunks.
func TestKeptHunksBecomeTheAnswer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  map[string]any
		disk    string
		told    string // what the model is told about the write
		logLine string // a window/logMessage line the server must send
	}{
		{name: "all kept", answer: map[string]any{"keptHunks": []int{0, 1, 2}}, disk: keptHunksProposal()},
		{name: "all kept in any order, with outcome accepted", answer: map[string]any{"outcome": "accepted", "keptHunks": []int{2, 0, 1}}, disk: keptHunksProposal()},
		{name: "none kept", answer: map[string]any{"keptHunks": []int{}, "feedback": "not now"}, disk: keptHunksFile, told: "not now"},
		{name: "first and last kept", answer: map[string]any{"keptHunks": []int{0, 2}},
			disk: strings.NewReplacer("2\n", "two\n", "9\n", "nine\n").Replace(keptHunksFile), told: "The user applied only 2 of the 3 proposed changes"},
		{name: "middle kept", answer: map[string]any{"keptHunks": []int{1}},
			disk: strings.Replace(keptHunksFile, "5\n", "five\n", 1), told: "The user applied only 1 of the 3 proposed changes"},
		{name: "out of range", answer: map[string]any{"keptHunks": []int{0, 3}}, disk: keptHunksFile, logLine: "holds 3, outside the 3 hunks"},
		{name: "negative", answer: map[string]any{"keptHunks": []int{-1}}, disk: keptHunksFile, logLine: "holds -1, outside the 3 hunks"},
		{name: "duplicate", answer: map[string]any{"keptHunks": []int{0, 1, 1}}, disk: keptHunksFile, logLine: "holds 1 twice"},
		{name: "duplicates covering the count", answer: map[string]any{"keptHunks": []int{0, 0, 0}}, disk: keptHunksFile, logLine: "holds 0 twice"},
		{name: "fraction", answer: map[string]any{"keptHunks": []any{0, 1.5}}, disk: keptHunksFile, logLine: "holds 1.5, which is not a hunk index"},
		{name: "string", answer: map[string]any{"keptHunks": []any{"0"}}, disk: keptHunksFile, logLine: `holds "0", which is not a hunk index`},
		{name: "null item", answer: map[string]any{"keptHunks": []any{nil}}, disk: keptHunksFile, logLine: "holds null, which is not a hunk index"},
		{name: "not an array", answer: map[string]any{"keptHunks": "0,1,2"}, disk: keptHunksFile, logLine: "is not an array of hunk indices"},
		{name: "a rejection stays one", answer: map[string]any{"outcome": "rejected", "keptHunks": []int{0, 1, 2}}, disk: keptHunksFile},
		{name: "finalText wins", answer: map[string]any{"outcome": "accepted", "finalText": "typed\n", "keptHunks": []int{0}}, disk: "typed\n",
			told: "The user modified your proposal", logLine: "sent finalText and keptHunks; finalText wins"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := reviewer(t, nil)
			p := filepath.Join(a.root, "a.txt")
			os.WriteFile(p, []byte(keptHunksFile), 0o644)
			seen := a.answerProposals(func(proposal) any { return tc.answer })
			a.rewriteFile(p, keptHunksProposal())
			if _, err := a.prompt("rewrite"); err != nil {
				t.Fatal(err)
			}
			if n := len((*seen)[0].Edits); n != 3 {
				t.Fatalf("the proposal has %d hunks, want 3", n)
			}
			if data, _ := os.ReadFile(p); string(data) != tc.disk {
				t.Fatalf("disk = %q, want %q", data, tc.disk)
			}
			if tc.told != "" {
				if msg := a.toolMessage(t, "w"); !strings.Contains(msg, tc.told) {
					t.Fatalf("model told %q, want %q in it", msg, tc.told)
				}
			}
			if tc.logLine != "" {
				a.e.WaitNotification("window/logMessage", func(p json.RawMessage) bool { return strings.Contains(string(p), jsonFrag(tc.logLine)) })
			}
		})
	}
}

// jsonFrag is s as it appears inside a JSON string.
func jsonFrag(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// A deferred review resolved with kept hunks is answered like a direct one.
func TestResolveReviewWithKeptHunks(t *testing.T) {
	a := reviewer(t, func(p *rpctest.InitParams) { p.Deferred = true })
	p := filepath.Join(a.root, "a.txt")
	os.WriteFile(p, []byte(keptHunksFile), 0o644)
	resolved := make(chan error, 1)
	a.answerProposals(func(pr proposal) any {
		go func() {
			_, err := a.e.Call("qwen/resolveReview", map[string]any{"sessionId": pr.SessionID, "toolCallId": pr.ToolCallID, "keptHunks": []int{1, 2}})
			resolved <- err
		}()
		return map[string]any{"outcome": "deferred"}
	})
	a.rewriteFile(p, keptHunksProposal())
	if _, err := a.prompt("rewrite"); err != nil {
		t.Fatal(err)
	}
	if err := <-resolved; err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer("5\n", "five\n", "9\n", "nine\n").Replace(keptHunksFile)
	if data, _ := os.ReadFile(p); string(data) != want {
		t.Fatalf("disk = %q, want %q", data, want)
	}
	if msg := a.toolMessage(t, "w"); !strings.Contains(msg, "The user applied only 2 of the 3 proposed changes") {
		t.Fatalf("model told %q", msg)
	}
}

// Line endings and a new file: the kept hunks are cut from the texts the
// server sent, byte for byte.
func TestKeptHunksKeepLineEndingsAndNewFiles(t *testing.T) {
	t.Run("crlf", func(t *testing.T) {
		a := reviewer(t, nil)
		p := filepath.Join(a.root, "a.txt")
		os.WriteFile(p, []byte("one\r\ntwo\r\nthree\r\n"), 0o644)
		a.answerProposals(func(proposal) any { return map[string]any{"keptHunks": []int{1}} })
		a.rewriteFile(p, "ONE\r\ntwo\r\nTHREE\r\n")
		if _, err := a.prompt("rewrite"); err != nil {
			t.Fatal(err)
		}
		if data, _ := os.ReadFile(p); string(data) != "one\r\ntwo\r\nTHREE\r\n" {
			t.Fatalf("disk = %q", data)
		}
	})
	t.Run("new file", func(t *testing.T) {
		a := reviewer(t, nil)
		p := filepath.Join(a.root, "new.go")
		a.answerProposals(func(proposal) any { return map[string]any{"keptHunks": []int{0}} })
		a.model.Push(
			modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "w", Name: "write_file", Arguments: jsonArgs("file_path", p, "content", "package calc\n")}}},
			modeltest.Response{Text: "ok"},
		)
		if _, err := a.prompt("create"); err != nil {
			t.Fatal(err)
		}
		if data, _ := os.ReadFile(p); string(data) != "package calc\n" {
			t.Fatalf("disk = %q", data)
		}
	})
}

// waitingOnEditor counts the goroutines blocked on an answer from the
// editor.
func waitingOnEditor() int {
	var b strings.Builder
	pprof.Lookup("goroutine").WriteTo(&b, 1)
	return strings.Count(b.String(), "jsonrpc2.Waiter.Wait")
}

// A request to the editor that the turn stops waiting for leaves nothing
// behind: once the turn is cancelled, no goroutine still waits for the
// editor's answer, though the connection stays open and the editor never
// answers.
func TestAbandonedEditorRequestLeavesNoGoroutine(t *testing.T) {
	a := reviewer(t, nil)
	p := filepath.Join(a.root, "a.txt")
	os.WriteFile(p, []byte("x\n"), 0o644)
	open := make(chan struct{}, 3)
	release := make(chan struct{})
	defer close(release)
	a.answerProposals(func(proposal) any {
		open <- struct{}{}
		<-release // the editor never answers while the test looks
		return map[string]any{"outcome": "accepted"}
	})
	before := waitingOnEditor()
	const turns = 3
	for i := 0; i < turns; i++ {
		// Read and edit; the turn is cancelled before it could answer.
		a.model.Push(
			modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "read", Name: "read_file", Arguments: jsonArgs("absolute_path", p)}}},
			modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "ed", Name: "edit", Arguments: jsonArgs("file_path", p, "old_string", "x", "new_string", "y")}}},
		)
		id, ch := a.e.Send("qwen/prompt", map[string]any{"sessionId": a.sid, "prompt": []any{map[string]any{"type": "text", "text": "edit"}}})
		select {
		case <-open:
		case <-time.After(rpctest.DefaultTimeout):
			t.Fatalf("turn %d: no proposal came", i)
		}
		a.e.Notify("qwen/cancel", map[string]any{"sessionId": a.sid})
		if res, err := a.e.Wait(id, ch); err != nil || !strings.Contains(string(res), `"cancelled"`) {
			t.Fatalf("%s %v", res, err)
		}
	}
	// The prompt's answer comes after the turn ends; give the scheduler a
	// moment before concluding (the count only goes down).
	deadline := time.Now().Add(2 * time.Second)
	n := waitingOnEditor() - before
	for n > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		n = waitingOnEditor() - before
	}
	t.Logf("goroutines waiting on the editor after %d abandoned requests: %d", turns, n)
	if n > 0 {
		t.Fatalf("%d goroutines still wait for answers the turns no longer want", n)
	}
	if data, _ := os.ReadFile(p); string(data) != "x\n" {
		t.Fatalf("disk = %q", data)
	}
}
