package rpc_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// reviewer is a rich editor with edit review, permission prompts and
// workspace/applyEdit (documentChanges), in default mode.
func reviewer(t *testing.T, shape func(*rpctest.InitParams)) *agent {
	t.Helper()
	a := startAgentWith(t, "default", rpc.Options{}, func(p *rpctest.InitParams) {
		p.ApplyEdit, p.DocumentChanges = true, true
		if shape != nil {
			shape(p)
		}
	})
	a.e.ApplyEditsLikeAnEditor(true)
	return a
}

type proposal struct {
	SessionID  string `json:"sessionId"`
	ToolCallID string `json:"toolCallId"`
	URI        string `json:"uri"`
	Version    *int32 `json:"version"`
	IsNewFile  bool   `json:"isNewFile"`
	OldText    string `json:"oldText"`
	NewText    string `json:"newText"`
	Edits      []rpctest.TextEdit
}

// answerProposals answers every qwen/proposeEdit with f.
func (a *agent) answerProposals(f func(p proposal) any) *[]proposal {
	var mu sync.Mutex
	var seen []proposal
	a.e.Handle("qwen/proposeEdit", func(params json.RawMessage) (any, error) {
		var p proposal
		json.Unmarshal(params, &p)
		mu.Lock()
		seen = append(seen, p)
		mu.Unlock()
		return f(p), nil
	})
	return &seen
}

// readThenEdit scripts: read the file, edit old→new, then a final answer.
func (a *agent) readThenEdit(path, old, new string) {
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "read", Name: "read_file", Arguments: jsonArgs("absolute_path", path)}}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "ed", Name: "edit", Arguments: jsonArgs("file_path", path, "old_string", old, "new_string", new)}}},
		modeltest.Response{Text: "finished"},
	)
}

func jsonArgs(kv ...string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// toolMessage is what the model was told about call id in its last request.
func (a *agent) toolMessage(t *testing.T, id string) string {
	t.Helper()
	reqs := a.model.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		for _, m := range reqs[i].Messages {
			if m.Role == "tool" && m.ToolCallID == id {
				return m.Text()
			}
		}
	}
	t.Fatalf("the model was never told about call %s", id)
	return ""
}

