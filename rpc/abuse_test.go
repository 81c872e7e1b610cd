package rpc_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
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
