package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/toolstest"
	"github.com/qwen-ls/qwen-ls/workspace"
)

var updateEdit = flag.Bool("update-edit", false, "rewrite the declaration golden files of edit and write_file")

// fakeHost is the editor side of a call: it records every ApplyToBuffer
// and applies it to the workspace overlay as the editor's didChange would
// (one full-text change, version + 1), so "the overlay holds the expected
// text" is real. Like a pinned TextDocumentEdit, a change for a version the
// buffer no longer has is refused.
type fakeHost struct {
	ws *workspace.Workspace
	// cannot makes CanApplyToBuffers false; refuse, when set, is the
	// failureReason of every ApplyToBuffer; refuseEmpty refuses without one.
	cannot      bool
	refuse      string
	refuseEmpty bool

	mu    sync.Mutex
	calls []applyCall
}

type applyCall struct {
	Path    string
	Version int32
	Text    string
}

func (h *fakeHost) CanApplyToBuffers() bool { return !h.cannot }

func (h *fakeHost) ApplyToBuffer(ctx context.Context, path string, version int32, text string) error {
	h.mu.Lock()
	h.calls = append(h.calls, applyCall{path, version, text})
	h.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	if h.refuse != "" || h.refuseEmpty {
		return &tools.BufferEditError{Reason: h.refuse}
	}
	if v, ok := h.ws.Overlay.Version(path); !ok || v != version {
		return &tools.BufferEditError{Reason: "the document changed"}
	}
	return h.ws.Overlay.Apply(path, version+1, []workspace.Change{{Text: text}}, workspace.UTF16)
}

func (h *fakeHost) applied() []applyCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]applyCall(nil), h.calls...)
}

// typeInto simulates the user typing in an open buffer: a full-text change
// at the next version.
func typeInto(t testing.TB, e *testEnv, abs, text string) {
	t.Helper()
	v, ok := e.Workspace.Overlay.Version(abs)
	if !ok {
		t.Fatalf("%s is not open", abs)
	}
	if err := e.Workspace.Overlay.Apply(abs, v+1, []workspace.Change{{Text: text}}, workspace.UTF16); err != nil {
		t.Fatal(err)
	}
}

func newEditCall(host tools.Host) *tools.Call {
	return &tools.Call{ID: "call_1", SessionID: "s1", Ledger: tools.NewLedger(), Host: host}
}

