package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// killMidWrite runs a test-hook server on root whose model writes name,
// kills it with SIGKILL between the temp file and the rename, and returns
// the temp file it left.
func killMidWrite(t *testing.T, root, name string) string {
	t.Helper()
	target := filepath.Join(root, name)
	args, _ := json.Marshal(map[string]string{"file_path": target, "content": "new content of " + name + "\n"})
	m := modeltest.Start(t,
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "w", Name: "write_file", Arguments: string(args)}}},
		modeltest.Response{Text: "done"},
	)
	marker := filepath.Join(t.TempDir(), "paused")
	cmd := exec.Command(hookBinary(t), "--stdio")
	cmd.Env = execEnv(t, "QWEN_LS_TEST_PAUSE_BEFORE_RENAME="+marker)
	e := rpctest.StartProcess(t, cmd)
	e.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true, InitializationOptions: map[string]any{
		"approvalMode": "yolo", "model": map[string]any{"name": "s", "baseUrl": m.URL}}})
	sid := newSessionID(t, e, "yolo")
	e.Send("qwen/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "write it"}}})
	var paused struct{ Tmp, Target string }
	waitUntil(t, "the write to reach the rename", func() bool {
		data, err := os.ReadFile(marker)
		return err == nil && json.Unmarshal(data, &paused) == nil
	})
	if paused.Target != target {
		t.Fatalf("paused write targets %s, want %s", paused.Target, target)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-e.Done()
	if _, err := os.Stat(paused.Tmp); err != nil {
		t.Fatalf("the killed write left no temp file: %v", err)
	}
	return paused.Tmp
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(rpctest.DefaultTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The temp file of a write cut by SIGKILL does not wait for a restart:
// a server that is already running removes it when it next writes into
// that folder, and a server that starts removes it at once, however young
// it is, since the name says whose it was and that process is gone.
func TestTempFileOfKilledWriteIsRemovedWithoutRestart(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	writeArgs, _ := json.Marshal(map[string]string{"file_path": filepath.Join(root, "live.txt"), "content": "live\n"})
	m := modeltest.Start(t,
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "w", Name: "write_file", Arguments: string(writeArgs)}}},
		modeltest.Response{Text: "done"},
	)
	// A server that runs the whole time, on the same folder.
	live := exec.Command(binPath, "--stdio")
	live.Env = execEnv(t)
	e := rpctest.StartProcess(t, live)
	e.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true, InitializationOptions: map[string]any{
		"approvalMode": "yolo", "model": map[string]any{"name": "s", "baseUrl": m.URL}}})
	sid := newSessionID(t, e, "yolo")

	tmp := killMidWrite(t, root, "first.txt")
	if _, err := e.Call("qwen/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "write"}}}); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(root, "live.txt")); err != nil || string(got) != "live\n" {
		t.Fatalf("the live server's write: %q %v", got, err)
	}
	if _, err := os.Lstat(tmp); !os.IsNotExist(err) {
		t.Fatalf("the killed write's temp file %s is still there after the live server wrote into its folder (err %v)", tmp, err)
	}

	tmp = killMidWrite(t, root, "second.txt")
	next := exec.Command(binPath, "--stdio")
	next.Env = execEnv(t)
	e2 := rpctest.StartProcess(t, next)
	e2.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true})
	waitUntil(t, "the next server to remove "+tmp, func() bool {
		_, err := os.Lstat(tmp)
		return os.IsNotExist(err)
	})
	for _, n := range []string{"first.txt", "second.txt"} {
		if _, err := os.Stat(filepath.Join(root, n)); !os.IsNotExist(err) {
			t.Errorf("%s exists after its write was killed (err %v)", n, err)
		}
	}
	if code := e2.Shutdown(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if code := e.Shutdown(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}
