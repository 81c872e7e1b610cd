package rpc_test

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// The agent-loop benchmarks drive the real server in process through the
// fake editor, against the scripted model answering at once, so what they
// time is the server's own work: decoding the model's stream, running the
// tool, notifying the editor and answering the prompt. They report their
// figures and assert none (targets, for reading them: under 2 ms per tool
// round trip, under 100 µs per streamed chunk). docs/benchmarks.md, "Agent
// loop", says how to run and read them.

// benchAgent is one server, one scripted model and one open session,
// reused across a benchmark's iterations.
type benchAgent struct {
	b     *testing.B
	e     *rpctest.Editor
	model *modeltest.Server
	root  string
	sid   string
}

func startBenchAgent(b *testing.B) *benchAgent {
	b.Helper()
	m := modeltest.Start(b)
	e := rpctest.Start(b, rpc.Options{Version: "bench", Stderr: io.Discard})
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	e.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true, UTF8: true, InitializationOptions: map[string]any{
		"approvalMode": "yolo",
		"model":        map[string]any{"name": "scripted", "baseUrl": m.URL},
	}})
	a := &benchAgent{b: b, e: e, model: m, root: root}
	a.newSession()
	return a
}

// newSession opens a fresh session and makes it the one prompted.
func (a *benchAgent) newSession() {
	a.b.Helper()
	res, err := a.e.Call("qwen/newSession", map[string]any{})
	if err != nil {
		a.b.Fatal(err)
	}
	var ns struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(res, &ns); err != nil || ns.SessionID == "" {
		a.b.Fatalf("newSession = %s (%v)", res, err)
	}
	a.sid = ns.SessionID
}

func (a *benchAgent) prompt(text string) {
	a.b.Helper()
	res, err := a.e.Call("qwen/prompt", map[string]any{"sessionId": a.sid, "prompt": []any{map[string]any{"type": "text", "text": text}}})
	if err != nil {
		a.b.Fatal(err)
	}
	var pr struct {
		StopReason string `json:"stopReason"`
	}
	if err := json.Unmarshal(res, &pr); err != nil || pr.StopReason != "end_turn" {
		a.b.Fatalf("prompt result = %s (%v)", res, err)
	}
}

// benchSessionTurns bounds how many prompts one session takes before the
// benchmark opens the next (outside the timer). A session keeps its whole
// history and sends it with every model request, so one session for all
// of b.N iterations would make each round trip dearer than the one before
// and the figure depend on b.N; a few dozen turns keep the conversation
// the size of a real one.
const benchSessionTurns = 32

// BenchmarkToolRoundTrip is the server's overhead per tool round trip: one
// prompt in which the model calls read_file on a small file, the server
// runs it and sends the result back, and the model answers with short text
// (two model requests per iteration). ns/op is one whole prompt;
// ms/roundtrip is the same figure in milliseconds.
func BenchmarkToolRoundTrip(b *testing.B) {
	a := startBenchAgent(b)
	path := filepath.Join(a.root, "small.txt")
	content := "package small\n\n// A small file for the read_file round trip.\nfunc Answer() int { return 42 }\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
	args := `{"absolute_path":` + strconv.Quote(path) + `}`
	push := func(i int) {
		a.model.Push(
			modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "read_" + strconv.Itoa(i), Name: "read_file", Arguments: args}}, ChunkSize: 64},
			modeltest.Response{Text: "It returns 42.", ChunkSize: 64},
		)
	}

	// One untimed prompt checks that the model got the file's content
	// back, so the benchmark times a real read.
	push(-1)
	a.prompt("what does small.txt return?")
	reqs := a.model.Requests()
	if len(reqs) != 2 || !benchHasToolResult(reqs[1], content) {
		b.Fatalf("the warm-up prompt made %d model requests, the second without the file's content", len(reqs))
	}

	b.ReportAllocs()
	b.ResetTimer()
	busy0 := a.model.BusyTime()
	for i := 0; i < b.N; i++ {
		if i%benchSessionTurns == 0 {
			b.StopTimer()
			a.newSession()
			b.StartTimer()
		}
		push(i)
		a.prompt("what does small.txt return?")
	}
	b.StopTimer()
	elapsed := b.Elapsed()
	b.ReportMetric(float64(elapsed.Microseconds())/1000/float64(b.N), "ms/roundtrip")
	// The scripted model runs in this process too; what it spends
	// decoding requests and writing answers is not the server's overhead.
	model := a.model.BusyTime() - busy0
	b.ReportMetric(float64((elapsed-model).Microseconds())/1000/float64(b.N), "server-ms/roundtrip")
	if left := a.model.Remaining(); left != 0 {
		b.Fatalf("%d scripted responses left unused", left)
	}
}

