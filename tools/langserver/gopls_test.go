package langserver

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if root := os.Getenv("QWEN_LANGSERVER_HELPER"); root != "" {
		helperMain(root)
		return
	}
	goleak.VerifyTestMain(m)
}

// goplsPath is the gopls the tests use: $QWEN_TEST_GOPLS, else gopls on
// PATH (CI installs v0.23.0); the test is skipped without one.
func goplsPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("QWEN_TEST_GOPLS"); p != "" {
		return p
	}
	p, err := exec.LookPath("gopls")
	if err != nil {
		t.Skip("gopls is not installed: GOBIN=DIR go install golang.org/x/tools/gopls@v0.23.0 and put DIR on PATH, or set QWEN_TEST_GOPLS")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("gopls needs go on PATH")
	}
	return p
}

// goEnv is the servers' environment in tests: no network, no toolchain
// download, the module as it is, and the build and gopls caches shared
// between tests (a throwaway HOME would start every test cold).
func goEnv(t testing.TB) []string {
	t.Helper()
	env := os.Environ()
	for _, k := range []string{"GOCACHE", "GOMODCACHE"} {
		if os.Getenv(k) != "" {
			continue
		}
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", k, err)
		}
		env = append(env, k+"="+strings.TrimSpace(string(out)))
	}
	cache := filepath.Join(os.TempDir(), "qwen-ls-test-gopls-cache")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	return append(env, "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local", "GOWORK=off", "GOPLSCACHE="+cache)
}

const (
	goMod = "module example.com/m\n\ngo 1.22\n"
	aGo   = `package m

// Add returns the sum of a and b.
func Add(a, b int) int { return a + b }

// Point is a place on the plane.
type Point struct {
	X, Y int
}
`
	bGo = `package m

func Use() int { return Add(1, 2) + Add(3, 4) }
`
)

