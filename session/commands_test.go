package session_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/session"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
	"github.com/qwen-ls/qwen-ls/tools/toolset"
)

// Clear keeps the session's id and starts its history over; the earlier
// conversation is a stored session of its own that another process loads
// whole; the session's next prompt starts a new file. Stats start over.
func TestClearKeepsTheConversationOnDisk(t *testing.T) {
	st := newStored(t, modeltest.Response{Text: "first answer", Usage: &modeltest.Usage{Prompt: 10, Completion: 2}}, modeltest.Response{Text: "second answer"})
	m := st.manager(t, nil)
	s := newSess(t, m, session.ModeDefault)
	prompt(t, s, "first question")
	old := s.SessionFile()
	if got := s.Stats(); got.ModelRequests != 1 || got.InputTokens != 10 || got.Turns != 1 {
		t.Fatalf("stats = %+v", got)
	}
	res, err := s.Clear()
	if err != nil || res.StoredID == "" || res.Messages != 2 {
		t.Fatalf("Clear = %+v, %v", res, err)
	}
	if len(s.History()) != 0 || s.SessionFile() != "" {
		t.Fatalf("history %d, file %q after Clear", len(s.History()), s.SessionFile())
	}
	if _, err := os.Stat(old); err == nil {
		t.Fatal("the old file is still under the session's id")
	}
	if got := s.Stats(); got.ModelRequests != 0 || got.Turns != 0 {
		t.Fatalf("stats after Clear = %+v", got)
	}
	prompt(t, s, "second question")
	reqs := st.model.Requests()
	for _, msg := range reqs[1].Messages {
		if strings.Contains(msg.Text(), "first") {
			t.Fatalf("the cleared conversation reached the model: %q", msg.Text())
		}
	}
	if s.SessionFile() == "" {
		t.Fatal("the next prompt started no file")
	}

	other := st.manager(t, nil)
	lr, err := other.Load(res.StoredID)
	if err != nil {
		t.Fatal(err)
	}
	h := lr.Session.History()
	if len(h) != 2 || h[0].Text != "first question" || h[1].Text != "first answer" || lr.Session.ID() != res.StoredID {
		t.Fatalf("the kept conversation loads as %d messages: %+v", len(h), h)
	}
}

// RunTool takes a command through the permission flow: without anyone to
// ask in default mode, a command that writes does not run; in yolo mode it
// runs and ShellOutput gives its output.
func TestRunToolGoesThroughPermissions(t *testing.T) {
	st := newStored(t)
	m := st.manager(t, toolset.Builtins(st.env))
	s := newSess(t, m, session.ModeDefault)
	ctx, release, err := s.Claim(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Claim(context.Background()); err == nil {
		t.Fatal("a claimed session was claimed again")
	}
	marker := filepath.Join(st.root, "marker")
	run, err := s.RunTool(ctx, "run_shell_command", map[string]any{"command": "touch marker && echo made"})
	if err != nil {
		t.Fatal(err)
	}
	if _, serr := os.Stat(marker); serr == nil || !(run.Rejected || run.Failed) {
		t.Fatalf("ran without asking: %+v", run)
	}
	release()
	if err := s.SetMode(session.ModeYolo); err != nil {
		t.Fatal(err)
	}
	ctx, release, _ = s.Claim(context.Background())
	defer release()
	run, err = s.RunTool(ctx, "run_shell_command", map[string]any{"command": "touch marker && echo made && exit 3"})
	if err != nil || run.Rejected {
		t.Fatalf("%+v %v", run, err)
	}
	if _, serr := os.Stat(marker); serr != nil {
		t.Fatal("yolo did not run it")
	}
	out := session.ShellOutput("cmd", run.Text)
	if out != "made\n\n[Shell command 'cmd' exited with code 3]" && out != "made\n[Shell command 'cmd' exited with code 3]" {
		t.Fatalf("ShellOutput = %q (from %q)", out, run.Text)
	}
	if len(s.History()) != 0 {
		t.Fatal("a command's tool call went into the history")
	}
	if got := s.Stats(); got.ToolCalls != 2 {
		t.Fatalf("stats = %+v", got)
	}
}
