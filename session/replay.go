package session

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/qwen-ls/qwen-ls/tools"
)

// Replays equal live (docs/protocol.md "Listing and loading"): each
// finished tool call is kept as the editor was shown it (its title, kind,
// locations, status, outcome, hunk-by-hunk review and content), in memory
// and as a "call" event of the session file, so that qwen/loadSession and
// ACP's session/load send what the live session sent. A diff's whole old
// and new texts go to the session's content store (checkpoint.go) and the
// record names them by hash: the texts are mostly there already, as the
// checkpoints of the calls that wrote them, and a long session does not
// hold every version of every file it edited in memory.

// shownCall is a finished tool call as the editor was shown it.
type shownCall struct {
	// Turn is the turn the call ran in: an undone turn's calls replay as
	// undone.
	Turn int `json:"turn"`
	// Tool is the tool's name as the model called it.
	Tool      string     `json:"tool,omitempty"`
	Title     string     `json:"title,omitempty"`
	Kind      string     `json:"kind,omitempty"`
	Locations []Location `json:"locations,omitempty"`
	Status    string     `json:"status"`
	// Meta is the last update's _meta.qwen: outcome and review.
	Meta    QwenMeta    `json:"meta"`
	Content []shownItem `json:"content,omitempty"`
}

// shownItem is one content item of a shown call. A diff's texts are in the
// content store: Old and New are their hashes ("" Old with NewFile: the
// file did not exist; Lost: they could not be stored).
type shownItem struct {
	Type       string `json:"type"`
	Text       string `json:"text,omitempty"`
	Path       string `json:"path,omitempty"`
	Old        string `json:"old,omitempty"`
	New        string `json:"new,omitempty"`
	NewFile    bool   `json:"newFile,omitempty"`
	Lost       bool   `json:"lost,omitempty"`
	TerminalID string `json:"terminalId,omitempty"`
}

// shownTextLimit bounds a text item kept for a replay: a longer one keeps
// its last shownTextLimit bytes after a line that says how much was left
// out, as streamed shell output is shown (protocol.md §5).
const shownTextLimit = 64 << 10

// recordShown keeps how a finished call was shown, for replays. Subagent
// sub-sessions are replayed through their task call, not on their own.
func (s *Session) recordShown(r *callRun, status string, meta QwenMeta, content []ToolContent) {
	if s.hostOverride != nil {
		return
	}
	sc := &shownCall{Tool: r.tc.Name, Title: r.title, Kind: r.kind, Locations: r.locs, Status: status, Meta: meta}
	sc.Meta.Undone = false
	for _, c := range content {
		sc.Content = append(sc.Content, s.shownItem(c))
	}
	s.mu.Lock()
	sc.Turn = s.turns
	if s.shown == nil {
		s.shown = map[string]*shownCall{}
	}
	s.shown[r.tc.ID] = sc
	s.mu.Unlock()
	s.record(event{Type: "call", CallID: r.tc.ID, Call: sc})
}

func (s *Session) shownItem(c ToolContent) shownItem {
	it := shownItem{Type: c.Type, Path: c.Path, TerminalID: c.TerminalID}
	switch {
	case c.Type == "diff":
		objs := s.objects()
		var err error
		if c.OldText == nil {
			it.NewFile = true
		} else if it.Old, err = objs.put(bytesOf(*c.OldText)); err != nil {
			it.Lost = true
		}
		newText := ""
		if c.NewText != nil {
			newText = *c.NewText
		}
		if !it.Lost {
			if it.New, err = objs.put(bytesOf(newText)); err != nil {
				it.Lost = true
			}
		}
		if it.Lost {
			it.Old, it.New = "", ""
			s.mgr.logf("session %s: the change to %s will replay without its text: %v", s.id, c.Path, err)
		}
	case c.Content != nil:
		it.Text = cutShown(c.Content.Text)
	}
	return it
}