// module writes the small module of the tests and returns its folder.
func module(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{"go.mod": goMod, "a.go": aGo, "b.go": bGo} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// gopls resolves symlinks (macOS's /var → /private/var).
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

// goplsManager is a Manager with the test's gopls only.
func goplsManager(t testing.TB, opts Options) *Manager {
	t.Helper()
	gopls := goplsPath(t)
	spec := Builtin()[0]
	spec.Command = []string{gopls}
	opts.Specs = []Spec{spec}
	opts.Env = goEnv(t)
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	m := New(opts)
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// pos is the LSP position of the n-th (from 0) occurrence of needle in
// text, in UTF-8 or UTF-16 (the same here: the text is ASCII).
func pos(t testing.TB, text, needle string, n int) map[string]int {
	t.Helper()
	off := -1
	for i := 0; i <= n; i++ {
		j := strings.Index(text[off+1:], needle)
		if j < 0 {
			t.Fatalf("%q: occurrence %d not found", needle, n)
		}
		off += 1 + j
	}
	line := strings.Count(text[:off], "\n")
	col := off - (strings.LastIndex(text[:off], "\n") + 1)
	return map[string]int{"line": line, "character": col}
}

func at(path string, p map[string]int) map[string]any {
	return map[string]any{"textDocument": map[string]string{"uri": fileURI(path)}, "position": p}
}

type location struct {
	URI   string `json:"uri"`
	Range struct {
		Start struct{ Line, Character int } `json:"start"`
	} `json:"range"`
}

func decode[T any](t testing.TB, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Definition, references, hover, document and workspace symbols, through
// a gopls started for the module.
func TestGoplsNavigation(t *testing.T) {
	root := module(t)
	m := goplsManager(t, Options{})
	a, b := filepath.Join(root, "a.go"), filepath.Join(root, "b.go")
	ctx := testCtx(t)
	s, err := m.For(ctx, root, b)
	if err != nil {
		t.Fatal(err)
	}
	if enc := s.PositionEncoding(); enc != "utf-8" && enc != "utf-16" {
		t.Errorf("position encoding %q", enc)
	}
	if s.Name() != "gopls" || s.Root() != root {
		t.Errorf("server %s for %s, want gopls for %s", s.Name(), s.Root(), root)
	}

	raw, err := s.Call(ctx, "textDocument/definition", at(b, pos(t, bGo, "Add", 0)))
	if err != nil {
		t.Fatal(err)
	}
	defs := decode[[]location](t, raw)
	if len(defs) != 1 || docKey(defs[0].URI) != a || defs[0].Range.Start.Line != 3 {
		t.Errorf("definition of Add: %s, want a.go line 3", raw)
	}

	// a.go is opened from the disk by asking about it.
	if _, err := m.For(ctx, root, a); err != nil {
		t.Fatal(err)
	}
	params := at(a, pos(t, aGo, "Add", 1))
	params["context"] = map[string]bool{"includeDeclaration": true}
	raw, err = s.Call(ctx, "textDocument/references", params)
	if err != nil {
		t.Fatal(err)
	}
	if refs := decode[[]location](t, raw); len(refs) != 3 {
		t.Errorf("references of Add: %s, want the declaration and two uses", raw)
	}

	raw, err = s.Call(ctx, "textDocument/hover", at(a, pos(t, aGo, "Add", 1)))
	if err != nil {
		t.Fatal(err)
	}
	hover := decode[struct {
		Contents struct{ Value string } `json:"contents"`
	}](t, raw)
	if !strings.Contains(hover.Contents.Value, "func Add(a int, b int) int") && !strings.Contains(hover.Contents.Value, "func Add(a, b int) int") ||
		!strings.Contains(hover.Contents.Value, "returns the sum") {
		t.Errorf("hover of Add: %s", raw)
	}

	raw, err = s.Call(ctx, "textDocument/documentSymbol", map[string]any{"textDocument": map[string]string{"uri": fileURI(a)}})
	if err != nil {
		t.Fatal(err)
	}
	type symbol struct {
		Name     string   `json:"name"`
		Kind     int      `json:"kind"`
		Children []symbol `json:"children"`
	}
	syms := decode[[]symbol](t, raw)
	if len(syms) != 2 || syms[0].Name != "Add" || syms[1].Name != "Point" || len(syms[1].Children) != 2 {
		t.Errorf("document symbols of a.go (hierarchical): %s", raw)
	}

	raw, err = s.Call(ctx, "workspace/symbol", map[string]string{"query": "Point"})
	if err != nil {
		t.Fatal(err)
	}
	wsyms := decode[[]struct {
		Name     string   `json:"name"`
		Location location `json:"location"`
	}](t, raw)
	found := false
	for _, w := range wsyms {
		found = found || (w.Name == "Point" && docKey(w.Location.URI) == a)
	}
	if !found {
		t.Errorf("workspace symbol Point: %s", raw)
	}
}

// waitFor waits until the diagnostics of path for version or later hold
// want (gopls may publish a version more than once as it learns more).
func waitFor(t testing.TB, ctx context.Context, s *Server, path string, version int32, want string) []diagnostic {
	t.Helper()
	for {
		p, fresh, err := s.WaitDiagnostics(ctx, path, version, time.Minute)
		if err != nil {
			t.Fatalf("diagnostics of %s v%d: %v", filepath.Base(path), version, err)
		}
		if !fresh {
			t.Fatalf("no diagnostics of %s v%d within a minute; last %d %s", filepath.Base(path), version, p.Version, p.Diagnostics)
		}
		ds := decode[[]diagnostic](t, p.Diagnostics)
		if want == "" && len(ds) == 0 {
			return ds
		}
		for _, d := range ds {
			if want != "" && strings.Contains(d.Message, want) {
				return ds
			}
		}
		t.Logf("v%d published without %q: %s; waiting for the next", p.Version, want, p.Diagnostics)
		// Not yet: wait for the next publication.
		if p.Version == 0 {
			t.Fatalf("gopls sent no version")
		}
		version = p.Version
		waitNext(t, ctx, s, path, p)
	}
}

// waitNext returns once s published for path again after p.
func waitNext(t testing.TB, ctx context.Context, s *Server, path string, p Published) {
	t.Helper()
	key := docKey(path)
	for {
		s.mu.Lock()
		d := s.diags[key]
		ch := s.changed
		s.mu.Unlock()
		if d != nil && (d.Version != p.Version || string(d.Diagnostics) != string(p.Diagnostics)) {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("waiting for gopls to publish %s again: %v", filepath.Base(path), ctx.Err())
		}
	}
}

type diagnostic struct {
	Message  string `json:"message"`
	Severity int    `json:"severity"`
}

// A change that breaks the build, sent as unsaved text, gets the
// compiler's message for that version; the fix clears it.
func TestGoplsDiagnosticsAfterBreakingChange(t *testing.T) {
	root := module(t)
	m := goplsManager(t, Options{})
	b := filepath.Join(root, "b.go")
	ctx := testCtx(t)
	v := m.DidOpen(b, bGo)
	s, err := m.For(ctx, root, b)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, s, b, v, "")

	v2 := m.DidChange(b, strings.Replace(bGo, "Add(3, 4)", "Sub(3, 4)", 1))
	if v2 <= v {
		t.Fatalf("version %d after %d", v2, v)
	}
	ds := waitFor(t, ctx, s, fileURI(b), v2, "undefined: Sub")
	if ds[0].Severity != 1 {
		t.Errorf("undefined: Sub has severity %d, want 1 (error)", ds[0].Severity)
	}
	if p, ok := s.Diagnostics(b); !ok || p.Version < v2 {
		t.Errorf("Diagnostics(b.go) = %+v, %v", p, ok)
	}
	data, _ := os.ReadFile(b)
	if string(data) != bGo {
		t.Errorf("the unsaved text reached the disk")
	}

	v3 := m.DidChange(b, bGo)
	waitFor(t, ctx, s, b, v3, "")
}

// A definition that exists only in an unsaved buffer is found.
func TestGoplsDefinitionInUnsavedText(t *testing.T) {
	root := module(t)
	m := goplsManager(t, Options{})
	a, b := filepath.Join(root, "a.go"), filepath.Join(root, "b.go")
	ctx := testCtx(t)
	aText := aGo + "\n// Mul is only in the editor.\nfunc Mul(a, b int) int { return a * b }\n"
	bText := strings.Replace(bGo, "Add(3, 4)", "Mul(3, 4)", 1)
	m.DidOpen(a, aGo)
	m.DidOpen(b, bGo)
	s, err := m.For(ctx, root, b)
	if err != nil {
		t.Fatal(err)
	}
	m.DidChange(a, aText)
	m.DidChange(b, bText)
	raw, err := s.Call(ctx, "textDocument/definition", at(b, pos(t, bText, "Mul", 0)))
	if err != nil {
		t.Fatal(err)
	}
	defs := decode[[]location](t, raw)
	want := pos(t, aText, "func Mul", 0)["line"]
	if len(defs) != 1 || docKey(defs[0].URI) != a || defs[0].Range.Start.Line != want {
		t.Errorf("definition of Mul: %s, want a.go line %d", raw, want)
	}
	if data, _ := os.ReadFile(a); strings.Contains(string(data), "Mul") {
		t.Errorf("Mul reached the disk")
	}
}

// A file written on disk (not open in the editor) is read again.
func TestGoplsWroteRereadsTheDisk(t *testing.T) {
	root := module(t)
	m := goplsManager(t, Options{})
	b := filepath.Join(root, "b.go")
	ctx := testCtx(t)
	s, err := m.For(ctx, root, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte(strings.Replace(bGo, "Add(3, 4)", "Nope(3, 4)", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	v := m.Wrote(b)
	if v < 2 {
		t.Fatalf("Wrote gave version %d, want the document read again", v)
	}
	waitFor(t, ctx, s, b, v, "undefined: Nope")

	// A change nobody reported is picked up when the file is asked about.
	if err := os.WriteFile(b, []byte(bGo), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.For(ctx, root, b); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, s, b, v+1, "")
}

// Callers that ask at once share one start: one server, one process.
func TestConcurrentForSharesOneStart(t *testing.T) {
	root := module(t)
	m := goplsManager(t, Options{})
	ctx := testCtx(t)
	var wg sync.WaitGroup
	got := make([]*Server, 4)
	errs := make([]error, 4)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := "a.go"
			if i%2 == 1 {
				name = "b.go"
			}
			got[i], errs[i] = m.For(ctx, root, filepath.Join(root, name))
		}()
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if got[i] != got[0] {
			t.Errorf("caller %d got another server", i)
		}
	}
	if n := len(m.Servers()); n != 1 {
		t.Errorf("%d servers running, want 1", n)
	}
}
