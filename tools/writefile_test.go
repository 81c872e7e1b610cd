package tools_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/toolstest"
)

func writeArgs(t testing.TB, abs, content string) string {
	t.Helper()
	return argsJSON(t, map[string]any{"file_path": abs, "content": content})
}

func TestWriteFileDeclarationGolden(t *testing.T) {
	e := newTestEnv(t, nil)
	toolstest.Golden(t, "declarations/write_file.json", declarationJSON(t, tools.NewWriteFile(e.Env)), *updateEdit)
}

func TestWriteFileSpec(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewWriteFile(e.Env)
	if tool.Name() != "write_file" || tool.DisplayName() != "WriteFile" || tool.Kind() != tools.KindEdit || len(tool.Aliases()) != 0 {
		t.Errorf("spec = %s %s %s %v", tool.Name(), tool.DisplayName(), tool.Kind(), tool.Aliases())
	}
	var schema struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(tool.Schema(), &schema); err != nil || strings.Join(schema.Required, ",") != "file_path,content" {
		t.Errorf("required = %v (%v)", schema.Required, err)
	}
	for _, fact := range []string{"absolute", "read_file", "whole new content", "modify"} {
		if !strings.Contains(tool.Description(), fact) {
			t.Errorf("the description does not mention %q", fact)
		}
	}
}

