package rpc_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// A model that sends the timeout in seconds ("timeout": 1.5) is told the
// unit and the range, and the command does not run: it once ran with a
// 2 ms limit and was killed at once.
func TestShellTimeoutInSecondsIsRefused(t *testing.T) {
	a := startAgent(t, "yolo")
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "s", Name: "run_shell_command", Arguments: `{"command":"touch ran","timeout":1.5}`}}},
		modeltest.Response{Text: "ok"},
	)
	if _, err := a.prompt("run it"); err != nil {
		t.Fatal(err)
	}
	got := a.toolMessage(t, "s")
	want := `Argument "timeout" is in milliseconds and must be a whole number from 1000 (1 second) to 600000 (10 minutes); 1.5 is not a whole number. For 1.5 seconds, send 1500.`
	if got != want {
		t.Errorf("the model was told %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(a.root, "ran")); err == nil {
		t.Errorf("the command ran with a timeout of 1.5")
	}
	if strings.Contains(got, "ran past its") {
		t.Errorf("the command was started and stopped: %q", got)
	}
}
