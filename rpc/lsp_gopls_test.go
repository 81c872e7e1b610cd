//go:build linux

package rpc_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
	"github.com/qwen-ls/qwen-ls/tools/sandbox"
)

// needGopls skips a test when gopls is not installed here; CI installs it
// (.ci/gopls.sh), so there the test always runs.
func needGopls(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("gopls"); err != nil {
		t.Skip("gopls is not on PATH: install it with GOBIN=<dir on PATH> go install golang.org/x/tools/gopls@v0.23.0 (.ci/gopls.sh)")
	}
	// Nothing beyond loopback: the module has no dependencies, and go
	// must not fetch a toolchain or a module.
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOTOOLCHAIN", "local")
	t.Setenv("GOFLAGS", "-mod=mod")
}

// processesIn lists the live processes whose working directory is dir
// or below it, as "pid exe".
func processesIn(dir string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if err != nil || (cwd != dir && !strings.HasPrefix(cwd, dir+"/")) {
			continue
		}
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if i := strings.LastIndexByte(string(st), ')'); i > 0 && strings.HasPrefix(string(st[i+1:]), " Z") {
				continue
			}
		}
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		out = append(out, fmt.Sprintf("%d %s", pid, exe))
	}
	return out
}

func lspCall(id, args string) modeltest.ToolCall {
	return modeltest.ToolCall{ID: id, Name: "lsp", Arguments: args}
}

// The lsp tool with a gopls qwen-ls starts itself (no qwen/lsp in the
// client): every operation of issue 32's acceptance on a small module, a
// definition found only in unsaved text, and the compiler's verdict after
// edits that break the build, in the file and in an importer.
func TestLSPToolWithGopls(t *testing.T) {
	needGopls(t)
	a := startAgentWith(t, "yolo", rpc.Options{}, func(ip *rpctest.InitParams) { trusted(ip) })
	writeTree(t, a.root, calcModule)
	calc, main := filepath.Join(a.root, "calc", "calc.go"), filepath.Join(a.root, "main.go")

	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			lspCall("def", `{"operation":"goToDefinition","filePath":"main.go","line":6,"character":15}`),
			lspCall("refs", `{"operation":"findReferences","filePath":"calc/calc.go","line":4,"character":6,"includeDeclaration":true}`),
			lspCall("hover", `{"operation":"hover","filePath":"`+main+`","line":6,"character":15}`),
			lspCall("syms", `{"operation":"documentSymbol","filePath":"calc/calc.go"}`),
			lspCall("ws", `{"operation":"workspaceSymbol","query":"Add"}`),
			lspCall("diag", `{"operation":"diagnostics","filePath":"main.go"}`),
		}},
		modeltest.Response{Text: "Looked."},
	)
	if _, err := a.prompt("look at Add"); err != nil {
		t.Fatal(err)
	}
	got := toolMessages(t, a.model, 1)
	for id, want := range map[string]string{
		"def":  "1 definition of the symbol at main.go:6:15 (gopls):\ncalc/calc.go:4:6: func Add(a, b int) int {",
		"refs": "2 references of the symbol at calc/calc.go:4:6 (gopls):\ncalc/calc.go:4:6: func Add(a, b int) int {\nmain.go:6:15: println(calc.Add(1, 2))",
		"syms": "1 symbol in calc/calc.go (gopls):\nFunction Add, lines 4-6: func(a, b int) int",
		"diag": "No problems reported in main.go (gopls).",
	} {
		if got[id] != want {
			t.Errorf("%s:\n%s\nwant\n%s", id, got[id], want)
		}
	}
	if h := got["hover"]; !strings.HasPrefix(h, "Hover at main.go:6:15 (gopls):\nfunc calc.Add(a int, b int) int") || !strings.Contains(h, "Add returns the sum of a and b.") {
		t.Errorf("hover:\n%s", h)
	}
	if ws := got["ws"]; !strings.HasPrefix(ws, "1 symbol match \"Add\" (gopls):\nFunction ") || !strings.HasSuffix(ws, "Add: calc/calc.go:4:6") {
		t.Errorf("workspaceSymbol:\n%s", ws)
	}

	// A definition that exists only in the editor's unsaved text.
	a.e.Open(filepath.Join(a.root, "extra.go"), "package main\n\n// Extra is only in the editor.\nfunc Extra() int { return 7 }\n")
	a.e.Open(main, calcModule["main.go"])
	a.e.Replace(main, "package main\n\nimport \"example.com/m/calc\"\n\nfunc main() {\n\tprintln(calc.Add(1, Extra()))\n}\n")
	// Then edits that break the build: a call of a function that does not
	// exist, and a rename that breaks the importer.
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			lspCall("unsaved", `{"operation":"goToDefinition","filePath":"main.go","line":6,"character":22}`),
			{ID: "read", Name: "read_file", Arguments: `{"absolute_path":"` + calc + `"}`},
		}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			{ID: "break", Name: "edit", Arguments: `{"file_path":"` + calc + `","old_string":"\treturn a + b","new_string":"\treturn a + c"}`},
		}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			{ID: "rename", Name: "edit", Arguments: `{"file_path":"` + calc + `","old_string":"func Add(","new_string":"func Plus("}`},
		}},
		modeltest.Response{Text: "Broken."},
	)
	if _, err := a.prompt("use Extra, then change calc"); err != nil {
		t.Fatal(err)
	}
	got = toolMessages(t, a.model, 3)
	if want := "1 definition of the symbol at main.go:6:22 (gopls):\nextra.go:4:6: func Extra() int { return 7 }"; got["unsaved"] != want {
		t.Errorf("definition in unsaved text:\n%s\nwant\n%s", got["unsaved"], want)
	}
	got = toolMessages(t, a.model, 4)
	wantBreak := "\n\ngopls reports 1 new error after this change:\ncalc/calc.go:5:13: error: undefined: c (compiler UndeclaredName)\n    `return a + c`"
	if !strings.HasSuffix(got["break"], wantBreak) {
		t.Errorf("the edit that breaks the build:\n%s\nwant it to end with\n%s", got["break"], wantBreak)
	}
	got = toolMessages(t, a.model, 5)
	if r := got["rename"]; !strings.Contains(r, "gopls reports 1 new error after this change:\n"+
		"main.go:6:15: error (in another file, which uses this one): undefined: calc.Add (compiler UndeclaredImportedName)") ||
		!strings.HasSuffix(r, "1 error was already there before this change.") {
		t.Errorf("the rename that breaks the importer:\n%s", r)
	}
}

