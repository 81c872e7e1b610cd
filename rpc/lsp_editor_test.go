package rpc_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// calcModule is a small Go module: package calc with Add, and a main
// package that calls it.
var calcModule = map[string]string{
	"go.mod":       "module example.com/m\n\ngo 1.21\n",
	"calc/calc.go": "package calc\n\n// Add returns the sum of a and b.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
	"main.go":      "package main\n\nimport \"example.com/m/calc\"\n\nfunc main() {\n\tprintln(calc.Add(1, 2))\n}\n",
}

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, text := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fakeGopls puts a "gopls" first on PATH that only leaves a mark when it
// starts, and returns the mark's path: a test that must start no
// language server checks that the mark never appears.
func fakeGopls(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	mark := filepath.Join(dir, "started")
	script := "#!/bin/sh\necho started >> " + mark + "\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "gopls"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return mark
}

// toolMessages are the tool messages of the model's request n (0-based),
// by call id.
func toolMessages(t *testing.T, m *modeltest.Server, n int) map[string]string {
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

func trusted(ip *rpctest.InitParams) {
	ip.InitializationOptions.(map[string]any)["workspaceTrusted"] = true
}

// An editor that answers qwen/lsp serves the lsp tool and the verdict
// after an edit from its own language features; qwen-ls starts no
// language server of its own (issue 32).
func TestLSPToolIsServedByTheEditor(t *testing.T) {
	mark := fakeGopls(t)
	a := startAgentWith(t, "yolo", rpc.Options{}, func(ip *rpctest.InitParams) {
		ip.LSP = true
		trusted(ip)
	})
	writeTree(t, a.root, calcModule)
	calc, main := filepath.Join(a.root, "calc", "calc.go"), filepath.Join(a.root, "main.go")

	var mu sync.Mutex
	var asked []map[string]any
	a.e.Handle("qwen/lsp", func(params json.RawMessage) (any, error) {
		var p map[string]any
		json.Unmarshal(params, &p)
		mu.Lock()
		asked = append(asked, p)
		mu.Unlock()
		switch p["method"] {
		case "textDocument/definition":
			return map[string]any{"served": true, "servers": []string{"gopls"}, "result": []any{map[string]any{
				"uri":   rpctest.URI(calc),
				"range": map[string]any{"start": map[string]int{"line": 3, "character": 5}, "end": map[string]int{"line": 3, "character": 8}},
			}}}, nil
		case "qwen/diagnostics":
			// The editor's compiler reads the file as it now is.
			text, _ := os.ReadFile(main)
			diags := []any{}
			if strings.Contains(string(text), "calc.Sub") {
				diags = append(diags, map[string]any{
					"range":    map[string]any{"start": map[string]int{"line": 5, "character": 15}, "end": map[string]int{"line": 5, "character": 18}},
					"severity": 1, "source": "compiler", "code": "UndeclaredImportedName", "message": "undefined: calc.Sub",
				})
			}
			return map[string]any{"served": true, "servers": []string{"gopls"}, "result": []any{map[string]any{"uri": rpctest.URI(main), "diagnostics": diags}}}, nil
		}
		return map[string]any{"served": false, "reason": "not in this test"}, nil
	})

	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			{ID: "def", Name: "lsp", Arguments: `{"operation":"goToDefinition","filePath":"main.go","line":6,"character":15}`},
			{ID: "read", Name: "read_file", Arguments: `{"absolute_path":"` + main + `"}`},
		}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			{ID: "edit", Name: "edit", Arguments: `{"file_path":"` + main + `","old_string":"calc.Add(1, 2)","new_string":"calc.Sub(1, 2)"}`},
		}},
		modeltest.Response{Text: "Done."},
	)
	if _, err := a.prompt("where is Add, then use Sub"); err != nil {
		t.Fatal(err)
	}
	got := toolMessages(t, a.model, 1)
	want := "1 definition of the symbol at main.go:6:15 (the editor's gopls):\ncalc/calc.go:4:6: func Add(a, b int) int {"
	if got["def"] != want {
		t.Errorf("lsp tool message:\n%s\nwant\n%s", got["def"], want)
	}
	got = toolMessages(t, a.model, 2)
	wantEnd := "\n\nThe editor's gopls reports 1 new error after this change:\nmain.go:6:16: error: undefined: calc.Sub (compiler UndeclaredImportedName)\n    `println(calc.Sub(1, 2))`"
	if !strings.HasSuffix(got["edit"], wantEnd) {
		t.Errorf("edit tool message:\n%s\nwant it to end with\n%s", got["edit"], wantEnd)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 5 {
		t.Fatalf("qwen/lsp requests: %v", asked)
	}
	def := asked[0]
	pos, _ := json.Marshal(def["params"].(map[string]any)["position"])
	if def["method"] != "textDocument/definition" || def["sessionId"] != a.sid || string(pos) != `{"character":14,"line":5}` {
		t.Errorf("definition request %v (position %s)", def, pos)
	}
	// The baseline asks for what the editor has now; the verdict names
	// the version the change must be reflected in (0: the file is not
	// open in the editor, so any later report) and how long qwen-ls
	// waits. Each also asks for the other files' diagnostics.
	var params []string
	for _, p := range asked[1:] {
		b, _ := json.Marshal(p["params"])
		params = append(params, p["method"].(string)+" "+string(b))
	}
	uri := rpctest.URI(main)
	wantParams := []string{`qwen/diagnostics {"uri":"` + uri + `"}`, `qwen/diagnostics {}`,
		`qwen/diagnostics {"timeoutMs":2000,"uri":"` + uri + `","version":0}`, `qwen/diagnostics {}`}
	if strings.Join(params, "\n") != strings.Join(wantParams, "\n") {
		t.Errorf("diagnostics requests:\n%s\nwant\n%s", strings.Join(params, "\n"), strings.Join(wantParams, "\n"))
	}
	if _, err := os.Stat(mark); err == nil {
		t.Errorf("qwen-ls started a language server although the editor served every request")
	}
}

