package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A profile cannot be run here (sandbox-exec is macOS's), so these tests
// read the profile back with a small parser and evaluate its rules as
// Seatbelt does: the last rule that matches an operation on a path
// decides. The regex filters are compiled with Go's POSIX (ERE) syntax,
// the subset Seatbelt's regular expressions share with it.

// sbNode is one element of a profile: a symbol, a string or a list.
type sbNode struct {
	sym, str string
	isStr    bool
	list     []sbNode
	isList   bool
}

// parseProfile reads a profile's S-expressions; it fails on unbalanced
// parentheses, an unterminated string and an unknown escape.
func parseProfile(t *testing.T, text string) []sbNode {
	t.Helper()
	var stack [][]sbNode
	var top []sbNode
	push := func(n sbNode) {
		if len(stack) == 0 {
			top = append(top, n)
		} else {
			stack[len(stack)-1] = append(stack[len(stack)-1], n)
		}
	}
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == ';':
			for i < len(text) && text[i] != '\n' {
				i++
			}
		case c == ' ' || c == '\n' || c == '\t':
			i++
		case c == '(':
			stack = append(stack, nil)
			i++
		case c == ')':
			if len(stack) == 0 {
				t.Fatalf("unbalanced ) at %d:\n%s", i, text)
			}
			l := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			push(sbNode{list: l, isList: true})
			i++
		case c == '"':
			var b strings.Builder
			i++
			for {
				if i >= len(text) {
					t.Fatalf("unterminated string:\n%s", text)
				}
				if text[i] == '"' {
					i++
					break
				}
				if text[i] == '\\' {
					if i+1 >= len(text) || (text[i+1] != '\\' && text[i+1] != '"') {
						t.Fatalf("unknown escape at %d:\n%s", i, text)
					}
					i++
				}
				b.WriteByte(text[i])
				i++
			}
			push(sbNode{str: b.String(), isStr: true})
		default:
			j := i
			for j < len(text) && !strings.ContainsRune(" \n\t()\";", rune(text[j])) {
				j++
			}
			push(sbNode{sym: text[i:j]})
			i = j
		}
	}
	if len(stack) != 0 {
		t.Fatalf("%d unclosed (:\n%s", len(stack), text)
	}
	return top
}

// sbRule is one allow or deny rule: its operations and its filters (any
// of which matches; none matches everything).
type sbRule struct {
	allow   bool
	ops     []string
	filters []sbNode
	// res holds the compiled regex filters, by the filter's index.
	res  map[int]*regexp.Regexp
	text string
}

func profileRules(t *testing.T, text string) []sbRule {
	t.Helper()
	var rules []sbRule
	for _, n := range parseProfile(t, text) {
		if !n.isList || len(n.list) == 0 {
			t.Fatalf("top-level element is not a list: %+v", n)
		}
		head := n.list[0].sym
		if head == "version" {
			continue
		}
		if head != "allow" && head != "deny" {
			t.Fatalf("unexpected top-level form %q", head)
		}
		r := sbRule{allow: head == "allow", text: render(n)}
		for _, e := range n.list[1:] {
			switch {
			case e.isList:
				if len(e.list) == 2 && e.list[0].sym == "regex" && e.list[1].isStr {
					if r.res == nil {
						r.res = map[int]*regexp.Regexp{}
					}
					r.res[len(r.filters)] = compileERE(t, e.list[1].str)
				}
				r.filters = append(r.filters, e)
			case e.isStr:
				t.Fatalf("string among the operations of %s", r.text)
			default:
				r.ops = append(r.ops, e.sym)
			}
		}
		if len(r.ops) == 0 {
			t.Fatalf("rule without operations: %s", r.text)
		}
		rules = append(rules, r)
	}
	return rules
}

func render(n sbNode) string {
	switch {
	case n.isStr:
		return fmt.Sprintf("%q", n.str)
	case n.isList:
		var parts []string
		for _, e := range n.list {
			parts = append(parts, render(e))
		}
		return "(" + strings.Join(parts, " ") + ")"
	}
	return n.sym
}

// names reports whether the rule's operations cover op: the same name,
// a wildcard such as file-write*, or default.
func (r sbRule) names(op string) bool {
	for _, o := range r.ops {
		if o == op || o == "default" || (strings.HasSuffix(o, "*") && strings.HasPrefix(op, strings.TrimSuffix(o, "*"))) {
			return true
		}
	}
	return false
}

