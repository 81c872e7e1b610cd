package rpc

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools/codeintel"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// convServer is a server over a workspace rooted at a new folder holding
// files, for the converter's tests.
func convServer(t *testing.T, files map[string]string) (*Server, string) {
	t.Helper()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	for rel, text := range files {
		if err := os.WriteFile(filepath.Join(root, rel), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	ws := workspace.New(workspace.Options{Settings: workspace.SettingsOptions{
		UserDir: filepath.Join(dir, "home"), SystemPath: filepath.Join(dir, "none.json"),
		Getenv: func(string) (string, bool) { return "", false },
	}})
	t.Cleanup(func() { _ = ws.Close() })
	ws.SetRoots([]string{root})
	s := NewServer(Options{Workspace: ws, QwenHome: filepath.Join(dir, "home"), Stderr: io.Discard})
	return s, root
}

func plainURI(p string) string { return "file://" + p }

// Positions go both ways in each encoding, counted on the line's text:
// "é" is two bytes, one UTF-16 unit; "😀" four bytes, two units, one code
// point.
func TestConvPositionsInEachEncoding(t *testing.T) {
	s, root := convServer(t, map[string]string{"u.go": "package u\n\nvar é, x = \"😀\", 1 // x\n"})
	p := filepath.Join(root, "u.go")
	// x after the emoji: `var é, x = "😀", 1 // x`, the second x.
	cases := []struct {
		enc  string
		wire int
	}{{"utf-8", 25}, {"utf-16", 22}, {"utf-32", 21}}
	col := 26 // 1-based byte column of the final "x"
	for _, c := range cases {
		conv := s.newConv(c.enc, "t", plainURI, s.uriToPath)
		w := conv.toWire(p, codeintel.Pos{Line: 3, Col: col})
		if w.Line != 2 || w.Character != c.wire {
			t.Errorf("%s: toWire = %+v, want line 2 character %d", c.enc, w, c.wire)
		}
		if back := conv.fromWire(p, w); back != (codeintel.Pos{Line: 3, Col: col}) {
			t.Errorf("%s: fromWire(%+v) = %+v", c.enc, w, back)
		}
	}
	// Past the line's end is its end; an unknown file keeps the numbers.
	conv := s.newConv("utf-16", "t", plainURI, s.uriToPath)
	if got := conv.fromWire(p, wirePos{Line: 0, Character: 99}); got != (codeintel.Pos{Line: 1, Col: 10}) {
		t.Errorf("past the end: %+v", got)
	}
	if got := conv.fromWire(filepath.Join(root, "none.go"), wirePos{Line: 4, Character: 7}); got != (codeintel.Pos{Line: 5, Col: 8}) {
		t.Errorf("unknown file: %+v", got)
	}
}

// Every shape a server may answer in reads into the same neutral form.
func TestConvAnswerShapes(t *testing.T) {
	s, root := convServer(t, map[string]string{"a.go": "package a\n\nfunc F() {}\n\ntype T struct{ X int }\n"})
	p := filepath.Join(root, "a.go")
	uri := plainURI(p)
	conv := s.newConv("utf-16", "srv", plainURI, s.uriToPath)
	rng := `{"start":{"line":2,"character":5},"end":{"line":2,"character":6}}`
	loc := codeintel.Location{Path: p, Range: codeintel.Range{Start: codeintel.Pos{Line: 3, Col: 6}, End: codeintel.Pos{Line: 3, Col: 7}}}
	for _, raw := range []string{
		`{"uri":"` + uri + `","range":` + rng + `}`,
		`[{"uri":"` + uri + `","range":` + rng + `}]`,
		`[{"targetUri":"` + uri + `","targetRange":{"start":{"line":2,"character":0},"end":{"line":2,"character":11}},"targetSelectionRange":` + rng + `}]`,
		`[{"uri":"untitled:Untitled-1","range":` + rng + `},{"uri":"` + uri + `","range":` + rng + `}]`,
	} {
		a, err := conv.answer(codeintel.Query{Op: codeintel.Definition}, json.RawMessage(raw))
		if err != nil || len(a.Locations) != 1 || a.Locations[0] != loc || a.Server != "srv" {
			t.Errorf("%s: %+v %v", raw, a, err)
		}
	}
	for raw, want := range map[string]string{
		`{"contents":{"kind":"markdown","value":"**F**"}}`:                   "**F**",
		`{"contents":"plain"}`:                                               "plain",
		`{"contents":[{"language":"go","value":"func F()"},"does nothing"]}`: "```go\nfunc F()\n```\n\ndoes nothing",
		`{"contents":{"language":"go","value":"type T struct{ X int }"}}`:    "```go\ntype T struct{ X int }\n```",
	} {
		a, err := conv.answer(codeintel.Query{Op: codeintel.Hover}, json.RawMessage(raw))
		if err != nil || a.Hover != want {
			t.Errorf("hover %s: %q %v", raw, a.Hover, err)
		}
	}
	// DocumentSymbol (nested) and SymbolInformation.
	a, err := conv.answer(codeintel.Query{Op: codeintel.DocumentSymbol, Path: p}, json.RawMessage(
		`[{"name":"T","kind":23,"range":{"start":{"line":4,"character":0},"end":{"line":4,"character":22}},"selectionRange":{"start":{"line":4,"character":5},"end":{"line":4,"character":6}},
		  "children":[{"name":"X","kind":8,"detail":"int","range":{"start":{"line":4,"character":16},"end":{"line":4,"character":21}},"selectionRange":{"start":{"line":4,"character":16},"end":{"line":4,"character":17}}}]}]`))
	if err != nil || len(a.Symbols) != 1 || a.Symbols[0].Kind != "Struct" || len(a.Symbols[0].Children) != 1 ||
		a.Symbols[0].Children[0].Kind != "Field" || a.Symbols[0].Children[0].Selection.Start != (codeintel.Pos{Line: 5, Col: 17}) {
		t.Errorf("document symbols: %+v %v", a.Symbols, err)
	}
	a, err = conv.answer(codeintel.Query{Op: codeintel.WorkspaceSymbol}, json.RawMessage(
		`[{"name":"F","kind":12,"containerName":"a","location":{"uri":"`+uri+`","range":`+rng+`}},{"name":"G","kind":12,"location":{"uri":"`+uri+`"}}]`))
	if err != nil || len(a.Symbols) != 2 || a.Symbols[0].Path != p || a.Symbols[0].Container != "a" || a.Symbols[0].Selection.Start != (codeintel.Pos{Line: 3, Col: 6}) {
		t.Errorf("workspace symbols: %+v %v", a.Symbols, err)
	}
	// Commands and code actions; disabled ones say why.
	a, err = conv.answer(codeintel.Query{Op: codeintel.CodeActions}, json.RawMessage(
		`[{"title":"Run","command":"x.run"},{"title":"Fix","kind":"quickfix","isPreferred":true,"edit":{}},{"title":"Extract","kind":"refactor.extract","disabled":{"reason":"select an expression"}}]`))
	want := []codeintel.Action{{Title: "Run"}, {Title: "Fix", Kind: "quickfix", Preferred: true}, {Title: "Extract", Kind: "refactor.extract", Disabled: "select an expression"}}
	if err != nil || len(a.Actions) != 3 || a.Actions[0] != want[0] || a.Actions[1] != want[1] || a.Actions[2] != want[2] {
		t.Errorf("code actions: %+v %v", a.Actions, err)
	}
	// Outgoing calls: the ranges lie in the asked item's file.
	item := codeintel.CallItem{Name: "F", Kind: "Function", Path: p, Range: loc.Range, Selection: loc.Range, Data: json.RawMessage(`{"id":3}`)}
	a, err = conv.answer(codeintel.Query{Op: codeintel.OutgoingCalls, Item: &item}, json.RawMessage(
		`[{"to":{"name":"G","kind":12,"uri":"`+uri+`","range":`+rng+`,"selectionRange":`+rng+`},"fromRanges":[`+rng+`]}]`))
	if err != nil || len(a.Calls) != 1 || a.Calls[0].Item.Name != "G" || a.Calls[0].SitesPath != p || len(a.Calls[0].Sites) != 1 {
		t.Errorf("outgoing calls: %+v %v", a.Calls, err)
	}
	method, params, _ := conv.request(codeintel.Query{Op: codeintel.OutgoingCalls, Item: &item})
	b, _ := json.Marshal(params)
	if method != "callHierarchy/outgoingCalls" || string(b) != `{"item":{"data":{"id":3},"kind":12,"name":"F","range":`+rng+`,"selectionRange":`+rng+`,"uri":"`+uri+`"}}` {
		t.Errorf("outgoing calls request: %s %s", method, b)
	}
	// A malformed answer is an error, not an empty success.
	if _, err := conv.answer(codeintel.Query{Op: codeintel.References}, json.RawMessage(`{"uri": 5}`)); err == nil {
		t.Errorf("a malformed answer was accepted")
	}
}
