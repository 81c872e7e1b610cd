package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
)

// Over LSP, stderr carries only warnings and errors unless QWEN_LS_LOG
// asks for more: Neovim files every stderr line as an error in its LSP
// log. window/logMessage still gets the info lines.
func TestStderrCarriesOnlyWarningsOverLSP(t *testing.T) {
	run := func(env ...string) (stderr string, logMessages int) {
		cmd := exec.Command(binPath, "--stdio")
		cmd.Env = append(cmd.Environ(), append([]string{"HOME=" + t.TempDir()}, env...)...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		e := rpctest.StartProcess(t, cmd)
		e.Initialize(rpctest.InitParams{Roots: []string{t.TempDir()}, Rich: true})
		e.Call("shutdown", nil)
		e.Notify("exit", nil)
		<-e.Done()
		return errb.String(), len(e.Notifications("window/logMessage"))
	}
	quiet, logged := run()
	if strings.Contains(quiet, "[info]") || logged == 0 {
		t.Errorf("default: stderr %q, %d logMessages; want no info lines on stderr and some logMessages", quiet, logged)
	}
	loud, _ := run("QWEN_LS_LOG=info")
	if !strings.Contains(loud, "[info]") {
		t.Errorf("QWEN_LS_LOG=info: stderr %q has no info line", loud)
	}
	bad, _ := run("QWEN_LS_LOG=chatty")
	if !strings.Contains(bad, `QWEN_LS_LOG="chatty" is not one of`) || strings.Contains(bad, "[info]") {
		t.Errorf("QWEN_LS_LOG=chatty: stderr %q", bad)
	}
}