func compileERE(t *testing.T, expr string) *regexp.Regexp {
	t.Helper()
	if _, err := regexp.CompilePOSIX(expr); err != nil {
		t.Fatalf("regex %q is not POSIX ERE: %v", expr, err)
	}
	// Whether a path matches does not depend on which match is
	// preferred; the default (leftmost-first) matcher is the faster.
	return regexp.MustCompile(expr)
}

// matches reports whether one of the rule's path filters matches path.
func (r sbRule) matches(t *testing.T, path string) bool {
	t.Helper()
	if len(r.filters) == 0 {
		return true
	}
	for i, f := range r.filters {
		if len(f.list) != 2 || !f.list[1].isStr {
			t.Fatalf("filter the evaluator does not know in %s", r.text)
		}
		arg := f.list[1].str
		switch f.list[0].sym {
		case "literal":
			if path == arg {
				return true
			}
		case "subpath":
			if within(path, arg) {
				return true
			}
		case "regex":
			if r.res[i].MatchString(path) {
				return true
			}
		default:
			t.Fatalf("filter the evaluator does not know in %s", r.text)
		}
	}
	return false
}

// verdict is whether the profile allows op on path, and the index of the
// rule that decided (the last that matches).
func verdict(t *testing.T, rules []sbRule, op, path string) (bool, int) {
	t.Helper()
	allowed, by := false, -1
	for i, r := range rules {
		if r.names(op) && r.matches(t, path) {
			allowed, by = r.allow, i
		}
	}
	if by < 0 {
		t.Fatalf("no rule, not even the default, decides %s %s", op, path)
	}
	return allowed, by
}

// writeOps are the operations a write, a rename (both names) and a hard
// link are checked as.
var writeOps = []string{"file-write-create", "file-write-data", "file-write-unlink", "file-write-mode", "file-link"}

// classPolicy has two roots, a hook folder, a worktree's git directory
// inside the first root's .git and a submodule's outside the write
// allow-list.
func classPolicy(mode Mode) Policy {
	return Policy{
		Mode:     mode,
		Writable: []string{"/w", "/v/r", "/cache/go-build"},
		TempDir:  "/t/q",
		Readable: []string{"/usr", "/System", "/private/etc", "/dev", "/w", "/v/r", "/home/u/go", "/home/u/.gitconfig"},
		Class: Class{
			Roots:    []string{"/w", "/v/r"},
			GitDirs:  []string{"/w/.git/worktrees/wt", "/elsewhere/.git/modules/m"},
			HookDirs: []string{"/w/tools/hooks"},
		},
		AlwaysProtected: []string{"/home/u/.qwen/trustedFolders.json", "/home/u/.qwen/settings.json"},
	}
}

// writable is the Linux sandbox's verdict for a write: inside the write
// allow-list and not in the protected class (nor always protected).
func writable(p Policy, path string) bool {
	in := false
	for _, w := range append(append([]string(nil), p.Writable...), p.TempDir) {
		if w != "" && within(path, w) {
			in = true
		}
	}
	for _, a := range p.AlwaysProtected {
		if within(path, a) {
			return false
		}
	}
	_, protected := p.Class.Protected(path)
	return in && !protected
}