// A language server qwen-ls started stops when it has had no question for
// the idle time, and starts again at the next.
func TestLanguageServerStopsWhenIdle(t *testing.T) {
	needGopls(t)
	a := startAgentWith(t, "yolo", rpc.Options{LanguageServerIdle: 300 * time.Millisecond}, func(ip *rpctest.InitParams) { trusted(ip) })
	writeTree(t, a.root, calcModule)
	// A sampler notes the gopls processes it sees in each round: the
	// server runs for the call and the idle time after it.
	var mu sync.Mutex
	round := 0
	seen := [2]map[string]bool{{}, {}}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			for _, p := range processesIn(a.root) {
				if strings.HasSuffix(p, "/gopls") {
					mu.Lock()
					seen[round][p] = true
					mu.Unlock()
				}
			}
		}
	}()
	for i := 0; i < 2; i++ {
		a.model.Push(
			modeltest.Response{ToolCalls: []modeltest.ToolCall{lspCall("def", `{"operation":"goToDefinition","filePath":"main.go","line":6,"character":15}`)}},
			modeltest.Response{Text: "ok"},
		)
		if _, err := a.prompt("where is Add"); err != nil {
			t.Fatal(err)
		}
		if got := toolMessages(t, a.model, 2*i+1)["def"]; !strings.HasSuffix(got, "calc/calc.go:4:6: func Add(a, b int) int {") {
			t.Fatalf("round %d: %s", i, got)
		}
		waitFor(t, "stop of gopls when idle", func() bool { return len(processesIn(a.root)) == 0 })
		mu.Lock()
		if i == 0 {
			round = 1
		}
		mu.Unlock()
	}
	// Each round had its own server: the first stopped, the second
	// started anew.
	mu.Lock()
	defer mu.Unlock()
	if len(seen[0]) == 0 || len(seen[1]) == 0 {
		t.Fatalf("gopls was not seen running in each round: %v", seen)
	}
	for p := range seen[1] {
		if seen[0][p] {
			t.Errorf("gopls %s ran in both rounds", p)
		}
	}
}

