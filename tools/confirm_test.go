package tools_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
)

func TestConfirmationJSON(t *testing.T) {
	tests := []struct {
		conf tools.Confirmation
		want string
	}{
		{
			tools.Confirmation{Title: "Confirm Edit: a.txt", Details: &tools.EditConfirmation{
				FilePath: "/w/a.txt", OldText: "", NewText: "x\n", FileDiff: "d", IsNewFile: true,
			}},
			`{"type":"edit","title":"Confirm Edit: a.txt","filePath":"/w/a.txt","oldText":"","newText":"x\n","fileDiff":"d","isNewFile":true}`,
		},
		{
			tools.Confirmation{Title: "Run", Details: &tools.ExecConfirmation{
				Command: "npm run a && rm -f x", Commands: []string{"rm -f x"}, RootCommand: "rm",
				PermissionRules: []string{"Bash(rm *)"},
			}},
			`{"type":"exec","title":"Run","command":"npm run a \u0026\u0026 rm -f x","commands":["rm -f x"],"rootCommand":"rm","permissionRules":["Bash(rm *)"]}`,
		},
		{
			tools.Confirmation{Title: "Confirm MCP Tool: search (a)", Details: &tools.MCPConfirmation{
				ServerName: "a", ToolName: "search", ToolDisplayName: "search (a MCP Server)",
				PermissionRules: []string{"mcp__a__search"},
			}},
			`{"type":"mcp","title":"Confirm MCP Tool: search (a)","serverName":"a","toolName":"search","toolDisplayName":"search (a MCP Server)","permissionRules":["mcp__a__search"]}`,
		},
		{
			tools.Confirmation{Title: "Fetch", Details: &tools.InfoConfirmation{Prompt: "Fetch it?"}},
			`{"type":"info","title":"Fetch","prompt":"Fetch it?"}`,
		},
		{
			tools.Confirmation{Title: "Fetch", Details: &tools.InfoConfirmation{
				Prompt: "p", URLs: []string{"https://x.test/"}, PermissionRules: []string{"WebFetch(x.test)"},
			}},
			`{"type":"info","title":"Fetch","prompt":"p","urls":["https://x.test/"],"permissionRules":["WebFetch(x.test)"]}`,
		},
		{
			tools.Confirmation{Title: "Would you like to proceed?", Details: &tools.PlanConfirmation{Plan: "# Plan"}},
			`{"type":"plan","title":"Would you like to proceed?","plan":"# Plan"}`,
		},
	}
	for _, tt := range tests {
		t.Run(string(tt.conf.Type()), func(t *testing.T) {
			b, err := json.Marshal(&tt.conf)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("marshal\n got: %s\nwant: %s", b, tt.want)
			}
			var back tools.Confirmation
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, tt.conf) {
				t.Errorf("round trip gave %+v, want %+v", back, tt.conf)
			}
		})
	}
}

func TestConfirmationUnknownType(t *testing.T) {
	var c tools.Confirmation
	if err := json.Unmarshal([]byte(`{"type":"nope","title":"x"}`), &c); err == nil {
		t.Error("no error for an unknown type")
	}
	var none *tools.Confirmation
	if none.Type() != "" {
		t.Error("nil confirmation has a type")
	}
}
