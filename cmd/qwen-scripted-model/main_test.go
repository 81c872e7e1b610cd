package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

const runAsCommand = "QWEN_SCRIPTED_MODEL_TEST_RUN_MAIN"

// The test binary runs the command's main when started with runAsCommand
// set, so the tests drive the command as a real process.
func TestMain(m *testing.M) {
	if os.Getenv(runAsCommand) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// command is the command as a process: this test binary running main.
func command(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), runAsCommand+"=1")
	return cmd
}

// Every shared editor conversation parses and names only tools that exist.
func TestSharedScriptsParse(t *testing.T) {
	files, err := filepath.Glob("../../testdata/scripts/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts found: %v", err)
	}
	known := map[string]bool{"list_directory": true, "read_file": true, "write_file": true, "grep_search": true,
		"glob": true, "edit": true, "read_many_files": true, "run_shell_command": true, "web_fetch": true,
		"web_search": true, "save_memory": true, "todo_write": true, "task": true, "exit_plan_mode": true, "lsp": true}
	for _, f := range files {
		rs, err := modeltest.LoadScript(f, map[string]string{"ROOT": "/ws"})
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if len(rs) == 0 {
			t.Errorf("%s: no responses", f)
		}
		for _, r := range rs {
			for _, c := range r.ToolCalls {
				if !known[c.Name] {
					t.Errorf("%s: unknown tool %q", f, c.Name)
				}
				var args map[string]any
				if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil {
					t.Errorf("%s: %s arguments are not JSON: %v", f, c.Name, err)
				}
				if strings.Contains(c.Arguments, "$ROOT") {
					t.Errorf("%s: $ROOT not expanded in %s", f, c.Arguments)
				}
			}
		}
	}
}

// The command prints its URL, answers a chat request
// from its script, takes a new script through the control endpoint, shows
// what it was sent, and stops when its stdin closes.
func TestScriptedModelCommand(t *testing.T) {
	cmd := command("--script", "../../testdata/scripts/unsaved-read.txtar", "--var", "ROOT=/ws")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	base := strings.TrimSpace(line)
	if !strings.HasPrefix(base, "http://127.0.0.1:") || !strings.HasSuffix(base, "/v1") {
		t.Fatalf("first line %q is not a loopback base URL", base)
	}
	root := strings.TrimSuffix(base, "/v1")

	body := `{"model":"scripted","messages":[{"role":"user","content":"read main.go"}]}`
	resp, err := http.Post(base+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(answer.Choices) != 1 || len(answer.Choices[0].Message.ToolCalls) != 1 ||
		answer.Choices[0].Message.ToolCalls[0].Function.Arguments != `{"absolute_path":"/ws/main.go"}` {
		t.Fatalf("answer = %+v", answer)
	}

	resp, err = http.Post(root+"/_control/script?reset=1&ROOT=/other", "text/plain",
		strings.NewReader("-- 01.response --\ncall: read_file {\"absolute_path\":\"$ROOT/x\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var rem struct{ Remaining int }
	_ = json.NewDecoder(resp.Body).Decode(&rem)
	resp.Body.Close()
	if resp.StatusCode != 200 || rem.Remaining != 1 {
		t.Fatalf("control/script: status %d remaining %d", resp.StatusCode, rem.Remaining)
	}
	resp, err = http.Post(base+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"second"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = http.Get(root + "/_control/requests")
	if err != nil {
		t.Fatal(err)
	}
	var reqs []modeltest.ControlRequest
	if err := json.NewDecoder(resp.Body).Decode(&reqs); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(reqs) != 1 || reqs[0].Model != "m" || reqs[0].Messages[0].Content != "second" {
		t.Fatalf("requests after reset = %+v", reqs)
	}

	resp, err = http.Post(root+"/_control/script", "text/plain", strings.NewReader("-- 01.response --\nbogus: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a bad script got status %d", resp.StatusCode)
	}

	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("qwen-scripted-model did not exit cleanly when stdin closed: %v", err)
	}
}

func TestScriptedModelRefusesBadScript(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.txtar")
	os.WriteFile(bad, []byte("-- 01.response --\nnonsense\n"), 0o644)
	out, err := command("--script", bad).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "bad.txtar") {
		t.Fatalf("bad script: err=%v out=%q", err, out)
	}
}

// --url-file holds the same base URL the first stdout line gives.
func TestScriptedModelURLFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "url")
	var stdout, stderr strings.Builder
	if code := run([]string{"--url-file", file}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(stdout.String(), "\n")
	if !strings.HasPrefix(first, "http://127.0.0.1:") || string(data) != first+"\n" {
		t.Errorf("url file %q, stdout's first line %q", data, first)
	}
}
