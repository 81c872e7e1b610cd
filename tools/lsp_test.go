package tools_test

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/codeintel"
	"github.com/qwen-ls/qwen-ls/tools/toolstest"
)

var updateLSP = flag.Bool("update-lsp", false, "rewrite the golden declaration of lsp")

// codeHost is a Host whose code intelligence answers from canned data, to
// pin the tool's validation, conversion and text. The real servers are in
// rpc's tests.
type codeHost struct {
	mu      sync.Mutex
	queries []codeintel.Query
	diagQs  []codeintel.DiagnosticsQuery
	answer  codeintel.Answer
	// reports are returned by CodeDiagnostics in turn (the last one
	// again once they run out).
	reports []codeintel.Report
	err     error
}

func (h *codeHost) ApplyToBuffer(context.Context, string, int32, string) error { return nil }
func (h *codeHost) CanApplyToBuffers() bool                                    { return false }

func (h *codeHost) CodeQuery(_ context.Context, _ string, q codeintel.Query) (codeintel.Answer, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.queries = append(h.queries, q)
	return h.answer, h.err
}

func (h *codeHost) CodeDiagnostics(_ context.Context, _ string, q codeintel.DiagnosticsQuery) (codeintel.Report, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.diagQs = append(h.diagQs, q)
	if h.err != nil {
		return codeintel.Report{}, h.err
	}
	if len(h.reports) == 0 {
		return codeintel.Report{}, nil
	}
	r := h.reports[0]
	if len(h.reports) > 1 {
		h.reports = h.reports[1:]
	}
	return r, nil
}

func TestLSPDeclarationGolden(t *testing.T) {
	e := newTestEnv(t, nil)
	toolstest.Golden(t, "declarations/lsp.json", declarationJSON(t, tools.NewLSP(e.Env)), *updateLSP)
}

func TestLSPSpec(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewLSP(e.Env)
	if tool.Name() != "lsp" || tool.DisplayName() != "Lsp" || tool.Kind() != tools.KindRead || tool.Source() != tools.SourceBuiltin {
		t.Fatal("static description is wrong")
	}
	e.write(t, "a.go", "package a\n")
	for raw, want := range map[string]string{
		`{"operation":"hover","filePath":"a.go","line":1,"character":9}`: "hover at a.go:1:9",
		`{"operation":"workspaceSymbol","query":"Add"}`:                  `workspaceSymbol "Add"`,
		`{"operation":"documentSymbol","filePath":"a.go"}`:               "documentSymbol at a.go",
	} {
		params, terr := tools.PrepareArgs(tool, raw)
		if terr != nil {
			t.Fatalf("%s: %s", raw, terr.Message)
		}
		if got := tool.Describe(params); got != want {
			t.Errorf("%s: describe %q, want %q", raw, got, want)
		}
	}
}