// An editor whose checks find nothing new publishes nothing (VS Code's
// TypeScript publishes only diagnostics that changed): the baseline does
// not wait, and a wait after the change that runs out says that no new
// errors were reported, not that the file was never checked.
func TestLSPQuietEditorMeansNoNewErrors(t *testing.T) {
	mark := fakeGopls(t)
	a := startAgentWith(t, "yolo", rpc.Options{}, func(ip *rpctest.InitParams) {
		ip.LSP, ip.ApplyEdit = true, true
		trusted(ip)
	})
	writeTree(t, a.root, calcModule)
	main := filepath.Join(a.root, "main.go")
	a.e.ApplyEditsLikeAnEditor(false)
	a.e.OpenTracked(main, calcModule["main.go"])

	var mu sync.Mutex
	var waits []string
	a.e.Handle("qwen/lsp", func(params json.RawMessage) (any, error) {
		var p struct {
			Method string
			Params struct {
				URI       string `json:"uri"`
				Version   *int   `json:"version"`
				TimeoutMs int    `json:"timeoutMs"`
			}
		}
		json.Unmarshal(params, &p)
		if p.Method != "qwen/diagnostics" {
			return map[string]any{"served": false}, nil
		}
		if p.Params.URI == "" {
			return map[string]any{"served": true, "servers": []string{"typescript"}, "result": []any{}}, nil
		}
		mu.Lock()
		waits = append(waits, fmt.Sprintf("version=%v timeout=%d", p.Params.Version != nil, p.Params.TimeoutMs))
		mu.Unlock()
		if p.Params.Version != nil {
			// Nothing new is published: the editor answers when the
			// wait is over, with what it had.
			time.Sleep(time.Duration(p.Params.TimeoutMs) * time.Millisecond)
		}
		return map[string]any{"served": true, "servers": []string{"typescript"}, "result": []any{map[string]any{"uri": p.Params.URI, "diagnostics": []any{}}}}, nil
	})
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			{ID: "read", Name: "read_file", Arguments: `{"absolute_path":"` + main + `"}`},
		}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			{ID: "edit", Name: "edit", Arguments: `{"file_path":"` + main + `","old_string":"calc.Add(1, 2)","new_string":"calc.Add(2, 1)"}`},
		}},
		modeltest.Response{Text: "Done."},
	)
	if _, err := a.prompt("swap the arguments"); err != nil {
		t.Fatal(err)
	}
	got := toolMessages(t, a.model, 2)["edit"]
	want := "No new errors: the editor's typescript reported no change within 2 s of this change."
	if !strings.HasSuffix(got, want) {
		t.Errorf("edit tool message:\n%s\nwant it to end with\n%s", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(waits, "; ") != "version=false timeout=0; version=true timeout=2000" {
		t.Errorf("diagnostics asked for the file: %v (the baseline must not wait)", waits)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Errorf("qwen-ls started a language server although the editor served every request")
	}
}

// In an untrusted folder qwen-ls starts no language server: the tool says
// why and what to do, edits get no verdict, and Check Setup says so.
func TestLSPInUntrustedFolderStartsNoServer(t *testing.T) {
	mark := fakeGopls(t)
	a := startAgent(t, "yolo")
	writeTree(t, a.root, calcModule)
	main := filepath.Join(a.root, "main.go")
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			{ID: "def", Name: "lsp", Arguments: `{"operation":"goToDefinition","filePath":"main.go","line":6,"character":15}`},
			{ID: "w", Name: "write_file", Arguments: `{"file_path":"` + filepath.Join(a.root, "extra.go") + `","content":"package main\n\nvar x = y\n"}`},
		}},
		modeltest.Response{Text: "Done."},
	)
	if _, err := a.prompt("where is Add"); err != nil {
		t.Fatal(err)
	}
	got := toolMessages(t, a.model, 1)
	t.Logf("the lsp tool's answer in an untrusted folder:\n%s", got["def"])
	want := "qwen-ls starts no language server in an untrusted folder: starting one can run the project's code " +
		"(go may download the toolchain go.mod names, and build scripts may run). Ask the person to trust the folder " +
		"(the editor's \"Trust this folder\", or `qwen-ls trust " + a.root + "` in a shell) to use the lsp tool here; meanwhile use grep_search and read_file."
	if got["def"] != want {
		t.Errorf("lsp tool message:\n%s\nwant\n%s", got["def"], want)
	}
	if got["w"] != "Created the file "+filepath.Join(a.root, "extra.go")+"." {
		t.Errorf("write_file message %q: no verdict expected", got["w"])
	}
	res, err := a.e.Call("qwen/checkSetup", map[string]any{"uri": rpctest.URI(main)})
	if err != nil {
		t.Fatal(err)
	}
	var cs struct {
		LSPAllowed      *bool `json:"lspAllowed"`
		LanguageServers []struct {
			Name      string
			Installed bool
			ForFile   bool
		} `json:"languageServers"`
	}
	json.Unmarshal(res, &cs)
	if cs.LSPAllowed == nil || *cs.LSPAllowed || len(cs.LanguageServers) < 6 || cs.LanguageServers[0].Name != "gopls" ||
		!cs.LanguageServers[0].Installed || !cs.LanguageServers[0].ForFile || cs.LanguageServers[1].ForFile {
		t.Errorf("checkSetup: %s", res)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Errorf("qwen-ls started a language server in an untrusted folder")
	}
}
