package rpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
)

// readAll drains a stream, returning the messages it let through and the
// error that ended it.
func readAll(t *testing.T, data []byte, ndjson bool) (msgs []json.RawMessage, answers []byte, err error) {
	var out bytes.Buffer
	s := newStream(bytes.NewReader(data), &out, nil, ndjson)
	for i := 0; ; i++ {
		if i > len(data)+1 {
			t.Fatalf("the stream returned more messages than the input has bytes")
		}
		var m json.RawMessage
		if err = s.ReadObject(&m); err != nil {
			return msgs, out.Bytes(), err
		}
		msgs = append(msgs, m)
	}
}

// checkCommon holds what every framing must: only a transport error ends
// the stream, every message let through is a valid JSON-RPC envelope, and
// every answer the stream wrote itself is an error response with a
// JSON-RPC error code.
func checkCommon(t *testing.T, msgs []json.RawMessage, err error, answerBodies [][]byte) {
	t.Helper()
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("the stream ended with %v, not a transport error", err)
	}
	for _, m := range msgs {
		if code, msg, _ := checkMessage(m); code != 0 {
			t.Fatalf("let through %q (%s)", m, msg)
		}
	}
	for _, a := range answerBodies {
		var keys map[string]json.RawMessage
		_ = json.Unmarshal(a, &keys)
		var resp struct {
			JSONRPC string `json:"jsonrpc"`
			Error   *struct {
				Code    int64  `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(a, &resp) != nil || resp.JSONRPC != "2.0" || keys["id"] == nil || resp.Error == nil ||
			(resp.Error.Code != -32700 && resp.Error.Code != -32600) || resp.Error.Message == "" {
			t.Fatalf("bad answer %q", a)
		}
	}
}

// lspFrames splits LSP output into bodies, failing on anything else.
func lspFrames(t *testing.T, out []byte) [][]byte {
	t.Helper()
	var bodies [][]byte
	r := bufio.NewReader(bytes.NewReader(out))
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF && line == "" {
			return bodies
		}
		n, ok := strings.CutPrefix(line, "Content-Length: ")
		if !ok || !strings.HasSuffix(n, "\r\n") {
			t.Fatalf("answer frame header %q", line)
		}
		size, cerr := strconv.Atoi(strings.TrimSuffix(n, "\r\n"))
		if blank, _ := r.ReadString('\n'); cerr != nil || blank != "\r\n" {
			t.Fatalf("answer frame header %q", line)
		}
		body := make([]byte, size)
		if _, err := io.ReadFull(r, body); err != nil {
			t.Fatalf("answer frame cut short")
		}
		bodies = append(bodies, body)
	}
}

func frame(body string) string {
	return "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// FuzzLSPFraming feeds arbitrary bytes to the Content-Length reader: it
// never panics, never ends the connection for bad input, lets through only
// valid messages, and answers with well-formed frames.
func FuzzLSPFraming(f *testing.F) {
	ok := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`
	for _, seed := range []string{
		frame(ok), frame(ok) + frame(ok), "\r\n\r\n" + frame(ok), frame("not json") + frame(ok),
		"Content-Length: 5\r\n\r\n{\"a\":" + frame(ok), "Content-Length: 999\r\n\r\n" + ok,
		"Content-Length: -1\r\n\r\n" + frame(ok), "content-length:  60 \r\nContent-Type: x\r\n\r\n" + ok,
		"X: y\r\n\r\n" + frame(ok), "Content-Length: 1e3\r\n\r\n", "Content-Length: 99999999999999999999\r\n\r\n",
		frame(`[1]`) + frame(`{"jsonrpc":"2.0","id":{},"method":"x"}`) + frame(`{"jsonrpc":"2.0","result":1}`),
		frame(`{"jsonrpc":"2.0","id":2,"result":null,"method":"x"}`), frame(`{"jsonrpc":"1.0","id":3,"method":"x"}`),
		frame(`{"jsonrpc":"2.0","id":-1,"method":"x"}`), frame(`{"jsonrpc":"2.0","id":1.5,"method":"x"}`),
		frame(`{"jsonrpc":"2.0","method":"x","params":3}`), "Content-Length: 3\n\n{}\n",
		"garbage" + frame(ok), strings.Repeat("H: v\r\n", 2000) + "\r\n" + frame(ok),
		// Lines whose Unicode lower-casing changes their byte length.
		strings.Repeat("Ⱥ", 30) + frame(ok), "\xff\xfe" + frame(ok), "ẞẞẞẞẞẞcontent-length: 0\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			t.Skip()
		}
		msgs, out, err := readAll(t, data, false)
		checkCommon(t, msgs, err, lspFrames(t, out))
	})
}

