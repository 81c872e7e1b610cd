package rpc_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// sessionUpdates are the session's updates an editor received, in order,
// each the "update" object as JSON.
func sessionUpdates(t *testing.T, e *rpctest.Editor, sid string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, n := range e.Notifications("qwen/sessionUpdate") {
		var p struct {
			SessionID string         `json:"sessionId"`
			Update    map[string]any `json:"update"`
		}
		if err := json.Unmarshal(n.Params, &p); err != nil {
			t.Fatal(err)
		}
		if p.SessionID == sid {
			out = append(out, p.Update)
		}
	}
	return out
}

// shownCall is a tool call as an editor ended up showing it: its
// tool_call, and its last update that ended it (status completed or
// failed), or a later one that marks it undone.
type shownCall struct {
	call, final map[string]any
}

func shownCalls(updates []map[string]any) map[string]*shownCall {
	out := map[string]*shownCall{}
	for _, u := range updates {
		id, _ := u["toolCallId"].(string)
		switch u["sessionUpdate"] {
		case "tool_call":
			out[id] = &shownCall{call: u}
		case "tool_call_update":
			if st := u["status"]; (st == "completed" || st == "failed") && out[id] != nil {
				if out[id].final != nil && u["content"] == nil {
					// A later mark (undone) keeps the content shown.
					u["content"] = out[id].final["content"]
					if raw, ok := out[id].final["rawOutput"]; ok {
						u["rawOutput"] = raw
					}
				}
				out[id].final = u
			}
		}
	}
	return out
}

// qwenMeta is a final update's _meta.qwen.
func qwenMeta(u map[string]any) map[string]any {
	m, _ := u["_meta"].(map[string]any)
	q, _ := m["qwen"].(map[string]any)
	return q
}

// reopen stops a's server and starts another on the same qwen home and
// root, as the next editor session would, and loads a's session there. It
// returns the new editor and the updates the load replayed.
func (a *agent) reopen(t *testing.T, shape func(*rpctest.InitParams)) (*rpctest.Editor, []map[string]any) {
	t.Helper()
	home := a.e.Home
	if code := a.e.Shutdown(); code != 0 {
		t.Fatalf("shutdown: %d", code)
	}
	e := rpctest.Start(t, rpc.WithMethods(rpc.Options{Version: "test", Stderr: testLog{t}, QwenHome: home}, testMethods()))
	ip := rpctest.InitParams{Roots: []string{a.root}, Rich: true, UTF8: true, ApplyEdit: true, DocumentChanges: true,
		InitializationOptions: map[string]any{"model": map[string]any{"name": "scripted", "baseUrl": a.model.URL}}}
	if shape != nil {
		shape(&ip)
	}
	e.Initialize(ip)
	if _, err := e.Call("qwen/loadSession", map[string]any{"sessionId": a.sid}); err != nil {
		t.Fatal(err)
	}
	return e, sessionUpdates(t, e, a.sid)
}

// sameAsLive fails unless the replayed call looks as the live one did:
// the tool_call's title, kind and locations, and the last update's status,
// content, raw output and _meta.
func sameAsLive(t *testing.T, id string, live, replayed map[string]*shownCall) {
	t.Helper()
	l, r := live[id], replayed[id]
	if l == nil || r == nil || l.final == nil || r.final == nil {
		t.Fatalf("call %s: live %+v, replayed %+v", id, l, r)
	}
	t.Logf("call %s replayed as %q: %v %v", id, r.call["title"], r.final["status"], r.final["_meta"])
	for _, k := range []string{"title", "kind", "locations"} {
		if !reflect.DeepEqual(l.call[k], r.call[k]) {
			t.Errorf("call %s: live %s %v, replayed %v", id, k, l.call[k], r.call[k])
		}
	}
	for _, k := range []string{"status", "content", "rawOutput", "_meta"} {
		if !reflect.DeepEqual(l.final[k], r.final[k]) {
			t.Errorf("call %s: live %s\n%v\nreplayed\n%v", id, k, l.final[k], r.final[k])
		}
	}
}

