package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

var (
	hookBinOnce sync.Once
	hookBin     string
	hookBinErr  error
)

// hookBinary builds qwen-ls with the qwenls_testhook tag, whose atomic
// writes stop between the temp file and the rename when
// QWEN_LS_TEST_PAUSE_BEFORE_RENAME names a marker file. Release builds do
// not contain the hook.
func hookBinary(t *testing.T) string {
	t.Helper()
	hookBinOnce.Do(func() {
		hookBin = filepath.Join(filepath.Dir(binPath), "qwen-ls-testhook")
		out, err := exec.Command("go", "build", "-tags", "qwenls_testhook", "-o", hookBin, ".").CombinedOutput()
		if err != nil {
			hookBinErr = err
			t.Logf("%s", out)
		}
	})
	if hookBinErr != nil {
		t.Fatalf("build the test-hook binary: %v", hookBinErr)
	}
	return hookBin
}

// A server killed with SIGKILL in the middle of an accepted write (after
// the temp file, before the rename) leaves the original file intact, and
// the next server to serve that folder removes the temp file.
func TestKillDuringWriteKeepsOriginalAndNextStartCleansUp(t *testing.T) {
	bin := hookBinary(t)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	target := filepath.Join(root, "keep.txt")
	const original = "the original content\n"
	if err := os.WriteFile(target, []byte(original), 0o644); err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]string{"file_path": target, "content": "the new content\n"})
	readArgs, _ := json.Marshal(map[string]string{"absolute_path": target})
	m := modeltest.Start(t,
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "r", Name: "read_file", Arguments: string(readArgs)}}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "w", Name: "write_file", Arguments: string(args)}}},
		modeltest.Response{Text: "done"},
	)
	marker := filepath.Join(t.TempDir(), "paused")
	cmd := exec.Command(bin, "--stdio")
	cmd.Env = execEnv(t, "QWEN_LS_TEST_PAUSE_BEFORE_RENAME="+marker)
	e := rpctest.StartProcess(t, cmd)
	e.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true, InitializationOptions: map[string]any{
		"approvalMode": "yolo", "model": map[string]any{"name": "s", "baseUrl": m.URL}}})
	res, err := e.Call("qwen/newSession", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var ns struct{ SessionID string }
	json.Unmarshal(res, &ns)
	e.Send("qwen/prompt", map[string]any{"sessionId": ns.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "rewrite it"}}})

	var paused struct{ Tmp, Target string }
	deadline := time.Now().Add(rpctest.DefaultTimeout)
	for {
		data, err := os.ReadFile(marker)
		if err == nil {
			if err := json.Unmarshal(data, &paused); err != nil {
				t.Fatalf("marker %q: %v", data, err)
			}
			break
		}
		if time.Now().After(deadline) {
			for _, n := range e.Notifications("qwen/sessionUpdate") {
				t.Logf("update %s", n.Params)
			}
			t.Logf("model requests: %d; editor requests: %v", len(m.Requests()), e.Requests("qwen/proposeEdit"))
			t.Fatal("the write never reached the rename")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if paused.Target != target {
		t.Fatalf("paused write targets %s, want %s", paused.Target, target)
	}
	if got, err := os.ReadFile(paused.Tmp); err != nil || string(got) != "the new content\n" {
		t.Fatalf("temp file before the kill: %q %v", got, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-e.Done()
	if got, _ := os.ReadFile(target); string(got) != original {
		t.Fatalf("after SIGKILL mid-write the file holds %q, want the original", got)
	}
	if _, err := os.Stat(paused.Tmp); err != nil {
		t.Fatalf("the temp file should still be there before the next start: %v", err)
	}

	// The next start, a release build, removes the leftover: its name
	// says which process wrote it, and that one is gone. Its age does not
	// matter (tempclean_test.go); it is dated a minute back here only as
	// a restart after a crash usually is.
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(paused.Tmp, old, old); err != nil {
		t.Fatal(err)
	}
	cmd2 := exec.Command(binPath, "--stdio")
	cmd2.Env = execEnv(t)
	e2 := rpctest.StartProcess(t, cmd2)
	e2.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true})
	deadline = time.Now().Add(rpctest.DefaultTimeout)
	for {
		if _, err := os.Lstat(paused.Tmp); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the temp file %s is still there after the next start", paused.Tmp)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got, _ := os.ReadFile(target); string(got) != original {
		t.Fatalf("after the restart the file holds %q, want the original", got)
	}
	ents, _ := os.ReadDir(root)
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("files in the folder after restart: %v, want only keep.txt", names)
	}
	if code := e2.Shutdown(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}