// Every rule of the arguments has a message that says what to do.
func TestLSPValidation(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewLSP(e.Env)
	e.write(t, "a.go", "package a\n\nfunc Add(a, b int) int { return a + b }\n")
	for raw, want := range map[string]string{
		`{}`:                             "params must have required property 'operation'",
		`{"operation":"rename"}`:         "params/operation must be equal to one of the allowed values",
		`{"operation":"goToDefinition"}`: "goToDefinition needs filePath, line and character: the file and the 1-based position of the symbol's name in it.",
		`{"operation":"hover","filePath":"a.go","line":3}`:               "hover needs filePath, line and character: the file and the 1-based position of the symbol's name in it.",
		`{"operation":"hover","filePath":"a.go","line":0,"character":1}`: `Argument "line" is 1-based (the first line of a file is line 1), so 0 is not a position.`,
		`{"operation":"hover","filePath":"a.go","line":1,"character":0}`: `Argument "character" is 1-based (the first character of a line is 1), so 0 is not a position.`,
		`{"operation":"documentSymbol"}`:                                 "documentSymbol needs filePath: the file to look at.",
		`{"operation":"workspaceSymbol","query":"  "}`:                   "workspaceSymbol needs query: the name, or part of the name, of the symbol to look for.",
		`{"operation":"incomingCalls"}`:                                  "incomingCalls needs callHierarchyItem: one of the items prepareCallHierarchy printed, passed back exactly as it was. Call prepareCallHierarchy on the function's name first.",
		`{"operation":"outgoingCalls","callHierarchyItem":{"name":"Add","uri":"file:///etc/passwd","range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}},"selectionRange":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}}}}`: "Path is outside the workspace: /etc/passwd.",
		`{"operation":"hover","filePath":"/etc/hosts","line":1,"character":1}`:     "Path is outside the workspace: /etc/hosts.",
		`{"operation":"hover","filePath":"a.go","line":1,"character":1,"limit":0}`: "params/limit must be >= 1",
	} {
		_, terr := tools.PrepareArgs(tool, raw)
		if terr == nil || !strings.HasPrefix(terr.Message, want) {
			t.Errorf("%s:\n got %+v\nwant %q", raw, terr, want)
		}
	}
	// A position past the file or the line says what is there.
	host := &codeHost{}
	call := &tools.Call{Host: host}
	res := run(t, tool, call, `{"operation":"hover","filePath":"a.go","line":9,"character":1}`)
	if res.Error == nil || res.Error.Message != "line is 9, past the end of a.go, which has 4 lines." {
		t.Errorf("past the end: %+v", res.Error)
	}
	res = run(t, tool, call, `{"operation":"hover","filePath":"a.go","line":3,"character":99}`)
	if res.Error == nil || res.Error.Message != "character is 99, past the end of line 3 of a.go, which has 39 characters: `func Add(a, b int) int { return a + b }`" {
		t.Errorf("past the line: %+v", res.Error)
	}
	res = run(t, tool, call, `{"operation":"hover","filePath":"nope.go","line":1,"character":1}`)
	if res.Error == nil || res.Error.Message != e.Root+"/nope.go does not exist." {
		t.Errorf("missing: %+v", res.Error)
	}
	if len(host.queries) != 0 {
		t.Errorf("invalid calls reached the server: %+v", host.queries)
	}
	// Without code intelligence the tool says so.
	res = run(t, tool, &tools.Call{}, `{"operation":"workspaceSymbol","query":"Add"}`)
	if res.Error == nil || res.Error.Type != "lsp_unavailable" {
		t.Errorf("no host: %+v", res.Error)
	}
	// The Host's refusal is the model's message.
	host.err = &codeintel.UnavailableError{Message: "No language server for .go files."}
	res = run(t, tool, call, `{"operation":"workspaceSymbol","query":"Add"}`)
	if res.Error == nil || res.Error.Type != "lsp_unavailable" || res.Error.Message != "No language server for .go files." {
		t.Errorf("unavailable: %+v", res.Error)
	}
}

