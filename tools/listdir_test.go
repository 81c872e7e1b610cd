package tools_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
)

func listDir(t *testing.T, e *testEnv, args string) tools.Result {
	t.Helper()
	return run(t, tools.NewListDirectory(e.Env), readCall(), args)
}

func TestListDirectoryErrors(t *testing.T) {
	e := newTestEnv(t, nil)
	missing := filepath.Join(e.Root, "nope")
	readWantError(t, listDir(t, e, `{"path":"`+missing+`"}`), tools.ErrorLsExecution, missing+" does not exist.")

	f := e.write(t, "f.txt", "x")
	res := listDir(t, e, `{"path":"`+f+`"}`)
	readWantError(t, res, tools.ErrorPathIsNotADirectory, f+" is not a directory.")
	if res.Display != tools.Markdown("Error: Path is not a directory.") {
		t.Errorf("display = %#v", res.Display)
	}

	empty := filepath.Join(e.Root, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	res = listDir(t, e, `{"path":"`+empty+`"}`)
	readWantText(t, res, empty+" is an empty directory.")
	if res.Display != tools.Markdown("Directory is empty.") {
		t.Errorf("display = %#v", res.Display)
	}

	readWantError(t, listDir(t, e, `{"path":"sub"}`), tools.ErrorInvalidToolParams,
		"Not an absolute path: sub. Give the full path, starting with /. The workspace root is "+e.Root+
			", so the full path is probably "+e.Root+"/sub.")
	readWantError(t, listDir(t, e, `{"path":"/etc"}`), tools.ErrorPathNotInWorkspace,
		"Path is outside the workspace: /etc. Tools may only access files inside the workspace roots: "+e.Root+".")
	readWantError(t, listDir(t, e, `{"path":""}`), tools.ErrorInvalidToolParams, `Argument "path" must not be empty.`)
}

func TestListDirectoryIgnorePatterns(t *testing.T) {
	e := newTestEnv(t, nil)
	for _, name := range []string{"a.go", "ab.go", "README.md", "[x]", "x", "notes.txt"} {
		e.write(t, "d/"+name, "")
	}
	d := filepath.Join(e.Root, "d")
	// * is any run, ? one character, [ stands for itself.
	res := listDir(t, e, `{"path":"`+d+`","ignore":["*.md","?.go","[x]"]}`)
	readWantText(t, res, "Contents of "+d+" (3 entries):\n---\nab.go\nnotes.txt\nx")
	// Patterns are not paths: ** means the same as *.
	res = listDir(t, e, `{"path":"`+d+`","ignore":["**.go","n*s.t?t"]}`)
	readWantText(t, res, "Contents of "+d+" (3 entries):\n---\nREADME.md\n[x]\nx")
}

func TestListDirectoryCap(t *testing.T) {
	e := newTestEnv(t, nil)
	for i := range 121 {
		e.write(t, fmt.Sprintf("many/f%03d", i), "")
	}
	d := filepath.Join(e.Root, "many")
	res := listDir(t, e, `{"path":"`+d+`"}`)
	text := res.Text()
	if !strings.HasPrefix(text, "Contents of "+d+" (121 entries):\n---\nf000\n") ||
		!strings.HasSuffix(text, "\nf099\n---\n[21 more entries not shown]") {
		t.Errorf("content = %q ... %q", text[:60], text[len(text)-60:])
	}
	if res.Display != tools.Markdown("Listed 121 item(s) (truncated)") {
		t.Errorf("display = %#v", res.Display)
	}
	// The line limit caps the listing too.
	small := newTestEnv(t, map[string]any{"tools": map[string]any{"truncateToolOutputLines": float64(2)}})
	for _, n := range []string{"a", "b", "c"} {
		small.write(t, "d/"+n, "")
	}
	sd := filepath.Join(small.Root, "d")
	readWantText(t, listDir(t, small, `{"path":"`+sd+`"}`), "Contents of "+sd+" (3 entries):\n---\na\nb\n---\n[1 more entry not shown]")
}

func TestListDirectoryIgnoreFiles(t *testing.T) {
	e := newTestEnv(t, nil)
	readGitRepo(t, e, "*.log\nbuild/\n")
	e.write(t, ".qwenignore", "secret*\n")
	e.Workspace.Ignore.Invalidate(filepath.Join(e.Root, ".qwenignore"))
	for _, name := range []string{"a.log", "b.txt", "secret.txt", "secret2", "build/x"} {
		e.write(t, name, "")
	}
	// At the root, .git itself is git-ignored too.
	res := listDir(t, e, `{"path":"`+e.Root+`"}`)
	readWantText(t, res, "Contents of "+e.Root+" (3 entries):\n---\n.gitignore\n.qwenignore\nb.txt\n\n(3 git-ignored, 2 qwen-ignored)")
	if res.Display != tools.Markdown("Listed 3 item(s) (3 git-ignored, 2 qwen-ignored)") {
		t.Errorf("display = %#v", res.Display)
	}
	res = listDir(t, e, `{"path":"`+e.Root+`","file_filtering_options":{"respect_git_ignore":false}}`)
	readWantText(t, res, "Contents of "+e.Root+" (6 entries):\n---\n[DIR] .git\n[DIR] build\n.gitignore\n.qwenignore\na.log\nb.txt\n\n(2 qwen-ignored)")
	// A git-ignored file that is also qwen-ignored counts as git-ignored.
	e.write(t, "secret.log", "")
	res = listDir(t, e, `{"path":"`+e.Root+`","file_filtering_options":{"respect_qwen_ignore":false}}`)
	if !strings.HasSuffix(res.Text(), "\n\n(4 git-ignored)") {
		t.Errorf("content = %q", res.Text())
	}
}

func TestListDirectorySymlinks(t *testing.T) {
	e := newTestEnv(t, nil)
	e.write(t, "real/f", "")
	e.write(t, "d/file", "")
	if err := os.Symlink(filepath.Join(e.Root, "real"), filepath.Join(e.Root, "d", "linkdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(e.Root, "gone"), filepath.Join(e.Root, "d", "dangling")); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(e.Root, "d")
	readWantText(t, listDir(t, e, `{"path":"`+d+`"}`), "Contents of "+d+" (2 entries):\n---\n[DIR] linkdir\nfile")

	tool := tools.NewListDirectory(e.Env)
	params, terr := tools.PrepareArgs(tool, `{"path":"`+e.Root+`"}`)
	if terr != nil {
		t.Fatal(terr)
	}
	if got := tool.Describe(params); got != "." {
		t.Errorf("describe root = %q", got)
	}
	params, _ = tools.PrepareArgs(tool, `{"path":"`+d+`"}`)
	if got := tool.Describe(params); got != "d" {
		t.Errorf("describe d = %q", got)
	}
}