func TestSeatbeltClassVerdicts(t *testing.T) {
	cases := []struct {
		path      string
		protected bool
	}{
		{"/w/src/main.go", false},
		{"/w/README.md", false},
		{"/w/a/b/c/d.txt", false},
		{"/w/.git", true},
		{"/w/.git/config", true},
		{"/w/.git/hooks/pre-commit", true},
		{"/w/.git/info/exclude", true},
		{"/w/.git/commondir", true},
		{"/w/.git/description", true},
		{"/w/.git/index", false},
		{"/w/.git/index.lock", false},
		{"/w/.git/HEAD", false},
		{"/w/.git/HEAD.lock", false},
		{"/w/.git/head", true},
		{"/w/.git/config.lock", true},
		{"/w/.git/sharedindex.0123abcd", false},
		{"/w/.git/sharedindex.lock", true},
		{"/w/.git/index.stash.1234.lock", false},
		{"/w/.git/objects", false},
		{"/w/.git/objects/ab/cdef0123", false},
		{"/w/.git/objects/pack/pack-1.idx", false},
		{"/w/.git/objects/info", true},
		{"/w/.git/objects/info/alternates", true},
		{"/w/.git/objects/INFO/alternates", true},
		{"/w/.git/refs/heads/main", false},
		{"/w/.git/refs/heads/QWEN.md", false},
		{"/w/.git/logs/HEAD", false},
		{"/w/.git/rr-cache/ab/preimage", false},
		{"/w/.git/lfs/objects/ab/cd/x", false},
		{"/w/.git/modules/sub/config", true},
		{"/w/.GIT/config", true},
		{"/w/.Git/index", false},
		{"/w/sub/.git/hooks/x", true},
		{"/w/sub/.git/objects/ab/cd", false},
		{"/w/sub/.git/objects/info/alternates", true},
		{"/w/.git/worktrees/wt/index", false},
		{"/w/.git/worktrees/wt/config.worktree", true},
		{"/w/.git/worktrees/wt/commondir", true},
		{"/w/.vscode", true},
		{"/w/.vscode/tasks.json", true},
		{"/w/a/.VSCode/launch.json", true},
		{"/w/.idea/workspace.xml", true},
		{"/w/.devcontainer/devcontainer.json", true},
		{"/w/.qwen/settings.json", true},
		{"/w/.husky/pre-commit", true},
		{"/w/.huſky/pre-commit", true},
		{"/w/x/.githooks/pre-push", true},
		{"/w/tools/hooks/pre-commit", true},
		{"/w/tools/hooksx/a", false},
		{"/w/.envrc", true},
		{"/w/a/.envrc", true},
		{"/w/a/.envrc.bak", false},
		{"/w/.gitattributes", true},
		{"/w/sub/.gitmodules", true},
		{"/w/QWEN.md", true},
		{"/w/docs/agents.MD", true},
		{"/w/QWEN.md.orig", false},
		{"/w/.gitignore", false},
		{"/w/.github/workflows/ci.yml", false},
		{"/w/x.git/config", false},
		{"/w/.gitx/config", false},
		{"/v/r/.git/config", true},
		{"/v/r/pkg/QWEN.md", true},
		{"/v/r/pkg/a.go", false},
	}
	for _, mode := range []Mode{Protect, WorkspaceWrite} {
		p := classPolicy(mode)
		rules := profileRules(t, SeatbeltProfile(p))
		for _, c := range cases {
			if _, got := p.Class.Protected(c.path); got != c.protected {
				t.Fatalf("Class.Protected(%s) = %v, the table says %v", c.path, got, c.protected)
			}
			want := writable(p, c.path)
			for _, op := range writeOps {
				if got, by := verdict(t, rules, op, c.path); got != want {
					t.Errorf("%s: %s %s allowed=%v, want %v (decided by %s)", mode, op, c.path, got, want, rules[by].text)
				}
			}
		}
		// Outside the roots the write allow-list decides.
		for path, want := range map[string]bool{
			"/t/q/go-build123/a.o":                  true,
			"/cache/go-build/ab/cd":                 true,
			"/cache/other":                          false,
			"/etc/passwd":                           false,
			"/home/u/.bashrc":                       false,
			"/home/u/.qwen/trustedFolders.json":     false,
			"/elsewhere/.git/modules/m/index":       false,
			"/elsewhere/.git/modules/m/config":      false,
			"/elsewhere/.git/modules/m/objects/a/b": false,
			"/wx/a":                                 false,
			"/w":                                    true,
		} {
			for _, op := range writeOps {
				if got, by := verdict(t, rules, op, path); got != want {
					t.Errorf("%s: %s %s allowed=%v, want %v (decided by %s)", mode, op, path, got, want, rules[by].text)
				}
			}
		}
	}
}

