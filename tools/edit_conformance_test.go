package tools_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/diff"
)

// The write_file and edit cases of tools.md §8 (21–31), at the tool layer:
// the scheduler's part (ShouldConfirm, keeping the proposal, the review
// answer in call.Decision, Execute) is played by the helpers of
// edit_test.go, and the editor by fakeHost. What belongs to the scheduler
// and the rpc layer alone (qwen/proposeEdit on the wire, how a turn ends)
// comes with the agent loop; the comments say where.

func TestCase21_WriteFileCreatesParents(t *testing.T) {
	e := newTestEnv(t, nil)
	p := filepath.Join(e.Root, "n", "d", "f.txt")
	res := run(t, tools.NewWriteFile(e.Env), newEditCall(nil), writeArgs(t, p, "hello\n"))
	if out := wantApplied(t, res); out != "Created the file "+p+"." {
		t.Errorf("message = %q", out)
	}
	if got := diskText(t, p); got != "hello\n" {
		t.Errorf("disk = %q", got)
	}
	fi, err := os.Stat(filepath.Join(e.Root, "n", "d"))
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o700 != 0o700 {
		t.Errorf("parent: %v %v", fi, err)
	}
}

func TestCase22_PriorReadRequired(t *testing.T) {
	e := newTestEnv(t, nil)
	p := e.write(t, "a.txt", "original\n")
	for _, tt := range []struct {
		tool tools.Tool
		raw  string
		verb string
	}{
		{tools.NewWriteFile(e.Env), writeArgs(t, p, "new\n"), "overwriting"},
		{tools.NewEdit(e.Env), editArgs(t, p, "original", "new"), "editing"},
	} {
		t.Run(tt.tool.Name(), func(t *testing.T) {
			call := newEditCall(&fakeHost{ws: e.Workspace})
			_, _, terr := proposeChange(t, tt.tool, call, tt.raw)
			wantEditError(t, terr, tools.ErrorEditRequiresPriorRead,
				"You have not read "+p+" in this session. Read it with read_file before "+tt.verb+" it.")
			// No proposal: the editor is never asked (no qwen/proposeEdit).
			if call.Confirmation != nil {
				t.Errorf("a proposal was made: %+v", call.Confirmation)
			}

			readForEdit(t, e, call, p)
			if err := os.WriteFile(p, []byte("changed on disk\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.WriteFile(p, []byte("original\n"), 0o644) })
			_, _, terr = proposeChange(t, tt.tool, call, tt.raw)
			wantEditError(t, terr, tools.ErrorFileChangedSinceRead,
				p+" changed after you last read it. Read it again with read_file before "+tt.verb+" it.")
			if got := diskText(t, p); got != "changed on disk\n" {
				t.Errorf("disk = %q", got)
			}
		})
	}
}

func TestCase23_LineEndingsAndBOMKept(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewWriteFile(e.Env)
	call := newEditCall(nil)

	p := e.write(t, "crlf.txt", "a\r\nb\r\n")
	readForEdit(t, e, call, p)
	wantApplied(t, run(t, tool, call, writeArgs(t, p, "x\ny\n")))
	if got := diskText(t, p); got != "x\r\ny\r\n" {
		t.Errorf("CRLF file = %q", got)
	}

	q := e.write(t, "bom.txt", "\xEF\xBB\xBFold\n")
	readForEdit(t, e, call, q)
	wantApplied(t, run(t, tool, call, writeArgs(t, q, "new\n")))
	if got := diskText(t, q); got != "\xEF\xBB\xBFnew\n" {
		t.Errorf("BOM file = %q", got)
	}

	// A new file is plain UTF-8 by default.
	n := filepath.Join(e.Root, "new.txt")
	wantApplied(t, run(t, tool, call, writeArgs(t, n, "n\n")))
	if got := diskText(t, n); got != "n\n" {
		t.Errorf("new file = %q", got)
	}
}

func TestCase24_EditOpenBufferThroughTheEditor(t *testing.T) {
	e := newTestEnv(t, nil)
	p := e.write(t, "a.txt", "saved on disk\n")
	buffer := "package a\n\nfunc one() {}\n\nfunc two() {}\n\nfunc three() {}\n"
	e.Workspace.Overlay.Open(p, 7, buffer)
	host := &fakeHost{ws: e.Workspace}
	call := newEditCall(host)
	readForEdit(t, e, call, p)

	tool := tools.NewEdit(e.Env)
	params, c := mustProposeChange(t, tool, call, editArgs(t, p, "func", "fn", "replace_all", true))
	// What qwen/proposeEdit carries: the version, isNewFile, the whole
	// texts, and one hunk per line hunk.
	want := "package a\n\nfn one() {}\n\nfn two() {}\n\nfn three() {}\n"
	if c.Version == nil || *c.Version != 7 || c.IsNewFile || c.OldText != buffer || c.NewText != want {
		t.Fatalf("proposal = %+v (version %v)", c, c.Version)
	}
	hunks := diff.Hunks(c.OldText, c.NewText)
	if len(hunks) != 3 {
		t.Fatalf("hunks = %+v", hunks)
	}
	for i, line := range []int{2, 4, 6} {
		h := hunks[i]
		if h.OldStart != line || h.OldEnd != line+1 || h.Text != strings.SplitAfter(want, "\n")[line] {
			t.Errorf("hunk %d = %+v", i, h)
		}
	}

	out := wantApplied(t, executeChange(t, tool, call, params))
	if !strings.HasPrefix(out, "Edited "+p+". The file now reads (lines 1-7 of 7):") {
		t.Errorf("message = %q", out)
	}
	// workspace/applyEdit pinned to version 7; the overlay holds the text;
	// the disk is untouched.
	calls := host.applied()
	if len(calls) != 1 || calls[0].Path != p || calls[0].Version != 7 || calls[0].Text != want {
		t.Fatalf("applyEdit calls = %+v", calls)
	}
	if text, v := bufferText(t, e, p); text != want || v != 8 {
		t.Errorf("buffer = %q at version %d", text, v)
	}
	if got := diskText(t, p); got != "saved on disk\n" {
		t.Errorf("disk = %q", got)
	}
}

func TestCase25_CreateWithEmptyOldString(t *testing.T) {
	e := newTestEnv(t, nil)
	p := filepath.Join(e.Root, "n.txt")
	tool := tools.NewEdit(e.Env)
	call := newEditCall(nil)
	_, c := mustProposeChange(t, tool, call, editArgs(t, p, "", "hello"))
	if !c.IsNewFile || c.OldText != "" || c.NewText != "hello" || call.Confirmation.Title != "Confirm Edit: n.txt" {
		t.Errorf("proposal %q = %+v", call.Confirmation.Title, c)
	}
	out := wantApplied(t, executeChange(t, tool, call, nil))
	if want := "Created the file " + p + ". The file now reads (lines 1-1 of 1):\n\n---\n\nhello"; out != want {
		t.Errorf("message = %q, want %q", out, want)
	}
	if got := diskText(t, p); got != "hello" {
		t.Errorf("disk = %q", got)
	}
	res := run(t, tool, call, editArgs(t, p, "", "hello"))
	wantEditError(t, res.Error, tools.ErrorAttemptToCreateExistingFile,
		p+" already exists, so it cannot be created. To change it, read it and give a non-empty old_string.")

	// A missing file with a non-empty old_string.
	m := filepath.Join(e.Root, "missing.txt")
	res = run(t, tool, call, editArgs(t, m, "x", "y"))
	wantEditError(t, res.Error, tools.ErrorFileNotFound, m+" does not exist. To create it, give an empty old_string.")
}

func TestCase26_OccurrenceCounting(t *testing.T) {
	e := newTestEnv(t, nil)
	p := e.write(t, "a.txt", "foo foo")
	tool := tools.NewEdit(e.Env)
	call := newEditCall(nil)
	readForEdit(t, e, call, p)

	res := run(t, tool, call, editArgs(t, p, "foo", "bar"))
	wantEditError(t, res.Error, tools.ErrorEditExpectedOccurrenceMismatch,
		"old_string occurs 2 times in "+p+", so the edit is ambiguous; nothing was changed. Include more of the surrounding text to make it unique, or set replace_all to true to change every occurrence.")
	res = run(t, tool, call, editArgs(t, p, "foo", "bar", "expected_replacements", 3))
	wantEditError(t, res.Error, tools.ErrorEditExpectedOccurrenceMismatch,
		"old_string occurs 2 times in "+p+", not the 3 that expected_replacements gives; nothing was changed.")
	res = run(t, tool, call, editArgs(t, p, "absent", "bar"))
	wantEditError(t, res.Error, tools.ErrorEditNoOccurrenceFound,
		"old_string was not found in "+p+", so nothing was changed. It must match the file exactly, including whitespace and indentation, with no added escaping; read the file again to check.")
	if got := diskText(t, p); got != "foo foo" {
		t.Fatalf("a failed edit wrote %q", got)
	}
	wantApplied(t, run(t, tool, call, editArgs(t, p, "foo", "bar", "replace_all", true)))
	if got := diskText(t, p); got != "bar bar" {
		t.Errorf("replace_all: %q", got)
	}
	wantApplied(t, run(t, tool, call, editArgs(t, p, "bar", "baz", "expected_replacements", 2)))
	if got := diskText(t, p); got != "baz baz" {
		t.Errorf("expected_replacements 2: %q", got)
	}
}

func TestCase27_Normalisation(t *testing.T) {
	tests := []struct {
		name, file, old, repl string
		want                  string // "" means no occurrence
	}{
		{"curly quotes", "say “hi”", `say "hi"`, "say 'hi'", "say 'hi'"},
		{"trailing whitespace", "  a = 1;   \n  b = 2;\n", "  a = 1;\n  b = 2;", "  a = 3;\n  b = 4;", "  a = 3;\n  b = 4;\n"},
		{"other indentation", "  a = 1;   \n  b = 2;\n", "    a = 1;\n    b = 2;", "x", ""},
		{"deleted line", "a\nb\nc\n", "b", "", "a\nc\n"},
		{"replacement patterns", "value\n", "value", "$1 $&", "$1 $&\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t, nil)
			p := e.write(t, "a.txt", tt.file)
			call := newEditCall(nil)
			readForEdit(t, e, call, p)
			res := run(t, tools.NewEdit(e.Env), call, editArgs(t, p, tt.old, tt.repl))
			if tt.want == "" {
				if res.Error == nil || res.Error.Type != tools.ErrorEditNoOccurrenceFound {
					t.Fatalf("result %+v, want edit_no_occurrence_found", res)
				}
				return
			}
			wantApplied(t, res)
			if got := diskText(t, p); got != tt.want {
				t.Errorf("disk = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCase28_SnippetOfAnEdit(t *testing.T) {
	e := newTestEnv(t, nil)
	var lines []string
	for i := 1; i <= 20; i++ {
		lines = append(lines, fmt.Sprintf("Line %d", i))
	}
	p := e.write(t, "a.txt", strings.Join(lines, "\n"))
	call := newEditCall(nil)
	readForEdit(t, e, call, p)
	out := wantApplied(t, run(t, tools.NewEdit(e.Env), call, editArgs(t, p, "Line 10", "Line ten")))
	shown := append(append([]string{}, lines[5:9]...), "Line ten")
	shown = append(shown, lines[10:14]...)
	want := "Edited " + p + ". The file now reads (lines 6-14 of 20):\n\n---\n\n" + strings.Join(shown, "\n")
	if out != want {
		t.Errorf("message:\n%q\nwant\n%q", out, want)
	}
}

func TestCase29_ReviewAnswers(t *testing.T) {
	const original = "one\ntwo\nthree\nfour\nfive\n"
	setup := func(t *testing.T) (*testEnv, string, *tools.Call, map[string]any, *tools.EditConfirmation) {
		e := newTestEnv(t, nil)
		p := e.write(t, "a.txt", original)
		call := newEditCall(nil)
		readForEdit(t, e, call, p)
		params, c := mustProposeChange(t, tools.NewWriteFile(e.Env), call, writeArgs(t, p, "ONE\ntwo\nthree\nfour\nFIVE\n"))
		if n := len(diff.Hunks(c.OldText, c.NewText)); n != 2 {
			t.Fatalf("%d hunks", n)
		}
		return e, p, call, params, c
	}

	t.Run("one of two hunks", func(t *testing.T) {
		e, p, call, params, _ := setup(t)
		final := "one\ntwo\nthree\nfour\nFIVE\n"
		call.Decision = &tools.EditDecision{FinalText: &final}
		out := wantApplied(t, executeChange(t, tools.NewWriteFile(e.Env), call, params))
		want := "Overwrote the file " + p + ". The user applied only 1 of the 2 proposed changes; the changes at original lines 1-1 were rejected and not applied; those at original lines 5-5 were applied. " +
			"The file now reads (lines 1-5 of 5):\n\n---\n\none\ntwo\nthree\nfour\nFIVE"
		if out != want {
			t.Errorf("message:\n%q\nwant\n%q", out, want)
		}
		if got := diskText(t, p); got != final {
			t.Errorf("disk = %q", got)
		}
	})

	// Decided hunk by hunk, with a reason for the rejected one: the model
	// reads, per hunk, what was kept, what was not, and why.
	t.Run("one of two hunks, rejected with a reason", func(t *testing.T) {
		e, p, call, params, c := setup(t)
		kept := []bool{false, true}
		final := tools.ApplyKept(c.OldText, c.NewText, kept)
		call.Decision = &tools.EditDecision{FinalText: &final, Kept: kept, Reasons: map[int]string{0: "keep one\nin lower case", 1: "ignored: kept"}, Feedback: "thanks"}
		out := wantApplied(t, executeChange(t, tools.NewWriteFile(e.Env), call, params))
		want := "Overwrote the file " + p + ". The user applied only 1 of the 2 proposed changes; the changes at original lines 1-1 (the user's reason: keep one in lower case) were rejected and not applied; those at original lines 5-5 were applied. The user's feedback: thanks. " +
			"The file now reads (lines 1-5 of 5):\n\n---\n\none\ntwo\nthree\nfour\nFIVE"
		if out != want {
			t.Errorf("message:\n%q\nwant\n%q", out, want)
		}
		if got := diskText(t, p); got != final {
			t.Errorf("disk = %q", got)
		}
	})

	t.Run("a word typed", func(t *testing.T) {
		e, p, call, params, _ := setup(t)
		final := "ONE\ntwo\nthree\nfour\nFIVE and six\n"
		call.Decision = &tools.EditDecision{FinalText: &final}
		out := wantApplied(t, executeChange(t, tools.NewWriteFile(e.Env), call, params))
		if !strings.Contains(out, "The user modified your proposal") || !strings.HasSuffix(out, "FIVE and six") {
			t.Errorf("message = %q", out)
		}
		if got := diskText(t, p); got != final {
			t.Errorf("disk = %q", got)
		}
	})

	t.Run("rejected with feedback", func(t *testing.T) {
		_, p, _, _, c := setup(t)
		// The scheduler answers a rejection itself with these texts and
		// makes the call cancelled; the tool is not executed.
		got := "[Cancelled] " + tools.RejectionMessage(p, "use tabs")
		want := "[Cancelled] The user rejected the proposed change to " + p + "; the file was not modified. The user's feedback: use tabs"
		if got != want {
			t.Errorf("rejection = %q", got)
		}
		if d := tools.RejectionDisplay(c); d.NewContent != c.NewText || d.FileDiff != c.FileDiff {
			t.Errorf("display = %+v", d)
		}
		if got := diskText(t, p); got != original {
			t.Errorf("disk = %q", got)
		}
	})

	t.Run("accepted with the old text is a rejection", func(t *testing.T) {
		e, p, call, params, c := setup(t)
		final := original
		if r := tools.ClassifyReview(c.OldText, c.NewText, &tools.EditDecision{FinalText: &final}); r.Outcome != tools.ReviewRejected {
			t.Fatalf("outcome %v", r.Outcome)
		}
		// Should the scheduler execute it anyway, nothing is written and
		// the result is no success.
		call.Decision = &tools.EditDecision{FinalText: &final}
		res := executeChange(t, tools.NewWriteFile(e.Env), call, params)
		if res.Error == nil || diskText(t, p) != original {
			t.Errorf("result %+v, disk %q", res, diskText(t, p))
		}
	})

	// A lone rejection without feedback (or outcome "cancelled") ends the
	// turn with end_turn and no further model request: that is the
	// scheduler's, tested with the agent loop. Its tool-layer part is the
	// message without feedback.
	if got := tools.RejectionMessage("/w/a.txt", ""); got != "The user rejected the proposed change to /w/a.txt; the file was not modified." {
		t.Errorf("rejection without feedback = %q", got)
	}
}

func TestCase30_TypingDuringTheReview(t *testing.T) {
	const buffer = "1\n2\n3\n4\n5\n6\n7\n8\n9\n"
	setup := func(t *testing.T) (*testEnv, string, *fakeHost, *tools.Call, map[string]any) {
		e := newTestEnv(t, nil)
		p := e.write(t, "a.txt", buffer)
		e.Workspace.Overlay.Open(p, 1, buffer)
		host := &fakeHost{ws: e.Workspace}
		call := newEditCall(host)
		readForEdit(t, e, call, p)
		params, _ := mustProposeChange(t, tools.NewEdit(e.Env), call, editArgs(t, p, "3\n", "three\n"))
		return e, p, host, call, params
	}

	t.Run("inside the changed region", func(t *testing.T) {
		e, p, host, call, params := setup(t)
		typed := "1\n2\n3 typed\n4\n5\n6\n7\n8\n9\n"
		typeInto(t, e, p, typed)
		res := executeChange(t, tools.NewEdit(e.Env), call, params)
		wantEditError(t, res.Error, tools.ErrorFileChangedSinceRead,
			"File "+p+" changed while your change was being reviewed, and the change no longer applies cleanly; nothing was written. Re-read the file with read_file and try again.")
		if text, _ := bufferText(t, e, p); text != typed {
			t.Errorf("buffer = %q", text)
		}
		if n := len(host.applied()); n != 0 {
			t.Errorf("%d applyEdit calls", n)
		}
	})

	t.Run("elsewhere", func(t *testing.T) {
		e, p, host, call, params := setup(t)
		typeInto(t, e, p, "1\n2\n3\n4\n5\n6\n7\n8 typed\n9\n")
		_, v := bufferText(t, e, p)
		out := wantApplied(t, executeChange(t, tools.NewEdit(e.Env), call, params))
		want := "1\n2\nthree\n4\n5\n6\n7\n8 typed\n9\n"
		if text, _ := bufferText(t, e, p); text != want {
			t.Errorf("buffer = %q, want %q", text, want)
		}
		calls := host.applied()
		if len(calls) != 1 || calls[0].Version != v {
			t.Errorf("applyEdit calls = %+v, want one at version %d", calls, v)
		}
		if !strings.HasPrefix(out, "Edited "+p+". The file now reads (lines 1-7 of 9):") {
			t.Errorf("message = %q", out)
		}
	})
}

func TestCase31_LedgerFollowsTheBuffer(t *testing.T) {
	e := newTestEnv(t, nil)
	p := e.write(t, "a.txt", "alpha\nbeta\n")
	e.Workspace.Overlay.Open(p, 1, "alpha\nbeta\n")
	host := &fakeHost{ws: e.Workspace}
	call := newEditCall(host)
	tool := tools.NewEdit(e.Env)

	readForEdit(t, e, call, p)
	typeInto(t, e, p, "alpha\nbeta\ngamma\n")
	res := run(t, tool, call, editArgs(t, p, "beta", "BETA"))
	wantEditError(t, res.Error, tools.ErrorFileChangedSinceRead,
		p+" changed after you last read it. Read it again with read_file before editing it.")

	readForEdit(t, e, call, p)
	wantApplied(t, run(t, tool, call, editArgs(t, p, "beta", "BETA")))
	if text, _ := bufferText(t, e, p); text != "alpha\nBETA\ngamma\n" {
		t.Errorf("buffer = %q", text)
	}

	// A file created by write_file can be edited unread.
	n := filepath.Join(e.Root, "created.txt")
	wantApplied(t, run(t, tools.NewWriteFile(e.Env), call, writeArgs(t, n, "x = 1\n")))
	wantApplied(t, run(t, tool, call, editArgs(t, n, "x = 1", "x = 2")))
	if got := diskText(t, n); got != "x = 2\n" {
		t.Errorf("disk = %q", got)
	}
}
