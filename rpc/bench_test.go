package rpc_test

import (
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
)

// BenchmarkInitializeRoundTrip measures one initialize request through the
// real server and framing, from write to decoded answer.
func BenchmarkInitializeRoundTrip(b *testing.B) {
	root := b.TempDir()
	params := rpctest.InitParams{Roots: []string{root}, Rich: true, UTF8: true}.Params()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e := rpctest.Start(b, rpc.Options{Version: "bench", Stderr: discard{}})
		b.StartTimer()
		if _, err := e.Call("initialize", params); err != nil {
			b.Fatal(err)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
