package session_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/session"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
	"github.com/qwen-ls/qwen-ls/tools"
)

func call(id, name, args string) modeltest.ToolCall {
	return modeltest.ToolCall{ID: id, Name: name, Arguments: args}
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readOr(path, missing string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return missing
	}
	return string(b)
}

// One turn writes a file, creates one, and runs a shell command that
// deletes one and edits another with sed -i; the user then edits a fourth
// file the turn wrote. In a later process, qwen/revertTurn's core puts
// back the first three, removes the created one, and reports the user's
// file as a conflict without touching it.
func TestRevertTurnRestoresEditsAndShellChanges(t *testing.T) {
	st := newStored(t)
	root := st.root
	writeFiles(t, root, map[string]string{"a.txt": "alpha\n", "gone.txt": "keep me\n", "s.txt": "sed me\n", "u.txt": "user\n", "untouched.txt": "same\n"})
	p := func(name string) string { return filepath.Join(root, name) }
	st.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			call("r1", "read_file", fmt.Sprintf(`{"absolute_path":%q}`, p("a.txt"))),
			call("r2", "read_file", fmt.Sprintf(`{"absolute_path":%q}`, p("u.txt"))),
		}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			call("w1", "write_file", fmt.Sprintf(`{"file_path":%q,"content":"ALPHA\n"}`, p("a.txt"))),
			call("w2", "write_file", fmt.Sprintf(`{"file_path":%q,"content":"created\n"}`, p("new.txt"))),
			call("sh", "run_shell_command", `{"command":"rm gone.txt && sed -i 's/sed/SED/' s.txt"}`),
			call("w3", "write_file", fmt.Sprintf(`{"file_path":%q,"content":"agent\n"}`, p("u.txt"))),
		}},
		modeltest.Response{Text: "All done."},
		modeltest.Response{Text: "Understood."},
	)
	ts := func() []tools.Tool {
		return []tools.Tool{tools.NewReadFile(st.env), tools.NewWriteFile(st.env), tools.NewShell(st.env)}
	}
	m1 := st.manager(t, ts())
	s := newSess(t, m1, "yolo")
	prompt(t, s, "change the files")
	for name, want := range map[string]string{"a.txt": "ALPHA\n", "new.txt": "created\n", "gone.txt": "<missing>", "s.txt": "SED me\n", "u.txt": "agent\n"} {
		if got := readOr(p(name), "<missing>"); got != want {
			t.Fatalf("after the turn %s = %q, want %q", name, got, want)
		}
	}
	writeFiles(t, root, map[string]string{"u.txt": "user again\n"})
	m1.Close()

	m2 := st.manager(t, ts())
	lr, err := m2.Load(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	res, err := lr.Session.RevertTurn(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(res.Restored)
	if res.Turn != 1 || !slices.Equal(res.Restored, []string{p("a.txt"), p("gone.txt"), p("s.txt")}) || !slices.Equal(res.Removed, []string{p("new.txt")}) {
		t.Fatalf("revert = %+v", res)
	}
	if len(res.Conflicts) != 1 || res.Conflicts[0].Path != p("u.txt") || !strings.Contains(res.Conflicts[0].Diff, "-agent") || !strings.Contains(res.Conflicts[0].Diff, "+user again") {
		t.Fatalf("conflicts = %+v", res.Conflicts)
	}
	for name, want := range map[string]string{"a.txt": "alpha\n", "new.txt": "<missing>", "gone.txt": "keep me\n", "s.txt": "sed me\n", "u.txt": "user again\n", "untouched.txt": "same\n"} {
		if got := readOr(p(name), "<missing>"); got != want {
			t.Fatalf("after the revert %s = %q, want %q", name, got, want)
		}
	}
	if _, err := lr.Session.RevertTurn(context.Background(), 0); !errors.Is(err, session.ErrNothingToRevert) {
		t.Fatalf("a second undo: %v", err)
	}
	prompt(t, lr.Session, "thanks")
	reqs := st.model.Requests()
	last := reqs[len(reqs)-1].Messages
	if note := last[len(last)-1].Text(); !strings.Contains(note, "The user undid the file changes of turn 1") || !strings.Contains(note, "u.txt") {
		t.Fatalf("the model was not told of the undo: %q", note)
	}
}

// A read-only shell command takes no snapshot and an undo of a turn that
// changed nothing says so.
func TestRevertWithNothingToUndo(t *testing.T) {
	st := newStored(t,
		modeltest.Response{ToolCalls: []modeltest.ToolCall{call("ls", "run_shell_command", `{"command":"ls"}`)}},
		modeltest.Response{Text: "Listed."})
	writeFiles(t, st.root, map[string]string{"f.txt": "a tracked file a snapshot would store\n"})
	m := st.manager(t, []tools.Tool{tools.NewShell(st.env)})
	s := newSess(t, m, "yolo")
	prompt(t, s, "list")
	if _, err := s.RevertTurn(context.Background(), 0); !errors.Is(err, session.ErrNothingToRevert) {
		t.Fatalf("undo after a read-only turn: %v", err)
	}
	if ents, _ := filepath.Glob(filepath.Join(filepath.Dir(filepath.Dir(s.SessionFile())), "checkpoints", "objects", "*")); len(ents) != 0 {
		t.Fatalf("a read-only command stored %d snapshot objects", len(ents))
	}
}

// A file a shell command creates is removed by the undo; one in a
// directory the command created too, with the directory left empty.
func TestRevertRemovesFilesAShellCommandCreated(t *testing.T) {
	st := newStored(t,
		modeltest.Response{ToolCalls: []modeltest.ToolCall{call("sh", "run_shell_command", `{"command":"echo hi > made.txt && mkdir -p out && echo x > out/deep.txt"}`)}},
		modeltest.Response{Text: "Made."})
	writeFiles(t, st.root, map[string]string{"keep.txt": "keep\n"})
	m := st.manager(t, []tools.Tool{tools.NewShell(st.env)})
	s := newSess(t, m, "yolo")
	prompt(t, s, "make files")
	res, err := s.RevertTurn(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(st.root, "made.txt"), filepath.Join(st.root, "out", "deep.txt")}
	if !slices.Equal(res.Removed, want) {
		t.Fatalf("removed %v, want %v", res.Removed, want)
	}
	for _, p := range want {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%s is still there", p)
		}
	}
	if readOr(filepath.Join(st.root, "keep.txt"), "") != "keep\n" {
		t.Fatal("an unrelated file changed")
	}
}
