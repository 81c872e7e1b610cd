// Command mcpserver is the MCP server the registry tests start as a real
// process. It offers the tools named by -tools; what a tool does depends on
// its name (see call). It serves stdio unless -http or -sse gives a
// loopback address, in which case it prints "URL <url>" on stdout once it
// listens.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// png is a 1x1 transparent PNG, base64-encoded.
const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="

var (
	name          = flag.String("name", "srv", "the server's name, echoed by the default tool")
	toolList      = flag.String("tools", "hello", "comma-separated tool names to offer")
	readOnly      = flag.String("readonly", "", "comma-separated tools marked readOnlyHint")
	hangInit      = flag.Bool("hang-init", false, "read requests but never answer")
	failStart     = flag.Bool("fail-start", false, "write to stderr and exit 1 at once")
	exitAfterCall = flag.Bool("exit-after-call", false, "exit once the first call has been answered")
	failIfExists  = flag.String("fail-if-exists", "", "exit 1 at start when this file exists")
	childFile     = flag.String("child", "", "start a sleeping child in the process group and write its pid here")
	pidFile       = flag.String("pidfile", "", "append this process's pid to this file")
	markerDir     = flag.String("markers", "", "where the slow tool notes that it was cancelled")
	httpAddr      = flag.String("http", "", "serve streamable HTTP on this loopback address")
	sseAddr       = flag.String("sse", "", "serve SSE on this loopback address")
)

func main() {
	flag.Parse()
	fmt.Fprintf(os.Stderr, "mcpserver %s starting\n", *name)
	if *failStart {
		fmt.Fprintln(os.Stderr, "cannot start: broken on purpose")
		os.Exit(1)
	}
	if *failIfExists != "" {
		if _, err := os.Stat(*failIfExists); err == nil {
			fmt.Fprintln(os.Stderr, "cannot start: the fail file exists")
			os.Exit(1)
		}
	}
	if *pidFile != "" {
		appendLine(*pidFile, fmt.Sprint(os.Getpid()))
	}
	if *childFile != "" {
		child := exec.Command("sleep", "300")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		appendLine(*childFile, fmt.Sprint(child.Process.Pid))
	}
	if *hangInit {
		buf := make([]byte, 4096)
		for {
			if _, err := os.Stdin.Read(buf); err != nil {
				select {} // stdin closed: still never answer
			}
		}
	}

	s := server.NewMCPServer(*name, "1.0.0",
		server.WithToolCapabilities(true),
		server.WithLegacyServerInitiatedRequests())
	ro := map[string]bool{}
	for _, n := range strings.Split(*readOnly, ",") {
		ro[n] = true
	}
	for _, n := range strings.Split(*toolList, ",") {
		if n == "" {
			continue
		}
		desc := "The " + n + " tool of " + *name + "."
		tool := mcp.NewTool(n, mcp.WithDescription(desc))
		if n == "echo" {
			tool = mcp.NewToolWithRawSchema(n, desc, json.RawMessage(
				`{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":false}`))
		}
		if ro[n] {
			mcp.WithReadOnlyHintAnnotation(true)(&tool)
		}
		s.AddTool(tool, call(s))
	}

	switch {
	case *httpAddr != "":
		serveHTTP(*httpAddr, server.NewStreamableHTTPServer(s))
	case *sseAddr != "":
		ln := listen(*sseAddr)
		sse := server.NewSSEServer(s, server.WithBaseURL("http://"+ln.Addr().String()))
		fmt.Printf("URL http://%s/sse\n", ln.Addr())
		_ = http.Serve(ln, sse)
	default:
		if err := server.ServeStdio(s); err != nil {
			fmt.Fprintln(os.Stderr, "serve:", err)
		}
	}
}

func listen(addr string) net.Listener {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		os.Exit(1)
	}
	return ln
}

func serveHTTP(addr string, h http.Handler) {
	ln := listen(addr)
	fmt.Printf("URL http://%s/mcp\n", ln.Addr())
	_ = http.Serve(ln, h)
}

func appendLine(file, line string) {
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	fmt.Fprintln(f, line)
	f.Close()
}

var calls int

// call answers a tool call according to the tool's name.
func call(s *server.MCPServer) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		calls++
		if *exitAfterCall && calls == 1 {
			go func() {
				// Leave time for the answer to be written first.
				time.Sleep(100 * time.Millisecond)
				os.Exit(0)
			}()
		}
		tool := req.Params.Name
		switch tool {
		case "do/it":
			return &mcp.CallToolResult{Content: []mcp.Content{
				mcp.NewTextContent("a"),
				mcp.NewImageContent(png, "image/png"),
			}}, nil
		case "fail":
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{mcp.NewTextContent("bad input")}}, nil
		case "crash":
			os.Exit(3)
		case "slow":
			if tok := progressToken(req); tok != nil {
				_ = s.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
					"progressToken": tok, "progress": 1, "total": 2, "message": "half way",
				})
			}
			<-ctx.Done()
			if *markerDir != "" {
				appendLine(*markerDir+"/cancelled", tool)
			}
			return mcp.NewToolResultText("too late"), nil
		case "roots":
			res, err := s.RequestRoots(ctx, mcp.ListRootsRequest{})
			if err != nil {
				return nil, err
			}
			b, _ := json.Marshal(res.Roots)
			return mcp.NewToolResultText(string(b)), nil
		case "resources":
			return &mcp.CallToolResult{Content: []mcp.Content{
				mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "file:///r.txt", Text: "resource text"}),
				mcp.NewEmbeddedResource(mcp.BlobResourceContents{URI: "file:///r.pdf", MIMEType: "application/pdf", Blob: "JVBERg=="}),
				mcp.NewEmbeddedResource(mcp.BlobResourceContents{URI: "file:///r.bin", Blob: "AAEC"}),
				mcp.NewResourceLink("file:///doc.md", "doc.md", "", "text/markdown"),
				mcp.NewAudioContent("UklGRg==", "audio/wav"),
			}}, nil
		case "addtool":
			s.AddTool(mcp.NewTool("late", mcp.WithDescription("Added later.")), call(s))
			return mcp.NewToolResultText("added"), nil
		case "echo":
			b, _ := json.Marshal(req.GetArguments())
			return mcp.NewToolResultText(string(b)), nil
		case "env":
			wd, _ := os.Getwd()
			return mcp.NewToolResultText(os.Getenv("QWEN_TEST_VAR") + " " + wd), nil
		case "environ":
			return mcp.NewToolResultText(strings.Join(os.Environ(), "\n")), nil
		}
		return mcp.NewToolResultText(*name + ":" + tool), nil
	}
}

func progressToken(req mcp.CallToolRequest) mcp.ProgressToken {
	if req.Params.Meta == nil {
		return nil
	}
	return req.Params.Meta.ProgressToken
}
