package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// qwenCodeEnv is the environment of a qwen-ls whose home holds the Qwen
// Code 0.24 configuration of testdata, unchanged, with its two
// OpenAI-compatible providers at the scripted models dash and or.
func qwenCodeEnv(t *testing.T, dash, or *modeltest.Server) []string {
	t.Helper()
	home := t.TempDir()
	qwenDir := filepath.Join(home, ".qwen")
	os.MkdirAll(qwenDir, 0o755)
	for _, name := range []string{"settings.json", ".env"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "qwen-code-config", "home", ".qwen", name))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(qwenDir, name), data, 0o600)
	}
	var env []string
	for _, kv := range filteredEnv() {
		if !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+home, "QWEN_CODE_SYSTEM_SETTINGS_PATH="+filepath.Join(home, "none.json"),
		"QWEN_FIXTURE_DASHSCOPE_URL="+dash.URL, "QWEN_FIXTURE_OPENROUTER_URL="+or.URL)
}

// qwen-ls exec runs on a Qwen Code settings.json + ~/.qwen/.env as they
// are: the selected model's endpoint gets the key its envKey names, and
// --model picks another provider's model, with that provider's key.
func TestExecUsesAQwenCodeConfiguration(t *testing.T) {
	dash := modeltest.Start(t, modeltest.Response{Text: "Hello from DashScope."})
	or := modeltest.Start(t, modeltest.Response{Text: "Hello from OpenRouter."})
	env := qwenCodeEnv(t, dash, or)
	run := func(args ...string) (string, string, error) {
		cmd := exec.Command(binPath, append([]string{"exec", "--cwd", t.TempDir()}, args...)...)
		cmd.Env = env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	out, errs, err := run("-p", "hi")
	if err != nil || !strings.Contains(out, "Hello from DashScope.") {
		t.Fatalf("exec: %v\n%s\n%s", err, out, errs)
	}
	if r := dash.Requests(); len(r) != 1 || r[0].Model != "qwen3-coder-plus" || r[0].Header.Get("Authorization") != "Bearer sk-fixture-dashscope-0123456789abcdef" {
		t.Fatalf("DashScope requests: %d", len(r))
	}
	out, errs, err = run("-p", "hi", "--model", "qwen/qwen3-coder")
	if err != nil || !strings.Contains(out, "Hello from OpenRouter.") {
		t.Fatalf("exec --model: %v\n%s\n%s", err, out, errs)
	}
	if r := or.Requests(); len(r) != 1 || r[0].Model != "qwen/qwen3-coder" || r[0].Header.Get("Authorization") != "Bearer sk-or-v1-fixture-fedcba9876543210" {
		t.Fatalf("OpenRouter requests: %d", len(r))
	}
	_, errs, err = run("-p", "hi", "--model", "gpt-5")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitUsage || !strings.Contains(errs, "claude-sonnet-4-5") {
		t.Fatalf("exec --model gpt-5: %v\n%s", err, errs)
	}
	if len(dash.Requests()) != 1 || len(or.Requests()) != 1 {
		t.Fatal("an unknown --model still sent a request")
	}
}
