package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/toolstest"
)

// memoryEnv is the conformance setup with HOME pointing at the parent of
// the private ~/.qwen, so that "<~ path>" texts are deterministic.
func memoryEnv(t *testing.T, settings map[string]any) *testEnv {
	t.Helper()
	e := newTestEnv(t, settings)
	t.Setenv("HOME", filepath.Dir(e.Home))
	return e
}

func memoryArgs(t testing.TB, fact string, scope ...string) string {
	t.Helper()
	m := map[string]any{"fact": fact}
	if len(scope) > 0 {
		m["scope"] = scope[0]
	}
	return argsJSON(t, m)
}

func TestSaveMemoryDeclarationGolden(t *testing.T) {
	e := newTestEnv(t, nil)
	toolstest.Golden(t, "declarations/save_memory.json", declarationJSON(t, tools.NewSaveMemory(e.Env)), *updateMisc)
}

func TestSaveMemorySpec(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewSaveMemory(e.Env)
	if tool.Name() != "save_memory" || tool.DisplayName() != "SaveMemory" || tool.Kind() != tools.KindEdit ||
		len(tool.Aliases()) != 0 || tool.SkipSchemaValidation() || tool.StreamsOutput() || tool.Source() != tools.SourceBuiltin {
		t.Errorf("static description is wrong")
	}
}