// benchHasToolResult reports whether req carries a tool message with content.
func benchHasToolResult(req modeltest.Request, content string) bool {
	for _, m := range req.Messages {
		if m.Role == "tool" && strings.Contains(m.Text(), content) {
			return true
		}
	}
	return false
}

// benchStreamChunks is how many pieces each streamed answer comes in.
const benchStreamChunks = 2000

// benchStreamSessionTurns is benchSessionTurns for the streamed answers:
// each is 16 KB (about 4,000 tokens), so 32 of them would pass the
// compression threshold of the default context window, and the session
// would ask the model for a summary in the middle of the timing.
const benchStreamSessionTurns = 8

// BenchmarkStreamedChunk is the cost of one streamed piece of an answer,
// seen from the editor: per iteration one prompt whose answer arrives in
// 2000 chunks, each forwarded as a qwen/sessionUpdate notification, timed
// from sending qwen/prompt until its answer arrives (by then the editor
// has every chunk: the server writes them before the answer, in order, on
// one stream). µs/chunk = elapsed / (b.N × 2000).
func BenchmarkStreamedChunk(b *testing.B) {
	a := startBenchAgent(b)
	const chunkSize = 8
	var sb strings.Builder
	for sb.Len() < benchStreamChunks*chunkSize {
		sb.WriteString("streamed")
	}
	text := sb.String()[:benchStreamChunks*chunkSize]
	answer := modeltest.Response{Text: text, ChunkSize: chunkSize}

	// One untimed prompt checks that every chunk reached the editor as
	// its own notification, and in order.
	a.model.Push(answer)
	before := len(a.e.Notifications("qwen/sessionUpdate"))
	a.prompt("stream a long answer")
	n, got := benchMessageChunks(b, a.e.Notifications("qwen/sessionUpdate")[before:], a.sid)
	if n != benchStreamChunks || got != text {
		b.Fatalf("the editor got %d agent_message_chunk notifications (%d bytes), want %d (%d bytes)", n, len(got), benchStreamChunks, len(text))
	}

	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%benchStreamSessionTurns == 0 {
			b.StopTimer()
			a.newSession()
			b.StartTimer()
		}
		a.model.Push(answer)
		a.prompt("stream a long answer")
	}
	b.StopTimer()
	elapsed := b.Elapsed()
	b.ReportMetric(float64(elapsed.Nanoseconds())/1000/float64(b.N*benchStreamChunks), "µs/chunk")
}

// benchMessageChunks counts the agent_message_chunk updates of session sid
// among notes and joins their text.
func benchMessageChunks(b *testing.B, notes []rpctest.Message, sid string) (int, string) {
	b.Helper()
	n := 0
	var text strings.Builder
	for _, m := range notes {
		var p struct {
			SessionID string `json:"sessionId"`
			Update    struct {
				SessionUpdate string `json:"sessionUpdate"`
				Content       struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"update"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil {
			b.Fatal(err)
		}
		if p.SessionID == sid && p.Update.SessionUpdate == "agent_message_chunk" {
			n++
			text.WriteString(p.Update.Content.Text)
		}
	}
	return n, text.String()
}
