package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// vmStatus reads a size field (kB) of /proc/PID/status.
func vmStatus(pid int, field string) int {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			if fs := strings.Fields(v); len(fs) > 0 {
				n, _ := strconv.Atoi(fs[0])
				return n
			}
		}
	}
	return -1
}

// largeWrite runs one real qwen-ls process whose scripted model calls
// write_file with content of size bytes, streamed in 4 KiB pieces, and
// returns its peak RSS (VmHWM) and its RSS 3 s after the turn, in MiB,
// with the same figures of an idle server for comparison.
func largeWrite(b *testing.B, size int) (idleMiB, peakMiB, afterMiB float64) {
	root, _ := filepath.EvalSymlinks(b.TempDir())
	args, _ := json.Marshal(map[string]string{"file_path": filepath.Join(root, "big.txt"), "content": strings.Repeat("0123456789abcde\n", size/16)})
	m := modeltest.Start(b,
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "w", Name: "write_file", Arguments: string(args)}}, ChunkSize: 4 << 10},
		modeltest.Response{Text: "done"},
	)
	args = nil
	cmd := exec.Command(binPath, "--stdio")
	cmd.Env = execEnv(b)
	e := rpctest.StartProcess(b, cmd)
	e.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true, InitializationOptions: map[string]any{
		"approvalMode": "yolo", "model": map[string]any{"name": "s", "baseUrl": m.URL}}})
	res, err := e.Call("qwen/newSession", map[string]any{})
	if err != nil {
		b.Fatal(err)
	}
	var ns struct{ SessionID string }
	json.Unmarshal(res, &ns)
	pid := cmd.Process.Pid
	idle := vmStatus(pid, "VmHWM")
	if _, err := e.Call("qwen/prompt", map[string]any{"sessionId": ns.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "write it"}}}); err != nil {
		b.Fatal(err)
	}
	peak := vmStatus(pid, "VmHWM")
	time.Sleep(3 * time.Second)
	after := vmStatus(pid, "VmRSS")
	e.Shutdown()
	return float64(idle) / 1024, float64(peak) / 1024, float64(after) / 1024
}

// BenchmarkLargeWriteArgument measures the memory a real server needs for
// one write_file call whose content is 7.5 MB (run), and 20 MB (over the
// 8 MiB limit for one call's arguments, refused): peak RSS of the process
// and its RSS 3 s later, against the idle server's peak. Run:
//
//	go test -run '^$' -bench LargeWriteArgument -benchtime 1x ./cmd/qwen-ls
func BenchmarkLargeWriteArgument(b *testing.B) {
	for _, tc := range []struct {
		name string
		size int
	}{{"7.5MB-written", 7_500_000}, {"20MB-refused", 20_000_000}} {
		b.Run(tc.name, func(b *testing.B) {
			var idle, peak, after float64
			for range b.N {
				idle, peak, after = largeWrite(b, tc.size)
			}
			b.ReportMetric(idle, "idle-peak-MiB")
			b.ReportMetric(peak, "peak-RSS-MiB")
			b.ReportMetric(after, "RSS-3s-after-MiB")
		})
	}
}
