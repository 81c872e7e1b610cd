package tools

// Internal tests of grep_search: the literal prefilter and the line scan
// are unexported, so these tests live inside the package and build their
// workspace themselves (the shared helpers of env_test.go belong to
// tools_test).

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// grepTestEnv creates files (relative path → content) under a fresh root
// W, then a workspace on it with settings as the editor's layer. With
// indexed, the workspace is started and the test waits until its index is
// built, so searches read the index; otherwise the index is never ready
// and searches walk the disk.
func grepTestEnv(t *testing.T, files map[string]string, settings map[string]any, indexed bool) (*Env, string) {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "W")
	for rel, content := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	root, _ = filepath.EvalSymlinks(root)
	home := filepath.Join(base, "home", ".qwen")
	ws := workspace.New(workspace.Options{
		Roots: []string{root},
		Settings: workspace.SettingsOptions{
			UserDir:    home,
			SystemPath: filepath.Join(base, "etc", "settings.json"),
			Getenv:     func(string) (string, bool) { return "", false },
		},
	})
	if settings != nil {
		ws.Settings.SetEditorLayer(settings)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		_ = ws.Close()
	})
	if indexed {
		ws.Start(ctx)
		<-ws.Index.Ready()
	}
	return &Env{Workspace: ws, QwenHome: home}, root
}

// grepCall prepares and runs one grep_search call.
func grepCall(t *testing.T, env *Env, ctx context.Context, raw string) (Result, error) {
	t.Helper()
	g := NewGrepSearch(env)
	params, terr := PrepareArgs(g, raw)
	if terr != nil {
		return Result{Error: terr}, nil
	}
	return Guard(ctx, g, &Call{}, params, nil)
}

// grepOK runs a call that must succeed and returns its text, in both
// workspace modes (index and disk walk), failing when they differ.
func grepBoth(t *testing.T, files map[string]string, settings map[string]any, raw string) string {
	t.Helper()
	var texts [2]string
	for i, indexed := range []bool{false, true} {
		env, root := grepTestEnv(t, files, settings, indexed)
		res, err := grepCall(t, env, context.Background(), strings.ReplaceAll(raw, "W/", root+"/"))
		if err != nil {
			t.Fatal(err)
		}
		if res.Error != nil {
			t.Fatalf("%s: %s", res.Error.Type, res.Error.Message)
		}
		texts[i] = strings.ReplaceAll(res.Text(), root, "W")
	}
	if texts[0] != texts[1] {
		t.Fatalf("the disk walk and the index disagree:\nwalk:  %q\nindex: %q", texts[0], texts[1])
	}
	return texts[0]
}

func grepArgs(m map[string]any) string {
	var b strings.Builder
	b.WriteByte('{')
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:", k)
		switch v := m[k].(type) {
		case string:
			fmt.Fprintf(&b, "%q", v)
		default:
			fmt.Fprintf(&b, "%v", v)
		}
	}
	b.WriteByte('}')
	return b.String()
}

