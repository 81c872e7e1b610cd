package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// The old subcommand says where the scripted model went instead of
// serving one.
func TestScriptedModelSubcommandSaysWhereItWent(t *testing.T) {
	cmd := exec.Command(binPath, "scripted-model", "--script", "x.txtar")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit: %v", err)
	}
	if stdout.Len() != 0 || !strings.Contains(stderr.String(), "go build -o qwen-scripted-model ./cmd/qwen-scripted-model") {
		t.Fatalf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
}