// TestSeatbeltClassExhaustive compares the profile's verdict with the
// class's for every path of up to three parts, from names chosen near
// each rule's edges, below each root and each git directory.
func TestSeatbeltClassExhaustive(t *testing.T) {
	parts := []string{
		"a", ".git", ".GIT", ".gıt", ".gitx", "objects", "info", "INFO", "refs", "HEAD", "index.lock",
		"config", ".vscode", ".huſky", "QWEN.md", "agents.MD", ".envrc", "sharedindex.lock",
		"sharedindex..lock", "next-index-.lock", "worktrees",
	}
	p := classPolicy(Protect)
	p.Class.MemoryNames = []string{"QWEN.md", "AGENTS.md", "docs/CONTEXT.md"}
	rules := profileRules(t, SeatbeltProfile(p))
	var paths []string
	var walk func(prefix string, depth int)
	walk = func(prefix string, depth int) {
		if depth == 0 {
			return
		}
		for _, part := range parts {
			path := prefix + "/" + part
			paths = append(paths, path)
			walk(path, depth-1)
		}
	}
	depth := 3
	if raceEnabled {
		// One goroutine, nothing for the race detector to find, and ten
		// times slower under it: the ordinary run checks the full set.
		depth = 2
	}
	walk("/w", depth)
	walk("/w/.git/worktrees/wt", 2)
	walk("/v/r/x", 2)
	checked, denied := 0, 0
	for _, path := range paths {
		want := writable(p, path)
		// Every class rule names writes and links alike (the table
		// test checks each operation); one stands for both here.
		if got, by := verdict(t, rules, "file-write-create", path); got != want {
			t.Fatalf("write %s allowed=%v, want %v (decided by %s)", path, got, want, rules[by].text)
		}
		checked++
		if !want {
			denied++
		}
	}
	// The set must hold both verdicts in numbers, or it proves little.
	if denied < checked/10 || denied > checked*9/10 {
		t.Fatalf("%d of %d paths denied: the set is lopsided", denied, checked)
	}
}

