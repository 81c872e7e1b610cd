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

// The demo runs the real binary end to end and shows each step the README
// promises: the unsaved buffer read, the grep, the edit with its diff and
// the final answer, all labelled as scripted.
func TestDemoShowsTheWholeTurn(t *testing.T) {
	cmd := exec.Command(binPath, "demo")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	text := out.String()
	for _, want := range []string{
		"SCRIPTED",
		"No API key, no network",
		"Your unsaved TODO asks main to greet the team",
		"▸ search 'Greet\\(' in path '.'",
		"Found 2 matches",
		"-\tfmt.Println(greet.Greet(\"world\"))",
		"+\tfmt.Println(greet.Greet(\"team\"))",
		"Editor shows a proposal: Confirm Edit: main.go",
		"You (simulated): Accept",
		"What the model was told about the edit",
		"| Edited ",
		"[turn ended: end_turn",
		`On disk, main.go now reads: fmt.Println(greet.Greet("team"))`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the demo transcript lacks %q:\n%s", want, text)
		}
	}
}

func execEnv(t testing.TB, extra ...string) []string {
	home := t.TempDir()
	env := append(filteredEnv(), "QWEN_HOME="+filepath.Join(home, ".qwen"), "QWEN_CODE_SYSTEM_SETTINGS_PATH="+filepath.Join(home, "none.json"))
	return append(env, extra...)
}

// qwen-ls exec runs one prompt against the model named by the environment,
// prints the answer and tool activity, and exits with the stop reason.
func TestExecRunsOnePromptHeadless(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("the answer is 42\n"), 0o644)
	real, _ := filepath.EvalSymlinks(root)
	m := modeltest.Start(t,
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{Name: "read_file", Arguments: `{"absolute_path":"` + filepath.Join(real, "notes.txt") + `"}`}}},
		modeltest.Response{Text: "The notes say 42."},
	)
	cmd := exec.Command(binPath, "exec", "-p", "what do my notes say?", "--cwd", root)
	cmd.Env = execEnv(t, "OPENAI_BASE_URL="+m.URL, "OPENAI_MODEL=scripted")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("exec: %v\n%s\n%s", err, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "The notes say 42.") || !strings.Contains(out.String(), "notes.txt") || !strings.Contains(errb.String(), "[stop reason: end_turn]") {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
	reqs := m.Requests()
	last := reqs[len(reqs)-1].Messages
	if got := last[len(last)-1].Text(); got != "the answer is 42\n" {
		t.Fatalf("the model got %q as the read result", got)
	}
}

func TestExecWithoutAModelSaysWhatToSet(t *testing.T) {
	cmd := exec.Command(binPath, "exec", "-p", "hi", "--cwd", t.TempDir())
	cmd.Env = execEnv(t)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != exitError || !strings.Contains(errb.String(), "OPENAI_API_KEY") {
		t.Fatalf("err=%v stderr=%q", err, errb.String())
	}
}
