package tools_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/toolset"
)

// The path-escape suite: whatever a path argument says, no file tool
// reads, lists or writes anything outside the workspace roots (tools.md
// §2.2). The outside folder O sits next to the root W and holds a secret
// whose content and name must never appear in a result, and a file that
// must never change.

const (
	secretText = "SECRET-a8f3c1"
	secretName = "outside-secret-name-q7.txt"
)

type escapeEnv struct {
	*testEnv
	out    string // O, the outside folder (real path)
	secret string // O/secretName
	// noLinks is set where the links os.Symlink makes are not seen as
	// links (Wine): no link is made, and the paths through one are left
	// out, since they would name ordinary folders inside W.
	noLinks bool
}

// linkNames are the entries of W that are symlinks.
var linkNames = []string{"link_", "chain1", "chain2", "dangling", "sub/up", "sub\\up"}

// withoutLinks drops the paths that go through a link when there are none.
func (e *escapeEnv) withoutLinks(paths []string) []string {
	if !e.noLinks {
		return paths
	}
	var out []string
	for _, p := range paths {
		if !slices.ContainsFunc(linkNames, func(n string) bool { return strings.Contains(p, n) }) {
			out = append(out, p)
		}
	}
	return out
}

// symlinksSeen reports whether a link os.Symlink makes is seen as one.
var symlinksSeen = sync.OnceValue(func() bool {
	dir, err := os.MkdirTemp("", "symlink-probe")
	if err != nil {
		return false
	}
	defer os.RemoveAll(dir)
	link := filepath.Join(dir, "link")
	if os.Symlink(dir, link) != nil {
		return false
	}
	fi, err := os.Lstat(link)
	return err == nil && fi.Mode()&os.ModeSymlink != 0
})