func TestSeatbeltModes(t *testing.T) {
	for _, mode := range []Mode{ReadOnly, Protect, WorkspaceWrite, None} {
		p := classPolicy(mode)
		text := SeatbeltProfile(p)
		if !strings.HasPrefix(text, "(version 1)\n") {
			t.Errorf("%s: no version line:\n%s", mode, text)
		}
		if strings.Count(text, "(") != strings.Count(text, ")") {
			t.Errorf("%s: unbalanced parentheses:\n%s", mode, text)
		}
		rules := profileRules(t, text)
		has := func(s string) bool { return strings.Contains(text, s) }
		check := func(what string, ok bool) {
			if !ok {
				t.Errorf("%s: %s:\n%s", mode, what, text)
			}
		}
		can := func(op, path string) bool { ok, _ := verdict(t, rules, op, path); return ok }

		// The trust list and the user's settings stay read-only in
		// every mode, as the last rule.
		for _, a := range p.AlwaysProtected {
			for _, op := range writeOps {
				check("writes "+a, !can(op, a))
			}
		}
		last := rules[len(rules)-1]
		check("ends with the always-protected denial", !last.allow && last.names("file-write-create") && last.matches(t, p.AlwaysProtected[0]))

		if mode == None {
			check("starts from allow default", has("(allow default)") && !has("(deny default)"))
			check("the person's command writes the class", can("file-write-create", "/w/.git/config"))
			check("the person's command writes outside the roots", can("file-write-data", "/home/u/.bashrc"))
			check("the person's command reads the home folder", can("file-read-data", "/home/u/.ssh/id_rsa"))
			continue
		}
		check("starts from deny default", has("(deny default)") && !has("(allow default)"))
		for _, base := range []string{"(allow process-exec)", "(allow process-fork)", "(allow signal (target same-sandbox))", "(allow sysctl-read)", "(allow mach-lookup)", "(allow pseudo-tty)", "(allow ipc-posix-sem)"} {
			check("lacks "+base, has(base))
		}
		check("reads other processes' arguments", has(`(deny sysctl-read (sysctl-name-prefix "kern.procargs"))`))

		// Reads by allow-list.
		check("reads a readable folder", can("file-read-data", "/usr/bin/ls"))
		check("maps a readable library", can("file-map-executable", "/usr/lib/libz.dylib"))
		check("reads a toolchain", can("file-read-data", "/home/u/go/bin/gopls"))
		check("reads a root", can("file-read-data", "/w/src/main.go"))
		check("reads a secret", !can("file-read-data", "/home/u/.ssh/id_rsa"))
		check("reads the home folder", !can("file-read-data", "/home/u"))
		check("reads a file next to a listed one", !can("file-read-data", "/home/u/.gitconfig-work"))
		check("cannot stat a path", can("file-read-metadata", "/home/u/.ssh/id_rsa"))
		check("cannot read the root folder", can("file-read-data", "/"))
		check("cannot use /dev/null", can("file-read-data", "/dev/null") && can("file-write-data", "/dev/null"))
		check("cannot write its terminal", can("file-write-data", "/dev/ttys003"))
		check("writes a device beyond the list", !can("file-write-data", "/dev/disk0"))

		// Network by mode.
		switch mode {
		case ReadOnly:
			check("allows a socket", !has("network") && !has("system-socket"))
			check("writes in a root", !can("file-write-create", "/w/src/new.go"))
			check("writes the temporary folder", !can("file-write-create", "/t/q/x"))
			check("has write rules", !has("(allow file-write*") && !has("regex \"^/w"))
		case WorkspaceWrite:
			check("lacks the Unix socket rules", has("(allow system-socket (socket-domain AF_UNIX))") &&
				has(`(allow network-bind network-inbound (local unix-socket (path-regex "^/")))`) &&
				has(`(allow network-outbound (remote unix-socket (path-regex "^/")))`))
			check("allows other sockets", !has("(allow network*") && !has("(allow system-socket)") && !has("remote ip"))
		case Protect:
			check("lacks the network", has("(allow network*)") && has("(allow system-socket)"))
		}
		if !mode.Writes() {
			continue
		}
		check("cannot write in a root", can("file-write-create", "/w/src/new.go"))
		check("cannot write its temporary folder", can("file-write-data", "/t/q/x"))
		check("reads its temporary folder", can("file-read-data", "/t/q/x"))

		// Order: the write allow-list, then every rule of the class;
		// the last rule deciding a protected name of another kind is a
		// denial, after every allow but those of the git directories
		// .git files name (Class decides by those first).
		allowAt := -1
		for i, r := range rules {
			if r.allow && r.names("file-write-create") && len(r.filters) > 0 && r.filters[0].list[0].sym == "subpath" && r.matches(t, "/w/x") {
				allowAt = i
			}
		}
		check("has no write allow-list", allowAt >= 0)
		for i, r := range rules {
			if len(r.filters) > 0 && r.filters[0].list[0].sym == "regex" && r.names("file-write-create") && i < allowAt {
				t.Errorf("%s: class rule %s comes before the write allow-list", mode, r.text)
			}
		}
		for _, path := range []string{"/w/.vscode/tasks.json", "/w/a/.envrc", "/w/QWEN.md", "/v/r/.qwen/x"} {
			_, by := verdict(t, rules, "file-write-create", path)
			for i := by + 1; i < len(rules); i++ {
				r := rules[i]
				if !r.allow || !r.names("file-write-create") {
					continue
				}
				for _, f := range r.filters {
					if !strings.HasPrefix(f.list[1].str, "^"+ereQuote("/w/.git/worktrees/wt")+"/") {
						t.Errorf("%s: %s follows the denial of %s", mode, r.text, path)
					}
				}
			}
		}
	}
}

func TestSeatbeltEmptyReadable(t *testing.T) {
	for _, mode := range []Mode{ReadOnly, Protect} {
		p := classPolicy(mode)
		p.Readable = nil
		rules := profileRules(t, SeatbeltProfile(p))
		if ok, _ := verdict(t, rules, "file-read-data", "/home/u/.ssh/id_rsa"); !ok {
			t.Errorf("%s: no readable list, yet a read is denied", mode)
		}
	}
}