// An editor that answers qwen/lsp but has nothing for the file
// (served: false) gets qwen-ls's own gopls.
func TestLSPEditorWithoutServerFallsBackToGopls(t *testing.T) {
	needGopls(t)
	a := startAgentWith(t, "yolo", rpc.Options{}, func(ip *rpctest.InitParams) {
		ip.LSP = true
		trusted(ip)
	})
	writeTree(t, a.root, calcModule)
	a.e.Handle("qwen/lsp", func(json.RawMessage) (any, error) {
		return map[string]any{"served": false, "reason": "no language feature covers this document"}, nil
	})
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{lspCall("def", `{"operation":"goToDefinition","filePath":"main.go","line":6,"character":15}`)}},
		modeltest.Response{Text: "ok"},
	)
	if _, err := a.prompt("where is Add"); err != nil {
		t.Fatal(err)
	}
	want := "1 definition of the symbol at main.go:6:15 (gopls):\ncalc/calc.go:4:6: func Add(a, b int) int {"
	if got := toolMessages(t, a.model, 1)["def"]; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if n := len(a.e.Requests("qwen/lsp")); n != 1 {
		t.Errorf("%d qwen/lsp requests, want 1", n)
	}
}

// The same over ACP: a definition, and the verdict after an edit that
// breaks the build, from a gopls qwen-ls starts.
func TestLSPToolOverACP(t *testing.T) {
	needGopls(t)
	m := modeltest.Start(t)
	c := startACP(t, m.URL, `{"security": {"folderTrust": {"enabled": false}}}`)
	c.answer = func(string, json.RawMessage) any {
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "proceed_once"}}
	}
	root, _ := filepath.EvalSymlinks(t.TempDir())
	writeTree(t, root, calcModule)
	main := filepath.Join(root, "main.go")
	c.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	ns := c.call("session/new", map[string]any{"cwd": root, "mcpServers": []any{}})
	var sid string
	json.Unmarshal(ns["sessionId"], &sid)
	m.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			lspCall("def", `{"operation":"goToDefinition","filePath":"main.go","line":6,"character":15}`),
			{ID: "read", Name: "read_file", Arguments: jsonArgs("absolute_path", main)},
		}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			{ID: "edit", Name: "edit", Arguments: jsonArgs("file_path", main, "old_string", "calc.Add(1, 2)", "new_string", "calc.Sub(1, 2)")},
		}},
		modeltest.Response{Text: "done"},
	)
	res := c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "go"}}})
	if string(res["stopReason"]) != `"end_turn"` {
		t.Fatalf("session/prompt = %v", res)
	}
	if got := toolMessages(t, m, 1)["def"]; got != "1 definition of the symbol at main.go:6:15 (gopls):\ncalc/calc.go:4:6: func Add(a, b int) int {" {
		t.Errorf("definition over ACP:\n%s", got)
	}
	wantEnd := "\n\ngopls reports 1 new error after this change:\nmain.go:6:15: error: undefined: calc.Sub (compiler UndeclaredImportedName)\n    `println(calc.Sub(1, 2))`"
	if got := toolMessages(t, m, 2)["edit"]; !strings.HasSuffix(got, wantEnd) {
		t.Errorf("edit over ACP:\n%s\nwant it to end with\n%s", got, wantEnd)
	}
}

// A language server runs under the sandbox of what runs unasked: it
// writes in the workspace, not in the home folder. The server here comes
// from the lsp settings, in Qwen Code's shape: a shell that tries both
// writes and then becomes gopls.
func TestLanguageServerRunsInTheSandbox(t *testing.T) {
	needGopls(t)
	if !sandbox.Probe().ReadOnly() {
		t.Skip("no OS sandbox on this system")
	}
	for _, k := range []string{"GOCACHE", "GOMODCACHE"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", k, err)
		}
		t.Setenv(k, strings.TrimSpace(string(out)))
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", "")
	gopls, _ := exec.LookPath("gopls")
	script := "touch inside; touch \"$HOME/outside\"; exec " + gopls
	a := startAgentWith(t, "yolo", rpc.Options{}, func(ip *rpctest.InitParams) {
		trusted(ip)
		ip.InitializationOptions.(map[string]any)["settings"] = map[string]any{"lsp": map[string]any{
			"go": map[string]any{"command": "sh", "args": []any{"-c", script}},
		}}
	})
	writeTree(t, a.root, calcModule)
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{lspCall("def", `{"operation":"goToDefinition","filePath":"main.go","line":6,"character":15}`)}},
		modeltest.Response{Text: "ok"},
	)
	if _, err := a.prompt("where is Add"); err != nil {
		t.Fatal(err)
	}
	if got := toolMessages(t, a.model, 1)["def"]; got != "1 definition of the symbol at main.go:6:15 (sh):\ncalc/calc.go:4:6: func Add(a, b int) int {" {
		t.Errorf("definition from the configured server:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(a.root, "inside")); err != nil {
		t.Errorf("the language server could not write in the workspace: %v", err)
	}
	if _, err := os.Stat(filepath.Join(home, "outside")); err == nil {
		t.Errorf("the language server wrote in the home folder")
	}
}
