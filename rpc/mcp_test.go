package rpc_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

var (
	mcpBinOnce sync.Once
	mcpBin     string
	mcpBinErr  error
)

// mcpServer builds the test MCP server program (registry/testdata) once.
func mcpServer(t *testing.T) string {
	t.Helper()
	mcpBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "qwen-ls-mcp")
		if err != nil {
			mcpBinErr = err
			return
		}
		mcpBin = filepath.Join(dir, "mcpserver")
		out, err := exec.Command("go", "build", "-o", mcpBin, "../registry/testdata/mcpserver").CombinedOutput()
		if err != nil {
			mcpBinErr = fmt.Errorf("build the MCP test server: %v\n%s", err, out)
		}
	})
	if mcpBinErr != nil {
		t.Fatal(mcpBinErr)
	}
	return mcpBin
}

// mcpAgent starts an agent whose settings configure MCP servers.
func mcpAgent(t *testing.T, servers map[string]any) *agent {
	return startAgentWith(t, "yolo", rpc.Options{}, func(p *rpctest.InitParams) {
		opts := p.InitializationOptions.(map[string]any)
		opts["settings"] = map[string]any{"mcpServers": servers, "model": map[string]any{"modalities": map[string]any{"image": true}}}
	})
}

// The model calls a tool of a real MCP server over stdio: the result
// reaches it, the image as a media part (issue acceptance 2).
func TestMCPToolOverStdioEndToEnd(t *testing.T) {
	bin := mcpServer(t)
	a := mcpAgent(t, map[string]any{"a": map[string]any{"command": bin, "args": []any{"-name", "a", "-tools", "do/it,search"}}})
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "m", Name: "do_it", Arguments: "{}"}}},
		modeltest.Response{Text: "done"},
	)
	if _, err := a.prompt("use the server"); err != nil {
		t.Fatal(err)
	}
	reqs := a.model.Requests()
	if !contains(reqs[0].Tools, "do_it") || !contains(reqs[0].Tools, "search") {
		t.Fatalf("declared tools = %v", reqs[0].Tools)
	}
	want := "a\n[The tool \"do/it\" returned image data (image/png).]\n[image/png content attached in the following message]"
	if msg := a.toolMessage(t, "m"); msg != want {
		t.Fatalf("tool message = %q", msg)
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != "user" || !strings.Contains(string(last.Content), `"image_url"`) || !strings.Contains(string(last.Content), "data:image/png;base64,") {
		t.Fatalf("media message = %s %s", last.Role, last.Content)
	}
	res, err := a.e.Call("qwen/listTools", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res), `"source":"mcp:a"`) || !strings.Contains(string(res), `{"alias":"a","status":"connected"}`) {
		t.Fatalf("listTools = %s", res)
	}
}

// The same over streamable HTTP on loopback.
func TestMCPToolOverStreamableHTTP(t *testing.T) {
	bin := mcpServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv := exec.Command(bin, "-name", "h", "-tools", "hello", "-http", addr)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the HTTP MCP server did not listen: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	a := mcpAgent(t, map[string]any{"h": map[string]any{"httpUrl": "http://" + addr + "/mcp"}})
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "x", Name: "hello", Arguments: "{}"}}},
		modeltest.Response{Text: "done"},
	)
	if _, err := a.prompt("hi"); err != nil {
		t.Fatal(err)
	}
	if msg := a.toolMessage(t, "x"); msg != "h:hello" {
		t.Fatalf("tool message = %q", msg)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

var _ = json.Marshal

// Tools printed by a discovery command reach the model's tools array and
// run through the call command (conformance case 48, end to end).
func TestDiscoveredToolsEndToEnd(t *testing.T) {
	discover, _ := filepath.Abs("../registry/testdata/discover.sh")
	call, _ := filepath.Abs("../registry/testdata/call.sh")
	a := startAgentWith(t, "yolo", rpc.Options{}, func(p *rpctest.InitParams) {
		opts := p.InitializationOptions.(map[string]any)
		opts["settings"] = map[string]any{"tools": map[string]any{"discoveryCommand": discover + " case48", "callCommand": call}}
	})
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "d1", Name: "t1", Arguments: `{"x":"v"}`}, {ID: "d2", Name: "t2", Arguments: `{}`}}},
		modeltest.Response{Text: "done"},
	)
	if _, err := a.prompt("use them"); err != nil {
		t.Fatal(err)
	}
	declared := a.model.Requests()[0].Tools
	if !contains(declared, "t1") || !contains(declared, "t2") {
		t.Fatalf("declared = %v", declared)
	}
	if msg := a.toolMessage(t, "d1"); msg != "called t1 with {\"x\":\"v\"}\n" {
		t.Fatalf("t1 gave %q", msg)
	}
	want := "Stdout: partial output\nStderr: something went wrong\nError: (none)\nExit Code: 0\nSignal: (none)"
	if msg := a.toolMessage(t, "d2"); msg != want {
		t.Fatalf("t2 gave %q\nwant %q", msg, want)
	}
	res, _ := a.e.Call("qwen/listTools", map[string]any{})
	if !strings.Contains(string(res), `"name":"t1"`) || !strings.Contains(string(res), `"source":"discovered"`) {
		t.Fatalf("listTools = %s", res)
	}
}