// TestSeatbeltQuoting: quotes, backslashes and the characters special in
// a regular expression, in a root, reach Seatbelt as the path itself.
func TestSeatbeltQuoting(t *testing.T) {
	odd := []string{`/w/a.b+c (x)`, `/w/q"uo\te`, `/w/[s]{1}|^$*?`}
	p := Policy{Mode: WorkspaceWrite, Writable: []string{"/w"}, Readable: odd, Class: Class{Roots: odd}}
	text := SeatbeltProfile(p)
	if !strings.Contains(text, `(subpath "/w/q\"uo\\te")`) {
		t.Errorf("quote and backslash not escaped as Scheme strings:\n%s", text)
	}
	if !strings.Contains(text, `(regex "^/w/a\\.b\\+c \\(x\\)/`) {
		t.Errorf("regex characters not quoted:\n%s", text)
	}
	rules := profileRules(t, text)
	for _, root := range odd {
		for path, want := range map[string]bool{
			root + "/.git/config":  false,
			root + "/.git/index":   true,
			root + "/.vscode/x":    false,
			root + "/src/QWEN.md":  false,
			root + "/src/main.go":  true,
			root + "x/.git/config": true, // not below the root
		} {
			if got, by := verdict(t, rules, "file-write-create", path); got != want {
				t.Errorf("write %s allowed=%v, want %v (by %s)", path, got, want, rules[by].text)
			}
		}
		if ok, _ := verdict(t, rules, "file-read-data", root+"/f"); !ok {
			t.Errorf("cannot read %s/f", root)
		}
	}
	// Unquoted, "a.b+c (x)" would also match "aXbbc x".
	for _, path := range []string{"/w/aXbbc x/.git/config", "/w/aXbbc x/.vscode/t", "/w/s1/.git/config"} {
		if got, by := verdict(t, rules, "file-write-create", path); !got {
			t.Errorf("write %s denied by %s: a root's regex characters act as regex", path, rules[by].text)
		}
	}
}

// TestSeatbeltResolvesLinks: Seatbelt compares resolved paths, so a
// listed path that is a link gives its target too; a file is listed as
// itself, a folder with what is below it.
func TestSeatbeltResolvesLinks(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(dir, "real")
	link := filepath.Join(dir, "link")
	file := filepath.Join(dir, "file")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p := Policy{Mode: WorkspaceWrite, Writable: []string{link}, Readable: []string{file}, Class: Class{Roots: []string{link}}, AlwaysProtected: []string{link + "/.qwen/settings.json"}}
	text := SeatbeltProfile(p)
	rules := profileRules(t, text)
	for path, want := range map[string]bool{
		real + "/src/a.go":               true,
		real + "/.git/config":            false,
		real + "/.qwen/settings.json":    false,
		link + "/src/a.go":               true,
		filepath.Join(dir, "other/a.go"): false,
	} {
		if got, by := verdict(t, rules, "file-write-create", path); got != want {
			t.Errorf("write %s allowed=%v, want %v (by %s)", path, got, want, rules[by].text)
		}
	}
	if !strings.Contains(text, "(literal "+sbString(file)+")") {
		t.Errorf("a readable file is not a literal:\n%s", text)
	}
	if ok, _ := verdict(t, rules, "file-read-data", file+"/x"); ok {
		t.Errorf("a readable file reads as a folder")
	}
}

// TestFoldRegex: a class name matches exactly the names strings.EqualFold
// takes for it, and nothing longer or shorter.
func TestFoldRegex(t *testing.T) {
	names := []string{".git", ".husky", ".vscode", "AGENTS.md", "a+b.md"}
	tries := []string{".git", ".GIT", ".gIt", ".gıt", ".git2", "git", ".husky", ".HUSKY", ".huſky", ".hu5ky",
		".VSCode", ".vscode ", "agents.md", "AGENTſ.MD", "agentsXmd", "a+b.md", "aab.md", "A+B.MD"}
	for _, n := range names {
		re := compileERE(t, "^"+foldRegex(n)+"$")
		for _, s := range tries {
			if got, want := re.MatchString(s), strings.EqualFold(s, n); got != want {
				t.Errorf("foldRegex(%q) on %q: %v, EqualFold says %v", n, s, got, want)
			}
		}
	}
	notGit := compileERE(t, "^"+notGitPart+"$")
	for _, s := range append(tries, "a", "ab", "abc", "abcd", ".gi", ".gitx", "x.git", ".G1t", "/git", ".g/t", "é.g") {
		if got, want := notGit.MatchString(s), !strings.EqualFold(s, ".git") && !strings.Contains(s, "/"); got != want {
			t.Errorf("notGitPart on %q: %v, want %v", s, got, want)
		}
	}
}

func TestHomeFolders(t *testing.T) {
	mac := homeFolders("darwin")
	for _, want := range []string{"/Users", "/var/root", "/private/var/root", "/System/Volumes/Data/Users"} {
		if !slices.Contains(mac, want) {
			t.Errorf("macOS home folders lack %s: %v", want, mac)
		}
	}
	if got := homeFolders("linux"); !slices.Equal(got, []string{"/home", "/root"}) {
		t.Errorf("Linux home folders: %v", got)
	}
}