func TestAcceptOnAClosedFileWritesDiskAtomically(t *testing.T) {
	a := reviewer(t, nil)
	p := filepath.Join(a.root, "a.txt")
	os.WriteFile(p, []byte("one\ntwo\nthree\n"), 0o640)
	seen := a.answerProposals(func(proposal) any { return map[string]any{"outcome": "accepted"} })
	a.readThenEdit(p, "two", "TWO")
	if _, err := a.prompt("change two"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(p); string(data) != "one\nTWO\nthree\n" {
		t.Fatalf("disk = %q", data)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want it kept", fi.Mode())
	}
	if len(*seen) != 1 || (*seen)[0].Version != nil || (*seen)[0].IsNewFile || (*seen)[0].OldText != "one\ntwo\nthree\n" || len((*seen)[0].Edits) != 1 {
		t.Fatalf("proposal = %+v", *seen)
	}
	if msg := a.toolMessage(t, "ed"); !strings.HasPrefix(msg, "Edited "+p+".") {
		t.Fatalf("model told %q", msg)
	}
	if len(a.e.AppliedEdits()) != 0 {
		t.Fatal("a closed file was changed through the editor")
	}
}

// An open buffer is changed through workspace/applyEdit pinned to its
// version; the disk is untouched (conformance case 24).
func TestAcceptOnAnOpenBufferGoesThroughTheEditor(t *testing.T) {
	a := reviewer(t, nil)
	p := filepath.Join(a.root, "a.txt")
	os.WriteFile(p, []byte("disk\n"), 0o644)
	a.e.OpenTracked(p, "alpha\nbeta 😀 x\ngamma\n")
	v := a.e.ReplaceTracked(p, "alpha\nbeta 😀 x\ngamma\n") // version 2
	seen := a.answerProposals(func(proposal) any { return map[string]any{"outcome": "accepted"} })
	a.readThenEdit(p, "x", "y")
	if _, err := a.prompt("edit"); err != nil {
		t.Fatal(err)
	}
	if got := a.e.Text(p); got != "alpha\nbeta 😀 y\ngamma\n" {
		t.Fatalf("buffer = %q", got)
	}
	if data, _ := os.ReadFile(p); string(data) != "disk\n" {
		t.Fatalf("disk changed to %q", data)
	}
	pr := (*seen)[0]
	if pr.Version == nil || *pr.Version != v || pr.URI != rpctest.URI(p) {
		t.Fatalf("proposal version/uri = %v %s, want %d", pr.Version, pr.URI, v)
	}
	applied := a.e.AppliedEdits()
	if len(applied) != 1 || applied[0].Version == nil || *applied[0].Version != v {
		t.Fatalf("applyEdit = %+v, want pinned to %d", applied, v)
	}
	// The server's own minimal edit: just the one character, in UTF-8
	// columns (the emoji is 4 bytes).
	ed := applied[0].Edits[0]
	if ed.NewText != "y" || ed.Range.Start.Line != 1 || ed.Range.Start.Character != 10 || ed.Range.End.Character != 11 {
		t.Fatalf("applied edit = %+v", ed)
	}
	if msg := a.toolMessage(t, "ed"); !strings.HasPrefix(msg, "Edited "+p+".") {
		t.Fatalf("model told %q", msg)
	}
}

func TestRejectWithFeedbackWritesNothingAndTellsTheModel(t *testing.T) {
	a := reviewer(t, nil)
	p := filepath.Join(a.root, "a.txt")
	os.WriteFile(p, []byte("x x\n"), 0o644)
	a.answerProposals(func(proposal) any { return map[string]any{"outcome": "rejected", "feedback": "use tabs"} })
	a.readThenEdit(p, "x x", "y y")
	if _, err := a.prompt("edit"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(p); string(data) != "x x\n" {
		t.Fatalf("disk = %q", data)
	}
	want := "[Cancelled] The user rejected the proposed change to " + p + "; the file was not modified. The user's feedback: use tabs"
	if msg := a.toolMessage(t, "ed"); msg != want {
		t.Fatalf("model told %q\nwant %q", msg, want)
	}
	// With feedback the model hears about it: a third request was made.
	if n := len(a.model.Requests()); n != 3 {
		t.Fatalf("%d model requests, want 3", n)
	}
}

// A lone rejection without feedback ends the turn (end_turn) with no
// further model request (conformance case 29).
func TestLoneRejectionEndsTheTurn(t *testing.T) {
	a := reviewer(t, nil)
	p := filepath.Join(a.root, "a.txt")
	os.WriteFile(p, []byte("x\n"), 0o644)
	a.answerProposals(func(proposal) any { return map[string]any{"outcome": "cancelled"} })
	a.readThenEdit(p, "x", "y")
	res, err := a.prompt("edit")
	if err != nil || !strings.Contains(string(res), "end_turn") {
		t.Fatalf("%s %v", res, err)
	}
	if n := len(a.model.Requests()); n != 2 {
		t.Fatalf("%d model requests, want 2 (no request after the rejection)", n)
	}
	if data, _ := os.ReadFile(p); string(data) != "x\n" {
		t.Fatalf("disk = %q", data)
	}
}

func TestUserModifiedFinalTextIsAppliedAndReported(t *testing.T) {
	a := reviewer(t, nil)
	p := filepath.Join(a.root, "a.txt")
	os.WriteFile(p, []byte("a\nb\nc\n"), 0o644)
	a.answerProposals(func(pr proposal) any {
		return map[string]any{"outcome": "accepted", "finalText": "a\nB (edited by me)\nc\n"}
	})
	a.readThenEdit(p, "b", "B")
	if _, err := a.prompt("edit"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(p); string(data) != "a\nB (edited by me)\nc\n" {
		t.Fatalf("disk = %q", data)
	}
	if msg := a.toolMessage(t, "ed"); !strings.Contains(msg, "The user modified your proposal") || !strings.Contains(msg, "B (edited by me)") {
		t.Fatalf("model told %q", msg)
	}
}

func TestOnlySomeHunksKept(t *testing.T) {
	a := reviewer(t, nil)
	p := filepath.Join(a.root, "a.txt")
	lines := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"
	os.WriteFile(p, []byte(lines), 0o644)
	a.answerProposals(func(pr proposal) any {
		// Keep the first hunk (2→two), drop the second (9→nine).
		return map[string]any{"outcome": "accepted", "finalText": strings.Replace(pr.OldText, "2\n", "two\n", 1)}
	})
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "read", Name: "read_file", Arguments: jsonArgs("absolute_path", p)}}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "w", Name: "write_file", Arguments: jsonArgs("file_path", p, "content", strings.NewReplacer("2\n", "two\n", "9\n", "nine\n").Replace(lines))}}},
		modeltest.Response{Text: "ok"},
	)
	if _, err := a.prompt("rewrite"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(p); string(data) != strings.Replace(lines, "2\n", "two\n", 1) {
		t.Fatalf("disk = %q", data)
	}
	if msg := a.toolMessage(t, "w"); !strings.Contains(msg, "The user applied only 1 of the 2 proposed changes") || !strings.Contains(msg, "9-9") {
		t.Fatalf("model told %q", msg)
	}
}

