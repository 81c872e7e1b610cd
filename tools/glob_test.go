package tools_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/toolstest"
	"github.com/qwen-ls/qwen-ls/workspace"
)

var updateSearch = flag.Bool("update-search", false, "rewrite the golden declarations of grep_search and glob")

// TestSearchDeclarationsGolden pins what the model is told about the two
// search tools: name, description and parameter schema.
func TestSearchDeclarationsGolden(t *testing.T) {
	e := newTestEnv(t, nil)
	for _, tool := range []tools.Tool{tools.NewGrepSearch(e.Env), tools.NewGlob(e.Env)} {
		var params bytes.Buffer
		if err := json.Compact(&params, tool.Schema()); err != nil {
			t.Fatalf("%s: schema is not JSON: %v", tool.Name(), err)
		}
		decl, err := json.MarshalIndent(struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}{tool.Name(), tool.Description(), params.Bytes()}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		toolstest.Golden(t, "declarations/"+tool.Name()+".json", append(decl, '\n'), *updateSearch)
	}
}

func TestGlobStatic(t *testing.T) {
	e := newTestEnv(t, nil)
	g := tools.NewGlob(e.Env)
	if g.Name() != "glob" || g.DisplayName() != "Glob" || g.Kind() != tools.KindSearch || len(g.Aliases()) != 0 {
		t.Errorf("static description is wrong")
	}
	if got := g.Describe(map[string]any{"pattern": "**/*.go", "path": e.Root + "/src"}); got != "'**/*.go' in path 'src'" {
		t.Errorf("describe %q", got)
	}
	if got := g.Describe(map[string]any{"pattern": "*.md"}); got != "'*.md'" {
		t.Errorf("describe %q", got)
	}
}

func TestGlobValidation(t *testing.T) {
	e := newTestEnv(t, nil)
	file := e.write(t, "f.txt", "x")
	cases := []struct {
		args map[string]any
		typ  tools.ErrorType
		want string
	}{
		{map[string]any{"pattern": " "}, tools.ErrorInvalidToolParams, `Argument "pattern" must not be empty.`},
		{map[string]any{"pattern": "a[b"}, tools.ErrorInvalidToolParams, `"a[b" is not a valid glob pattern.`},
		{map[string]any{"pattern": "{a,b"}, tools.ErrorInvalidToolParams, `"{a,b" is not a valid glob pattern.`},
		{map[string]any{"pattern": "*", "path": "sub"}, tools.ErrorSearchPathNotFound, e.Root + "/sub does not exist."},
		{map[string]any{"pattern": "*", "path": "f.txt"}, tools.ErrorSearchPathNotADirectory, file + " is not a directory."},
		{map[string]any{"pattern": "*", "path": "../.."}, tools.ErrorPathNotInWorkspace,
			"Path is outside the workspace: " + filepath.Dir(filepath.Dir(e.Root)) + ". Tools may only access files inside the workspace roots: " + e.Root + "."},
		{map[string]any{"pattern": "*", "path": e.Root + "/nope"}, tools.ErrorSearchPathNotFound, e.Root + "/nope does not exist."},
		{map[string]any{"pattern": "*", "path": file}, tools.ErrorSearchPathNotADirectory, file + " is not a directory."},
		{map[string]any{"pattern": "*", "path": "/"}, tools.ErrorPathNotInWorkspace,
			"Path is outside the workspace: /. Tools may only access files inside the workspace roots: " + e.Root + "."},
		{map[string]any{"pattern": e.Root + "/nope/**/*.go"}, tools.ErrorSearchPathNotFound, e.Root + "/nope does not exist."},
		{map[string]any{"pattern": "/etc/*.conf"}, tools.ErrorPathNotInWorkspace,
			"Path is outside the workspace: /etc. Tools may only access files inside the workspace roots: " + e.Root + "."},
	}
	for _, c := range cases {
		res := run(t, tools.NewGlob(e.Env), &tools.Call{}, searchArgs(t, c.args))
		if res.Error == nil || res.Error.Type != c.typ || res.Error.Message != c.want {
			t.Errorf("%v:\ngot  %v %q\nwant %s %q", c.args, res.Error, res.Text(), c.typ, c.want)
		}
	}
}

