package session_test

import (
	"context"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/session"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// Arguments over the per-call limit are counted while they stream, not
// kept: the call comes back with its size and no arguments, and the other
// calls of the answer come back whole.
func TestStreamCountsOversizedArgumentsWithoutKeepingThem(t *testing.T) {
	big := `{"content":"` + strings.Repeat("x", session.MaxArgumentBytes) + `"}`
	small := `{"absolute_path":"/a"}`
	m := modeltest.Start(t, modeltest.Response{ToolCalls: []modeltest.ToolCall{
		{ID: "big", Name: "write_file", Arguments: big},
		{ID: "small", Name: "read_file", Arguments: small},
	}, ChunkSize: 64 << 10})
	model := session.NewOpenAIModel(session.ModelConfig{Name: "scripted", BaseURL: m.URL}, session.RetryPolicy{Attempts: -1})
	resp, err := model.Stream(context.Background(), session.ModelRequest{Messages: []session.Message{{Role: "user", Text: "go"}}}, session.StreamEvents{})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 2 {
		t.Fatalf("%d calls, want 2", len(resp.ToolCalls))
	}
	if c := resp.ToolCalls[0]; c.Arguments != "" || c.DroppedBytes != len(big) {
		t.Fatalf("oversized call: %d bytes of arguments kept, DroppedBytes %d, want 0 and %d", len(c.Arguments), c.DroppedBytes, len(big))
	}
	if c := resp.ToolCalls[1]; c.Arguments != small || c.DroppedBytes != 0 {
		t.Fatalf("small call = %+v", c)
	}
}