// The user types while the proposal is open: elsewhere it is rebased and
// applied; inside the changed region nothing is written and the typing is
// kept (conformance case 30).
func TestTypingDuringTheReview(t *testing.T) {
	for _, tc := range []struct {
		name    string
		typed   func(string) string
		want    func(string) string
		changed bool
	}{
		{"elsewhere", func(s string) string { return strings.Replace(s, "first", "FIRST typed", 1) },
			func(s string) string { return "FIRST typed\nmiddle\nLAST\n" }, false},
		{"inside", func(s string) string { return strings.Replace(s, "last", "last typed", 1) },
			func(s string) string { return "first\nmiddle\nlast typed\n" }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := reviewer(t, nil)
			p := filepath.Join(a.root, "a.txt")
			os.WriteFile(p, []byte("first\nmiddle\nlast\n"), 0o644)
			a.e.OpenTracked(p, "first\nmiddle\nlast\n")
			a.answerProposals(func(pr proposal) any {
				// The user types, and the server has it before the answer.
				a.e.ReplaceTracked(p, tc.typed(a.e.Text(p)))
				return map[string]any{"outcome": "accepted"}
			})
			a.readThenEdit(p, "last", "LAST")
			if _, err := a.prompt("edit"); err != nil {
				t.Fatal(err)
			}
			if got := a.e.Text(p); got != tc.want("") {
				t.Fatalf("buffer = %q, want %q", got, tc.want(""))
			}
			msg := a.toolMessage(t, "ed")
			if tc.changed != strings.Contains(msg, "changed while your change was being reviewed") {
				t.Fatalf("model told %q", msg)
			}
		})
	}
}

func TestEditorRefusingApplyEditIsReported(t *testing.T) {
	a := reviewer(t, nil)
	p := filepath.Join(a.root, "a.txt")
	a.e.OpenTracked(p, "x\n")
	a.e.Handle("workspace/applyEdit", func(json.RawMessage) (any, error) {
		return map[string]any{"applied": false, "failureReason": "the file is read-only"}, nil
	})
	a.answerProposals(func(proposal) any { return map[string]any{"outcome": "accepted"} })
	a.readThenEdit(p, "x", "y")
	if _, err := a.prompt("edit"); err != nil {
		t.Fatal(err)
	}
	if got := a.e.Text(p); got != "x\n" {
		t.Fatalf("buffer = %q", got)
	}
	want := "The editor did not apply the change to " + p + ": the file is read-only. The file was not modified."
	if msg := a.toolMessage(t, "ed"); msg != want {
		t.Fatalf("model told %q\nwant %q", msg, want)
	}
}