// A person keeps two of three hunks and rejects the third with a reason:
// the file holds exactly the kept hunks, the model is told, hunk by hunk,
// what was kept and what was not and why, the call's last update says "2
// of 3 changes kept" with each hunk's decision, and a later editor that
// loads the session is shown the same.
func TestPartialReviewWithAReason(t *testing.T) {
	for _, deferred := range []bool{false, true} {
		name := "direct answer"
		if deferred {
			name = "qwen/resolveReview"
		}
		t.Run(name, func(t *testing.T) {
			a := reviewer(t, func(p *rpctest.InitParams) { p.Deferred = deferred })
			p := filepath.Join(a.root, "a.txt")
			os.WriteFile(p, []byte(keptHunksFile), 0o644)
			answer := map[string]any{"keptHunks": []int{0, 2}, "hunkFeedback": []any{map[string]any{"hunk": 1, "feedback": "keep five\na digit"}}}
			resolved := make(chan error, 1)
			a.answerProposals(func(pr proposal) any {
				if !deferred {
					return answer
				}
				go func() {
					params := map[string]any{"sessionId": pr.SessionID, "toolCallId": pr.ToolCallID}
					for k, v := range answer {
						params[k] = v
					}
					_, err := a.e.Call("qwen/resolveReview", params)
					resolved <- err
				}()
				return map[string]any{"outcome": "deferred"}
			})
			a.rewriteFile(p, keptHunksProposal())
			if _, err := a.prompt("rewrite"); err != nil {
				t.Fatal(err)
			}
			if deferred {
				if err := <-resolved; err != nil {
					t.Fatal(err)
				}
			}
			want := strings.NewReplacer("2\n", "two\n", "9\n", "nine\n").Replace(keptHunksFile)
			if data, _ := os.ReadFile(p); string(data) != want {
				t.Fatalf("disk = %q, want %q", data, want)
			}
			told := a.toolMessage(t, "w")
			sentence := "The user applied only 2 of the 3 proposed changes; the changes at original lines 5-5 (the user's reason: keep five a digit) were rejected and not applied; those at original lines 2-2, 9-9 were applied."
			if !strings.Contains(told, sentence) {
				t.Fatalf("the model was told %q, want %q in it", told, sentence)
			}
			live := shownCalls(sessionUpdates(t, a.e, a.sid))
			review, _ := qwenMeta(live["w"].final)["review"].(map[string]any)
			hunks, _ := review["hunks"].([]any)
			if review["summary"] != "2 of 3 changes kept" || review["kept"] != 2.0 || review["total"] != 3.0 || len(hunks) != 3 {
				t.Fatalf("the last update's review = %v", review)
			}
			if h := hunks[1].(map[string]any); h["kept"] != false || h["feedback"] != "keep five a digit" || h["startLine"] != 5.0 || h["endLine"] != 5.0 {
				t.Fatalf("the rejected hunk = %v", h)
			}
			if h := hunks[0].(map[string]any); h["kept"] != true || h["feedback"] != nil {
				t.Fatalf("a kept hunk = %v", h)
			}
			if oc := qwenMeta(live["w"].final)["outcome"]; oc != "completed" || live["w"].final["status"] != "completed" {
				t.Fatalf("the partly applied call ended %v/%v", live["w"].final["status"], oc)
			}
			_, replayed := a.reopen(t, nil)
			sameAsLive(t, "w", live, shownCalls(replayed))
			sameAsLive(t, "read", live, shownCalls(replayed))
		})
	}
}

// Rejecting every hunk, each with its reason, rejects the change and tells
// the model every reason; having reasons to act on, the model is asked
// again. A malformed list of reasons leaves the decision as it was, and
// the log says why the reasons were left out.
func TestRejectedHunksWithReasons(t *testing.T) {
	t.Run("every hunk, with reasons", func(t *testing.T) {
		a := reviewer(t, nil)
		p := filepath.Join(a.root, "a.txt")
		os.WriteFile(p, []byte(keptHunksFile), 0o644)
		a.answerProposals(func(proposal) any {
			return map[string]any{"keptHunks": []int{}, "hunkFeedback": []any{
				map[string]any{"hunk": 0, "feedback": "two stays a digit"},
				map[string]any{"hunk": 2, "feedback": "so does nine"},
			}}
		})
		a.rewriteFile(p, keptHunksProposal())
		if _, err := a.prompt("rewrite"); err != nil {
			t.Fatal(err)
		}
		if data, _ := os.ReadFile(p); string(data) != keptHunksFile {
			t.Fatalf("disk = %q", data)
		}
		want := "[Cancelled] The user rejected the proposed change to " + p + "; the file was not modified. The user's reasons, by change: original lines 2-2: two stays a digit; original lines 9-9: so does nine"
		if told := a.toolMessage(t, "w"); told != want {
			t.Fatalf("the model was told\n%q\nwant\n%q", told, want)
		}
		if n := len(a.model.Requests()); n != 3 {
			t.Fatalf("%d model requests: the reasons must reach the model", n)
		}
		final := shownCalls(sessionUpdates(t, a.e, a.sid))["w"].final
		q := qwenMeta(final)
		review, _ := q["review"].(map[string]any)
		if q["outcome"] != "rejected" || review["summary"] != "0 of 3 changes kept" {
			t.Fatalf("the last update's _meta.qwen = %v", q)
		}
	})
	t.Run("malformed reasons", func(t *testing.T) {
		a := reviewer(t, nil)
		p := filepath.Join(a.root, "a.txt")
		os.WriteFile(p, []byte(keptHunksFile), 0o644)
		a.answerProposals(func(proposal) any {
			return map[string]any{"keptHunks": []int{1}, "hunkFeedback": map[string]any{"0": "no"}}
		})
		a.rewriteFile(p, keptHunksProposal())
		if _, err := a.prompt("rewrite"); err != nil {
			t.Fatal(err)
		}
		if data, _ := os.ReadFile(p); string(data) != strings.Replace(keptHunksFile, "5\n", "five\n", 1) {
			t.Fatalf("disk = %q", data)
		}
		if told := a.toolMessage(t, "w"); strings.Contains(told, "the user's reason") {
			t.Fatalf("the model was told %q", told)
		}
		a.e.WaitNotification("window/logMessage", func(p json.RawMessage) bool {
			return strings.Contains(string(p), "hunkFeedback is not a list of {hunk, feedback}")
		})
	})
}