// argsJSON encodes the arguments of a call.
func argsJSON(t testing.TB, args map[string]any) string {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readForEdit reads abs with the real read_file tool, so that the ledger gets
// the entry read_file really records.
func readForEdit(t testing.TB, e *testEnv, call *tools.Call, abs string) {
	t.Helper()
	res := run(t, tools.NewReadFile(e.Env), call, argsJSON(t, map[string]any{"absolute_path": abs}))
	if res.Error != nil {
		t.Fatalf("read_file %s: %s", abs, res.Error.Message)
	}
}

// proposeChange runs the scheduler's steps up to the review: prepare the
// arguments, then ShouldConfirm. The proposal is kept on call.
func proposeChange(t testing.TB, tool tools.Tool, call *tools.Call, raw string) (map[string]any, *tools.EditConfirmation, *tools.ToolError) {
	t.Helper()
	params, terr := tools.PrepareArgs(tool, raw)
	if terr != nil {
		return nil, nil, terr
	}
	conf, terr := tools.GuardConfirm(context.Background(), tool, call, params)
	if terr != nil {
		return params, nil, terr
	}
	call.Confirmation = conf
	c, ok := conf.Details.(*tools.EditConfirmation)
	if !ok {
		t.Fatalf("%s asked for a %q confirmation", tool.Name(), conf.Type())
	}
	return params, c, nil
}

// mustProposeChange is proposeChange that fails the test on a tool error.
func mustProposeChange(t testing.TB, tool tools.Tool, call *tools.Call, raw string) (map[string]any, *tools.EditConfirmation) {
	t.Helper()
	params, c, terr := proposeChange(t, tool, call, raw)
	if terr != nil {
		t.Fatalf("%s: %s: %s", tool.Name(), terr.Type, terr.Message)
	}
	return params, c
}

// executeChange runs the accepted call (call.Decision holds the answer).
func executeChange(t testing.TB, tool tools.Tool, call *tools.Call, params map[string]any) tools.Result {
	t.Helper()
	res, err := tools.Guard(context.Background(), tool, call, params, nil)
	if err != nil {
		t.Fatalf("execute %s: %v", tool.Name(), err)
	}
	return res
}

func wantEditError(t testing.TB, got *tools.ToolError, typ tools.ErrorType, msg string) {
	t.Helper()
	if got == nil {
		t.Fatalf("no error, want %s %q", typ, msg)
	}
	if got.Type != typ || got.Message != msg {
		t.Fatalf("error = %s %q\nwant    %s %q", got.Type, got.Message, typ, msg)
	}
}

func wantApplied(t testing.TB, res tools.Result) string {
	t.Helper()
	if res.Error != nil {
		t.Fatalf("error %s: %s", res.Error.Type, res.Error.Message)
	}
	return res.Text()
}

func diskText(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func bufferText(t testing.TB, e *testEnv, abs string) (string, int32) {
	t.Helper()
	b, ok := e.Workspace.Overlay.Get(abs)
	if !ok {
		t.Fatalf("%s is not open", abs)
	}
	return b.Text, b.Version
}

func editArgs(t testing.TB, abs, old, repl string, extra ...any) string {
	t.Helper()
	m := map[string]any{"file_path": abs, "old_string": old, "new_string": repl}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return argsJSON(t, m)
}

// declarationJSON is what the golden files pin (toolstest.Declaration).
func declarationJSON(t testing.TB, tool tools.Tool) []byte {
	t.Helper()
	return toolstest.Declaration(t, tool)
}

func TestEditDeclarationGolden(t *testing.T) {
	e := newTestEnv(t, nil)
	toolstest.Golden(t, "declarations/edit.json", declarationJSON(t, tools.NewEdit(e.Env)), *updateEdit)
}

func TestEditSpec(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewEdit(e.Env)
	if tool.Name() != "edit" || tool.DisplayName() != "Edit" || tool.Kind() != tools.KindEdit ||
		len(tool.Aliases()) != 1 || tool.Aliases()[0] != "replace" || tool.Source() != tools.SourceBuiltin {
		t.Errorf("spec = %s %s %s %v %s", tool.Name(), tool.DisplayName(), tool.Kind(), tool.Aliases(), tool.Source())
	}
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
		Additional *bool                      `json:"additionalProperties"`
	}
	if err := json.Unmarshal(tool.Schema(), &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Type != "object" || strings.Join(schema.Required, ",") != "file_path,old_string,new_string" || schema.Additional != nil {
		t.Errorf("schema = %+v", schema)
	}
	if _, declared := schema.Properties["expected_replacements"]; declared {
		t.Error("expected_replacements is declared")
	}
	if _, ok := schema.Properties["replace_all"]; !ok {
		t.Error("replace_all is not declared")
	}
	for _, fact := range []string{"absolute", "read_file", "exactly", "replace_all", "empty `old_string`", "modify"} {
		if !strings.Contains(tool.Description(), fact) {
			t.Errorf("the description does not mention %q", fact)
		}
	}
}

func TestEditValidate(t *testing.T) {
	e := newTestEnv(t, nil)
	e.write(t, ".qwenignore", "secret.txt\n")
	// The watcher would notice too, but only some time later.
	e.Workspace.Ignore.Invalidate(filepath.Join(e.Root, ".qwenignore"))
	tool := tools.NewEdit(e.Env)
	abs := filepath.Join(e.Root, "a.txt")
	tests := []struct {
		name string
		args map[string]any
		want string // "" for valid
	}{
		{"empty path", map[string]any{"file_path": "  ", "old_string": "a", "new_string": "b"}, `Argument "file_path" must not be empty.`},
		{"relative path", map[string]any{"file_path": "a.txt", "old_string": "a", "new_string": "b"},
			"Not an absolute path: a.txt. Give the full path, starting with /. The workspace root is " + e.Root + ", so the full path is probably " + abs + "."},
		{"outside", map[string]any{"file_path": "/etc/hosts", "old_string": "a", "new_string": "b"},
			"Path is outside the workspace: /etc/hosts. Tools may only access files inside the workspace roots: " + e.Root + "."},
		{"qwenignore", map[string]any{"file_path": filepath.Join(e.Root, "secret.txt"), "old_string": "a", "new_string": "b"},
			filepath.Join(e.Root, "secret.txt") + " is excluded by .qwenignore, so this tool cannot use it."},
		{"missing old_string", map[string]any{"file_path": abs, "new_string": "b"}, "params must have required property 'old_string'"},
		{"expected 0", map[string]any{"file_path": abs, "old_string": "a", "new_string": "b", "expected_replacements": 0}, `Argument "expected_replacements" must be a whole number, 1 or more.`},
		{"expected 1.5", map[string]any{"file_path": abs, "old_string": "a", "new_string": "b", "expected_replacements": 1.5}, `Argument "expected_replacements" must be a whole number, 1 or more.`},
		{"expected text", map[string]any{"file_path": abs, "old_string": "a", "new_string": "b", "expected_replacements": "two"}, `Argument "expected_replacements" must be a whole number, 1 or more.`},
		{"expected bool", map[string]any{"file_path": abs, "old_string": "a", "new_string": "b", "expected_replacements": true}, `Argument "expected_replacements" must be a whole number, 1 or more.`},
		{"expected 2", map[string]any{"file_path": abs, "old_string": "a", "new_string": "b", "expected_replacements": 2}, ""},
		{"expected 2.0", map[string]any{"file_path": abs, "old_string": "a", "new_string": "b", "expected_replacements": 2.0}, ""},
		{"expected \"3\"", map[string]any{"file_path": abs, "old_string": "a", "new_string": "b", "expected_replacements": "3"}, ""},
		{"escaped space", map[string]any{"file_path": filepath.Join(e.Root, `my\ file.txt`), "old_string": "a", "new_string": "b"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, terr := tools.PrepareArgs(tool, argsJSON(t, tt.args))
			switch {
			case tt.want == "" && terr != nil:
				t.Fatalf("unexpected error %q", terr.Message)
			case tt.want != "" && (terr == nil || terr.Message != tt.want):
				t.Fatalf("error = %v, want %q", terr, tt.want)
			}
		})
	}
}

func TestEditDescribeAndLocations(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewEdit(e.Env)
	abs := filepath.Join(e.Root, "src", "a.go")
	tests := []struct {
		old, repl, want string
	}{
		{"", "package a\n", "Create src/a.go"},
		{"x", "x", "No file changes to src/a.go"},
		{"func Old() {\n}", "func New() {\n}", "src/a.go: func Old() {... => func New() {..."},
		{"a very long first line that goes on and on\nsecond", "short", "src/a.go: a very long first line that go... => short..."},
	}
	for _, tt := range tests {
		params := map[string]any{"file_path": abs, "old_string": tt.old, "new_string": tt.repl}
		if got := tool.Describe(params); got != tt.want {
			t.Errorf("Describe(%q → %q) = %q, want %q", tt.old, tt.repl, got, tt.want)
		}
	}
	long := filepath.Join(e.Root, strings.Repeat("d", 60), strings.Repeat("f", 60)+".txt")
	title := tool.Describe(map[string]any{"file_path": long, "old_string": "", "new_string": "x"})
	if rel := strings.TrimPrefix(title, "Create "); len(rel) != 80 || !strings.Contains(rel, "...") {
		t.Errorf("long title = %q", title)
	}
	if locs := tool.Locations(map[string]any{"file_path": abs}); len(locs) != 1 || locs[0].Path != abs || locs[0].Line != 0 {
		t.Errorf("Locations = %+v", locs)
	}
}

func TestEditProposalFromDisk(t *testing.T) {
	e := newTestEnv(t, nil)
	p := e.write(t, "a.txt", "one\ntwo\nthree\n")
	call := newEditCall(nil)
	tool := tools.NewEdit(e.Env)
	readForEdit(t, e, call, p)
	_, c := mustProposeChange(t, tool, call, editArgs(t, p, "two", "TWO"))
	if call.Confirmation.Title != "Confirm Edit: a.txt" || call.Confirmation.Type() != tools.ConfirmEdit {
		t.Errorf("confirmation %q of type %q", call.Confirmation.Title, call.Confirmation.Type())
	}
	if c.FilePath != p || c.OldText != "one\ntwo\nthree\n" || c.NewText != "one\nTWO\nthree\n" || c.IsNewFile || c.Version != nil {
		t.Errorf("proposal = %+v", c)
	}
	wantDiff := "--- a.txt\tCurrent\n+++ a.txt\tProposed\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
	if c.FileDiff != wantDiff {
		t.Errorf("diff = %q", c.FileDiff)
	}
	b, err := json.Marshal(call.Confirmation)
	if err != nil || strings.Contains(string(b), `"version"`) {
		t.Errorf("a disk proposal encodes a version: %s %v", b, err)
	}
	// Nothing is written before the execution.
	if got := diskText(t, p); got != "one\ntwo\nthree\n" {
		t.Errorf("ShouldConfirm wrote %q", got)
	}
}

func TestEditResultDisplay(t *testing.T) {
	e := newTestEnv(t, nil)
	p := e.write(t, "a.txt", "one\ntwo\n")
	call := newEditCall(nil)
	tool := tools.NewEdit(e.Env)
	readForEdit(t, e, call, p)
	res := run(t, tool, call, editArgs(t, p, "two", "2"))
	wantApplied(t, res)
	d, ok := res.Display.(*tools.FileDiff)
	if !ok {
		t.Fatalf("display %T", res.Display)
	}
	if d.FileName != "a.txt" || d.FilePath != p || d.OriginalContent == nil || *d.OriginalContent != "one\ntwo\n" || d.NewContent != "one\n2\n" {
		t.Errorf("display = %+v", d)
	}
	if !strings.HasPrefix(d.FileDiff, "--- a.txt\tOriginal\n+++ a.txt\tWritten\n") {
		t.Errorf("diff headers: %q", d.FileDiff)
	}
}

func TestEditKeepsCRLFAndBOM(t *testing.T) {
	e := newTestEnv(t, nil)
	p := e.write(t, "a.txt", "\xEF\xBB\xBFa\r\nb\r\nc\r\n")
	call := newEditCall(nil)
	tool := tools.NewEdit(e.Env)
	readForEdit(t, e, call, p)
	_, c := mustProposeChange(t, tool, call, editArgs(t, p, "a\nb\n", "x\ny\nz\n"))
	if c.NewText != "x\r\ny\r\nz\r\nc\r\n" {
		t.Errorf("proposed %q", c.NewText)
	}
	wantApplied(t, executeChange(t, tool, call, nil))
	if got := diskText(t, p); got != "\xEF\xBB\xBFx\r\ny\r\nz\r\nc\r\n" {
		t.Errorf("disk = %q", got)
	}
}

func TestEditNewFileEncodingSetting(t *testing.T) {
	e := newTestEnv(t, map[string]any{"general": map[string]any{"defaultFileEncoding": "utf-8-bom"}})
	p := filepath.Join(e.Root, "n.txt")
	res := run(t, tools.NewEdit(e.Env), newEditCall(nil), editArgs(t, p, "", "hi\n"))
	wantApplied(t, res)
	if got := diskText(t, p); got != "\xEF\xBB\xBFhi\n" {
		t.Errorf("disk = %q", got)
	}
}

func TestEditPriorReadTable(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewEdit(e.Env)

	dir := filepath.Join(e.Root, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, _, terr := proposeChange(t, tool, newEditCall(nil), editArgs(t, dir, "a", "b"))
	wantEditError(t, terr, tools.ErrorTargetIsDirectory, dir+" is a directory, not a file.")

	fifo := filepath.Join(e.Root, "pipe")
	if err := mkfifo(fifo); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	_, _, terr = proposeChange(t, tool, newEditCall(nil), editArgs(t, fifo, "a", "b"))
	wantEditError(t, terr, tools.ErrorEditRequiresPriorRead, fifo+" is a FIFO, socket or device; this tool cannot change it.")

	// An unchanged read of content that is not text.
	img := e.write(t, "i.png", "\x89PNG\r\n\x1a\n\x00\x00")
	call := newEditCall(nil)
	snap, err := e.Workspace.ReadText(img)
	if err != nil {
		t.Fatal(err)
	}
	entry := tools.EntryFor(snap, true, false, "image")
	entry.Hash = tools.HashText(string(snap.Raw))
	call.Ledger.Record(img, entry)
	_, _, terr = proposeChange(t, tool, call, editArgs(t, img, "PNG", "GIF"))
	wantEditError(t, terr, tools.ErrorEditRequiresPriorRead,
		img+" holds image content, which this tool cannot change; use run_shell_command or another tool instead.")

	// A partial read counts.
	p := e.write(t, "long.txt", "1\n2\n3\n4\n5\n")
	call = newEditCall(nil)
	res := run(t, tools.NewReadFile(e.Env), call, argsJSON(t, map[string]any{"absolute_path": p, "offset": 3, "limit": 1}))
	wantApplied(t, res)
	res = run(t, tool, call, editArgs(t, p, "1\n", "one\n"))
	wantApplied(t, res)
	if got := diskText(t, p); got != "one\n2\n3\n4\n5\n" {
		t.Errorf("after a partial read: %q", got)
	}

	// A changed file whose content is back to what was read is unchanged
	// (the hash decides when mtime and size do not).
	q := e.write(t, "q.txt", "same\n")
	call = newEditCall(nil)
	readForEdit(t, e, call, q)
	if err := os.WriteFile(q, []byte("same\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	past := snap.ModTime.Add(-3600e9)
	if err := os.Chtimes(q, past, past); err != nil {
		t.Fatal(err)
	}
	wantApplied(t, run(t, tool, call, editArgs(t, q, "same", "other")))
}

func TestEditPreparationFailure(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads files whatever their mode")
	}
	e := newTestEnv(t, nil)
	p := e.write(t, "a.txt", "x\n")
	call := newEditCall(nil)
	readForEdit(t, e, call, p)
	// chmod changes neither mtime nor size, so the ledger check passes
	// without reading; the read that follows fails.
	if err := os.Chmod(p, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(p, 0o644) })
	_, _, terr := proposeChange(t, tools.NewEdit(e.Env), call, editArgs(t, p, "x", "y"))
	wantEditError(t, terr, tools.ErrorEditPreparationFailure, "Could not prepare the edit of "+p+": permission denied")
}

func TestEditNoChangeErrors(t *testing.T) {
	e := newTestEnv(t, nil)
	p := e.write(t, "a.txt", "say “hi”\n")
	call := newEditCall(nil)
	tool := tools.NewEdit(e.Env)
	readForEdit(t, e, call, p)
	_, _, terr := proposeChange(t, tool, call, editArgs(t, p, "say “hi”", "say “hi”"))
	wantEditError(t, terr, tools.ErrorEditNoChange, "old_string and new_string are the same, so "+p+" was not changed.")
	_, _, terr = proposeChange(t, tool, call, editArgs(t, p, `say "hi"`, "say “hi”"))
	wantEditError(t, terr, tools.ErrorEditNoChange, "old_string and new_string are the same, so "+p+" was not changed.")
	_, _, terr = proposeChange(t, tool, call, editArgs(t, p, "hi", "x", "expected_replacements", 2))
	wantEditError(t, terr, tools.ErrorEditExpectedOccurrenceMismatch,
		"old_string occurs 1 time in "+p+", not the 2 that expected_replacements gives; nothing was changed.")
}

func TestEditReplaceAllAsString(t *testing.T) {
	// tools.md §8 case 4: the schema step's repair turns "true" into true.
	e := newTestEnv(t, nil)
	p := e.write(t, "a.txt", "x x")
	call := newEditCall(nil)
	readForEdit(t, e, call, p)
	raw := `{"file_path":` + strings.TrimSuffix(strings.TrimPrefix(argsJSON(t, map[string]any{"p": p}), `{"p":`), "}") +
		`,"old_string":"x","new_string":"y","replace_all":"true"}`
	wantApplied(t, run(t, tools.NewEdit(e.Env), call, raw))
	if got := diskText(t, p); got != "y y" {
		t.Errorf("disk = %q", got)
	}
}

func TestEditExecuteWithoutKeptProposal(t *testing.T) {
	e := newTestEnv(t, nil)
	p := e.write(t, "a.txt", "a\n")
	call := newEditCall(nil)
	readForEdit(t, e, call, p)
	tool := tools.NewEdit(e.Env)
	params, terr := tools.PrepareArgs(tool, editArgs(t, p, "a", "b"))
	if terr != nil {
		t.Fatal(terr.Message)
	}
	call.Confirmation = nil
	out := wantApplied(t, executeChange(t, tool, call, params))
	if !strings.HasPrefix(out, "Edited "+p+".") || diskText(t, p) != "b\n" {
		t.Errorf("result %q, disk %q", out, diskText(t, p))
	}
	// And its errors are the ShouldConfirm ones.
	res := executeChange(t, tool, newEditCall(nil), params)
	if res.Error == nil || res.Error.Type != tools.ErrorEditRequiresPriorRead {
		t.Errorf("unread: %+v", res.Error)
	}
}

func TestEditAppliesTheProposalNotANewMatch(t *testing.T) {
	e := newTestEnv(t, nil)
	p := e.write(t, "a.txt", "target\n1\n2\n3\n4\n")
	call := newEditCall(nil)
	tool := tools.NewEdit(e.Env)
	readForEdit(t, e, call, p)
	params, _ := mustProposeChange(t, tool, call, editArgs(t, p, "target", "done"))
	// During the review another "target" appears further down: a new
	// match would now be ambiguous, the proposal still applies.
	if err := os.WriteFile(p, []byte("target\n1\n2\n3\n4\ntarget\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := wantApplied(t, executeChange(t, tool, call, params))
	if got := diskText(t, p); got != "done\n1\n2\n3\n4\ntarget\n" {
		t.Errorf("disk = %q", got)
	}
	if !strings.HasPrefix(out, "Edited "+p+". The file now reads (lines 1-5 of 6):") {
		t.Errorf("message = %q", out)
	}
}

func TestEditDeletedDuringReview(t *testing.T) {
	e := newTestEnv(t, nil)
	p := e.write(t, "a.txt", "a\n")
	call := newEditCall(nil)
	tool := tools.NewEdit(e.Env)
	readForEdit(t, e, call, p)
	params, _ := mustProposeChange(t, tool, call, editArgs(t, p, "a", "b"))
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	res := executeChange(t, tool, call, params)
	wantEditError(t, res.Error, tools.ErrorFileChangedSinceRead,
		"File "+p+" changed while your change was being reviewed, and the change no longer applies cleanly; nothing was written. Re-read the file with read_file and try again.")
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the file was recreated: %v", err)
	}
}

func TestEditCancelledBeforeWriting(t *testing.T) {
	e := newTestEnv(t, nil)
	p := e.write(t, "a.txt", "a\n")
	call := newEditCall(nil)
	tool := tools.NewEdit(e.Env)
	readForEdit(t, e, call, p)
	params, _ := mustProposeChange(t, tool, call, editArgs(t, p, "a", "b"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tool.Execute(ctx, call, params, func(tools.Output) {}); !errors.Is(err, context.Canceled) {
		t.Fatalf("execute after cancellation: %v", err)
	}
	if got := diskText(t, p); got != "a\n" {
		t.Errorf("disk = %q", got)
	}
}

func TestEditOpenBuffer(t *testing.T) {
	e := newTestEnv(t, nil)
	p := e.write(t, "a.txt", "disk\n")
	e.Workspace.Overlay.Open(p, 3, "buf\nline\n")

	// No editor, or one that cannot apply edits: refused before any review.
	for _, host := range []tools.Host{nil, &fakeHost{ws: e.Workspace, cannot: true}} {
		call := newEditCall(host)
		readForEdit(t, e, call, p)
		_, _, terr := proposeChange(t, tools.NewEdit(e.Env), call, editArgs(t, p, "buf", "x"))
		wantEditError(t, terr, tools.ErrorExecutionDenied,
			p+" is open in the editor, and this editor cannot apply changes to open files. Ask the user to save and close the file, then try again.")
	}

	// The editor refuses the applyEdit.
	for _, tt := range []struct {
		host   *fakeHost
		reason string
	}{
		{&fakeHost{ws: e.Workspace, refuse: "the buffer is read-only"}, "the buffer is read-only"},
		{&fakeHost{ws: e.Workspace, refuseEmpty: true}, "no reason given"},
	} {
		call := newEditCall(tt.host)
		readForEdit(t, e, call, p)
		res := run(t, tools.NewEdit(e.Env), call, editArgs(t, p, "buf", "x"))
		wantEditError(t, res.Error, tools.ErrorFileWriteFailure,
			"The editor did not apply the change to "+p+": "+tt.reason+". The file was not modified.")
		if text, _ := bufferText(t, e, p); text != "buf\nline\n" {
			t.Errorf("buffer = %q", text)
		}
	}

	// The editor loses its capability during the review.
	host := &fakeHost{ws: e.Workspace}
	call := newEditCall(host)
	readForEdit(t, e, call, p)
	params, c := mustProposeChange(t, tools.NewEdit(e.Env), call, editArgs(t, p, "buf", "x"))
	if c.Version == nil || *c.Version != 3 {
		t.Fatalf("version = %v", c.Version)
	}
	host.cannot = true
	res := executeChange(t, tools.NewEdit(e.Env), call, params)
	if res.Error == nil || res.Error.Type != tools.ErrorExecutionDenied || len(host.applied()) != 0 {
		t.Errorf("result %+v, applies %v", res.Error, host.applied())
	}

	// Applied: the buffer changes, the disk does not, and the ledger
	// knows the new version, so a second edit needs no read.
	host.cannot = false
	call = newEditCall(host)
	readForEdit(t, e, call, p)
	wantApplied(t, run(t, tools.NewEdit(e.Env), call, editArgs(t, p, "buf", "x")))
	wantApplied(t, run(t, tools.NewEdit(e.Env), call, editArgs(t, p, "line", "y")))
	if text, v := bufferText(t, e, p); text != "x\ny\n" || v != 5 {
		t.Errorf("buffer = %q at %d", text, v)
	}
	if got := diskText(t, p); got != "disk\n" {
		t.Errorf("disk = %q", got)
	}
}
