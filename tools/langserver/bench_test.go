package langserver

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// goToDefinition through a started, warm gopls: the cost of the lsp
// tool's commonest question when qwen-ls answers it itself.
func BenchmarkDefinitionWarm(b *testing.B) {
	root := module(b)
	m := goplsManager(b, Options{Logf: func(string, ...any) {}})
	path := filepath.Join(root, "b.go")
	ctx := testCtx(b)
	s, err := m.For(ctx, root, path)
	if err != nil {
		b.Fatal(err)
	}
	params := at(path, pos(b, bGo, "Add", 0))
	if _, err := s.Call(ctx, "textDocument/definition", params); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.Call(ctx, "textDocument/definition", params); err != nil {
			b.Fatal(err)
		}
	}
}

// From a didChange to gopls's diagnostics for that version, alternating
// a change that breaks the build with one that mends it: the extra time
// an edit's result waits for the compiler's verdict.
func BenchmarkDiagnosticsAfterChange(b *testing.B) {
	root := module(b)
	m := goplsManager(b, Options{Logf: func(string, ...any) {}})
	path := filepath.Join(root, "b.go")
	ctx := testCtx(b)
	v := m.DidOpen(path, bGo)
	s, err := m.For(ctx, root, path)
	if err != nil {
		b.Fatal(err)
	}
	waitFor(b, ctx, s, path, v, "")
	broken := strings.Replace(bGo, "Add(3, 4)", "Sub(3, 4)", 1)
	i := 0
	for b.Loop() {
		text, want := broken, "undefined: Sub"
		if i%2 == 1 {
			text, want = bGo, ""
		}
		i++
		v := m.DidChange(path, text)
		p, fresh, err := s.WaitDiagnostics(ctx, path, v, time.Minute)
		if err != nil || !fresh {
			b.Fatalf("diagnostics of v%d: fresh %v, %v", v, fresh, err)
		}
		if got := string(p.Diagnostics); (want == "") != (got == "[]") || !strings.Contains(got, want) {
			b.Fatalf("v%d: %s, want %q", v, got, want)
		}
	}
}
