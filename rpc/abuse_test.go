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
	"time"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// writeFiller writes n bytes of c in 1 MiB pieces.
func writeFiller(e *rpctest.Editor, n int, c byte) {
	chunk := bytes.Repeat([]byte{c}, 1<<20)
	for left := n; left > 0; left -= len(chunk) {
		if left < len(chunk) {
			chunk = chunk[:left]
		}
		e.WriteRaw(chunk)
	}
}

// A Content-Length of 1 GiB is refused at once, before its body arrives,
// and without the server allocating anything like it; once the body has
// gone by, the next request is served.
func TestOneGiBContentLengthIsRefusedWithoutAllocating(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 1 GiB through a pipe")
	}
	e := start(t)
	e.Initialize(rpctest.InitParams{Roots: []string{t.TempDir()}})
	const n = 1 << 30
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	e.WriteRaw([]byte(fmt.Sprintf("Content-Length: %d\r\n\r\n", n)))
	// The refusal comes before a single body byte was sent.
	m := e.WaitOrphan()
	if m.Error == nil || m.Error.Code != rpc.CodeInvalidRequest || !strings.Contains(m.Error.Message, "64 MiB") {
		t.Fatalf("answer = %+v, want -32600 naming the limit", m)
	}
	writeFiller(e, n, 'x')
	if _, err := e.Call("test/text", map[string]any{"path": "/x"}); err != nil {
		t.Fatalf("request after the refused frame: %v", err)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %.1f MiB while a 1 GiB frame went by", float64(alloc)/(1<<20))
	if alloc > 64<<20 {
		t.Fatalf("the server allocated %d bytes for a refused 1 GiB frame", alloc)
	}
}

// Thousands of messages without pause: incremental didChanges interleaved
// with requests. Each request sees exactly the changes sent before it,
// the answers come back in the order the requests were sent, and the heap
// does not grow with the number of messages.
func TestFloodOfChangesAndRequestsStaysInOrder(t *testing.T) {
	e := start(t)
	root := t.TempDir()
	e.Initialize(rpctest.InitParams{Roots: []string{root}, UTF8: true})
	path := root + "/flood.txt"
	e.Open(path, "")
	const changes, every = 6000, 50
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	type pending struct {
		id      json.RawMessage
		ch      chan rpctest.Message
		version int32
		length  int
	}
	var reqs []pending
	begin := time.Now()
	length := 0
	for i := 1; i <= changes; i++ {
		v := e.Change(path, rpctest.Edit{Text: "x"}) // insert at the start
		length++
		if i%every == 0 {
			id, ch := e.Send("test/text", map[string]any{"path": path})
			reqs = append(reqs, pending{id, ch, v, length})
		}
	}
	for _, r := range reqs {
		res, err := e.Wait(r.id, r.ch)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Text    string
			Version int32
		}
		json.Unmarshal(res, &got)
		if got.Version != r.version || len(got.Text) != r.length {
			t.Fatalf("request %s saw version %d (%d bytes), want %d (%d bytes)", r.id, got.Version, len(got.Text), r.version, r.length)
		}
	}
	elapsed := time.Since(begin)
	msgs := changes + len(reqs)
	t.Logf("%d messages in %v (%.0f a second)", msgs, elapsed.Round(time.Millisecond), float64(msgs)/elapsed.Seconds())
	order := e.AnsweredIDs()
	last := -1
	for _, r := range reqs {
		i := indexOf(order, string(r.id))
		if i < 0 || i < last {
			t.Fatalf("answer to %s arrived out of order: %v", r.id, order)
		}
		last = i
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	growth := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("heap in use grew by %.1f MiB", float64(growth)/(1<<20))
	if growth > 32<<20 {
		t.Fatalf("heap in use grew by %d bytes over %d small messages", growth, msgs)
	}
}

func indexOf(ids []string, id string) int {
	for i, s := range ids {
		if s == id {
			return i
		}
	}
	return -1
}

// Deeply nested JSON in a message is refused with a parse error, and the
// server goes on serving.
func TestDeeplyNestedMessageIsRefused(t *testing.T) {
	e := start(t)
	e.Initialize(rpctest.InitParams{Roots: []string{t.TempDir()}})
	const depth = 100000
	body := `{"jsonrpc":"2.0","id":5,"method":"test/text","params":{"path":"/x","deep":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}}`
	e.SendFrame([]byte(body))
	m := e.WaitOrphan()
	if m.Error == nil || m.Error.Code != rpc.CodeParseError {
		t.Fatalf("answer = %+v, want -32700", m)
	}
	if _, err := e.Call("test/text", map[string]any{"path": "/x"}); err != nil {
		t.Fatalf("request after the nested message: %v", err)
	}
}

// An editor that never answers qwen/proposeEdit, not even after the
// server withdraws it, does not hold the session: $/cancelRequest on the
// prompt ends the turn as cancelled with nothing written, the session
// takes the next prompt, and the answer that comes much later changes
// nothing.
func TestNeverAnsweredProposalIsReleasedByCancel(t *testing.T) {
	a := reviewer(t, nil)
	p := filepath.Join(a.root, "a.txt")
	os.WriteFile(p, []byte("x\n"), 0o644)
	asked := make(chan struct{}, 1)
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	a.e.Handle("qwen/proposeEdit", func(json.RawMessage) (any, error) {
		asked <- struct{}{}
		<-release // the editor hangs until the test ends
		return map[string]any{"outcome": "accepted"}, nil
	})
	a.readThenEdit(p, "x", "y")
	id, ch := a.e.Send("qwen/prompt", map[string]any{"sessionId": a.sid, "prompt": []any{map[string]any{"type": "text", "text": "edit"}}})
	<-asked
	a.e.Notify("$/cancelRequest", map[string]any{"id": json.RawMessage(id)})
	// LSP answers a cancelled request with -32800.
	if res, err := a.e.Wait(id, ch); !isCode(err, -32800) {
		t.Fatalf("prompt after $/cancelRequest: %s %v, want error -32800", res, err)
	}
	if data, _ := os.ReadFile(p); string(data) != "x\n" {
		t.Fatalf("disk = %q", data)
	}
	// The session is free again.
	a.model.Push(modeltest.Response{Text: "still here"})
	if res, err := a.prompt("are you there?"); err != nil || !strings.Contains(string(res), "end_turn") {
		t.Fatalf("next prompt: %s %v", res, err)
	}
	// A late answer to the withdrawn proposal, sent ahead of a request
	// on the same stream, writes nothing.
	late, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": a.e.Requests("qwen/proposeEdit")[0].ID, "result": map[string]any{"outcome": "accepted"}})
	a.e.SendFrame(late)
	if _, err := a.e.Call("qwen/listSessions", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(p); string(data) != "x\n" {
		t.Fatalf("disk after the late answer = %q", data)
	}
	if left := tempFiles(t, a.root); len(left) > 0 {
		t.Fatalf("temp files left: %v", left)
	}
}

// tempFiles lists the atomic-write temp files under root.
func tempFiles(t *testing.T, root string) []string {
	var out []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && workspace.IsTempName(d.Name()) {
			out = append(out, p)
		}
		return nil
	})
	return out
}