// Loading a session shows what the person saw while it ran: a custom
// command as typed (the session's title too), each tool call with its
// title and content, and, once the turn was undone, its edit marked
// undone, live and in the replay.
func TestReplayEqualsLive(t *testing.T) {
	a := startCmdAgent(t, "auto-edit", true, map[string]string{
		"~/commands/notes.toml": "description = \"Write notes\"\nprompt = \"Write the notes about {{args}} into notes.txt, with care and in full.\"\n",
	})
	notes := filepath.Join(a.root, "notes.txt")
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "ls", Name: "list_directory", Arguments: jsonArgs("path", a.root)}}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "w", Name: "write_file", Arguments: jsonArgs("file_path", notes, "content", "the parser\n")}}},
		modeltest.Response{Text: "Written."},
	)
	a.promptOK(t, "/notes the parser")
	if sent := lastUserText(a.model.Requests()[0]); !strings.Contains(sent, "Write the notes about the parser into notes.txt") {
		t.Fatalf("the model got %q", sent)
	}
	if _, err := a.e.Call("qwen/revertTurn", map[string]any{"sessionId": a.sid}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(notes); !os.IsNotExist(err) {
		t.Fatalf("the undo left notes.txt: %v", err)
	}
	live := shownCalls(sessionUpdates(t, a.e, a.sid))
	if q := qwenMeta(live["w"].final); q["undone"] != true || q["outcome"] != "completed" {
		t.Fatalf("after the undo the write's last update has _meta.qwen %v", q)
	}
	if q := qwenMeta(live["ls"].final); q["undone"] != nil {
		t.Fatalf("a call that changed nothing is marked undone: %v", q)
	}
	if !strings.Contains(live["w"].call["title"].(string), "notes.txt") {
		t.Fatalf("the live title is %v", live["w"].call["title"])
	}

	e, replayed := a.reopen(t, func(p *rpctest.InitParams) {
		p.InitializationOptions.(map[string]any)["workspaceTrusted"] = true
	})
	if replayed[0]["sessionUpdate"] != "user_message_chunk" {
		t.Fatalf("the replay starts with %v", replayed[0])
	}
	if text := replayed[0]["content"].(map[string]any)["text"]; text != "/notes the parser" {
		t.Fatalf("the replayed prompt is %q, want the command as typed", text)
	}
	got := shownCalls(replayed)
	sameAsLive(t, "ls", live, got)
	sameAsLive(t, "w", live, got)
	res, err := e.Call("qwen/listSessions", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res), `"title":"/notes the parser"`) {
		t.Fatalf("the session's title is not the command as typed: %s", res)
	}
}

// A session file written before calls were recorded ("call" events)
// still replays each call with the title its tool gives its arguments,
// not the tool's bare name, and with the outcome read from the result.
func TestReplayOfAnOlderSessionFile(t *testing.T) {
	a := reviewer(t, nil)
	p := filepath.Join(a.root, "a.txt")
	os.WriteFile(p, []byte(keptHunksFile), 0o644)
	a.answerProposals(func(proposal) any { return map[string]any{"outcome": "rejected"} })
	a.rewriteFile(p, keptHunksProposal())
	if _, err := a.prompt("rewrite"); err != nil {
		t.Fatal(err)
	}
	live := shownCalls(sessionUpdates(t, a.e, a.sid))
	files, _ := filepath.Glob(filepath.Join(a.e.Home, "projects", "*", "sessions", a.sid+".jsonl"))
	if len(files) != 1 {
		t.Fatalf("session files %v", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if !strings.Contains(line, `"type":"call"`) {
			kept = append(kept, line)
		}
	}
	if len(kept) == len(strings.SplitAfter(string(data), "\n")) {
		t.Fatal("the session file has no call events")
	}
	if err := os.WriteFile(files[0], []byte(strings.Join(kept, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	_, replayed := a.reopen(t, nil)
	got := shownCalls(replayed)
	for _, id := range []string{"read", "w"} {
		if got[id] == nil || got[id].call["title"] != live[id].call["title"] || !reflect.DeepEqual(got[id].call["locations"], live[id].call["locations"]) {
			t.Errorf("call %s replayed as %v, live %v", id, got[id], live[id].call)
		}
	}
	if q := qwenMeta(got["w"].final); q["outcome"] != "rejected" {
		t.Errorf("the rejected write replayed with %v", q)
	}
}
