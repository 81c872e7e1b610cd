package rpc_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
)

// A header line whose lower-cased form has another byte length (Ⱥ, invalid
// UTF-8) used to panic the server's read goroutine and end the process.
// Through the real server: a header line of that kind without a usable
// Content-Length is answered with a parse error, one that ends in a usable
// Content-Length is read, and in both cases the next request is answered.
func TestHeaderLineThatGrowsWhenLowerCasedKeepsServerUp(t *testing.T) {
	e := start(t)
	e.Initialize(rpctest.InitParams{Roots: []string{t.TempDir()}})

	for _, prefix := range []string{strings.Repeat("Ⱥ", 40), "\xff\xfe\xfd\xfc"} {
		e.WriteRaw([]byte(prefix + "Content-Type: x\r\n\r\n"))
		if m := e.WaitOrphan(); m.Error == nil || m.Error.Code != rpc.CodeParseError {
			t.Fatalf("answer to a header block without Content-Length = %+v, want -32700", m)
		}
		if _, err := e.Call("test/text", map[string]any{"path": "/x"}); err != nil {
			t.Fatalf("request after the bad header: %v", err)
		}

		body := `{"jsonrpc":"2.0","id":"glued","method":"test/text","params":{"path":"/y"}}`
		e.WriteRaw([]byte(prefix + "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body))
		// The editor did not send it through Call, so its answer is an orphan.
		if m := e.WaitOrphan(); m.Error != nil || strings.TrimSpace(string(m.ID)) != `"glued"` {
			t.Fatalf("answer to the request behind the glued header = %+v", m)
		}
		if _, err := e.Call("test/text", map[string]any{"path": "/x"}); err != nil {
			t.Fatalf("request after the glued header: %v", err)
		}
	}
}