// Cancelling the turn while a proposal is open withdraws it with
// $/cancelRequest and writes nothing.
func TestCancelWhileAProposalIsOpen(t *testing.T) {
	a := reviewer(t, nil)
	p := filepath.Join(a.root, "a.txt")
	os.WriteFile(p, []byte("x\n"), 0o644)
	open := make(chan struct{})
	release := make(chan struct{})
	a.answerProposals(func(proposal) any {
		close(open)
		<-release // the user is still looking
		return map[string]any{"outcome": "accepted"}
	})
	defer close(release)
	a.readThenEdit(p, "x", "y")
	id, ch := a.e.Send("qwen/prompt", map[string]any{"sessionId": a.sid, "prompt": []any{map[string]any{"type": "text", "text": "edit"}}})
	<-open
	a.e.Notify("qwen/cancel", map[string]any{"sessionId": a.sid})
	res, err := a.e.Wait(id, ch)
	if err != nil || !strings.Contains(string(res), `"cancelled"`) {
		t.Fatalf("%s %v", res, err)
	}
	reqs := a.e.Requests("qwen/proposeEdit")
	a.e.WaitNotification("$/cancelRequest", func(p json.RawMessage) bool {
		return strings.Contains(string(p), strings.Trim(string(reqs[0].ID), `"`))
	})
	if data, _ := os.ReadFile(p); string(data) != "x\n" {
		t.Fatalf("disk = %q", data)
	}
}

