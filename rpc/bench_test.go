package rpc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// BenchmarkInitializeRoundTrip measures one initialize request through the
// real server and framing, from write to decoded answer. Each round starts
// a fresh server and stops it again with the timer off, so that a long run
// does not pile up thousands of live servers.
func BenchmarkInitializeRoundTrip(b *testing.B) {
	base := b.TempDir()
	root := filepath.Join(base, "root")
	params := rpctest.InitParams{Roots: []string{root}, Rich: true, UTF8: true}.Params()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
	if err != nil {
		b.Fatal(err)
	}
	frame := append([]byte("Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"), body...)
	home := filepath.Join(base, "home", ".qwen")
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ws := workspace.New(workspace.Options{Settings: workspace.SettingsOptions{
			UserDir: home, SystemPath: filepath.Join(base, "etc.json"), Getenv: func(string) (string, bool) { return "", false }}})
		srv := rpc.NewServer(rpc.Options{Version: "bench", Stderr: discard{}, Workspace: ws, QwenHome: home})
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan struct{})
		go func() {
			srv.Serve(context.Background(), inR, outW)
			outW.Close()
			close(done)
		}()
		r := bufio.NewReader(outR)
		b.StartTimer()
		if _, err := inW.Write(frame); err != nil {
			b.Fatal(err)
		}
		for {
			msg, err := rpctest.ReadFrame(r)
			if err != nil {
				b.Fatal(err)
			}
			if strings.Contains(string(msg), `"id":1,`) && strings.Contains(string(msg), `"result"`) {
				break
			}
		}
		b.StopTimer()
		inW.Close()
		go io.Copy(io.Discard, r)
		<-done
		ws.Close()
		b.StartTimer()
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
