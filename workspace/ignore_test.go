package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeTree creates files under root. A key ending in "/" is a directory;
// any other key is a file holding the value.
func writeTree(t *testing.T, root string, tree map[string]string) {
	t.Helper()
	for rel, body := range tree {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if strings.HasSuffix(rel, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// tempRoot returns a fresh directory by its real path, as Roots holds it.
func tempRoot(t *testing.T) string {
	t.Helper()
	return RealPath(t.TempDir())
}

// ruleMatches applies one pattern line to a path relative to the ignore
// file's directory; ok reports whether the line is a rule at all.
func ruleMatches(line, rel string, isDir bool) (matched, negated, ok bool) {
	r, ok := parseRule(line)
	if !ok {
		return false, false, false
	}
	return r.match(rel, rel[strings.LastIndexByte(rel, '/')+1:], isDir), r.negate, true
}

func TestIgnorePatternMatch(t *testing.T) {
	tests := []struct {
		pattern string
		rel     string
		isDir   bool
		want    bool
	}{
		// No slash: the name at any depth.
		{"*.go", "a.go", false, true},
		{"*.go", "d/e/a.go", false, true},
		{"*.go", "a.go.txt", false, false},
		{"a.go", "d/a.go", false, true},
		// A leading slash anchors.
		{"/a.go", "a.go", false, true},
		{"/a.go", "d/a.go", false, false},
		// A middle slash anchors too.
		{"d/a.go", "d/a.go", false, true},
		{"d/a.go", "x/d/a.go", false, false},
		{"d/*.go", "d/a.go", false, true},
		{"d/*.go", "d/e/a.go", false, false},
		// A trailing slash alone does not anchor, and needs a directory.
		{"out/", "out", true, true},
		{"out/", "x/y/out", true, true},
		{"out/", "out", false, false},
		{"d/out/", "d/out", true, true},
		{"d/out/", "d/out", false, false},
		// ** forms.
		{"**/x", "x", false, true},
		{"**/x", "a/b/x", false, true},
		{"**/x/y", "x/y", false, true},
		{"**/x/y", "a/x/y", false, true},
		{"**/x/y", "a/x/z", false, false},
		{"x/**", "x", true, false},
		{"x/**", "x/y", false, true},
		{"x/**", "x/y/z", false, true},
		{"a/**/b", "a/b", false, true},
		{"a/**/b", "a/x/b", false, true},
		{"a/**/b", "a/x/y/b", false, true},
		{"a/**/b", "a/xb", false, false},
		{"a/**b", "a/xb", false, true},
		{"a/**b", "a/x/yb", false, false},
		{"foo**bar", "fooxbar", false, true},
		{"**", "any/thing", false, true},
		{"/**", "any/thing", false, true},
		// Wildcards inside a name.
		{"*", ".hidden", false, true},
		{"a?c", "abc", false, true},
		{"a?c", "ac", false, false},
		{"a?c", "a/c", false, false},
		{"a?c", "aéc", false, true},
		{"a*c", "abbbc", false, true},
		{"a*c", "abbbd", false, false},
		{"*a*b*", "xxaxxbxx", false, true},
		{"[a-c]x", "bx", false, true},
		{"[a-c]x", "dx", false, false},
		{"[!a-c]x", "bx", false, false},
		{"[!a-c]x", "dx", false, true},
		{"[^a-c]x", "dx", false, true},
		{"[]]x", "]x", false, true},
		{"[a-]x", "-x", false, true},
		{"[[:digit:]]*", "1abc", false, true},
		{"[[:digit:]]*", "abc", false, false},
		{"[[:upper:]]", "a", false, false},
		{"[[:upper:]]", "A", false, true},
		{"[é]", "é", false, true},
		// Malformed patterns match nothing.
		{"a[", "a[", false, false},
		{"a[bc", "ab", false, false},
		{`foo\`, `foo\`, false, false},
		// Escapes.
		{`\*star`, "*star", false, true},
		{`\*star`, "xstar", false, false},
		{`\#hash`, "#hash", false, true},
		{`\!bang`, "!bang", false, true},
		{`trail\ `, "trail ", false, true},
		{`trail\ `, "trail", false, false},
		{"spaces   ", "spaces", false, true},
		{"[\\]]x", "]x", false, true},
		// Case matters, as in git on Linux.
		{"*.GO", "a.go", false, false},
	}
	for _, tt := range tests {
		got, _, ok := ruleMatches(tt.pattern, tt.rel, tt.isDir)
		if !ok {
			t.Errorf("%q: not parsed as a rule", tt.pattern)
			continue
		}
		if got != tt.want {
			t.Errorf("pattern %q against %q (dir %v) = %v, want %v", tt.pattern, tt.rel, tt.isDir, got, tt.want)
		}
	}
}

func TestIgnoreParseLines(t *testing.T) {
	tests := []struct {
		line    string
		rule    bool
		negate  bool
		dirOnly bool
	}{
		{"", false, false, false},
		{"   ", false, false, false},
		{"# comment", false, false, false},
		{`\#not-comment`, true, false, false},
		{"!keep", true, true, false},
		{`\!literal`, true, false, false},
		{"dir/", true, false, true},
		{"!dir/", true, true, true},
		{"/", false, false, false},
		{"!", false, false, false},
	}
	for _, tt := range tests {
		r, ok := parseRule(tt.line)
		if ok != tt.rule || ok && (r.negate != tt.negate || r.dirOnly != tt.dirOnly) {
			t.Errorf("parseRule(%q) = rule %v negate %v dirOnly %v, want %v %v %v",
				tt.line, ok, r.negate, r.dirOnly, tt.rule, tt.negate, tt.dirOnly)
		}
	}
	rules := parseIgnore([]byte("\xef\xbb\xbfa\r\n# c\r\n\r\nb/\n!c"))
	if len(rules) != 3 {
		t.Fatalf("parseIgnore with BOM and CRLF: got %d rules, want 3", len(rules))
	}
	if !rules[1].dirOnly || !rules[2].negate {
		t.Errorf("parseIgnore: flags lost: %+v", rules)
	}
}

type verdictCase struct {
	rel   string
	isDir bool
	git   bool
	qwen  bool
}

func checkVerdicts(t *testing.T, ig *Ignorer, root string, cases []verdictCase) {
	t.Helper()
	for _, c := range cases {
		got := ig.Check(filepath.Join(root, filepath.FromSlash(c.rel)), c.isDir)
		want := IgnoreVerdict{Git: c.git, Qwen: c.qwen}
		if got != want {
			t.Errorf("Check(%s, dir=%v) = %+v, want %+v", c.rel, c.isDir, got, want)
		}
	}
}

func TestIgnorerCheck(t *testing.T) {
	tests := []struct {
		name  string
		tree  map[string]string
		cases []verdictCase
	}{
		{
			name: "nested gitignore",
			tree: map[string]string{
				".git/":           "",
				".gitignore":      "*.log\n/build/\nsecret.txt\n",
				"sub/.gitignore":  "local.txt\n*.tmp\n/anchored.txt\n",
				"sub/deep/keep.c": "",
			},
			cases: []verdictCase{
				{"a.log", false, true, false},
				{"sub/x.log", false, true, false},
				{"build", true, true, false},
				{"build/x.go", false, true, false},
				{"sub/build", true, false, false},
				{"secret.txt", false, true, false},
				{"sub/local.txt", false, true, false},
				{"local.txt", false, false, false},
				{"sub/deep/y.tmp", false, true, false},
				{"y.tmp", false, false, false},
				{"sub/anchored.txt", false, true, false},
				{"sub/deep/anchored.txt", false, false, false},
				{"anchored.txt", false, false, false},
				{"sub/deep/keep.c", false, false, false},
			},
		},
		{
			name: "negation",
			tree: map[string]string{
				".git/":          "",
				".gitignore":     "*.log\n!keep.log\nlogs/\n!logs/important.log\ndir/*\n!dir/keep\n*.gen\n",
				"sub/.gitignore": "!special.gen\n",
			},
			cases: []verdictCase{
				{"a.log", false, true, false},
				{"keep.log", false, false, false},
				{"x/keep.log", false, false, false},
				// Nothing below an excluded directory comes back.
				{"logs", true, true, false},
				{"logs/important.log", false, true, false},
				// dir itself is not excluded, only its entries.
				{"dir", true, false, false},
				{"dir/other", false, true, false},
				{"dir/keep", false, false, false},
				// A deeper file overrides a shallower one.
				{"special.gen", false, true, false},
				{"sub/special.gen", false, false, false},
				{"sub/other.gen", false, true, false},
			},
		},
		{
			name: "everything but one directory",
			tree: map[string]string{
				".git/":      "",
				".gitignore": "/*\n!/src/\n!.gitignore\n",
			},
			cases: []verdictCase{
				{"other.txt", false, true, false},
				{"docs", true, true, false},
				{"docs/a.md", false, true, false},
				{"src", true, false, false},
				{"src/a.go", false, false, false},
				{"src/deep/b.go", false, false, false},
				{".gitignore", false, false, false},
			},
		},
		{
			name: "anchoring by a middle slash",
			tree: map[string]string{
				".git/":          "",
				".gitignore":     "doc/frotz\nfrotz/\n",
				"a/.gitignore":   "b/c.txt\n",
				"a/b/.gitignore": "",
			},
			cases: []verdictCase{
				{"doc/frotz", false, true, false},
				{"a/doc/frotz", false, false, false},
				{"x/frotz", true, true, false},
				{"x/frotz", false, false, false},
				{"a/b/c.txt", false, true, false},
				{"a/x/b/c.txt", false, false, false},
				{"b/c.txt", false, false, false},
			},
		},
		{
			name: "double star",
			tree: map[string]string{
				".git/":      "",
				".gitignore": "**/gen\nabc/**\nx/**/y.txt\n**/cache/*.bin\n",
			},
			cases: []verdictCase{
				{"gen", false, true, false},
				{"p/q/gen", true, true, false},
				{"abc", true, false, false},
				{"abc/z", false, true, false},
				{"abc/z/w", false, true, false},
				{"x/y.txt", false, true, false},
				{"x/1/2/y.txt", false, true, false},
				{"z/x/y.txt", false, false, false},
				{"cache/a.bin", false, true, false},
				{"m/cache/a.bin", false, true, false},
				{"m/cache/a.txt", false, false, false},
			},
		},
		{
			name: "info exclude and .git",
			tree: map[string]string{
				".git/info/exclude": "*.secret\n",
				".git/config":       "",
				".gitignore":        "!keep.secret\n",
			},
			cases: []verdictCase{
				{"x.secret", false, true, false},
				{"d/y.secret", false, true, false},
				// .gitignore outranks info/exclude.
				{"keep.secret", false, false, false},
				{".git", true, true, false},
				{".git/config", false, true, false},
				{"sub/.git", true, true, false},
			},
		},
		{
			name: "qwenignore in a repository",
			tree: map[string]string{
				".git/":       "",
				".gitignore":  "*.log\n",
				".qwenignore": "*.env\nprivate/\n!public.env\n",
			},
			cases: []verdictCase{
				{"a.env", false, false, true},
				{"public.env", false, false, false},
				{"private", true, false, true},
				{"private/a.txt", false, false, true},
				{"private/b.log", false, true, true},
				{"ok.txt", false, false, false},
			},
		},
		{
			name: "not a repository",
			tree: map[string]string{
				".gitignore":  "*.log\n",
				".qwenignore": "*.env\n",
			},
			cases: []verdictCase{
				{"a.log", false, false, false},
				{"a.env", false, false, true},
				{".git", true, false, false},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tempRoot(t)
			writeTree(t, root, tt.tree)
			ig := newIgnorer(newRoots(root))
			checkVerdicts(t, ig, root, tt.cases)
		})
	}
}

func TestIgnorerRootBelowRepository(t *testing.T) {
	repo := tempRoot(t)
	writeTree(t, repo, map[string]string{
		".git/":          "",
		".gitignore":     "/ws/gen/\nbuild/\n*.o\n",
		"ws/.gitignore":  "!keep.o\n",
		"ws/src/a.go":    "",
		"build/ws/x.go":  "",
		"elsewhere/a.go": "",
	})
	ws := filepath.Join(repo, "ws")
	ig := newIgnorer(newRoots(ws))
	checkVerdicts(t, ig, ws, []verdictCase{
		{"gen", true, true, false},
		{"gen/a.go", false, true, false},
		{"src/a.go", false, false, false},
		{"x.o", false, true, false},
		{"keep.o", false, false, false},
	})
	// A path outside every root is never ignored, whatever the rules say.
	if got := ig.Check(filepath.Join(repo, "z.o"), false); got != (IgnoreVerdict{}) {
		t.Errorf("Check outside the roots = %+v, want no verdict", got)
	}

	// A root that lies in an ignored directory: all of it is ignored.
	inIgnored := filepath.Join(repo, "build", "ws")
	ig2 := newIgnorer(newRoots(inIgnored))
	checkVerdicts(t, ig2, inIgnored, []verdictCase{
		{"", true, true, false},
		{"x.go", false, true, false},
	})
}

func TestIgnorerNestedRoots(t *testing.T) {
	outer := tempRoot(t)
	writeTree(t, outer, map[string]string{
		".qwenignore":       "*.a\n",
		"inner/.qwenignore": "*.b\n",
	})
	inner := filepath.Join(outer, "inner")
	ig := newIgnorer(newRoots(outer, inner))
	checkVerdicts(t, ig, outer, []verdictCase{
		{"x.a", false, false, true},
		{"x.b", false, false, false},
		// The innermost root's file decides inside it.
		{"inner/x.b", false, false, true},
		{"inner/x.a", false, false, false},
	})
}

func TestIsDefaultExcludedDir(t *testing.T) {
	for name, want := range map[string]bool{
		".git": true, "node_modules": true, "bower_components": true, ".svn": true, ".hg": true,
		"src": false, ".github": false, "node_module": false, "build": false, ".vscode": false,
	} {
		if got := IsDefaultExcludedDir(name); got != want {
			t.Errorf("IsDefaultExcludedDir(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestIgnorerInvalidate(t *testing.T) {
	root := tempRoot(t)
	writeTree(t, root, map[string]string{".git/": "", ".gitignore": "a.txt\n", "sub/.gitignore": "x\n"})
	ig := newIgnorer(newRoots(root))
	a, b := filepath.Join(root, "a.txt"), filepath.Join(root, "b.txt")
	if !ig.Check(a, false).Git || ig.Check(b, false).Git {
		t.Fatal("before the edit: want a.txt ignored and b.txt not")
	}
	writeTree(t, root, map[string]string{".gitignore": "b.txt\n", "sub/.gitignore": "y\n"})
	ig.Invalidate(filepath.Join(root, ".gitignore"))
	if ig.Check(a, false).Git || !ig.Check(b, false).Git {
		t.Error("after Invalidate: want b.txt ignored and a.txt not")
	}
	// Invalidating a directory forgets the files below it.
	ig.Invalidate(filepath.Join(root, "sub"))
	if !ig.Check(filepath.Join(root, "sub", "y"), false).Git || ig.Check(filepath.Join(root, "sub", "x"), false).Git {
		t.Error("after invalidating sub: want sub/y ignored and sub/x not")
	}

	// A .git that appears makes the root a repository.
	plain := tempRoot(t)
	writeTree(t, plain, map[string]string{".gitignore": "*.log\n"})
	ig2 := newIgnorer(newRoots(plain))
	if ig2.Check(filepath.Join(plain, "x.log"), false).Git {
		t.Fatal("no repository yet: want x.log not git-ignored")
	}
	writeTree(t, plain, map[string]string{".git/": ""})
	ig2.Invalidate(filepath.Join(plain, ".git"))
	if !ig2.Check(filepath.Join(plain, "x.log"), false).Git {
		t.Error("after .git appeared: want x.log git-ignored")
	}
}

func TestIgnorerWatch(t *testing.T) {
	root := tempRoot(t)
	writeTree(t, root, map[string]string{".git/info/exclude": "", ".gitignore": "a.txt\n", ".qwenignore": ""})
	w, err := newWatcher()
	//lint:ignore SA5001 with an error NewWatcher still returns a watcher that relays injected events, which this test uses first
	defer w.Close()
	ig := newIgnorer(newRoots(root))
	ig.Watch(w)
	a, q := filepath.Join(root, "a.txt"), filepath.Join(root, "q.txt")
	if !ig.Check(a, false).Git {
		t.Fatal("a.txt: want git-ignored")
	}

	// An event the editor reports reaches the Ignorer at once.
	writeTree(t, root, map[string]string{".gitignore": "\n"})
	w.Inject(Event{Path: filepath.Join(root, ".gitignore"), Op: Changed})
	if ig.Check(a, false).Git {
		t.Error("after an injected change of .gitignore: a.txt still git-ignored")
	}
	if err != nil {
		t.Skipf("no file-system watcher here (%v); only injected events tested", err)
	}

	// Events from the disk: .qwenignore in the watched root, info/exclude
	// in the watched .git/info.
	writeTree(t, root, map[string]string{".qwenignore": "q.txt\n", ".git/info/exclude": "a.txt\n"})
	deadline := time.Now().Add(10 * time.Second)
	for !(ig.Check(q, false).Qwen && ig.Check(a, false).Git) {
		if time.Now().After(deadline) {
			t.Fatalf("ignore files edited on disk were not re-read: q.txt %+v, a.txt %+v", ig.Check(q, false), ig.Check(a, false))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