// A deferredReview client answers "deferred" and decides later with
// qwen/resolveReview; the decision is applied like a direct one, and a
// cancelled turn sends qwen/reviewCancelled instead of $/cancelRequest.
func TestDeferredReview(t *testing.T) {
	deferredClient := func(p *rpctest.InitParams) { p.Deferred = true }
	t.Run("resolved", func(t *testing.T) {
		a := reviewer(t, deferredClient)
		p := filepath.Join(a.root, "a.txt")
		os.WriteFile(p, []byte("x\n"), 0o644)
		a.answerProposals(func(pr proposal) any {
			go func() {
				a.e.Call("qwen/resolveReview", map[string]any{"sessionId": pr.SessionID, "toolCallId": pr.ToolCallID, "outcome": "accepted", "finalText": "z\n"})
			}()
			return map[string]any{"outcome": "deferred"}
		})
		a.readThenEdit(p, "x", "y")
		if _, err := a.prompt("edit"); err != nil {
			t.Fatal(err)
		}
		if data, _ := os.ReadFile(p); string(data) != "z\n" {
			t.Fatalf("disk = %q", data)
		}
		if _, err := a.e.Call("qwen/resolveReview", map[string]any{"sessionId": a.sid, "toolCallId": "ed", "outcome": "accepted"}); !isCode(err, rpc.CodeInvalidParams) {
			t.Fatalf("resolving twice: %v, want -32602", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		a := reviewer(t, deferredClient)
		p := filepath.Join(a.root, "a.txt")
		os.WriteFile(p, []byte("x\n"), 0o644)
		asked := make(chan struct{})
		a.answerProposals(func(pr proposal) any { close(asked); return map[string]any{"outcome": "deferred"} })
		a.readThenEdit(p, "x", "y")
		id, ch := a.e.Send("qwen/prompt", map[string]any{"sessionId": a.sid, "prompt": []any{map[string]any{"type": "text", "text": "edit"}}})
		<-asked
		a.e.Notify("qwen/cancel", map[string]any{"sessionId": a.sid})
		if res, err := a.e.Wait(id, ch); err != nil || !strings.Contains(string(res), "cancelled") {
			t.Fatalf("%s %v", res, err)
		}
		// Whether the cancel overtook the "deferred" answer or not, the
		// client is told to close the review.
		a.e.WaitNotification("qwen/reviewCancelled", func(p json.RawMessage) bool { return strings.Contains(string(p), `"toolCallId":"ed"`) })
		if data, _ := os.ReadFile(p); string(data) != "x\n" {
			t.Fatalf("disk = %q", data)
		}
	})
}

// "applied: true" is not trusted: without the didChange that shows the
// text, the edit is reported as not applied (protocol.md §6.3).
func TestAppliedTrueWithoutTheChangeIsNotTrusted(t *testing.T) {
	a := reviewer(t, nil)
	p := filepath.Join(a.root, "a.txt")
	a.e.OpenTracked(p, "x\n")
	a.e.Handle("workspace/applyEdit", func(json.RawMessage) (any, error) { return map[string]any{"applied": true}, nil })
	a.answerProposals(func(proposal) any { return map[string]any{"outcome": "accepted"} })
	a.readThenEdit(p, "x", "y")
	if _, err := a.prompt("edit"); err != nil {
		t.Fatal(err)
	}
	want := "The editor did not apply the change to " + p + ": the buffer did not change within 2 s. The file was not modified."
	if msg := a.toolMessage(t, "ed"); msg != want {
		t.Fatalf("model told %q", msg)
	}
}

// A client without documentChanges (Neovim 0.7) gets a changes map, which
// carries no version.
func TestChangesMapForClientsWithoutDocumentChanges(t *testing.T) {
	a := reviewer(t, func(p *rpctest.InitParams) { p.DocumentChanges = false })
	p := filepath.Join(a.root, "a.txt")
	a.e.OpenTracked(p, "x\n")
	a.answerProposals(func(proposal) any { return map[string]any{"outcome": "accepted"} })
	a.readThenEdit(p, "x", "y")
	if _, err := a.prompt("edit"); err != nil {
		t.Fatal(err)
	}
	applied := a.e.AppliedEdits()
	if len(applied) != 1 || applied[0].Version != nil || a.e.Text(p) != "y\n" {
		t.Fatalf("applied = %+v, buffer %q", applied, a.e.Text(p))
	}
}

// An editor without workspace/applyEdit cannot have an open buffer
// changed: the edit is denied before any review.
func TestOpenBufferWithoutApplyEditIsDenied(t *testing.T) {
	a := reviewer(t, func(p *rpctest.InitParams) { p.ApplyEdit = false })
	p := filepath.Join(a.root, "a.txt")
	a.e.OpenTracked(p, "x\n")
	seen := a.answerProposals(func(proposal) any { return map[string]any{"outcome": "accepted"} })
	a.readThenEdit(p, "x", "y")
	if _, err := a.prompt("edit"); err != nil {
		t.Fatal(err)
	}
	want := p + " is open in the editor, and this editor cannot apply changes to open files. Ask the user to save and close the file, then try again."
	if msg := a.toolMessage(t, "ed"); msg != want {
		t.Fatalf("model told %q", msg)
	}
	if len(*seen) != 0 {
		t.Fatal("the user was asked to review an edit that could not be applied")
	}
}

// exit_plan_mode asks with the plan and switches the mode on each answer
// (tools.md §3.14, conformance case 40).
func TestExitPlanModeSwitchesModes(t *testing.T) {
	for _, tc := range []struct {
		option, wantMode, wantMsg string
	}{
		{"proceed_always", "auto-edit", "The user approved your plan, and the approval mode is now auto-edit."},
		{"proceed_once", "default", "The user approved your plan, and the approval mode is now default."},
		{"cancel", "plan", "[Cancelled] The user rejected the plan; plan mode stays on."},
	} {
		t.Run(tc.option, func(t *testing.T) {
			a := startAgent(t, "plan")
			var asked []permRequest
			a.e.Handle("qwen/requestPermission", func(params json.RawMessage) (any, error) {
				var p permRequest
				json.Unmarshal(params, &p)
				asked = append(asked, p)
				return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": tc.option}}, nil
			})
			a.model.Push(
				modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "plan", Name: "exit_plan_mode", Arguments: `{"plan":"1. do it"}`}}},
				modeltest.Response{Text: "ok"},
			)
			if _, err := a.prompt("plan it"); err != nil {
				t.Fatal(err)
			}
			if len(asked) != 1 || asked[0].ToolCall.Kind != "switch_mode" || asked[0].ToolCall.Title != "Would you like to proceed?" || len(asked[0].Options) != 3 {
				t.Fatalf("asked %+v", asked)
			}
			modeUpdates := 0
			for _, u := range a.updates(t) {
				if u.SessionUpdate == "current_mode_update" {
					modeUpdates++
				}
			}
			if (tc.wantMode != "plan") != (modeUpdates == 1) {
				t.Fatalf("%d mode updates", modeUpdates)
			}
			// The next call sees the new mode: a write is blocked only in plan.
			p := filepath.Join(a.root, "n.txt")
			a.model.Push(modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "w", Name: "write_file", Arguments: jsonArgs("file_path", p, "content", "x")}}}, modeltest.Response{Text: "ok"})
			a.e.Handle("qwen/proposeEdit", func(json.RawMessage) (any, error) { return map[string]any{"outcome": "accepted"}, nil })
			a.prompt("write")
			_, err := os.Stat(p)
			if written := err == nil; written != (tc.wantMode != "plan") {
				t.Fatalf("written = %v in mode %s", written, tc.wantMode)
			}
			// A rejected plan ends the turn; the model reads the answer
			// with the next prompt.
			if msg := a.toolMessage(t, "plan"); !strings.HasPrefix(msg, tc.wantMsg) {
				t.Fatalf("model told %q", msg)
			}
		})
	}
}