// FuzzACPLines feeds arbitrary bytes to the one-message-per-line reader
// of ACP. Besides the common checks, the lines that go through are exactly
// those of a simple model: split on "\n", trim, skip blank lines, keep the
// valid messages, in order; every other line gets one answer unless it is
// a response that cannot be routed.
func FuzzACPLines(f *testing.F) {
	ok := `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}`
	for _, seed := range []string{
		ok + "\n", ok, ok + "\r\n" + ok + "\n", "\n\n" + ok, "not json\n" + ok + "\n", "{\n" + ok + "\n",
		`[{"jsonrpc":"2.0","id":1,"method":"x"}]` + "\n", `{"jsonrpc":"2.0","result":1}` + "\n" + ok,
		"  " + ok + "  \t\n", `{"jsonrpc":"2.0","id":"a","method":""}` + "\n", "\x00\xff\n" + ok,
		`{"jsonrpc":"2.0","id":7,"result":{}}` + "\n", `{"jsonrpc":"2.0","id":1,"method":"x"} {"x":1}` + "\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			t.Skip()
		}
		msgs, out, err := readAll(t, data, true)
		var answers [][]byte
		for _, l := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
			if len(l) > 0 {
				answers = append(answers, l)
			}
		}
		checkCommon(t, msgs, err, answers)
		var want [][]byte
		wantAnswers := 0
		for _, line := range bytes.Split(data, []byte("\n")) {
			line = bytes.TrimSpace(line)
			if len(line) == 0 {
				continue
			}
			code, msg, _ := checkMessage(line)
			var m json.RawMessage
			switch {
			case code == 0 && json.Unmarshal(line, &m) == nil:
				want = append(want, line)
			case code != 0 && msg == "":
				// an unroutable response, dropped silently
			default:
				wantAnswers++
			}
		}
		if len(msgs) != len(want) {
			t.Fatalf("%d messages went through, want %d", len(msgs), len(want))
		}
		for i := range want {
			if !bytes.Equal(msgs[i], want[i]) {
				t.Fatalf("message %d is %q, want %q", i, msgs[i], want[i])
			}
		}
		if len(answers) != wantAnswers {
			t.Fatalf("%d answers, want %d", len(answers), wantAnswers)
		}
	})
}

// FuzzLSPHeaderPrefix puts arbitrary bytes before a well-formed
// Content-Length header, as leftovers of a frame that overstated its
// length do. Unless the bytes hold a Content-Length header of their own,
// the reader must find the real one: the body behind it and the next frame
// both go through. (Lines whose Unicode lower-casing has another length
// once made the reader cut the line at the wrong place, or panic.)
func FuzzLSPHeaderPrefix(f *testing.F) {
	for _, seed := range []string{"", "garbage", `{"jsonrpc":"2.0"`, "X-Other: 1 ", "\xff", "Ⱥ"} {
		f.Add([]byte(seed))
	}
	ok := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`
	f.Fuzz(func(t *testing.T, prefix []byte) {
		if len(prefix) > 4096 || bytes.ContainsAny(prefix, "\r\n") || indexASCIIFold(string(prefix), "content-length:") >= 0 {
			t.Skip()
		}
		data := string(prefix) + "Content-Length: " + strconv.Itoa(len(ok)) + "\r\n\r\n" + ok + frame(ok)
		msgs, out, err := readAll(t, []byte(data), false)
		checkCommon(t, msgs, err, lspFrames(t, out))
		if len(msgs) != 2 || string(msgs[0]) != ok || string(msgs[1]) != ok {
			t.Fatalf("after the prefix %q: %d messages went through, answers %q", prefix, len(msgs), out)
		}
	})
}

// checkMessage is parseMessage without the envelope's positions.
func checkMessage(body []byte) (code int64, msg string, id json.RawMessage) {
	_, code, msg, id = parseMessage(body)
	return code, msg, id
}