// bytesOf is s as bytes without a copy, for the content store, which
// only reads them (and copies what it keeps in memory).
func bytesOf(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// cutShown keeps the end of a text longer than shownTextLimit.
func cutShown(text string) string {
	if len(text) <= shownTextLimit {
		return strings.Clone(text)
	}
	cut := len(text) - shownTextLimit
	for cut < len(text) && text[cut]&0xC0 == 0x80 {
		cut++ // not inside a UTF-8 sequence
	}
	return fmt.Sprintf("[… %d bytes omitted]\n", cut) + text[cut:]
}

// content is the item as it was sent: a diff's texts read back from the
// content store. A diff whose texts are gone (collected with the session's
// old checkpoints, or never stored) is told as such in a text item.
func (it shownItem) content(objs *objectStore) ToolContent {
	switch it.Type {
	case "diff":
		var old *string
		if !it.NewFile && !it.Lost {
			b, err := objs.get(it.Old)
			if err != nil {
				return lostDiff(it.Path)
			}
			o := string(b)
			old = &o
		}
		if it.Lost {
			return lostDiff(it.Path)
		}
		b, err := objs.get(it.New)
		if err != nil {
			return lostDiff(it.Path)
		}
		n := string(b)
		return ToolContent{Type: "diff", Path: it.Path, OldText: old, NewText: &n}
	case "terminal":
		return ToolContent{Type: "terminal", TerminalID: it.TerminalID}
	}
	return ToolContent{Type: it.Type, Content: textBlock(it.Text)}
}

func lostDiff(path string) ToolContent {
	return ToolContent{Type: "content", Content: textBlock("(the change to " + path + " is no longer stored)")}
}

// Replay sends the session's history to the editor as session updates,
// the way qwen/loadSession restores a conversation: each prompt as the
// person typed it, the agent's text, each tool call as it was shown (its
// title, outcome, review and content; an undone turn's changes marked
// undone), and the todo list. Calls of a session file written before
// calls were recorded replay with their tool's name and the text the
// model received.
func (s *Session) Replay() {
	host := s.host()
	s.mu.Lock()
	history := slices.Clone(s.allMessages())
	plan := slices.Clone(s.plan)
	shown := make(map[string]*shownCall, len(s.shown))
	for id, sc := range s.shown {
		shown[id] = sc
	}
	undone := s.undoneCallsLocked()
	s.mu.Unlock()
	objs := s.objects()
	for _, msg := range history {
		switch msg.Role {
		case "user":
			text := msg.Typed
			if text == "" {
				text = withoutReminders(msg.Text)
			}
			if text != "" {
				host.Update(s.id, Update{Kind: "user_message_chunk", Content: textBlock(text)})
			}
		case "assistant":
			if msg.Text != "" {
				host.Update(s.id, Update{Kind: UpdateAgentMessage, Content: textBlock(msg.Text)})
			}
			for _, tc := range msg.ToolCalls {
				u := Update{Kind: UpdateToolCall, ToolCallID: tc.ID, Title: tc.Name, ToolKind: string(tools.KindOther),
					Status: StatusPending, RawInput: rawInput(tc.Arguments)}
				if sc := shown[tc.ID]; sc != nil {
					u.Title, u.ToolKind, u.Locations = sc.Title, sc.Kind, sc.Locations
				} else {
					u.Title, u.ToolKind, u.Locations = s.describeCall(tc)
				}
				host.Update(s.id, u)
			}
		case "tool":
			host.Update(s.id, replayedResult(msg, shown[msg.ToolCallID], undone[msg.ToolCallID], objs))
		}
	}
	if plan != nil {
		host.Update(s.id, Update{Kind: UpdatePlan, Entries: plan})
	} else if todos, err := tools.LoadTodos(s.mgr.opts.Env, s.id); err == nil && todos != nil {
		host.Update(s.id, Update{Kind: UpdatePlan, Entries: planEntries(todos)})
	}
}

// describeCall is the title, kind and locations a call of a session file
// written before calls were recorded had when it ran, as far as the tool
// registered under its name now describes it: the tool's description of
// its arguments, else its name.
func (s *Session) describeCall(tc ToolCall) (string, string, []Location) {
	t, terr := s.toolset().Lookup(tc.Name)
	if terr != nil {
		return tc.Name, string(tools.KindOther), nil
	}
	params, perr := tools.PrepareArgs(t, tc.Arguments)
	if perr != nil {
		return t.DisplayName(), kindOf(t), nil
	}
	title := tools.GuardDescribe(t, params)
	if sd, ok := t.(tools.SessionDescriber); ok {
		if d := sd.DescribeSession(s.id, params); d != "" {
			title = d
		}
	}
	return title, kindOf(t), locations(t, params)
}

// replayedResult is the last update of a replayed call: as it was shown
// (sc), else read from the tool message the model was given.
func replayedResult(msg Message, sc *shownCall, undone bool, objs *objectStore) Update {
	if sc == nil {
		status, outcome := StatusCompleted, replayOutcome(msg.Text)
		if outcome != OutcomeCompleted {
			status = StatusFailed
		}
		meta := outcomeMeta(outcome)
		meta.Qwen.Undone = undone
		return Update{Kind: UpdateToolCallUpd, ToolCallID: msg.ToolCallID, Status: status,
			Content: []ToolContent{{Type: "content", Content: textBlock(msg.Text)}}, Meta: meta}
	}
	meta := &UpdateMeta{Qwen: sc.Meta}
	meta.Qwen.Undone = undone
	u := Update{Kind: UpdateToolCallUpd, ToolCallID: msg.ToolCallID, Status: sc.Status, Meta: meta}
	if len(sc.Content) > 0 {
		content := make([]ToolContent, len(sc.Content))
		for i, it := range sc.Content {
			content[i] = it.content(objs)
		}
		u.Content = content
	}
	// What the model was given, as display() sends it: {output} after a
	// success, else {error} unless the content shows that same text.
	key := "output"
	if sc.Status != StatusCompleted {
		key = "error"
	}
	if key == "output" || len(sc.Content) != 1 || sc.Content[0].Text != msg.Text {
		u.RawOutput, _ = json.Marshal(map[string]string{key: msg.Text})
	}
	return u
}

// replayOutcome reads how a stored call ended from the tool message the
// model was given. Only the marks qwen-ls writes itself count; an error
// result is not told apart from a success here, since its text is the
// tool's own.
func replayOutcome(text string) string {
	switch {
	case strings.HasPrefix(text, "[Cancelled] The user rejected"):
		// reasonRejected, an edit's rejection and the plan's all start so.
		return OutcomeRejected
	case strings.HasPrefix(text, "[Cancelled]"), strings.HasPrefix(text, "[Interrupted]"):
		return OutcomeCancelled
	}
	return OutcomeCompleted
}

// undoneCallsLocked names the calls whose changes an undo took back: the
// calls of each undone turn that changed files. A subagent's change counts
// for the turn's task calls, which ran it. The caller holds s.mu.
func (s *Session) undoneCallsLocked() map[string]bool {
	out := map[string]bool{}
	for turn := range s.reverted {
		for _, id := range s.turnChangersLocked(turn) {
			out[id] = true
		}
	}
	return out
}

// turnChangersLocked names the calls of this session that changed files
// in turn: those with a checkpoint, and the task calls of the turn when a
// subagent's call made one. The caller holds s.mu.
func (s *Session) turnChangersLocked(turn int) []string {
	var out []string
	bySubagent := false
	for _, c := range s.checkpoints {
		if c.Turn != turn {
			continue
		}
		if sc := s.shown[c.CallID]; sc == nil && len(s.shown) > 0 {
			bySubagent = true
			continue
		}
		out = append(out, c.CallID)
	}
	if bySubagent {
		for id, sc := range s.shown {
			if sc.Turn == turn && sc.Tool == "task" {
				out = append(out, id)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// markUndone tells the editor that the calls of an undone turn that
// changed files are undone: their last update again, marked undone, so
// that the live chat shows what a replay will.
func (s *Session) markUndone(turn int) {
	s.mu.Lock()
	ids := s.turnChangersLocked(turn)
	var ups []Update
	for _, id := range ids {
		sc := s.shown[id]
		if sc == nil {
			continue
		}
		meta := &UpdateMeta{Qwen: sc.Meta}
		meta.Qwen.Undone = true
		ups = append(ups, Update{Kind: UpdateToolCallUpd, ToolCallID: id, Status: sc.Status, Meta: meta})
	}
	s.mu.Unlock()
	host := s.host()
	for _, u := range ups {
		host.Update(s.id, u)
	}
}