// todo_write's list reaches the editor as an ACP plan update (issue 6,
// acceptance 5).
func TestTodoWriteSendsPlanUpdates(t *testing.T) {
	a := startAgent(t, "default",
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{Name: "todo_write", Arguments: `{"todos":[{"id":"1","content":"Read the code","status":"in_progress"},{"id":"2","content":"Fix it","status":"pending"}]}`}}},
		modeltest.Response{Text: "ok"},
	)
	if _, err := a.prompt("plan"); err != nil {
		t.Fatal(err)
	}
	raw := a.e.WaitNotification("qwen/sessionUpdate", func(p json.RawMessage) bool { return strings.Contains(string(p), `"sessionUpdate":"plan"`) })
	var p struct {
		Update struct {
			Entries []struct{ Content, Priority, Status string }
		}
	}
	json.Unmarshal(raw, &p)
	e := p.Update.Entries
	if len(e) != 2 || e[0].Content != "Read the code" || e[0].Status != "in_progress" || e[1].Priority != "medium" {
		t.Fatalf("plan update = %s", raw)
	}
}

// Conformance case 45 end to end: an accepted save_memory lands in
// ~/.qwen/QWEN.md and the next session's system prompt carries the fact.
func TestCase45_SavedMemoryReachesTheNextSession(t *testing.T) {
	a := reviewer(t, nil)
	a.answerProposals(func(proposal) any { return map[string]any{"outcome": "accepted"} })
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "m", Name: "save_memory", Arguments: `{"fact":"I like tabs"}`}}},
		modeltest.Response{Text: "noted"},
	)
	if _, err := a.prompt("remember that I like tabs"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(a.e.Home, "QWEN.md"))
	if err != nil || !strings.HasSuffix(string(data), "## Qwen Added Memories\n- I like tabs\n") {
		t.Fatalf("QWEN.md = %q, %v", data, err)
	}
	if msg := a.toolMessage(t, "m"); msg != `Saved to global memory: "I like tabs"` {
		t.Fatalf("model told %q", msg)
	}
	res, err := a.e.Call("qwen/newSession", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var ns struct{ SessionID string }
	json.Unmarshal(res, &ns)
	a.model.Push(modeltest.Response{Text: "hi"})
	if _, err := a.e.Call("qwen/prompt", map[string]any{"sessionId": ns.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "hello"}}}); err != nil {
		t.Fatal(err)
	}
	reqs := a.model.Requests()
	system := reqs[len(reqs)-1].Messages[0]
	if system.Role != "system" || !strings.Contains(system.Text(), "- I like tabs") {
		t.Fatalf("the next session's system prompt lacks the fact:\n%s", system.Text())
	}
}