func TestGrepLiteralExtraction(t *testing.T) {
	type lit struct {
		text string
		fold bool
	}
	cases := []struct {
		pattern string
		best    *lit
		others  []lit
		whole   bool
	}{
		{`func \w+Context\(`, &lit{"context(", true}, []lit{{"func ", true}}, false},
		{`WORLD`, &lit{"world", true}, nil, true},
		{`(?-i)Hello`, &lit{"Hello", false}, nil, true},
		{`(hello) world`, &lit{"hello world", true}, nil, false},
		{`(abc)+def`, &lit{"abc", true}, []lit{{"def", true}}, false},
		{`x?yz`, &lit{"yz", true}, nil, false},
		{`a{3}bc`, &lit{"aaabc", true}, nil, false},
		// k and s fold to the Kelvin sign and the long s: they split.
		{`kelvin`, &lit{"elvin", true}, nil, false},
		{`(?-i)kelvin`, &lit{"kelvin", false}, nil, true},
		{`Straße`, &lit{"tra", true}, []lit{{"e", true}}, false},
		{`foo|bar`, nil, nil, false},
		{`(foo)?`, nil, nil, false},
		{`\d+`, nil, nil, false},
		{`^$`, nil, nil, false},
		{`ü+`, nil, nil, false},
	}
	for _, c := range cases {
		m, terr := compileGrepPattern(c.pattern)
		if terr != nil {
			t.Fatalf("%s: %s", c.pattern, terr.Message)
		}
		describe := func(l *grepLit) lit {
			fold := slices.ContainsFunc(l.mask, func(b byte) bool { return b != 0 })
			return lit{string(l.text), fold}
		}
		switch {
		case c.best == nil && m.lit != nil:
			t.Errorf("%s: want no literal, got %q", c.pattern, m.lit.text)
		case c.best != nil && m.lit == nil:
			t.Errorf("%s: want %q, got no literal", c.pattern, c.best.text)
		case c.best != nil && describe(m.lit) != *c.best:
			t.Errorf("%s: best literal %+v, want %+v", c.pattern, describe(m.lit), *c.best)
		}
		var others []lit
		for _, o := range m.others {
			others = append(others, describe(o))
		}
		if !slices.Equal(others, c.others) {
			t.Errorf("%s: other literals %+v, want %+v", c.pattern, others, c.others)
		}
		if m.whole != c.whole {
			t.Errorf("%s: whole = %v, want %v", c.pattern, m.whole, c.whole)
		}
	}
}

func TestGrepRareByteIsTheRarest(t *testing.T) {
	l := newGrepLit([]byte("Context("), true)
	if got := l.text[l.rare]; got != '(' {
		t.Errorf("rare byte of context( is %q, want '(' (one case, rarer than x and X together)", got)
	}
	l = newGrepLit([]byte("qux"), true)
	if l.b1 != 'q' || l.b2 != 'Q' {
		t.Errorf("rare byte of qux: %q/%q, want q/Q", l.b1, l.b2)
	}
}