// globPaths runs glob and returns the listed paths relative to the root
// (the header and any truncation note left out).
func globPaths(t *testing.T, e *testEnv, args map[string]any) []string {
	t.Helper()
	text := searchText(t, run(t, tools.NewGlob(e.Env), &tools.Call{}, searchArgs(t, args)))
	if strings.HasPrefix(text, "No files match") {
		return nil
	}
	_, body, _ := strings.Cut(text, "\n---\n")
	body, _, _ = strings.Cut(body, "\n---\n")
	var out []string
	for _, l := range strings.Split(body, "\n") {
		rel, err := filepath.Rel(e.Root, l)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rel)
	}
	return out
}

// ageAll sets every file's modification time to two days ago, so that the
// order is by path alone.
func ageAll(t *testing.T, e *testEnv, paths ...string) {
	t.Helper()
	old := time.Now().Add(-48 * time.Hour)
	for _, p := range paths {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	searchWaitIndexed(t, e, paths...)
}

func TestGlobPatterns(t *testing.T) {
	e := newTestEnv(t, nil)
	ageAll(t, e,
		e.write(t, "a.go", ""), e.write(t, "README.md", ""), e.write(t, "src/b.go", ""),
		e.write(t, "src/c.ts", ""), e.write(t, "src/d/e.tsx", ""), e.write(t, ".hidden/f.go", ""),
		e.write(t, "a[1].txt", ""), e.write(t, "a1.txt", ""))
	cases := []struct {
		args map[string]any
		want []string
	}{
		{map[string]any{"pattern": "*.go"}, []string{"a.go"}},
		{map[string]any{"pattern": "**/*.go"}, []string{".hidden/f.go", "a.go", "src/b.go"}},
		{map[string]any{"pattern": "src/**/*.{ts,tsx}"}, []string{"src/c.ts", "src/d/e.tsx"}},
		{map[string]any{"pattern": "readme.MD"}, []string{"README.md"}},
		{map[string]any{"pattern": "readme.MD", "case_sensitive": true}, nil},
		{map[string]any{"pattern": "**/*.GO"}, []string{".hidden/f.go", "a.go", "src/b.go"}},
		{map[string]any{"pattern": "*.go", "path": e.Root + "/src"}, []string{"src/b.go"}},
		{map[string]any{"pattern": e.Root + "/src/**/*.ts*"}, []string{"src/c.ts", "src/d/e.tsx"}},
		// An existing name with glob syntax means that file only.
		{map[string]any{"pattern": "a[1].txt"}, []string{"a[1].txt"}},
		{map[string]any{"pattern": "a[12].txt"}, []string{"a1.txt"}},
		{map[string]any{"pattern": "src"}, nil},
		{map[string]any{"pattern": "./src/*.go"}, []string{"src/b.go"}},
	}
	for _, c := range cases {
		if got := globPaths(t, e, c.args); !slices.Equal(got, c.want) {
			t.Errorf("%v: got %q, want %q", c.args, got, c.want)
		}
	}
	got := searchText(t, run(t, tools.NewGlob(e.Env), &tools.Call{}, searchArgs(t, map[string]any{"pattern": e.Root + "/src/*.go"})))
	if want := "1 file matching \"" + e.Root + "/src/*.go\" under " + e.Root + "/src (changed in the last 24 hours first, newest first; then by path):\n---\n" + e.Root + "/src/b.go"; got != want {
		t.Errorf("absolute pattern:\ngot  %q\nwant %q", got, want)
	}
	res := run(t, tools.NewGlob(e.Env), &tools.Call{}, `{"pattern":"*.zzz"}`)
	if searchText(t, res) != `No files match "*.zzz" in the workspace.` || res.Display != tools.Markdown("No files found") {
		t.Errorf("no match: %q %v", res.Text(), res.Display)
	}
}

func TestGlobIgnoreAndExcludes(t *testing.T) {
	e := newTestEnv(t, nil)
	if err := os.Mkdir(filepath.Join(e.Root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	for _, p := range []string{e.write(t, "build/out.txt", ""), e.write(t, "node_modules/m/x.txt", "")} {
		// Not in the index (an ignored and an excluded directory): no wait.
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	files := []string{
		e.write(t, ".gitignore", "build/\n*.log\n"),
		e.write(t, ".qwenignore", "private.txt\n"),
		e.write(t, "keep.txt", ""),
		e.write(t, "private.txt", ""),
		e.write(t, "run.log", ""),
	}
	ageAll(t, e, files...)
	searchWaitEntry(t, e, filepath.Join(e.Root, "run.log"), func(f workspace.FileEntry) bool { return f.Git })

	if got := globPaths(t, e, map[string]any{"pattern": "**/*"}); !slices.Equal(got, []string{".gitignore", ".qwenignore", "keep.txt"}) {
		t.Errorf("respecting .gitignore: %q", got)
	}
	got := globPaths(t, e, map[string]any{"pattern": "**/*", "respect_git_ignore": false})
	if want := []string{".gitignore", ".qwenignore", "build/out.txt", "keep.txt", "run.log"}; !slices.Equal(got, want) {
		t.Errorf("respect_git_ignore false: got %q, want %q", got, want)
	}
	got = globPaths(t, e, map[string]any{"pattern": "**/*.txt", "path": e.Root + "/node_modules"})
	if want := []string{"node_modules/m/x.txt"}; !slices.Equal(got, want) {
		t.Errorf("inside node_modules: got %q, want %q", got, want)
	}
}

func TestGlobSymlinks(t *testing.T) {
	e := newTestEnv(t, nil)
	ageAll(t, e, e.write(t, "real/a.txt", ""))
	for link, to := range map[string]string{"link.txt": "real/a.txt", "dirlink": "real"} {
		if err := os.Symlink(to, filepath.Join(e.Root, link)); err != nil {
			t.Fatal(err)
		}
	}
	searchWaitEntry(t, e, filepath.Join(e.Root, "link.txt"), func(workspace.FileEntry) bool { return true })
	if got := globPaths(t, e, map[string]any{"pattern": "**/*.txt"}); !slices.Equal(got, []string{"link.txt", "real/a.txt"}) {
		t.Errorf("got %q: a file symlink is listed, a directory symlink is not followed", got)
	}
}

func TestGlobRecencyAndUnsavedBuffers(t *testing.T) {
	e := newTestEnv(t, nil)
	now := time.Now()
	times := map[string]time.Time{
		"old-b.md":  now.Add(-50 * time.Hour),
		"old-a.md":  now.Add(-30 * time.Hour),
		"recent.md": now.Add(-2 * time.Hour),
		"newest.md": now.Add(-1 * time.Minute),
		"future.md": now.Add(time.Hour),
		"other.go":  now,
	}
	var paths []string
	for name, mt := range times {
		p := e.write(t, name, "")
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	searchWaitIndexed(t, e, paths...)
	draft := filepath.Join(e.Root, "notes", "draft.md")
	e.Workspace.Overlay.Open(draft, 1, "not saved")
	e.Workspace.Overlay.Open(filepath.Join(e.Root, "node_modules", "x.md"), 1, "not saved")

	got := globPaths(t, e, map[string]any{"pattern": "**/*.md"})
	want := []string{"future.md", "notes/draft.md", "newest.md", "recent.md", "old-a.md", "old-b.md"}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestGlobCap(t *testing.T) {
	e := newTestEnv(t, map[string]any{"tools": map[string]any{"truncateToolOutputLines": 3.0}})
	var paths []string
	for i := range 5 {
		paths = append(paths, e.write(t, fmt.Sprintf("f%d.txt", i), ""))
	}
	ageAll(t, e, paths...)
	res := run(t, tools.NewGlob(e.Env), &tools.Call{}, `{"pattern":"*.txt"}`)
	want := "5 files matching \"*.txt\" in the workspace (changed in the last 24 hours first, newest first; then by path):\n---\n" +
		strings.Join(paths[:3], "\n") + "\n---\n[2 more files not shown]"
	if got := searchText(t, res); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if res.Display != tools.Markdown("Found 5 matching files (truncated)") {
		t.Errorf("display %v", res.Display)
	}

	ageAll(t, e, e.write(t, "f5.txt", ""))
	e.Workspace.Settings.SetEditorLayer(map[string]any{"tools": map[string]any{"truncateToolOutputLines": 5.0}})
	res = run(t, tools.NewGlob(e.Env), &tools.Call{}, `{"pattern":"*.txt"}`)
	if got := res.Text(); !strings.HasSuffix(got, "\n---\n[1 more file not shown]") {
		t.Errorf("one more: %q", got)
	}

	e.Workspace.Settings.SetEditorLayer(nil)
	for i := 6; i < 105; i++ {
		paths = append(paths, e.write(t, fmt.Sprintf("g%03d.txt", i), ""))
	}
	ageAll(t, e, paths...)
	res = run(t, tools.NewGlob(e.Env), &tools.Call{}, `{"pattern":"*.txt"}`)
	if got := res.Text(); !strings.HasPrefix(got, "105 files matching") || !strings.HasSuffix(got, "\n---\n[5 more files not shown]") {
		t.Errorf("the cap of 100: %q", got[:80])
	}
}

func TestGlobSeveralRoots(t *testing.T) {
	e := newTestEnv(t, nil)
	other, _ := filepath.EvalSymlinks(t.TempDir())
	if err := os.WriteFile(filepath.Join(other, "o.go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(filepath.Join(other, "o.go"), old, old); err != nil {
		t.Fatal(err)
	}
	a := e.write(t, "a.go", "")
	inner := e.write(t, "inner/i.go", "")
	ageAll(t, e, a, inner)
	e.Workspace.SetRoots([]string{e.Root, other, filepath.Join(e.Root, "inner")})
	res := run(t, tools.NewGlob(e.Env), &tools.Call{}, `{"pattern":"**/*.go"}`)
	want := "3 files matching \"**/*.go\" in 3 workspace roots (changed in the last 24 hours first, newest first; then by path):\n---\n" +
		a + "\n" + inner + "\n" + filepath.Join(other, "o.go")
	if got := searchText(t, res); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// A relative path is taken from the primary root, as Qwen Code does.
func TestGlobRelativePath(t *testing.T) {
	e := newTestEnv(t, nil)
	e.write(t, "src/a.go", "x")
	e.write(t, "src/deep/b.go", "x")
	e.write(t, "top.go", "x")
	// The watched index may take the new files in a moment later.
	for deadline := time.Now().Add(10 * time.Second); len(globPaths(t, e, map[string]any{"pattern": "**/*.go"})) < 3; {
		if time.Now().After(deadline) {
			t.Fatal("the new files never showed up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range []struct {
		path string
		want []string
	}{
		{"src", []string{"src/a.go", "src/deep/b.go"}},
		{"./src/deep", []string{"src/deep/b.go"}},
		{".", []string{"src/a.go", "src/deep/b.go", "top.go"}},
	} {
		got := globPaths(t, e, map[string]any{"pattern": "**/*.go", "path": c.path})
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("path %q: got %v, want %v", c.path, got, c.want)
		}
	}
	g := tools.NewGlob(e.Env)
	params := map[string]any{"pattern": "*.go", "path": "src"}
	if got := g.Describe(params); got != "'*.go' in path 'src'" {
		t.Errorf("describe: %q", got)
	}
	if got := g.Locations(params); len(got) != 1 || got[0].Path != filepath.Join(e.Root, "src") {
		t.Errorf("locations: %+v", got)
	}
}