// Characters count characters, not bytes: the query gets byte columns and
// the answer is shown in characters again.
func TestLSPColumnsCountCharacters(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewLSP(e.Env)
	p := e.write(t, "u.go", "package u\n\nvar café = \"é\"; var x = café\n")
	// "var x = café": x is character 21 of the line, byte 23.
	host := &codeHost{answer: codeintel.Answer{Server: "gopls", Locations: []codeintel.Location{
		{Path: p, Range: codeintel.Range{Start: codeintel.Pos{Line: 3, Col: 5}, End: codeintel.Pos{Line: 3, Col: 10}}},
	}}}
	res := run(t, tool, &tools.Call{Host: host}, `{"operation":"goToDefinition","filePath":"u.go","line":3,"character":26}`)
	if res.Error != nil {
		t.Fatal(res.Error.Message)
	}
	if q := host.queries[0]; q.Op != "goToDefinition" || q.Path != p || q.Pos != (codeintel.Pos{Line: 3, Col: 28}) {
		t.Errorf("query %+v", q)
	}
	want := "1 definition of the symbol at u.go:3:26 (gopls):\nu.go:3:5: var café = \"é\"; var x = café"
	if got := res.Text(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// The answers' text: sorted, capped, each location with its line.
func TestLSPAnswerText(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewLSP(e.Env)
	calc := e.write(t, "calc/calc.go", "package calc\n\n// Add adds.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n\ntype P struct {\n\tX int\n}\n")
	main := e.write(t, "main.go", "package main\n\nimport \"m/calc\"\n\nfunc main() {\n\tcalc.Add(1, 2)\n\tcalc.Add(3, 4)\n}\n")
	loc := func(p string, l, c int) codeintel.Location {
		return codeintel.Location{Path: p, Range: codeintel.Range{Start: codeintel.Pos{Line: l, Col: c}, End: codeintel.Pos{Line: l, Col: c + 3}}}
	}
	rng := func(l1, l2 int) codeintel.Range {
		return codeintel.Range{Start: codeintel.Pos{Line: l1, Col: 1}, End: codeintel.Pos{Line: l2, Col: 2}}
	}
	cases := []struct {
		name, raw string
		answer    codeintel.Answer
		want      string
	}{{
		"references", `{"operation":"findReferences","filePath":"calc/calc.go","line":4,"character":6,"limit":2}`,
		codeintel.Answer{Server: "gopls", Locations: []codeintel.Location{loc(main, 7, 7), loc(calc, 4, 6), loc(main, 6, 7)}},
		"3 references of the symbol at calc/calc.go:4:6 (gopls):\ncalc/calc.go:4:6: func Add(a, b int) int {\nmain.go:6:7: calc.Add(1, 2)\n[1 more not shown; raise limit to see them]",
	}, {
		"no definition", `{"operation":"goToDefinition","filePath":"main.go","line":6,"character":1}`,
		codeintel.Answer{Server: "gopls"},
		"No definition found at main.go:6:1 (gopls). The line reads `calc.Add(1, 2)`; line and character must point at the symbol's name.",
	}, {
		"hover", `{"operation":"hover","filePath":"main.go","line":6,"character":7}`,
		codeintel.Answer{Server: "gopls", Hover: "```go\nfunc calc.Add(a int, b int) int\n```\n\nAdd adds.\n"},
		"Hover at main.go:6:7 (gopls):\nfunc calc.Add(a int, b int) int\n\nAdd adds.",
	}, {
		"document symbols", `{"operation":"documentSymbol","filePath":"calc/calc.go"}`,
		codeintel.Answer{Server: "gopls", Symbols: []codeintel.Symbol{
			{Name: "P", Kind: "Struct", Detail: "struct{...}", Range: rng(8, 10), Children: []codeintel.Symbol{{Name: "X", Kind: "Field", Detail: "int", Range: rng(9, 9)}}},
			{Name: "Add", Kind: "Function", Detail: "func(a, b int) int", Range: rng(4, 6)},
		}},
		"3 symbols in calc/calc.go (gopls):\nFunction Add, lines 4-6: func(a, b int) int\nStruct P, lines 8-10: struct{...}\n  Field X, line 9: int",
	}, {
		"workspace symbols", `{"operation":"workspaceSymbol","query":"Add"}`,
		codeintel.Answer{Server: "gopls", Symbols: []codeintel.Symbol{
			{Name: "AddAll", Kind: "Function", Path: calc, Selection: codeintel.Range{Start: codeintel.Pos{Line: 9, Col: 2}}},
			{Name: "Add", Kind: "Function", Container: "calc", Path: calc, Selection: codeintel.Range{Start: codeintel.Pos{Line: 4, Col: 6}}},
		}},
		"2 symbols match \"Add\" (gopls):\nFunction calc.Add: calc/calc.go:4:6\nFunction AddAll: calc/calc.go:9:2",
	}, {
		"code actions", `{"operation":"codeActions","filePath":"main.go","line":6}`,
		codeintel.Answer{Server: "the editor's gopls", Actions: []codeintel.Action{{Title: "Inline call to Add", Kind: "refactor.inline.call"}, {Title: "Fix", Kind: "quickfix", Preferred: true}}},
		"2 code actions at main.go:6:1 (the editor's gopls) (listed only; make the change with edit):\nInline call to Add [refactor.inline.call]\nFix [quickfix] (preferred)",
	}}
	for _, c := range cases {
		host := &codeHost{answer: c.answer}
		res := run(t, tool, &tools.Call{Host: host}, c.raw)
		if res.Error != nil {
			t.Errorf("%s: %s", c.name, res.Error.Message)
			continue
		}
		if got := res.Text(); got != c.want {
			t.Errorf("%s: got\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
}

// prepareCallHierarchy prints items the model passes back unchanged, and
// they reach the server as they were.
func TestLSPCallHierarchyRoundTrip(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewLSP(e.Env)
	calc := e.write(t, "calc.go", "package calc\n\nfunc Add(a, b int) int { return a + b }\n")
	item := codeintel.CallItem{Name: "Add", Kind: "Function", Detail: "calc", Path: calc,
		Range:     codeintel.Range{Start: codeintel.Pos{Line: 3, Col: 1}, End: codeintel.Pos{Line: 3, Col: 40}},
		Selection: codeintel.Range{Start: codeintel.Pos{Line: 3, Col: 6}, End: codeintel.Pos{Line: 3, Col: 9}},
		Data:      []byte(`{"k":1}`), Server: "gopls"}
	host := &codeHost{answer: codeintel.Answer{Server: "gopls", Items: []codeintel.CallItem{item}}}
	res := run(t, tool, &tools.Call{Host: host}, `{"operation":"prepareCallHierarchy","filePath":"calc.go","line":3,"character":7}`)
	text := res.Text()
	lines := strings.Split(text, "\n")
	if len(lines) != 3 || lines[1] != "Function Add: calc.go:3:6" {
		t.Fatalf("items:\n%s", text)
	}
	res = run(t, tool, &tools.Call{Host: host}, fmt.Sprintf(`{"operation":"incomingCalls","callHierarchyItem":%s}`, lines[2]))
	if res.Error != nil {
		t.Fatal(res.Error.Message)
	}
	got := host.queries[1].Item
	if got == nil || got.Name != item.Name || got.Path != item.Path || got.Range != item.Range || got.Selection != item.Selection ||
		string(got.Data) != `{"k":1}` || got.Kind != "Function" || got.Server != "gopls" {
		t.Errorf("item came back as %+v", got)
	}
}

func TestLSPDiagnosticsText(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewLSP(e.Env)
	p := e.write(t, "a.go", "package a\n\nfunc f() int {\n\treturn x\n}\n")
	d := codeintel.Diagnostic{Range: codeintel.Range{Start: codeintel.Pos{Line: 4, Col: 9}}, Severity: 1, Source: "compiler", Code: "UndeclaredName", Message: "undefined: x"}
	host := &codeHost{reports: []codeintel.Report{{Server: "gopls", Files: []codeintel.FileDiagnostics{{Path: p, Diagnostics: []codeintel.Diagnostic{d}}}}}}
	res := run(t, tool, &tools.Call{Host: host}, `{"operation":"diagnostics","filePath":"a.go"}`)
	want := "1 problem in a.go (gopls):\na.go:4:9: error: undefined: x (compiler UndeclaredName)\n    `return x`"
	if got := res.Text(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if q := host.diagQs[0]; q.Path != p || !q.Fresh {
		t.Errorf("query %+v", q)
	}
	host.reports = []codeintel.Report{{Server: "gopls"}}
	res = run(t, tool, &tools.Call{Host: host}, `{"operation":"workspaceDiagnostics"}`)
	if got := res.Text(); got != "No problems reported in the workspace (gopls)." {
		t.Errorf("workspace: %q", got)
	}
}

// edit and write_file end with the errors the change introduced, matched
// against the baseline across line shifts.
func TestVerdictAfterEdit(t *testing.T) {
	e := newTestEnv(t, nil)
	p := e.write(t, "a.go", "package a\n\nvar y = z\n")
	other := e.write(t, "b.go", "package a\n\nvar w = f()\n")
	diag := func(path string, line int, msg string) codeintel.FileDiagnostics {
		return codeintel.FileDiagnostics{Path: path, Diagnostics: []codeintel.Diagnostic{{Range: codeintel.Range{Start: codeintel.Pos{Line: line, Col: 9}}, Severity: 1, Message: msg}}}
	}
	merge := func(fds ...codeintel.FileDiagnostics) codeintel.Report {
		r := codeintel.Report{Server: "gopls"}
		for _, fd := range fds {
			found := false
			for i := range r.Files {
				if r.Files[i].Path == fd.Path {
					r.Files[i].Diagnostics = append(r.Files[i].Diagnostics, fd.Diagnostics...)
					found = true
				}
			}
			if !found {
				r.Files = append(r.Files, fd)
			}
		}
		return r
	}
	host := &codeHost{reports: []codeintel.Report{
		merge(diag(p, 3, "undefined: z")),
		merge(diag(p, 4, "undefined: z"), diag(p, 3, "undefined: x"), diag(other, 3, "undefined: f")),
	}}
	read := run(t, tools.NewReadFile(e.Env), &tools.Call{Host: host, Ledger: tools.NewLedger()}, fmt.Sprintf(`{"absolute_path":%q}`, p))
	if read.Error != nil {
		t.Fatal(read.Error.Message)
	}
	call := &tools.Call{Host: host, Ledger: tools.NewLedger()}
	call.Ledger = tools.NewLedger()
	run(t, tools.NewReadFile(e.Env), call, fmt.Sprintf(`{"absolute_path":%q}`, p))
	res := run(t, tools.NewEdit(e.Env), call, fmt.Sprintf(`{"file_path":%q,"old_string":"var y = z\n","new_string":"var v = x\nvar y = z\n"}`, p))
	if res.Error != nil {
		t.Fatal(res.Error.Message)
	}
	want := "gopls reports 2 new errors after this change:\n" +
		"a.go:3:9: error: undefined: x\n    `var v = x`\n" +
		"b.go:3:9: error (in another file, which uses this one): undefined: f\n    `var w = f()`\n" +
		"1 error was already there before this change."
	if got := res.Text(); !strings.HasSuffix(got, "\n\n"+want) {
		t.Errorf("got\n%s\nwant it to end with\n%s", got, want)
	}
	if len(host.diagQs) != 2 || !host.diagQs[0].Fresh || !host.diagQs[1].Others {
		t.Errorf("queries %+v", host.diagQs)
	}

	// A clean result says so, naming the server.
	host.reports = []codeintel.Report{{Server: "gopls"}}
	res = run(t, tools.NewWriteFile(e.Env), call, fmt.Sprintf(`{"file_path":%q,"content":"package a\n"}`, p))
	if got := res.Text(); !strings.HasSuffix(got, "\n\nNo errors reported by gopls.") {
		t.Errorf("clean: %q", got)
	}
	// A file no server covers gets no verdict.
	host.err = &codeintel.UnavailableError{Message: "none"}
	res = run(t, tools.NewWriteFile(e.Env), call, fmt.Sprintf(`{"file_path":%q,"content":"package a\n\n"}`, p))
	if got := res.Text(); strings.Contains(got, "error") || res.Error != nil {
		t.Errorf("uncovered: %q", got)
	}
}