// TestGrepScanAgreesWithRegexp checks the prefiltered scan against the
// plain definition: every line, without its \r, matched by the regexp.
func TestGrepScanAgreesWithRegexp(t *testing.T) {
	words := []string{"func", "Context(", "CONTEXT(", "context", "(", "x", "X", "hello", "World", "world",
		"\u212Aelvin", "kelvin", "KELVIN", "ſtop", "stop", "Straße", "ü", "\t", " ", "\r", "", "needle", "Needle", "nEEdle"}
	rng := rand.New(rand.NewPCG(1, 2))
	var text strings.Builder
	for range 3000 {
		for range rng.IntN(8) {
			text.WriteString(words[rng.IntN(len(words))])
			if rng.IntN(3) == 0 {
				text.WriteByte(' ')
			}
		}
		if rng.IntN(10) == 0 {
			text.WriteString("\r\n")
		} else {
			text.WriteByte('\n')
		}
	}
	text.WriteString("needle without a final newline")
	data := []byte(text.String())

	patterns := []string{`func \w+Context\(`, `context\(`, `WORLD`, `(?-i)World`, `kelvin`, `stop`, `straße`,
		`needle`, `^needle`, `needle$`, `^$`, `hello.*world`, `(x|X)+`, `\bx\b`, `ü`, `\(`, `(?-i)Context\(`,
		`^\s+$`, `e\s*$`}
	for _, p := range patterns {
		m, terr := compileGrepPattern(p)
		if terr != nil {
			t.Fatalf("%s: %s", p, terr.Message)
		}
		var want []string
		for i, line := range strings.Split(text.String(), "\n") {
			line = strings.TrimSuffix(line, "\r")
			if m.re.MatchString(line) {
				want = append(want, fmt.Sprintf("%d:%s", i+1, line))
			}
		}
		var got []string
		m.scan(data, func(n int, line []byte) { got = append(got, fmt.Sprintf("%d:%s", n, line)) })
		if !slices.Equal(got, want) {
			t.Errorf("%s: %d hits, want %d; first difference at %d", p, len(got), len(want), firstDiff(got, want))
		}
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestGrepLiteralIndex(t *testing.T) {
	l := newGrepLit([]byte("ab("), true)
	data := []byte("xx aB( Ab ( AB( ab(")
	var got []int
	cur := grepCursor{-1, -1}
	for from := 0; ; {
		i := l.index(data, from, &cur)
		if i < 0 {
			break
		}
		got = append(got, i)
		from = i + 1
	}
	if want := []int{3, 12, 16}; !slices.Equal(got, want) {
		t.Errorf("occurrences %v, want %v", got, want)
	}
	if i := l.index([]byte("ab"), 0, &grepCursor{-1, -1}); i != -1 {
		t.Errorf("a text shorter than the literal gave %d", i)
	}
}

func TestGrepUsesLookaround(t *testing.T) {
	for p, want := range map[string]bool{
		`foo(?=bar)`: true, `(?!x)`: true, `(?<=a)b`: true, `(?<!a)b`: true, `(a)\1`: true, `\9`: true,
		`\\1`: false, `a(?:b)`: false, `(?i)x`: false, `\d`: false, `(?P<n>x)`: false,
	} {
		if got := grepUsesLookaround(p); got != want {
			t.Errorf("%s: %v, want %v", p, got, want)
		}
	}
}

func TestGrepSkipsFileByName(t *testing.T) {
	cases := []struct {
		name         string
		buffer       bool
		skip, sniffs bool
	}{
		{"a.go", false, false, false},
		{"a.TS", false, false, false},
		{"logo.svg", false, false, false},
		{"i.png", false, true, false},
		{"i.png", true, true, false},
		{"doc.pdf", false, true, false},
		{"lib.so", false, true, false},
		{"lib.so", true, false, false}, // an open buffer of a binary name is text
		{"Makefile", false, false, false},
		{"blob", false, false, true},
		{"blob", true, false, false},
		{"x.golden", false, false, false},
		{"x.weird", false, false, true},
	}
	for _, c := range cases {
		skip, sniff := grepSkipsFile(c.name, c.buffer)
		if skip != c.skip || sniff != c.sniffs {
			t.Errorf("%s (buffer %v): skip %v sniff %v, want %v %v", c.name, c.buffer, skip, sniff, c.skip, c.sniffs)
		}
	}
}

func TestGrepLooksBinary(t *testing.T) {
	cases := map[string]bool{
		"":                                 false,
		"plain text\n":                     false,
		"has a \x00 byte":                  true,
		"\xFF\xFEh\x00i\x00":               false, // UTF-16 with a BOM is text
		"\x01\x02\x03\x04abc":              true,  // over 30 % control bytes
		"\x01abcdefghijklmnopqrstu":        false,
		strings.Repeat("a", 5000) + "\x00": false, // past the sniffed head
	}
	for in, want := range cases {
		if got := grepLooksBinary([]byte(in)); got != want {
			t.Errorf("%q: %v, want %v", in[:min(len(in), 20)], got, want)
		}
	}
}

func TestGrepValidation(t *testing.T) {
	env, root := grepTestEnv(t, map[string]string{"f.txt": "x\n"}, nil, false)
	cases := []struct {
		raw  string
		typ  ErrorType
		want string
	}{
		{`{"pattern":"  "}`, ErrorInvalidToolParams, `Argument "pattern" must not be empty.`},
		{`{"pattern":"foo("}`, ErrorInvalidToolParams,
			"\"foo(\" is not a valid regular expression (error parsing regexp: missing closing ): `foo(`)."},
		{`{"pattern":"(a)\\1"}`, ErrorInvalidToolParams,
			"\"(a)\\1\" is not a valid regular expression (error parsing regexp: invalid escape sequence: `\\1`)." + grepLookaroundHint},
		{`{"pattern":"x","glob":"*.{go"}`, ErrorInvalidToolParams, `"*.{go" is not a valid glob pattern.`},
		{grepArgs(map[string]any{"pattern": "x", "path": root + "/nope"}), errorSearchPathNotFound, root + "/nope does not exist."},
		{`{"pattern":"x","path":"sub"}`, errorSearchPathNotFound, root + "/sub does not exist."},
		{`{"pattern":"x","path":"../"}`, errorPathNotInWorkspace,
			"Path is outside the workspace: " + filepath.Dir(root) + ". Tools may only access files inside the workspace roots: " + root + "."},
		{`{"pattern":"x","path":"/"}`, errorPathNotInWorkspace,
			"Path is outside the workspace: /. Tools may only access files inside the workspace roots: " + root + "."},
		{`{"pattern":"x","limit":0}`, ErrorInvalidToolParams, "params/limit must be >= 1"},
	}
	for _, c := range cases {
		res, err := grepCall(t, env, context.Background(), c.raw)
		if err != nil {
			t.Fatal(err)
		}
		if res.Error == nil {
			t.Errorf("%s: no error, got %q", c.raw, res.Text())
			continue
		}
		if res.Error.Type != c.typ || res.Error.Message != c.want {
			t.Errorf("%s:\ngot  %s %q\nwant %s %q", c.raw, res.Error.Type, res.Error.Message, c.typ, c.want)
		}
	}
}

func TestGrepDescribe(t *testing.T) {
	env, root := grepTestEnv(t, nil, nil, false)
	g := NewGrepSearch(env)
	got := g.Describe(map[string]any{"pattern": `a\(b`, "path": root + "/src", "glob": "*.go"})
	if want := `'a\(b' in path 'src' (filter: '*.go')`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := g.Describe(map[string]any{"pattern": "x"}); got != "'x'" {
		t.Errorf("got %q", got)
	}
	if g.Name() != "grep_search" || g.DisplayName() != "Grep" || g.Kind() != KindSearch ||
		!slices.Equal(g.Aliases(), []string{"search_file_content"}) {
		t.Errorf("static description is wrong")
	}
}

func TestGrepPathAndGlob(t *testing.T) {
	files := map[string]string{
		"a.go":          "package a // needle\n",
		"a.txt":         "needle in text\n",
		"sub/b.go":      "needle\n",
		"sub/deep/c.go": "Needle\n",
		".hidden.go":    "needle\n",
	}
	got := grepBoth(t, files, nil, `{"pattern":"needle","glob":"*.go"}`)
	want := "4 matching lines for \"needle\" in the workspace (files matching \"*.go\"):\n---\n" +
		"File: .hidden.go\nL1: needle\n---\nFile: a.go\nL1: package a // needle\n---\n" +
		"File: sub/b.go\nL1: needle\n---\nFile: sub/deep/c.go\nL1: Needle\n---"
	if got != want {
		t.Errorf("glob *.go:\ngot  %q\nwant %q", got, want)
	}
	got = grepBoth(t, files, nil, `{"pattern":"needle","path":"W/sub","glob":"deep/*.go"}`)
	want = "1 matching line for \"needle\" under W/sub (files matching \"deep/*.go\"):\n---\nFile: deep/c.go\nL1: Needle\n---"
	if got != want {
		t.Errorf("relative glob:\ngot  %q\nwant %q", got, want)
	}
	got = grepBoth(t, files, nil, `{"pattern":"(?-i)Needle","path":"W/sub/deep/c.go"}`)
	want = "1 matching line for \"(?-i)Needle\" under W/sub/deep/c.go:\n---\nFile: c.go\nL1: Needle\n---"
	if got != want {
		t.Errorf("file path:\ngot  %q\nwant %q", got, want)
	}
	got = grepBoth(t, files, nil, `{"pattern":"absent","glob":"*.go"}`)
	if want := `No lines match "absent" in the workspace (files matching "*.go").`; got != want {
		t.Errorf("no hit: got %q", got)
	}
}

func TestGrepPathInsideNodeModules(t *testing.T) {
	files := map[string]string{
		"node_modules/x.js":     "const needle = 1;\n",
		"node_modules/p/y.js":   "needle()\n",
		"bower_components/z.js": "needle\n",
		"src/a.js":              "no\n",
	}
	if got := grepBoth(t, files, nil, `{"pattern":"needle"}`); got != `No lines match "needle" in the workspace.` {
		t.Errorf("from the root: %q", got)
	}
	got := grepBoth(t, files, nil, `{"pattern":"needle","path":"W/node_modules"}`)
	want := "2 matching lines for \"needle\" under W/node_modules:\n---\nFile: p/y.js\nL1: needle()\n---\nFile: x.js\nL1: const needle = 1;\n---"
	if got != want {
		t.Errorf("inside node_modules:\ngot  %q\nwant %q", got, want)
	}
}

func TestGrepIgnoreFiles(t *testing.T) {
	files := map[string]string{
		".git/HEAD":       "needle\n",
		".gitignore":      "build/\n*.log\n",
		".qwenignore":     "private.txt\n",
		"build/out.txt":   "needle\n",
		"run.log":         "needle\n",
		"private.txt":     "needle\n",
		"kept.txt":        "needle\n",
		"sub/.gitignore":  "local.txt\n",
		"sub/local.txt":   "needle\n",
		"sub/visible.txt": "needle\n",
	}
	got := grepBoth(t, files, nil, `{"pattern":"needle"}`)
	want := "2 matching lines for \"needle\" in the workspace:\n---\nFile: kept.txt\nL1: needle\n---\nFile: sub/visible.txt\nL1: needle\n---"
	if got != want {
		t.Errorf("respecting both:\ngot  %q\nwant %q", got, want)
	}
	for _, f := range []string{"W/private.txt", "W/run.log"} {
		got := grepBoth(t, files, nil, `{"pattern":"needle","path":"`+f+`"}`)
		if want := `No lines match "needle" under ` + f + `.`; got != want {
			t.Errorf("an ignored file named by path: got %q", got)
		}
	}
	off := map[string]any{"context": map[string]any{"fileFiltering": map[string]any{"respectGitIgnore": false, "respectQwenIgnore": false}}}
	got = grepBoth(t, files, off, `{"pattern":"needle"}`)
	for _, f := range []string{"build/out.txt", "run.log", "private.txt", "sub/local.txt", "kept.txt"} {
		if !strings.Contains(got, "File: "+f+"\n") {
			t.Errorf("with the settings off, %s is missing:\n%s", f, got)
		}
	}
	if strings.Contains(got, ".git/HEAD") {
		t.Errorf(".git is searched:\n%s", got)
	}
}

func TestGrepContentKinds(t *testing.T) {
	files := map[string]string{
		"crlf.txt":  "first\r\n  needle with CRLF  \r\nlast\r\n",
		"utf16.txt": "\xFF\xFEn\x00e\x00e\x00d\x00l\x00e\x00\n\x00",
		"bom8.txt":  "\xEF\xBB\xBFneedle after a BOM\n",
		"blob":      "needle\x00binary",
		"pic.png":   "needle",
		"noext":     "needle in a text file without an extension\n",
	}
	got := grepBoth(t, files, nil, `{"pattern":"^\\s*needle"}`)
	want := "4 matching lines for \"^\\s*needle\" in the workspace:\n---\n" +
		"File: bom8.txt\nL1: needle after a BOM\n---\n" +
		"File: crlf.txt\nL2:   needle with CRLF\n---\n" +
		"File: noext\nL1: needle in a text file without an extension\n---\n" +
		"File: utf16.txt\nL1: needle\n---"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestGrepSymlinks(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("needle outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, indexed := range []bool{false, true} {
		env, root := grepTestEnv(t, map[string]string{"real/in.txt": "needle inside\n"}, nil, false)
		for link, target := range map[string]string{"out.txt": outside, "in-link.txt": "real/in.txt", "dir-link": "real"} {
			if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
				t.Fatal(err)
			}
		}
		if indexed {
			env.Workspace.Start(t.Context())
			<-env.Workspace.Index.Ready()
		}
		res, err := grepCall(t, env, context.Background(), `{"pattern":"needle"}`)
		if err != nil || res.Error != nil {
			t.Fatal(err, res.Error)
		}
		want := "2 matching lines for \"needle\" in the workspace:\n---\nFile: in-link.txt\nL1: needle inside\n---\nFile: real/in.txt\nL1: needle inside\n---"
		if got := res.Text(); got != want {
			t.Errorf("indexed %v:\ngot  %q\nwant %q", indexed, got, want)
		}
	}
}

func TestGrepUnsavedBuffers(t *testing.T) {
	env, root := grepTestEnv(t, map[string]string{"a.txt": "needle on disk\n", "i.bin": "x"}, nil, true)
	ov := env.Workspace.Overlay
	ov.Open(filepath.Join(root, "a.txt"), 3, "edited away\n")
	ov.Open(filepath.Join(root, "i.bin"), 1, "needle in a binary name\n")
	ov.Open(filepath.Join(root, "node_modules", "n.js"), 1, "needle\n")
	ov.Open(filepath.Join(root, "new", "draft.md"), 1, "x\nneedle draft\n")
	res, err := grepCall(t, env, context.Background(), `{"pattern":"needle"}`)
	if err != nil || res.Error != nil {
		t.Fatal(err, res.Error)
	}
	want := "2 matching lines for \"needle\" in the workspace:\n---\nFile: i.bin\nL1: needle in a binary name\n---\nFile: new/draft.md\nL2: needle draft\n---"
	if got := res.Text(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// A new buffer named as the path is searched too.
	res, _ = grepCall(t, env, context.Background(), grepArgs(map[string]any{"pattern": "needle", "path": filepath.Join(root, "new", "draft.md")}))
	if res.Error != nil || !strings.Contains(res.Text(), "File: draft.md\nL2: needle draft") {
		t.Errorf("buffer as path: %v %q", res.Error, res.Text())
	}
}

func TestGrepMultipleRoots(t *testing.T) {
	env, root := grepTestEnv(t, map[string]string{"a.txt": "needle\n", "inner/b.txt": "needle\n"}, nil, false)
	other := t.TempDir()
	other, _ = filepath.EvalSymlinks(other)
	if err := os.WriteFile(filepath.Join(other, "c.txt"), []byte("needle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The nested root's file is reported once, under the first root.
	env.Workspace.SetRoots([]string{root, other, filepath.Join(root, "inner")})
	res, err := grepCall(t, env, context.Background(), `{"pattern":"needle"}`)
	if err != nil || res.Error != nil {
		t.Fatal(err, res.Error)
	}
	want := "3 matching lines for \"needle\" in 3 workspace roots:\n---\n" +
		"File: " + root + "/a.txt\nL1: needle\n---\n" +
		"File: " + root + "/inner/b.txt\nL1: needle\n---\n" +
		"File: " + other + "/c.txt\nL1: needle\n---"
	if got := res.Text(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestGrepCaps(t *testing.T) {
	files := map[string]string{
		"a.txt": "needle one\n" + strings.Repeat("x", 30) + " needle long\nneedle three\n",
		"b.txt": "needle four\n",
	}
	// Settings numbers are float64, as JSON decodes them.
	// 14 + 46 > 40: the second line is cut to the 26 characters left.
	small := map[string]any{"tools": map[string]any{"truncateToolOutputThreshold": 40.0}}
	got := grepBoth(t, files, small, `{"pattern":"needle"}`)
	want := "4 matching lines for \"needle\" in the workspace:\n---\nFile: a.txt\nL1: needle one\nL2: " +
		strings.Repeat("x", 22) + "...\n---\n[2 more matching lines not shown]"
	if got != want {
		t.Errorf("character cap:\ngot  %q\nwant %q", got, want)
	}
	// With almost nothing left, the cut line still keeps 10 characters.
	tiny := map[string]any{"tools": map[string]any{"truncateToolOutputThreshold": 16.0}}
	got = grepBoth(t, files, tiny, `{"pattern":"needle"}`)
	want = "4 matching lines for \"needle\" in the workspace:\n---\nFile: a.txt\nL1: needle one\nL2: xxxxxx...\n---\n[2 more matching lines not shown]"
	if got != want {
		t.Errorf("minimum cut:\ngot  %q\nwant %q", got, want)
	}
	lines := map[string]any{"tools": map[string]any{"truncateToolOutputLines": 3.0}}
	got = grepBoth(t, files, lines, `{"pattern":"needle","limit":10}`)
	if !strings.HasSuffix(got, "L3: needle three\n---\n[1 more matching line not shown]") {
		t.Errorf("line setting below limit:\n%s", got)
	}
	got = grepBoth(t, files, nil, `{"pattern":"four"}`)
	if want := "1 matching line for \"four\" in the workspace:\n---\nFile: b.txt\nL1: needle four\n---"; got != want {
		t.Errorf("singular: %q", got)
	}
}

// TestGrepManyFiles has more files than workers and a cap that ends the
// output early, so files finish out of order and later ones are only
// counted.
func TestGrepManyFiles(t *testing.T) {
	files := map[string]string{}
	for i := range 300 {
		files[fmt.Sprintf("d%d/f%03d.txt", i%7, i)] = "needle a\nhay\nneedle b\nneedle c\n"
	}
	env, _ := grepTestEnv(t, files, nil, true)
	res, err := grepCall(t, env, context.Background(), `{"pattern":"needle","limit":5}`)
	if err != nil || res.Error != nil {
		t.Fatal(err, res.Error)
	}
	want := "900 matching lines for \"needle\" in the workspace:\n---\nFile: d0/f000.txt\nL1: needle a\nL3: needle b\nL4: needle c\n---\n" +
		"File: d0/f007.txt\nL1: needle a\nL3: needle b\n---\n[895 more matching lines not shown]"
	if got := res.Text(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if res.Display != Markdown("Found 900 matches (truncated)") {
		t.Errorf("display %v", res.Display)
	}
	full, _ := grepCall(t, env, context.Background(), `{"pattern":"needle"}`)
	if n := strings.Count(full.Text(), "\nL"); n != 900 {
		t.Errorf("uncapped output has %d lines", n)
	}
}

func TestGrepCancelled(t *testing.T) {
	files := map[string]string{}
	for i := range 50 {
		files[fmt.Sprintf("f%d.txt", i)] = "needle\n"
	}
	for _, indexed := range []bool{false, true} {
		env, _ := grepTestEnv(t, files, nil, indexed)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		res, err := grepCall(t, env, ctx, `{"pattern":"needle"}`)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("indexed %v: err %v, result %q", indexed, err, res.Text())
		}
	}
}

// The pattern is compiled exactly as the model wrote it behind (?i): a
// pattern that parses alone also compiles there.
func TestGrepCompileMatchesParse(t *testing.T) {
	for _, p := range []string{`a`, `(?-i)A`, `[[:alpha:]]+`, `\pL`, `x{2,5}`, `(?s).`, `(?U)a+`} {
		if _, err := syntax.Parse(p, syntax.Perl); err != nil {
			t.Fatal(err)
		}
		if _, terr := compileGrepPattern(p); terr != nil {
			t.Errorf("%s: %s", p, terr.Message)
		}
		if _, err := regexp.Compile("(?i)" + p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// A folder that the walk listed inside the workspace and that was then
// swapped for a symlink leading out of it is not read through: the scan
// judges the real path of the folder it opens, once for all its files.
// Files of a folder still inside are read, and a folder the scan cannot
// open (no read permission) falls back to checking each file.
func TestGrepScanRefusesAFolderSwappedForAnOutsideLink(t *testing.T) {
	env, root := grepTestEnv(t, map[string]string{"in/a.txt": "inside\n", "in/b.txt": "inside too\n"}, nil, false)
	outside := filepath.Join(filepath.Dir(root), "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "a.txt"), []byte("SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "swapped")); err != nil {
		t.Fatal(err)
	}
	s := &grepScan{env: env, inside: env.openedInside(pathOptions{AllowTemp: true})}
	w := newGrepWorker(s)
	defer w.close()
	for _, c := range []struct {
		path string
		want string // "" when the file must be skipped
	}{
		{filepath.Join(root, "in", "a.txt"), "inside\n"},
		{filepath.Join(root, "swapped", "a.txt"), ""},
		{filepath.Join(root, "in", "b.txt"), "inside too\n"},
		{filepath.Join(root, "swapped", "a.txt"), ""},
	} {
		data, ok := w.load(grepTarget{path: c.path, size: -1})
		if got := string(data); ok != (c.want != "") || (ok && got != c.want) {
			t.Errorf("load(%s) = %q, %v; want %q", c.path, got, ok, c.want)
		}
	}
	if os.Geteuid() != 0 {
		noRead := filepath.Join(root, "in")
		if err := os.Chmod(noRead, 0o311); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(noRead, 0o755)
		w2 := newGrepWorker(s)
		defer w2.close()
		if data, ok := w2.load(grepTarget{path: filepath.Join(noRead, "a.txt"), size: -1}); !ok || string(data) != "inside\n" {
			t.Errorf("a file in a folder without read permission = %q, %v; want it read", data, ok)
		}
	}
}

// A matching line keeps its indentation (tabs or spaces), which the edit
// tool needs exact; trailing blanks go, as in read_file.
func TestGrepKeepsIndentation(t *testing.T) {
	files := map[string]string{
		"a.go":  "package a\n\nfunc f() {\n\tif x {\n\t\treturn needle\n\t}\n}\n",
		"b.py":  "def f():\n    needle = 1  \n",
		"c.txt": "  needle in CRLF\r\n",
	}
	got := grepBoth(t, files, nil, `{"pattern":"needle"}`)
	want := "3 matching lines for \"needle\" in the workspace:\n---\n" +
		"File: a.go\nL5: \t\treturn needle\n---\n" +
		"File: b.py\nL2:     needle = 1\n---\n" +
		"File: c.txt\nL1:   needle in CRLF\n---"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// A relative path is taken from the primary root, as Qwen Code does, so a
// model that writes "src" does not lose a turn; it stays inside the roots.
func TestGrepRelativePath(t *testing.T) {
	files := map[string]string{"src/a.go": "needle\n", "src/deep/b.go": "needle\n", "top.txt": "needle\n"}
	for _, c := range []struct{ path, want string }{
		{"src", "2 matching lines for \"needle\" under W/src:\n---\nFile: a.go\nL1: needle\n---\nFile: deep/b.go\nL1: needle\n---"},
		{"./src/deep/", "1 matching line for \"needle\" under W/src/deep:\n---\nFile: b.go\nL1: needle\n---"},
		{"src/a.go", "1 matching line for \"needle\" under W/src/a.go:\n---\nFile: a.go\nL1: needle\n---"},
		{".", "3 matching lines for \"needle\" under W:\n---\nFile: src/a.go\nL1: needle\n---\nFile: src/deep/b.go\nL1: needle\n---\nFile: top.txt\nL1: needle\n---"},
	} {
		if got := grepBoth(t, files, nil, grepArgs(map[string]any{"pattern": "needle", "path": c.path})); got != c.want {
			t.Errorf("path %q:\ngot  %q\nwant %q", c.path, got, c.want)
		}
	}
	env, root := grepTestEnv(t, files, nil, false)
	g := NewGrepSearch(env)
	params := map[string]any{"pattern": "needle", "path": "src"}
	if got := g.Describe(params); got != "'needle' in path 'src'" {
		t.Errorf("describe: %q", got)
	}
	if got := g.Locations(params); len(got) != 1 || got[0].Path != root+"/src" {
		t.Errorf("locations: %+v", got)
	}
	// With several roots, the first one is the base.
	other, _ := filepath.EvalSymlinks(t.TempDir())
	if err := os.MkdirAll(filepath.Join(other, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	env.Workspace.SetRoots([]string{root, other})
	res, err := grepCall(t, env, context.Background(), `{"pattern":"needle","path":"src/deep"}`)
	if err != nil || res.Error != nil {
		t.Fatal(err, res.Error)
	}
	if !strings.HasPrefix(res.Text(), "1 matching line for \"needle\" under "+root+"/src/deep:") {
		t.Errorf("two roots: %q", res.Text())
	}
}
