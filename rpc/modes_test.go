package rpc_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
	"github.com/qwen-ls/qwen-ls/tools"
)

// Each approval mode end to end: an edit of a read file and an
// execute-kind call that asks for permission.
func TestApprovalModes(t *testing.T) {
	for _, tc := range []struct {
		mode                string
		wantProposals       int
		wantPermissionAsks  int
		wantEdited, wantRan bool
	}{
		{"plan", 0, 0, false, false},
		{"default", 1, 1, true, true},
		{"auto-edit", 0, 1, true, true},
		{"yolo", 0, 0, true, true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			var runs atomic.Int32
			tool := confirming("toucher", tools.KindExecute, &tools.ExecConfirmation{Command: "touch t", RootCommand: "touch", PermissionRules: []string{"Bash(touch *)"}}, &runs)
			a := startAgentWith(t, tc.mode, rpc.Options{ExtraTools: []tools.Tool{tool}}, func(p *rpctest.InitParams) { p.ApplyEdit = true })
			var proposals, asks atomic.Int32
			a.e.Handle("qwen/proposeEdit", func(json.RawMessage) (any, error) {
				proposals.Add(1)
				return map[string]any{"outcome": "accepted"}, nil
			})
			a.e.Handle("qwen/requestPermission", func(json.RawMessage) (any, error) {
				asks.Add(1)
				return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "proceed_once"}}, nil
			})
			p := filepath.Join(a.root, "a.txt")
			os.WriteFile(p, []byte("x\n"), 0o644)
			a.model.Push(
				modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "read", Name: "read_file", Arguments: jsonArgs("absolute_path", p)}}},
				modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "ed", Name: "edit", Arguments: jsonArgs("file_path", p, "old_string", "x", "new_string", "y")}, {ID: "run", Name: "toucher", Arguments: "{}"}}},
				modeltest.Response{Text: "done"},
			)
			if _, err := a.prompt("go"); err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(p)
			if edited := string(data) == "y\n"; edited != tc.wantEdited {
				t.Errorf("edited = %v (disk %q)", edited, data)
			}
			if ran := runs.Load() == 1; ran != tc.wantRan {
				t.Errorf("ran = %v", ran)
			}
			if int(proposals.Load()) != tc.wantProposals || int(asks.Load()) != tc.wantPermissionAsks {
				t.Errorf("proposals %d, permission asks %d; want %d, %d", proposals.Load(), asks.Load(), tc.wantProposals, tc.wantPermissionAsks)
			}
			if tc.mode == "plan" {
				if msg := a.toolMessage(t, "ed"); !strings.HasPrefix(msg, `Tool call "edit" was not executed because plan mode is active.`) {
					t.Errorf("plan-mode message = %q", msg)
				}
				if msg := a.toolMessage(t, "read"); msg != "x\n" {
					t.Errorf("the read in plan mode gave %q", msg)
				}
			}
		})
	}
}
