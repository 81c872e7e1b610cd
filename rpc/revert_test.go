package rpc_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// qwen/revertTurn puts back a turn's edits: the open buffer through one
// workspace/applyEdit, the closed file on disk; a file the user changed
// after the turn is reported with a diff and left alone.
func TestRevertTurnRestoresOpenAndClosedFiles(t *testing.T) {
	a := startAgentWith(t, "yolo", rpc.Options{}, func(p *rpctest.InitParams) { p.ApplyEdit, p.DocumentChanges = true, true })
	a.e.ApplyEditsLikeAnEditor(true)
	open, closed, user := filepath.Join(a.root, "open.txt"), filepath.Join(a.root, "closed.txt"), filepath.Join(a.root, "user.txt")
	for p, text := range map[string]string{open: "one\n", closed: "two\n", user: "three\n"} {
		os.WriteFile(p, []byte(text), 0o644)
	}
	a.e.OpenTracked(open, "one\n")
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			{ID: "r1", Name: "read_file", Arguments: jsonArgs("absolute_path", open)},
			{ID: "r2", Name: "read_file", Arguments: jsonArgs("absolute_path", closed)},
			{ID: "r3", Name: "read_file", Arguments: jsonArgs("absolute_path", user)},
		}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			{ID: "e1", Name: "edit", Arguments: jsonArgs("file_path", open, "old_string", "one", "new_string", "ONE")},
			{ID: "e2", Name: "edit", Arguments: jsonArgs("file_path", closed, "old_string", "two", "new_string", "TWO")},
			{ID: "e3", Name: "edit", Arguments: jsonArgs("file_path", user, "old_string", "three", "new_string", "THREE")},
		}},
		modeltest.Response{Text: "Shouted."},
	)
	if _, err := a.prompt("capitalise the files"); err != nil {
		t.Fatal(err)
	}
	if a.e.Text(open) != "ONE\n" || readFile(closed) != "TWO\n" || readFile(user) != "THREE\n" {
		t.Fatalf("after the turn: open %q closed %q user %q", a.e.Text(open), readFile(closed), readFile(user))
	}
	os.WriteFile(user, []byte("THREE and mine\n"), 0o644)
	editsBefore := len(a.e.AppliedEdits())

	res, err := a.e.Call("qwen/revertTurn", map[string]any{"sessionId": a.sid})
	if err != nil {
		t.Fatal(err)
	}
	var rv struct {
		Turn      int
		Restored  []string
		Removed   []string
		Conflicts []struct{ URI, Diff string }
	}
	json.Unmarshal(res, &rv)
	slices.Sort(rv.Restored)
	if rv.Turn != 1 || !slices.Equal(rv.Restored, []string{rpctest.URI(closed), rpctest.URI(open)}) || len(rv.Removed) != 0 {
		t.Fatalf("revertTurn = %s", res)
	}
	if len(rv.Conflicts) != 1 || rv.Conflicts[0].URI != rpctest.URI(user) || !strings.Contains(rv.Conflicts[0].Diff, "+THREE and mine") {
		t.Fatalf("conflicts = %s", res)
	}
	if a.e.Text(open) != "one\n" || readFile(closed) != "two\n" || readFile(user) != "THREE and mine\n" {
		t.Fatalf("after the revert: open %q closed %q user %q", a.e.Text(open), readFile(closed), readFile(user))
	}
	if edits := a.e.AppliedEdits()[editsBefore:]; len(edits) != 1 || edits[0].URI != rpctest.URI(open) {
		t.Fatalf("the revert sent %d workspace/applyEdit, want one for the open buffer: %+v", len(edits), edits)
	}
	if _, err := a.e.Call("qwen/revertTurn", map[string]any{"sessionId": a.sid}); !isCode(err, rpc.CodeInvalidParams) {
		t.Fatalf("a second undo: %v", err)
	}
}

func readFile(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return "<missing>"
	}
	return string(b)
}

// Secrets from the settings never reach a session file, even when a tool
// reads them out of a file: the key of a web search provider and an MCP
// server's token are written as [redacted].
func TestSessionFilesHoldNoConfiguredSecrets(t *testing.T) {
	const searchKey, mcpToken = "tvly-secret-0123456789", "mcp-token-abcdefghij"
	a := startAgentWith(t, "yolo", rpc.Options{}, func(p *rpctest.InitParams) {
		p.InitializationOptions.(map[string]any)["settings"] = map[string]any{
			"webSearch":  map[string]any{"provider": []any{map[string]any{"type": "tavily", "apiKey": searchKey, "endpoint": "http://127.0.0.1:9"}}},
			"mcpServers": map[string]any{"off": map[string]any{"command": "/nonexistent/server", "env": map[string]any{"SERVICE_AUTH": mcpToken}}},
		}
	})
	p := filepath.Join(a.root, "notes.txt")
	os.WriteFile(p, []byte("search key "+searchKey+"\nmcp "+mcpToken+"\n"), 0o644)
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "r", Name: "read_file", Arguments: jsonArgs("absolute_path", p)}}},
		modeltest.Response{Text: "The file holds " + searchKey},
	)
	if _, err := a.prompt("what is in notes.txt?"); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(a.e.Home, "projects", "*", "sessions", a.sid+".jsonl"))
	if len(files) != 1 {
		t.Fatalf("session files: %v", files)
	}
	data, _ := os.ReadFile(files[0])
	if strings.Contains(string(data), searchKey) || strings.Contains(string(data), mcpToken) {
		t.Fatalf("a secret reached the session file:\n%s", data)
	}
	if !strings.Contains(string(data), "search key [redacted]") {
		t.Fatalf("the tool result was not kept with the secret redacted:\n%s", data)
	}
}