func newEscapeEnv(t *testing.T) *escapeEnv {
	t.Helper()
	e := newTestEnv(t, nil)
	out := filepath.Join(filepath.Dir(e.Root), "outside")
	if err := os.MkdirAll(filepath.Join(out, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(out, secretName)
	for _, p := range []string{secret, filepath.Join(out, "sub", secretName)} {
		if err := os.WriteFile(p, []byte(secretText+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.write(t, "inside.txt", "inside\n")
	links := map[string]string{
		"link_file":    secret,
		"link_dir":     out,
		"link_root":    "/",
		"link_rel":     "../outside",
		"chain1":       filepath.Join(e.Root, "chain2"),
		"chain2":       out,
		"dangling":     filepath.Join(out, "created-through-dangling.txt"),
		"sub/up":       "../../outside",
		"link_proc":    "/proc/self/root" + out,
		"link_newfile": filepath.Join(out, "new-through-link.txt"),
	}
	if !symlinksSeen() {
		t.Log("this system does not show the links os.Symlink makes as links: the escapes through links are left out")
		return &escapeEnv{testEnv: e, out: out, secret: secret, noLinks: true}
	}
	for name, target := range links {
		p := filepath.Join(e.Root, name)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	return &escapeEnv{testEnv: e, out: out, secret: secret}
}

// escapingPaths are absolute path arguments that name something outside
// W, each in its own way.
func (e *escapeEnv) escapingPaths() []string {
	W, O := e.Root, e.out
	long := W + "/" + strings.Repeat("a/", 2000) + strings.Repeat("../", 2001) + "outside/" + secretName
	var windows []string
	if runtime.GOOS == "windows" {
		// The same outside file in Windows' other spellings: the
		// extended-length prefix, another case, forward slashes.
		windows = []string{`\\?\` + O + `\` + secretName, strings.ToUpper(O) + `\` + secretName, filepath.ToSlash(O) + "/" + secretName,
			strings.ToLower(W) + `\..\outside\` + secretName}
	}
	return e.withoutLinks(append(windows, []string{
		O + "/" + secretName,
		O,
		W + "/../outside/" + secretName,
		W + "/sub/../../outside/" + secretName,
		W + "//..//outside//" + secretName,
		W + "/link_file",
		W + "/link_dir",
		W + "/link_dir/" + secretName,
		W + "/link_dir/sub",
		W + "/link_rel/" + secretName,
		W + "/link_root" + O + "/" + secretName,
		W + "/chain1/" + secretName,
		W + "/sub/up/" + secretName,
		W + "/link_proc/" + secretName,
		"/proc/self/root" + O + "/" + secretName,
		"/proc/self/root" + O,
		"/proc/self/cwd",
		"/proc/self/cwd/pathescape_test.go",
		"/proc/" + fmt.Sprint(os.Getpid()) + "/root" + O,
		"/dev/fd/0",
		W + "/inside.txt\x00/../../outside/" + secretName,
		O + "/" + secretName + "\x00",
		W + "\\/..\\/outside/" + secretName,
		long,
		W + "/" + strings.Repeat("x", 5000),
		"~/" + secretName,
		"~",
		"$HOME/" + secretName,
		"/",
		"/etc",
		// Relative paths, which glob and grep_search take from the
		// primary root.
		"../outside",
		"../outside/" + secretName,
		"sub/../../outside",
		"link_dir",
		"link_dir/" + secretName,
		"link_rel",
		"chain1",
		"sub/up",
		"link_proc",
		"link_file",
		"./link_root" + O,
	}...))
}

// leaks reports the secret's content, or a name from O that the
// arguments did not already hold (an error may repeat the path it was
// given), in a result.
func (e *escapeEnv) leaks(res tools.Result, args string) string {
	b, _ := json.Marshal(res)
	text := res.Text() + string(b)
	for _, s := range []string{secretText, secretName, "created-through-dangling", "new-through-link"} {
		if s != secretText && strings.Contains(args, s) {
			continue
		}
		if strings.Contains(text, s) {
			return s
		}
	}
	return ""
}

// outsideUnchanged fails when O holds anything but what the test put there.
func (e *escapeEnv) outsideUnchanged(t *testing.T, what string) {
	t.Helper()
	var names []string
	_ = filepath.Walk(e.out, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			rel, _ := filepath.Rel(e.out, p)
			names = append(names, rel)
			data, _ := os.ReadFile(p)
			if string(data) != secretText+"\n" {
				t.Errorf("%s: %s now holds %q", what, rel, data)
			}
		}
		return nil
	})
	if len(names) != 2 {
		t.Errorf("%s: outside folder now holds %v", what, names)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestPathEscapeReadTools(t *testing.T) {
	e := newEscapeEnv(t)
	readers := map[string]func(p string) string{
		"read_file":      func(p string) string { return mustJSON(map[string]any{"absolute_path": p}) },
		"list_directory": func(p string) string { return mustJSON(map[string]any{"path": p}) },
		"glob":           func(p string) string { return mustJSON(map[string]any{"pattern": "**/*", "path": p}) },
		"grep_search":    func(p string) string { return mustJSON(map[string]any{"pattern": "SECRET", "path": p}) },
		"read_many_files": func(p string) string {
			return mustJSON(map[string]any{"paths": []string{p}})
		},
	}
	byName := map[string]tools.Tool{}
	for _, tool := range toolset.Builtins(e.Env) {
		byName[tool.Name()] = tool
	}
	for name, args := range readers {
		for _, p := range e.escapingPaths() {
			res := run(t, byName[name], &tools.Call{ID: "c"}, args(p))
			if leak := e.leaks(res, args(p)); leak != "" {
				t.Errorf("%s %q leaked %q: %s", name, p, leak, truncateForLog(res.Text()))
			}
		}
	}
}

// Searching the root itself must not follow the symlinks that point out.
func TestPathEscapeSearchesFromTheRoot(t *testing.T) {
	e := newEscapeEnv(t)
	byName := map[string]tools.Tool{}
	for _, tool := range toolset.Builtins(e.Env) {
		byName[tool.Name()] = tool
	}
	W := e.Root
	cases := []struct{ tool, args string }{
		{"glob", mustJSON(map[string]any{"pattern": "**/*"})},
		{"glob", mustJSON(map[string]any{"pattern": "**/" + secretName})},
		{"glob", mustJSON(map[string]any{"pattern": "../outside/*"})},
		{"glob", mustJSON(map[string]any{"pattern": "../**/*secret*"})},
		{"glob", mustJSON(map[string]any{"pattern": e.out + "/*"})},
		{"glob", mustJSON(map[string]any{"pattern": "link_dir/**"})},
		{"glob", mustJSON(map[string]any{"pattern": "/proc/self/root" + e.out + "/*"})},
		{"grep_search", mustJSON(map[string]any{"pattern": "SECRET"})},
		{"grep_search", mustJSON(map[string]any{"pattern": "SECRET", "include": "../outside/*"})},
		{"grep_search", mustJSON(map[string]any{"pattern": "SECRET", "include": "**/*"})},
		{"grep_search", mustJSON(map[string]any{"pattern": "SECRET", "include": "link_dir/**"})},
		{"grep_search", mustJSON(map[string]any{"pattern": "SECRET", "include": e.out + "/*"})},
		{"list_directory", mustJSON(map[string]any{"path": W})},
		{"list_directory", mustJSON(map[string]any{"path": W + "/sub"})},
		{"read_many_files", mustJSON(map[string]any{"paths": []string{"**/*"}})},
		{"read_many_files", mustJSON(map[string]any{"paths": []string{"*"}, "include": []string{"**"}})},
		{"read_many_files", mustJSON(map[string]any{"paths": []string{"link_file", "link_dir", "link_dir/" + secretName, "link_rel/*", "chain1/*", "sub/up/*"}})},
		{"read_many_files", mustJSON(map[string]any{"paths": []string{"../outside/" + secretName, "../outside/*", "../**"}})},
		{"read_many_files", mustJSON(map[string]any{"paths": []string{"."}, "include": []string{"../outside/*", e.out + "/*", "/proc/self/root" + e.out + "/*"}})},
		{"read_many_files", mustJSON(map[string]any{"paths": []string{"~/" + secretName, "~", "$HOME/x", "link_root/etc/hostname"}})},
	}
	for _, c := range cases {
		res := run(t, byName[c.tool], &tools.Call{ID: "c"}, c.args)
		if leak := e.leaks(res, c.args); leak != "" {
			t.Errorf("%s %s leaked %q: %s", c.tool, c.args, leak, truncateForLog(res.Text()))
		}
	}
}

// Writes: write_file and edit refuse every escaping path, and nothing
// outside changes, including through a dangling symlink, a symlinked
// folder, or a hard link to an outside file.
func TestPathEscapeWriteTools(t *testing.T) {
	e := newEscapeEnv(t)
	wf, ed := tools.NewWriteFile(e.Env), tools.NewEdit(e.Env)
	paths := append(e.escapingPaths(), e.withoutLinks([]string{
		e.Root + "/dangling", e.Root + "/link_newfile", e.Root + "/link_dir/new.txt", e.Root + "/link_dir/newdir/x.txt",
		e.Root + "/chain1/new.txt", e.Root + "/sub/up/new.txt", e.Root + "/link_proc/new.txt"})...)
	for _, p := range paths {
		res := run(t, wf, &tools.Call{ID: "w"}, mustJSON(map[string]any{"file_path": p, "content": "PWNED\n"}))
		if res.Error == nil {
			t.Errorf("write_file %q succeeded", p)
		}
		args := mustJSON(map[string]any{"file_path": p, "old_string": "SECRET", "new_string": "PWNED"})
		res = run(t, ed, &tools.Call{ID: "e"}, args)
		if res.Error == nil {
			t.Errorf("edit %q succeeded", p)
		}
		if leak := e.leaks(res, args); leak != "" {
			t.Errorf("edit %q leaked %q", p, leak)
		}
		e.outsideUnchanged(t, p)
	}
	// The hard link is a workspace file by every path-based test; writing
	// it must still leave the outside name's content alone.
	if err := os.Link(e.secret, filepath.Join(e.Root, "hardlink")); err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{
		mustJSON(map[string]any{"file_path": e.Root + "/hardlink", "content": "PWNED\n"}),
	} {
		run(t, wf, &tools.Call{ID: "w"}, args)
	}
	run(t, ed, &tools.Call{ID: "e"}, mustJSON(map[string]any{"file_path": e.Root + "/hardlink", "old_string": "SECRET", "new_string": "PWNED"}))
	e.outsideUnchanged(t, "hardlink")
}

func TestPathEscapeShellDirectory(t *testing.T) {
	e := newEscapeEnv(t)
	sh := tools.NewShell(e.Env)
	marker := filepath.Join(e.out, "ran-here")
	for _, d := range append(e.escapingPaths(), e.withoutLinks([]string{"../outside", "link_dir", "link_rel", "chain1", "sub/up", "~", "$HOME", "link_proc"})...) {
		res := run(t, sh, &tools.Call{ID: "s"}, mustJSON(map[string]any{"command": "pwd > ran-here", "directory": d}))
		if res.Error == nil || res.Error.Type != tools.ErrorPathNotInWorkspace && res.Error.Type != tools.ErrorInvalidToolParams {
			t.Errorf("directory %q: %+v", d, res.Error)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("directory %q: the command ran outside", d)
		}
	}
	e.outsideUnchanged(t, "shell")
}

// A symlink swapped in after the path was checked (time of check, time of
// use): one goroutine keeps turning W/swap into a link to the secret and
// back into an inside file while read_file, read_many_files and grep read
// it, and W/swapdir into a link to O and back while write_file writes
// into it. The secret is never returned and nothing appears outside.
func TestPathEscapeSymlinkSwapRace(t *testing.T) {
	e := newEscapeEnv(t)
	if e.noLinks {
		t.Skip("this system does not show the links os.Symlink makes as links")
	}
	W := e.Root
	swap, swapdir := filepath.Join(W, "swap"), filepath.Join(W, "swapdir")
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			tmp := filepath.Join(W, fmt.Sprintf(".swap-tmp-%d", i%2))
			tmpd := filepath.Join(W, fmt.Sprintf(".swapdir-tmp-%d", i%2))
			_ = os.RemoveAll(tmp)
			_ = os.RemoveAll(tmpd)
			if i%2 == 0 {
				_ = os.Symlink(e.secret, tmp)
				_ = os.Symlink(e.out, tmpd)
			} else {
				_ = os.WriteFile(tmp, []byte("inside swap\n"), 0o644)
				_ = os.Mkdir(tmpd, 0o755)
			}
			_ = os.Rename(tmp, swap)
			_ = os.RemoveAll(swapdir)
			_ = os.Rename(tmpd, swapdir)
		}
	}()
	rf, rm, gr, wf := tools.NewReadFile(e.Env), tools.NewReadManyFiles(e.Env), tools.NewGrepSearch(e.Env), tools.NewWriteFile(e.Env)
	for i := 0; i < 150; i++ {
		for _, c := range []struct {
			tool tools.Tool
			args string
		}{
			{rf, mustJSON(map[string]any{"absolute_path": swap})},
			{rm, mustJSON(map[string]any{"paths": []string{"swap", "swapdir/*"}})},
			{gr, mustJSON(map[string]any{"pattern": "SECRET", "path": W})},
			{rf, mustJSON(map[string]any{"absolute_path": swapdir + "/" + secretName})},
		} {
			if leak := e.leaks(run(t, c.tool, &tools.Call{ID: "r"}, c.args), c.args); leak != "" {
				stop.Store(true)
				wg.Wait()
				t.Fatalf("round %d: %s %s leaked %q: %s", i, c.tool.Name(), c.args, leak, truncateForLog(mustJSON(run(t, c.tool, &tools.Call{ID: "r"}, c.args))))
			}
		}
		run(t, wf, &tools.Call{ID: "w"}, mustJSON(map[string]any{"file_path": swapdir + "/written.txt", "content": "PWNED\n"}))
		if _, err := os.Stat(filepath.Join(e.out, "written.txt")); err == nil {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("round %d: write_file wrote through the swapped-in link", i)
		}
	}
	stop.Store(true)
	wg.Wait()
	e.outsideUnchanged(t, "swap race")
}