func TestWriteFileValidateDescribe(t *testing.T) {
	e := newTestEnv(t, nil)
	e.write(t, ".qwenignore", "secret.txt\n")
	// The watcher would notice too, but only some time later.
	e.Workspace.Ignore.Invalidate(filepath.Join(e.Root, ".qwenignore"))
	dir := filepath.Join(e.Root, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tool := tools.NewWriteFile(e.Env)
	for _, tt := range []struct {
		raw, want string
		typ       tools.ErrorType
	}{
		{writeArgs(t, "", "x"), `Argument "file_path" must not be empty.`, tools.ErrorInvalidToolParams},
		{writeArgs(t, "x.txt", "x"), "Not an absolute path: x.txt. Give the full path, starting with /. The workspace root is " + e.Root + ", so the full path is probably " + filepath.Join(e.Root, "x.txt") + ".", tools.ErrorInvalidToolParams},
		{writeArgs(t, dir, "x"), dir + " is a directory, not a file.", tools.ErrorTargetIsDirectory},
		{writeArgs(t, filepath.Join(e.Root, "secret.txt"), "x"), filepath.Join(e.Root, "secret.txt") + " is excluded by .qwenignore, so this tool cannot use it.", tools.ErrorInvalidToolParams},
		{argsJSON(t, map[string]any{"file_path": filepath.Join(e.Root, "a")}), "params must have required property 'content'", tools.ErrorInvalidToolParams},
	} {
		_, terr := tools.PrepareArgs(tool, tt.raw)
		wantEditError(t, terr, tt.typ, tt.want)
	}
	abs := filepath.Join(e.Root, "src", "a.txt")
	if got := tool.Describe(map[string]any{"file_path": abs, "content": "x"}); got != "Writing to src/a.txt" {
		t.Errorf("Describe = %q", got)
	}
	if locs := tool.Locations(map[string]any{"file_path": abs}); len(locs) != 1 || locs[0].Path != abs {
		t.Errorf("Locations = %+v", locs)
	}
}

func TestWriteFileNewAndOverwrite(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewWriteFile(e.Env)
	call := newEditCall(nil)
	p := filepath.Join(e.Root, "a.txt")

	_, c := mustProposeChange(t, tool, call, writeArgs(t, p, "one\n"))
	if call.Confirmation.Title != "Confirm Write: a.txt" || !c.IsNewFile || c.OldText != "" || c.NewText != "one\n" {
		t.Errorf("new-file proposal %q: %+v", call.Confirmation.Title, c)
	}
	res := executeChange(t, tool, call, nil)
	if out := wantApplied(t, res); out != "Created the file "+p+"." {
		t.Errorf("message = %q", out)
	}
	if d := res.Display.(*tools.FileDiff); d.OriginalContent != nil || d.NewContent != "one\n" || !strings.Contains(d.FileDiff, "+one") {
		t.Errorf("display = %+v", d)
	}

	// The write counts as a full read: overwriting needs no read_file.
	res = run(t, tool, call, writeArgs(t, p, "two\n"))
	if out := wantApplied(t, res); out != "Overwrote the file "+p+"." {
		t.Errorf("message = %q", out)
	}
	if d := res.Display.(*tools.FileDiff); d.OriginalContent == nil || *d.OriginalContent != "one\n" {
		t.Errorf("display = %+v", d)
	}
	if got := diskText(t, p); got != "two\n" {
		t.Errorf("disk = %q", got)
	}
	// The same content again is still a write, as proposed.
	if out := wantApplied(t, run(t, tool, call, writeArgs(t, p, "two\n"))); out != "Overwrote the file "+p+"." {
		t.Errorf("message = %q", out)
	}
}

func TestWriteFileLineEndingStyle(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewWriteFile(e.Env)
	p := e.write(t, "lf.txt", "a\nb\n")
	call := newEditCall(nil)
	readForEdit(t, e, call, p)
	_, c := mustProposeChange(t, tool, call, writeArgs(t, p, "x\r\ny\n"))
	if c.NewText != "x\ny\n" {
		t.Errorf("an LF file is proposed %q", c.NewText)
	}
	wantApplied(t, executeChange(t, tool, call, nil))
	if got := diskText(t, p); got != "x\ny\n" {
		t.Errorf("disk = %q", got)
	}
}

func TestWriteFileUserModified(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewWriteFile(e.Env)
	p := e.write(t, "a.txt", "old\n")
	call := newEditCall(nil)
	readForEdit(t, e, call, p)
	params, _ := mustProposeChange(t, tool, call, writeArgs(t, p, "new 1\nnew 2\n"))
	final := "new 1\nnew 2 and more\n"
	call.Decision = &tools.EditDecision{FinalText: &final}
	out := wantApplied(t, executeChange(t, tool, call, params))
	want := "Overwrote the file " + p + ". The user modified your proposal before it was applied, so the file differs from what you proposed. " +
		"The file now reads (lines 1-2 of 2):\n\n---\n\nnew 1\nnew 2 and more"
	if out != want {
		t.Errorf("message:\n%q\nwant\n%q", out, want)
	}
	if got := diskText(t, p); got != final {
		t.Errorf("disk = %q", got)
	}
}

func TestWriteFileDiskErrors(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewWriteFile(e.Env)

	// A parent that is a file.
	e.write(t, "f", "x")
	p := filepath.Join(e.Root, "f", "a.txt")
	res := run(t, tool, newEditCall(nil), writeArgs(t, p, "x"))
	wantEditError(t, res.Error, tools.ErrorFileWriteFailure, "Could not write "+p+": not a directory")

	// The target became a directory during the review.
	q := filepath.Join(e.Root, "q.txt")
	call := newEditCall(nil)
	params, _ := mustProposeChange(t, tool, call, writeArgs(t, q, "x"))
	if err := os.Mkdir(q, 0o755); err != nil {
		t.Fatal(err)
	}
	res = executeChange(t, tool, call, params)
	wantEditError(t, res.Error, tools.ErrorTargetIsDirectory, q+" is a directory, not a file.")

	if os.Geteuid() == 0 {
		t.Log("running as root: the EACCES case is left out")
		return
	}
	ro := filepath.Join(e.Root, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	r := filepath.Join(ro, "a.txt")
	res = run(t, tool, newEditCall(nil), writeArgs(t, r, "x"))
	wantEditError(t, res.Error, tools.ErrorPermissionDenied, "Permission denied: cannot write "+r+" (EACCES).")
}

func TestWriteFilePriorRead(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewWriteFile(e.Env)
	p := e.write(t, "a.txt", "x\n")
	_, _, terr := proposeChange(t, tool, newEditCall(nil), writeArgs(t, p, "y"))
	wantEditError(t, terr, tools.ErrorEditRequiresPriorRead,
		"You have not read "+p+" in this session. Read it with read_file before overwriting it.")

	call := newEditCall(nil)
	readForEdit(t, e, call, p)
	if err := os.WriteFile(p, []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, terr = proposeChange(t, tool, call, writeArgs(t, p, "y"))
	wantEditError(t, terr, tools.ErrorFileChangedSinceRead,
		p+" changed after you last read it. Read it again with read_file before overwriting it.")
}