func TestNormalizeFact(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"I like tabs", "I like tabs"},
		{"  I like tabs \n", "I like tabs"},
		{"- I like tabs", "I like tabs"},
		{"-  - I like tabs", "I like tabs"},
		{"-- I like tabs", "I like tabs"},
		{"-\tI like tabs", "I like tabs"},
		{"-5 degrees is cold", "-5 degrees is cold"},
		{"a-b", "a-b"},
		{"first line\nsecond line", "first line second line"},
		{"first\r\n  second\r\n\r\nthird", "first second third"},
		{"- multi\n- bullets", "multi - bullets"},
		{"-", ""},
		{" - \n ", ""},
		{"", ""},
	} {
		if got := tools.NormalizeFact(tt.in); got != tt.want {
			t.Errorf("NormalizeFact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestAddMemory(t *testing.T) {
	const h = tools.MemorySectionHeader
	for _, tt := range []struct{ name, in, want string }{
		{"empty file", "", h + "\n- f\n"},
		{"blank file", "\n \n\n", h + "\n- f\n"},
		{"text without header", "# Notes\nkeep this", "# Notes\nkeep this\n\n" + h + "\n- f\n"},
		{"text without header, trailing newlines", "# Notes\n\n\n", "# Notes\n\n" + h + "\n- f\n"},
		{"trailing spaces of the last line kept", "hard break  \n", "hard break  \n\n" + h + "\n- f\n"},
		{"section at the end", "intro\n\n" + h + "\n- a\n", "intro\n\n" + h + "\n- a\n- f\n"},
		{"section at the end, blank lines after", h + "\n- a\n\n\n", h + "\n- a\n- f\n"},
		{"empty section", h + "\n", h + "\n- f\n"},
		{"section before another, blank line kept", h + "\n- a\n\n## Other\ntext\n", h + "\n- a\n- f\n\n## Other\ntext\n"},
		{"section right before another", h + "\n- a\n## Other\n", h + "\n- a\n- f\n## Other\n"},
		{"empty section before another", h + "\n\n## Other\n", h + "\n- f\n\n## Other\n"},
		{"subheading stays in the section", h + "\n- a\n### sub\n- b\n\n## Other\n", h + "\n- a\n### sub\n- b\n- f\n\n## Other\n"},
		{"no final newline", h + "\n- a", h + "\n- a\n- f\n"},
		{"first header wins", h + "\n- a\n## X\n" + h + "\n- b\n", h + "\n- a\n- f\n## X\n" + h + "\n- b\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tools.AddMemory(tt.in, "f"); got != tt.want {
				t.Errorf("AddMemory(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSaveMemoryValidate(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewSaveMemory(e.Env)
	for _, tt := range []struct{ raw, want string }{
		{`{}`, "params must have required property 'fact'"},
		{`{"fact": 3}`, "params/fact must be string"},
		{`{"fact": ""}`, `Argument "fact" must not be empty.`},
		{`{"fact": "  \n "}`, `Argument "fact" must not be empty.`},
		{`{"fact": "- "}`, `Argument "fact" must not be empty.`},
		{`{"fact": "x", "scope": "team"}`, "params/scope must be equal to one of the allowed values"},
	} {
		_, terr := tools.PrepareArgs(tool, tt.raw)
		if terr == nil || terr.Type != tools.ErrorInvalidToolParams || terr.Message != tt.want {
			t.Errorf("%s: error %+v, want %q", tt.raw, terr, tt.want)
		}
	}
	if _, terr := tools.PrepareArgs(tool, `{"fact": "x", "scope": null}`); terr != nil {
		t.Errorf("a null scope (the default) was refused: %s", terr.Message)
	}
	// A direct call that skipped the schema still gets a clear refusal.
	if terr := tool.Validate(map[string]any{"fact": "x", "scope": "team"}); terr == nil {
		t.Error("Validate accepted scope team")
	}
}

func TestSaveMemoryDescribe(t *testing.T) {
	e := memoryEnv(t, nil)
	tool := tools.NewSaveMemory(e.Env)
	long := strings.Repeat("é", 59) + "xyz"
	for _, tt := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"fact": "I like tabs"}, "Save to global memory (~/.qwen/QWEN.md): I like tabs"},
		{map[string]any{"fact": "- I like\ntabs", "scope": "global"}, "Save to global memory (~/.qwen/QWEN.md): I like tabs"},
		{map[string]any{"fact": long}, "Save to global memory (~/.qwen/QWEN.md): " + strings.Repeat("é", 59) + "x"},
		// W does not lie below HOME, so its path stays absolute.
		{map[string]any{"fact": "uses make", "scope": "project"}, "Save to project memory (" + filepath.Join(e.Root, "QWEN.md") + "): uses make"},
	} {
		if got := tool.Describe(tt.params); got != tt.want {
			t.Errorf("Describe(%v)\n got %q\nwant %q", tt.params, got, tt.want)
		}
	}
	locs := tool.Locations(map[string]any{"fact": "x", "scope": "project"})
	if len(locs) != 1 || locs[0].Path != filepath.Join(e.Root, "QWEN.md") {
		t.Errorf("locations %v", locs)
	}
}

func TestTildePath(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	for in, want := range map[string]string{
		"/home/u":               "~",
		"/home/u/.qwen/QWEN.md": "~/.qwen/QWEN.md",
		"/home/user/x":          "/home/user/x",
		"/srv/qwen/QWEN.md":     "/srv/qwen/QWEN.md",
	} {
		if got := tools.TildePath(in); got != want {
			t.Errorf("TildePath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSaveMemoryProposal(t *testing.T) {
	e := memoryEnv(t, nil)
	tool := tools.NewSaveMemory(e.Env)
	call := newEditCall(nil)
	_, c := mustProposeChange(t, tool, call, memoryArgs(t, "I like tabs"))
	global := filepath.Join(e.Home, "QWEN.md")
	if call.Confirmation.Title != "Confirm Memory Save: ~/.qwen/QWEN.md (global)" {
		t.Errorf("title %q", call.Confirmation.Title)
	}
	if c.FilePath != global || !c.IsNewFile || c.OldText != "" || c.NewText != "## Qwen Added Memories\n- I like tabs\n" || c.Version != nil {
		t.Errorf("proposal %+v", c)
	}
	if !strings.Contains(c.FileDiff, "+- I like tabs") {
		t.Errorf("diff %q", c.FileDiff)
	}
	// Nothing is written before the answer.
	if _, err := os.Stat(global); !os.IsNotExist(err) {
		t.Errorf("the memory file exists before execution: %v", err)
	}

	// Project scope, an existing file that was never read: no prior read
	// is asked for.
	p := e.write(t, "QWEN.md", "# Project\n")
	call = newEditCall(nil)
	_, c = mustProposeChange(t, tool, call, memoryArgs(t, "build with make", "project"))
	if call.Confirmation.Title != "Confirm Memory Save: "+p+" (project)" {
		t.Errorf("title %q", call.Confirmation.Title)
	}
	if c.FilePath != p || c.IsNewFile || c.OldText != "# Project\n" ||
		c.NewText != "# Project\n\n## Qwen Added Memories\n- build with make\n" {
		t.Errorf("proposal %+v", c)
	}
}

func TestSaveMemoryFileNameSetting(t *testing.T) {
	for _, tt := range []struct {
		name    string
		setting any
		want    string
	}{
		{"list", []any{"AGENTS.md", "QWEN.md"}, "AGENTS.md"},
		{"string", "MEMORY.md", "MEMORY.md"},
		{"empty list", []any{}, "QWEN.md"},
		{"blank first", []any{" "}, "QWEN.md"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := memoryEnv(t, map[string]any{"context": map[string]any{"fileName": tt.setting}})
			if got := e.MemoryFileName(); got != tt.want {
				t.Errorf("MemoryFileName = %q, want %q", got, tt.want)
			}
			res := run(t, tools.NewSaveMemory(e.Env), newEditCall(nil), memoryArgs(t, "x"))
			wantApplied(t, res)
			if got := diskText(t, filepath.Join(e.Home, tt.want)); got != "## Qwen Added Memories\n- x\n" {
				t.Errorf("memory file = %q", got)
			}
		})
	}

	// A name from the settings that would leave its folder is refused.
	e := memoryEnv(t, map[string]any{"context": map[string]any{"fileName": "../.bashrc"}})
	_, _, terr := proposeChange(t, tools.NewSaveMemory(e.Env), newEditCall(nil), memoryArgs(t, "x"))
	wantEditError(t, terr, tools.ErrorMemoryToolExecution,
		`Could not save the memory: the memory file name "../.bashrc" from context.fileName is not a plain file name`)
}

func TestSaveMemoryAppends(t *testing.T) {
	e := memoryEnv(t, nil)
	tool := tools.NewSaveMemory(e.Env)
	global := filepath.Join(e.Home, "QWEN.md")
	if err := os.MkdirAll(e.Home, 0o755); err != nil {
		t.Fatal(err)
	}
	old := "# Me\n\n## Qwen Added Memories\n- I like tabs\n\n## Other\nkeep\n"
	if err := os.WriteFile(global, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	res := run(t, tool, newEditCall(nil), memoryArgs(t, "- I use Go\n"))
	if got := wantApplied(t, res); got != `Saved to global memory: "I use Go"` {
		t.Errorf("message %q", got)
	}
	want := "# Me\n\n## Qwen Added Memories\n- I like tabs\n- I use Go\n\n## Other\nkeep\n"
	if got := diskText(t, global); got != want {
		t.Errorf("memory file\n got %q\nwant %q", got, want)
	}
	fi, err := os.Stat(global)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the file mode was not kept: %v %v", fi.Mode(), err)
	}
	d, ok := res.Display.(*tools.FileDiff)
	if !ok || d.FilePath != global || d.OriginalContent == nil || *d.OriginalContent != old || d.NewContent != want {
		t.Errorf("display %+v", res.Display)
	}

	// Quotes and non-ASCII are told to the model as stored, not escaped.
	res = run(t, tool, newEditCall(nil), memoryArgs(t, `Name: "Zoë"`))
	if got := wantApplied(t, res); got != `Saved to global memory: "Name: "Zoë""` {
		t.Errorf("message %q", got)
	}
}

func TestSaveMemoryKeepsCRLF(t *testing.T) {
	e := memoryEnv(t, nil)
	p := e.write(t, "QWEN.md", "# P\r\n\r\n## Qwen Added Memories\r\n- a\r\n")
	wantApplied(t, run(t, tools.NewSaveMemory(e.Env), newEditCall(nil), memoryArgs(t, "b", "project")))
	if got := diskText(t, p); got != "# P\r\n\r\n## Qwen Added Memories\r\n- a\r\n- b\r\n" {
		t.Errorf("disk %q", got)
	}
}

func TestSaveMemoryReviewAnswers(t *testing.T) {
	e := memoryEnv(t, nil)
	tool := tools.NewSaveMemory(e.Env)
	global := filepath.Join(e.Home, "QWEN.md")

	// The user rewrites the bullet before accepting.
	call := newEditCall(nil)
	params, _ := mustProposeChange(t, tool, call, memoryArgs(t, "I like tabs"))
	final := "## Qwen Added Memories\n- I like tabs, width 4\n"
	call.Decision = &tools.EditDecision{FinalText: &final}
	out := wantApplied(t, executeChange(t, tool, call, params))
	if !strings.HasPrefix(out, `Saved to global memory: "I like tabs" The user modified your proposal before it was applied`) ||
		!strings.Contains(out, "- I like tabs, width 4") {
		t.Errorf("message %q", out)
	}
	if got := diskText(t, global); got != final {
		t.Errorf("disk %q", got)
	}

	// An answer that leaves the old text is no success, and nothing is
	// written (the scheduler normally answers it before Execute).
	call = newEditCall(nil)
	params, c := mustProposeChange(t, tool, call, memoryArgs(t, "more"))
	same := c.OldText
	call.Decision = &tools.EditDecision{FinalText: &same}
	res := executeChange(t, tool, call, params)
	if res.Error == nil {
		t.Fatalf("a rejected memory was a success: %q", res.Text())
	}
	if got := diskText(t, global); got != final {
		t.Errorf("disk changed on rejection: %q", got)
	}
}

func TestSaveMemoryExecuteWithoutKeptProposal(t *testing.T) {
	e := memoryEnv(t, nil)
	tool := tools.NewSaveMemory(e.Env)
	params, terr := tools.PrepareArgs(tool, memoryArgs(t, "direct"))
	if terr != nil {
		t.Fatal(terr.Message)
	}
	res := executeChange(t, tool, newEditCall(nil), params)
	if got := wantApplied(t, res); got != `Saved to global memory: "direct"` {
		t.Errorf("message %q", got)
	}
	if got := diskText(t, filepath.Join(e.Home, "QWEN.md")); got != "## Qwen Added Memories\n- direct\n" {
		t.Errorf("disk %q", got)
	}
}

func TestSaveMemoryFailures(t *testing.T) {
	e := memoryEnv(t, nil)
	tool := tools.NewSaveMemory(e.Env)

	// The memory file is a directory.
	dir := filepath.Join(e.Home, "QWEN.md")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, _, terr := proposeChange(t, tool, newEditCall(nil), memoryArgs(t, "x"))
	wantEditError(t, terr, tools.ErrorMemoryToolExecution, "Could not save the memory: "+dir+" is a directory")

	// Project memory needs a workspace folder.
	e.Workspace.Roots.Set(nil)
	_, _, terr = proposeChange(t, tool, newEditCall(nil), memoryArgs(t, "x", "project"))
	wantEditError(t, terr, tools.ErrorMemoryToolExecution, "Could not save the memory: there is no workspace folder to keep project memory in")
}

func TestSaveMemoryWriteFailure(t *testing.T) {
	e := memoryEnv(t, nil)
	// ~/.qwen is a file, so the memory file's folder cannot be made: the
	// write failure of tools.md §2.11.
	if err := os.MkdirAll(filepath.Dir(e.Home), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.Home, []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	global := filepath.Join(e.Home, "QWEN.md")
	res := run(t, tools.NewSaveMemory(e.Env), newEditCall(nil), memoryArgs(t, "x"))
	wantEditError(t, res.Error, tools.ErrorFileWriteFailure, "Could not write "+global+": not a directory")
}

func TestSaveMemoryOpenBuffer(t *testing.T) {
	e := memoryEnv(t, nil)
	tool := tools.NewSaveMemory(e.Env)
	p := e.write(t, "QWEN.md", "saved\n")
	e.Workspace.Overlay.Open(p, 3, "unsaved\n")

	// An editor that cannot change open buffers is told so before any review.
	_, _, terr := proposeChange(t, tool, newEditCall(&fakeHost{ws: e.Workspace, cannot: true}), memoryArgs(t, "x", "project"))
	wantEditError(t, terr, tools.ErrorExecutionDenied,
		p+" is open in the editor, and this editor cannot apply changes to open files. Ask the user to save and close the file, then try again.")

	host := &fakeHost{ws: e.Workspace}
	call := newEditCall(host)
	params, c := mustProposeChange(t, tool, call, memoryArgs(t, "x", "project"))
	if c.OldText != "unsaved\n" || c.Version == nil || *c.Version != 3 {
		t.Errorf("proposal %+v", c)
	}
	wantApplied(t, executeChange(t, tool, call, params))
	want := "unsaved\n\n## Qwen Added Memories\n- x\n"
	if got, _ := bufferText(t, e, p); got != want {
		t.Errorf("buffer %q", got)
	}
	if got := diskText(t, p); got != "saved\n" {
		t.Errorf("disk %q", got)
	}
	if calls := host.applied(); len(calls) != 1 || calls[0].Version != 3 || calls[0].Text != want {
		t.Errorf("applyEdit calls %+v", calls)
	}
}
