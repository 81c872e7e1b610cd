//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// The lsp tool through the real binary: exec, and kill -9 with a language
// server running (issue 32). rpc's tests cover each operation.

var lspModule = map[string]string{
	"go.mod":       "module example.com/m\n\ngo 1.21\n",
	"calc/calc.go": "package calc\n\n// Add returns the sum of a and b.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
	"main.go":      "package main\n\nimport \"example.com/m/calc\"\n\nfunc main() {\n\tprintln(calc.Add(1, 2))\n}\n",
}

// lspRoot makes the module in a new folder and returns its real path.
func lspRoot(t *testing.T) string {
	t.Helper()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	for rel, text := range lspModule {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// goplsEnv skips without gopls (CI installs it) and keeps go on loopback.
func goplsEnv(t *testing.T) []string {
	t.Helper()
	if _, err := exec.LookPath("gopls"); err != nil {
		t.Skip("gopls is not on PATH: install it with GOBIN=<dir on PATH> go install golang.org/x/tools/gopls@v0.23.0 (.ci/gopls.sh)")
	}
	return []string{"GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod"}
}

// processesIn lists the live processes whose working directory is dir
// or below it, as "pid exe".
func processesIn(dir string) []string {
	var out []string
	for _, pid := range allPIDs() {
		if pid == os.Getpid() || zombie(pid) {
			continue
		}
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if err != nil || (cwd != dir && !strings.HasPrefix(cwd, dir+"/")) {
			continue
		}
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		out = append(out, fmt.Sprintf("%d %s", pid, exe))
	}
	return out
}

func toolMessagesOf(t *testing.T, m *modeltest.Server, n int) map[string]string {
	t.Helper()
	reqs := m.Requests()
	if len(reqs) <= n {
		t.Fatalf("%d model requests, want more than %d", len(reqs), n)
	}
	out := map[string]string{}
	for _, msg := range reqs[n].Messages {
		if msg.Role == "tool" {
			out[msg.ToolCallID] = msg.Text()
		}
	}
	return out
}

// qwen-ls exec answers the lsp tool with a gopls it starts in the trusted
// folder, gives an edit that breaks the build the compiler's message, and
// leaves no language server behind.
func TestExecLSPToolWithGopls(t *testing.T) {
	extra := goplsEnv(t)
	root := lspRoot(t)
	main := filepath.Join(root, "main.go")
	m := modeltest.Start(t,
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			{ID: "def", Name: "lsp", Arguments: `{"operation":"goToDefinition","filePath":"main.go","line":6,"character":15}`},
			{ID: "read", Name: "read_file", Arguments: `{"absolute_path":"` + main + `"}`},
		}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			{ID: "edit", Name: "edit", Arguments: `{"file_path":"` + main + `","old_string":"calc.Add(1, 2)","new_string":"calc.Sub(1, 2)"}`},
		}},
		modeltest.Response{Text: "Done."},
	)
	env := execEnv(t, append(extra, "OPENAI_BASE_URL="+m.URL, "OPENAI_MODEL=scripted")...)
	trust := exec.Command(binPath, "trust", root)
	trust.Env = env
	if out, err := trust.CombinedOutput(); err != nil {
		t.Fatalf("trust: %v\n%s", err, out)
	}
	cmd := exec.Command(binPath, "exec", "-p", "use Sub", "--cwd", root, "--approval-mode", "yolo")
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("exec: %v\n%s\n%s", err, out.String(), errb.String())
	}
	if got := toolMessagesOf(t, m, 1)["def"]; got != "1 definition of the symbol at main.go:6:15 (gopls):\ncalc/calc.go:4:6: func Add(a, b int) int {" {
		t.Errorf("definition:\n%s", got)
	}
	wantEnd := "\n\ngopls reports 1 new error after this change:\nmain.go:6:15: error: undefined: calc.Sub (compiler UndeclaredImportedName)\n    `println(calc.Sub(1, 2))`"
	if got := toolMessagesOf(t, m, 2)["edit"]; !strings.HasSuffix(got, wantEnd) {
		t.Errorf("edit:\n%s\nwant it to end with\n%s", got, wantEnd)
	}
	settle(t, "a language server outlived qwen-ls exec", func() bool { return len(processesIn(root)) == 0 })
}

// kill -9 of qwen-ls while the gopls it started runs: nothing survives.
func TestKill9WithALanguageServerLeavesNoProcess(t *testing.T) {
	extra := goplsEnv(t)
	root := lspRoot(t)
	m := modeltest.Start(t,
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			{ID: "def", Name: "lsp", Arguments: `{"operation":"goToDefinition","filePath":"main.go","line":6,"character":15}`},
		}},
		modeltest.Response{Text: "Done."},
	)
	cmd := exec.Command(binPath, "--stdio")
	cmd.Env = execEnv(t, extra...)
	e := rpctest.StartProcess(t, cmd)
	e.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true, InitializationOptions: map[string]any{
		"approvalMode": "yolo", "workspaceTrusted": true, "model": map[string]any{"name": "s", "baseUrl": m.URL}}})
	res, err := e.Call("qwen/newSession", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var ns struct{ SessionID string }
	_ = json.Unmarshal(res, &ns)
	if _, err := e.Call("qwen/prompt", map[string]any{"sessionId": ns.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "where is Add"}}}); err != nil {
		t.Fatal(err)
	}
	if got := toolMessagesOf(t, m, 1)["def"]; !strings.HasSuffix(got, "calc/calc.go:4:6: func Add(a, b int) int {") {
		t.Fatalf("definition: %s", got)
	}
	running := processesIn(root)
	hasGopls := false
	for _, p := range running {
		hasGopls = hasGopls || strings.HasSuffix(p, "/gopls")
	}
	if !hasGopls {
		t.Fatalf("no gopls runs in %s after the call: %v", root, running)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	settle(t, "the language server survived the server's kill -9", func() bool { return len(processesIn(root)) == 0 })
}
