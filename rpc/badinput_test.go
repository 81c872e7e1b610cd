package rpc_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
)

// Each bad message gets the JSON-RPC answer of protocol.md §8, and the
// server keeps serving: after each one a normal request completes.
func TestBadInputIsAnsweredAndServerKeepsServing(t *testing.T) {
	type orphanWant struct {
		code int64
		id   string // raw id expected in the answer
	}
	cases := []struct {
		name string
		send func(e *rpctest.Editor)
		// orphan: the answer arrives as a response to no request we made.
		orphan *orphanWant
		// call: the bad message is a request whose answer we wait for.
		call     func(e *rpctest.Editor) error
		wantCode int64
	}{
		{name: "garbage body", send: func(e *rpctest.Editor) { e.SendFrame([]byte("this is not json")) },
			orphan: &orphanWant{rpc.CodeParseError, "null"}},
		{name: "invalid JSON", send: func(e *rpctest.Editor) { e.SendFrame([]byte(`{"jsonrpc":"2.0","id":1,"method":`)) },
			orphan: &orphanWant{rpc.CodeParseError, "null"}},
		{name: "header without Content-Length", send: func(e *rpctest.Editor) { e.WriteRaw([]byte("X-Nonsense: 1\r\n\r\n")) },
			orphan: &orphanWant{rpc.CodeParseError, "null"}},
		{name: "garbage header line", send: func(e *rpctest.Editor) { e.WriteRaw([]byte("Content-Length: lots\r\n\r\n")) },
			orphan: &orphanWant{rpc.CodeParseError, "null"}},
		{name: "JSON array (batch)", send: func(e *rpctest.Editor) { e.SendFrame([]byte(`[1,2]`)) },
			orphan: &orphanWant{rpc.CodeInvalidRequest, "null"}},
		{name: "JSON scalar", send: func(e *rpctest.Editor) { e.SendFrame([]byte(`42`)) },
			orphan: &orphanWant{rpc.CodeInvalidRequest, "null"}},
		{name: "missing jsonrpc version keeps its id", send: func(e *rpctest.Editor) { e.SendFrame([]byte(`{"id":77,"method":"shutdown"}`)) },
			orphan: &orphanWant{rpc.CodeInvalidRequest, "77"}},
		{name: "method not a string", send: func(e *rpctest.Editor) { e.SendFrame([]byte(`{"jsonrpc":"2.0","id":"m","method":5}`)) },
			orphan: &orphanWant{rpc.CodeInvalidRequest, `"m"`}},
		{name: "object id", send: func(e *rpctest.Editor) { e.SendFrame([]byte(`{"jsonrpc":"2.0","id":{},"method":"shutdown"}`)) },
			orphan: &orphanWant{rpc.CodeInvalidRequest, "null"}},
		{name: "scalar params", send: func(e *rpctest.Editor) {
			e.SendFrame([]byte(`{"jsonrpc":"2.0","id":78,"method":"test/text","params":3}`))
		},
			orphan: &orphanWant{rpc.CodeInvalidRequest, "78"}},
		{name: "unknown method", call: func(e *rpctest.Editor) error {
			_, err := e.Call("qwen/noSuchMethod", map[string]any{})
			return err
		}, wantCode: rpc.CodeMethodNotFound},
		{name: "wrong param types", call: func(e *rpctest.Editor) error {
			_, err := e.Call("test/text", map[string]any{"path": 12})
			return err
		}, wantCode: rpc.CodeInvalidParams},
	}
	e := start(t)
	e.Initialize(rpctest.InitParams{Roots: []string{t.TempDir()}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.call != nil {
				if err := tc.call(e); !isCode(err, tc.wantCode) {
					t.Fatalf("got %v, want code %d", err, tc.wantCode)
				}
			} else {
				tc.send(e)
				m := e.WaitOrphan()
				if m.Error == nil || m.Error.Code != tc.orphan.code {
					t.Fatalf("answer = %+v, want error %d", m, tc.orphan.code)
				}
				if got := strings.TrimSpace(string(m.ID)); got != tc.orphan.id && !(got == "" && tc.orphan.id == "null") {
					t.Errorf("answer id = %s, want %s", got, tc.orphan.id)
				}
			}
			if _, err := e.Call("test/text", map[string]any{"path": "/x"}); err != nil {
				t.Fatalf("normal request after the bad message: %v", err)
			}
		})
	}
}

// A notification with params of the wrong type cannot be answered; it is
// logged to the editor and changes nothing.
func TestBadNotificationParamsAreLogged(t *testing.T) {
	e := start(t)
	root := t.TempDir()
	e.Initialize(rpctest.InitParams{Roots: []string{root}})
	path := root + "/a.txt"
	e.Open(path, "hello")
	e.Notify("textDocument/didChange", map[string]any{"textDocument": "not an object", "contentChanges": 3})
	e.WaitNotification("window/logMessage", func(p json.RawMessage) bool {
		return bytes.Contains(p, []byte("textDocument/didChange")) && bytes.Contains(p, []byte(`"type":1`))
	})
	assertText(t, e, path, "hello", 1)
}

// A frame whose Content-Length overstates its body desynchronises the
// stream; the server answers what it cannot parse, finds the next header
// and serves again.
func TestTruncatedFrameResyncs(t *testing.T) {
	e := start(t)
	e.Initialize(rpctest.InitParams{Roots: []string{t.TempDir()}})
	e.WriteRaw([]byte("Content-Length: 30\r\n\r\n{\"jsonrpc\":\"2.0\""))
	// The request right after the short frame is partly swallowed by it.
	e.Send("test/text", map[string]any{"path": "/lost"})
	if m := e.WaitOrphan(); m.Error == nil || m.Error.Code != rpc.CodeParseError {
		t.Fatalf("first answer = %+v, want -32700", m)
	}
	if _, err := e.Call("test/text", map[string]any{"path": "/x"}); err != nil {
		t.Fatalf("request after resync: %v", err)
	}
}

// A message over 64 MiB is skipped without being parsed and answered with
// -32600 (id null).
func TestOversizedFrameIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MiB")
	}
	e := start(t)
	e.Initialize(rpctest.InitParams{Roots: []string{t.TempDir()}})
	n := rpc.MaxMessageSize + 1
	e.WriteRaw([]byte("Content-Length: " + itoa(n) + "\r\n\r\n"))
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for left := n; left > 0; left -= len(chunk) {
		if left < len(chunk) {
			chunk = chunk[:left]
		}
		e.WriteRaw(chunk)
	}
	m := e.WaitOrphan()
	if m.Error == nil || m.Error.Code != rpc.CodeInvalidRequest || !strings.Contains(m.Error.Message, "64 MiB") {
		t.Fatalf("answer = %+v, want -32600 naming the limit", m)
	}
	if _, err := e.Call("test/text", map[string]any{"path": "/x"}); err != nil {
		t.Fatalf("request after the oversized frame: %v", err)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
