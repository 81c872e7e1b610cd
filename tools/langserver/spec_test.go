package langserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestParseSettings(t *testing.T) {
	specs, err := ParseSettings([]byte(`{
		"enabled": true,
		"allowed": [],
		"go": {"command": "/opt/go/bin/gopls", "args": ["serve"], "env": {"GOFLAGS": "-tags=x", "N": 3},
			"settings": {"gopls": {"staticcheck": true}}, "startupTimeout": 5000, "trustRequired": false},
		"zig": {"command": "zls", "extensionToLanguage": {"zig": "zig", ".ZON": "zig"}, "rootMarkers": ["build.zig"],
			"initializationOptions": {"enable_snippets": false}}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 {
		t.Fatalf("%d specs, want 2: %+v", len(specs), specs)
	}
	g, z := specs[0], specs[1]
	if g.Name != "gopls" || !reflect.DeepEqual(g.Command, []string{"/opt/go/bin/gopls", "serve"}) ||
		!reflect.DeepEqual(g.Env, []string{"GOFLAGS=-tags=x", "N=3"}) || string(g.Settings) != `{"gopls": {"staticcheck": true}}` {
		t.Errorf("go entry: %+v", g)
	}
	if lang, ok := g.Covers("/x/main.go"); !ok || lang != "go" {
		t.Errorf("go entry covers main.go: %q %v (extensions from the built-ins)", lang, ok)
	}
	if z.Name != "zls" || !reflect.DeepEqual(z.Extensions, map[string]string{".zig": "zig", ".zon": "zig"}) ||
		!reflect.DeepEqual(z.RootMarkers, []string{"build.zig"}) || string(z.InitializationOptions) != `{"enable_snippets": false}` {
		t.Errorf("zig entry: %+v", z)
	}
	if lang, ok := z.Covers("/x/Build.ZON"); !ok || lang != "zig" {
		t.Errorf("extensions match without regard to case: %q %v", lang, ok)
	}

	// The settings' gopls replaces the built-in one, ahead of the rest.
	all := Specs(specs)
	if all[0].Name != "gopls" || all[0].Command[0] != "/opt/go/bin/gopls" {
		t.Errorf("Specs: %v first", all[0])
	}
	n := 0
	for _, s := range all {
		if s.Name == "gopls" {
			n++
		}
	}
	if n != 1 || len(all) != len(Builtin())+1 {
		t.Errorf("Specs has %d gopls and %d servers", n, len(all))
	}

	for _, c := range []struct{ in, want string }{
		{`[]`, "not an object"},
		{`{"go": "gopls"}`, `"go": must be an object`},
		{`{"go": {"args": ["serve"]}}`, `"go": command is missing`},
		{`{"cobol": {"command": "cobol-ls"}}`, `extensionToLanguage is missing, and no file extensions are known for language "cobol"`},
		{`{"x": {"command": "x", "transport": "tcp", "extensionToLanguage": {".x": "x"}}}`, `transport "tcp" is not supported`},
		{`{"x": {"command": "x", "settings": [1], "extensionToLanguage": {".x": "x"}}}`, "settings must be an object"},
		{`{"x": {"command": "x", "env": {"A": {}}, "extensionToLanguage": {".x": "x"}}}`, "env A must be"},
		{`{"x": {"command": "x", "extensionToLanguage": {".": "x"}}}`, "empty extension"},
	} {
		_, err := ParseSettings([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "lsp settings: ") {
			t.Errorf("ParseSettings(%s) = %v, want an error with %q", c.in, err, c.want)
		}
	}
	if specs, err := ParseSettings([]byte("null")); err != nil || specs != nil {
		t.Errorf("null settings: %v %v", specs, err)
	}
}

func TestBuiltinCovers(t *testing.T) {
	for _, c := range []struct{ file, server, lang string }{
		{"main.go", "gopls", "go"},
		{"app.tsx", "typescript-language-server", "typescriptreact"},
		{"x.MJS", "typescript-language-server", "javascript"},
		{"m.py", "pyright", "python"},
		{"lib.rs", "rust-analyzer", "rust"},
		{"x.hpp", "clangd", "cpp"},
		{"x.c", "clangd", "c"},
	} {
		found := false
		for _, s := range Builtin() {
			if lang, ok := s.Covers("/p/" + c.file); ok {
				if s.Name != c.server || lang != c.lang {
					t.Errorf("%s: first covered by %s as %s, want %s as %s", c.file, s.Name, lang, c.server, c.lang)
				}
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s: no built-in server", c.file)
		}
	}
}

// The first installed server covering a file is used: pylsp when there
// is no pyright.
func TestLookupAndPick(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("uses sh as the installed server")
	}
	specs := []Spec{
		{Name: "pyright", Command: []string{"qwen-ls-test-no-pyright"}, Extensions: pyExts},
		{Name: "pylsp", Command: []string{"sh"}, Extensions: pyExts},
	}
	found := Lookup(specs, "/p/m.py")
	if len(found) != 2 || found[0].Path != "" || found[0].Err == nil || found[1].Path == "" {
		t.Fatalf("Lookup: %+v", found)
	}
	m := New(Options{Specs: specs})
	defer m.Close()
	if s, err := m.pick("/p/m.py"); err != nil || s.Name != "pylsp" {
		t.Errorf("pick: %v %v", s.Name, err)
	}
}

func TestRootFor(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "svc", "api")
	if err := os.MkdirAll(filepath.Join(sub, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(root, "go.work"), filepath.Join(sub, "go.mod"), filepath.Join(root, "svc", "go.mod")} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gopls := Builtin()[0]
	file := filepath.Join(sub, "pkg", "x.go")
	if got := rootFor(gopls, root, file); got != root {
		t.Errorf("with a go.work: %s, want %s", got, root)
	}
	if got := rootFor(gopls, filepath.Join(root, "svc"), file); got != sub {
		t.Errorf("below the go.work: %s, want the nearest go.mod %s", got, sub)
	}
	if got := rootFor(Spec{RootMarkers: []string{"nothing"}}, root, file); got != root {
		t.Errorf("no marker: %s, want the root", got)
	}
}

func TestLookupSection(t *testing.T) {
	settings := json.RawMessage(`{"python": {"analysis": {"typeCheckingMode": "strict"}}}`)
	for _, c := range []struct {
		section string
		want    any
	}{
		{"python.analysis", map[string]any{"typeCheckingMode": "strict"}},
		{"python.analysis.typeCheckingMode", "strict"},
		{"python.other", nil},
		{"gopls", nil},
		{"", map[string]any{"python": map[string]any{"analysis": map[string]any{"typeCheckingMode": "strict"}}}},
	} {
		if got := lookupSection(settings, c.section); !reflect.DeepEqual(got, c.want) {
			t.Errorf("section %q: %v, want %v", c.section, got, c.want)
		}
	}
	if got := lookupSection(nil, "gopls"); got != nil {
		t.Errorf("no settings: %v", got)
	}
}

func TestURIs(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a dir", "ü.go")
	u := fileURI(p)
	if !strings.HasPrefix(u, "file:///") || strings.Contains(u, " ") {
		t.Errorf("fileURI(%q) = %q", p, u)
	}
	if got := docKey(u); got != p {
		t.Errorf("docKey(%q) = %q, want %q", u, got, p)
	}
	if got := docKey(p); got != p {
		t.Errorf("docKey(path) = %q", got)
	}
}
