package session_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/session"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

func totalAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// Arguments streamed a few bytes at a time are collected in linear
// memory: 512 KiB in 32-byte pieces would allocate gigabytes if each
// piece copied everything before it.
func TestStreamCollectsArgumentsLinearly(t *testing.T) {
	args := `{"content":"` + strings.Repeat("x", 512<<10) + `"}`
	m := modeltest.Start(t, modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "w", Name: "write_file", Arguments: args}}, ChunkSize: 32})
	model := session.NewOpenAIModel(session.ModelConfig{Name: "scripted", BaseURL: m.URL}, session.RetryPolicy{Attempts: -1})
	before := totalAlloc()
	resp, err := model.Stream(context.Background(), session.ModelRequest{Messages: []session.Message{{Role: "user", Text: "go"}}}, session.StreamEvents{})
	if err != nil {
		t.Fatal(err)
	}
	alloc := totalAlloc() - before
	t.Logf("%d pieces allocated %.1f MiB in this process (server side included)", len(args)/32, float64(alloc)/(1<<20))
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Arguments != args {
		t.Fatalf("the arguments did not arrive whole")
	}
	if alloc > 1<<30 {
		t.Fatalf("collecting %d bytes of arguments allocated %d bytes", len(args), alloc)
	}
}

// An answer longer than the limit fails without being read to the end, and
// is not retried.
func TestStreamStopsAnOversizedAnswer(t *testing.T) {
	m := modeltest.Start(t, modeltest.Response{Text: strings.Repeat("y", 4<<20), ChunkSize: 64 << 10})
	model := session.NewOpenAIModel(session.ModelConfig{Name: "scripted", BaseURL: m.URL, MaxResponseBytes: 1 << 20}, session.RetryPolicy{})
	_, err := model.Stream(context.Background(), session.ModelRequest{Messages: []session.Message{{Role: "user", Text: "go"}}}, session.StreamEvents{})
	if err == nil || !strings.Contains(err.Error(), "over 1 MiB") {
		t.Fatalf("err = %v, want the answer refused as over 1 MiB", err)
	}
	if n := len(m.Requests()); n != 1 {
		t.Fatalf("%d requests: an oversized answer must not be retried", n)
	}
}
