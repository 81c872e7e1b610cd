package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/qwen-ls/qwen-ls/tools/diff"
)

// printer renders session updates as a readable transcript.
type printer struct {
	mu  sync.Mutex
	out io.Writer
	// root shortens paths in titles.
	root string
	// notes receives qwen-ls's own notices (a retry of the model request,
	// a context summary), apart from the transcript; nil prints them in
	// it.
	notes io.Writer
	// inText is true while agent text is streaming.
	inText bool
	// inThought is true while the model's reasoning is streaming;
	// thoughtLineStart says the last thing printed in it was a newline.
	inThought, thoughtLineStart bool
	// titles remembers each call's title for its final line.
	titles map[string]string
	// reviewed marks calls whose diff was already shown as a proposal.
	reviewed map[string]bool
}

func newPrinter(out io.Writer, root string) *printer {
	return &printer{out: out, root: root, titles: map[string]string{}, reviewed: map[string]bool{}}
}

type wireUpdate struct {
	SessionUpdate string          `json:"sessionUpdate"`
	Content       json.RawMessage `json:"content"`
	ToolCallID    string          `json:"toolCallId"`
	Title         string          `json:"title"`
	Kind          string          `json:"kind"`
	Status        string          `json:"status"`
	CurrentModeID string          `json:"currentModeId"`
	Entries       []struct {
		Content, Status string
	} `json:"entries"`
}

type wireContent struct {
	Type    string  `json:"type"`
	Text    string  `json:"text"`
	Path    string  `json:"path"`
	OldText *string `json:"oldText"`
	NewText string  `json:"newText"`
	Content *struct {
		Text string `json:"text"`
	} `json:"content"`
}

func (p *printer) update(raw json.RawMessage) {
	var u wireUpdate
	if json.Unmarshal(raw, &u) != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch u.SessionUpdate {
	case "agent_message_chunk":
		var c wireContent
		json.Unmarshal(u.Content, &c)
		p.endThought()
		if !p.inText {
			fmt.Fprint(p.out, "\nQwen: ")
			p.inText = true
		}
		fmt.Fprint(p.out, c.Text)
	case "agent_thought_chunk":
		var c wireContent
		json.Unmarshal(u.Content, &c)
		if note, ok := p.notice(c.Text); ok {
			p.endText()
			if p.notes != nil {
				fmt.Fprintf(p.notes, "qwen-ls: %s\n", note)
			} else {
				fmt.Fprintf(p.out, "  ! %s\n", note)
			}
			return
		}
		p.thought(c.Text)
	case "tool_call":
		p.endText()
		p.titles[u.ToolCallID] = u.Title
		fmt.Fprintf(p.out, "  ▸ %-6s %s\n", u.Kind, strings.ReplaceAll(u.Title, p.root+"/", ""))
	case "tool_call_update":
		if u.Status != "completed" && u.Status != "failed" {
			return
		}
		p.endText()
		var items []wireContent
		json.Unmarshal(u.Content, &items)
		mark := "done"
		if u.Status == "failed" {
			mark = "failed"
		}
		fmt.Fprintf(p.out, "    %s: %s\n", mark, strings.ReplaceAll(p.titles[u.ToolCallID], p.root+"/", ""))
		for _, it := range items {
			switch {
			case it.Type == "diff" && p.reviewed[u.ToolCallID]:
				fmt.Fprintln(p.out, "      (written as reviewed above)")
			case it.Type == "diff":
				old := ""
				if it.OldText != nil {
					old = *it.OldText
				}
				rel := strings.TrimPrefix(it.Path, p.root+"/")
				for _, line := range strings.Split(strings.TrimRight(diff.Unified(rel, diff.Original, diff.Written, old, it.NewText), "\n"), "\n") {
					fmt.Fprintf(p.out, "      %s\n", line)
				}
			case it.Content != nil && it.Content.Text != "":
				for _, line := range firstLines(it.Content.Text, 6) {
					fmt.Fprintf(p.out, "      %s\n", line)
				}
			}
		}
	case "plan":
		p.endText()
		fmt.Fprintln(p.out, "  plan:")
		for _, e := range u.Entries {
			fmt.Fprintf(p.out, "    [%s] %s\n", e.Status, e.Content)
		}
	case "current_mode_update":
		p.endText()
		fmt.Fprintf(p.out, "  (approval mode is now %s)\n", u.CurrentModeID)
	}
}

// knownNotices start the notices qwen-ls sends as thought chunks.
var knownNotices = []string{"[The model request failed", "[Summarising ", "[Could not save the permission rule"}

// notice reports whether a thought chunk is one of qwen-ls's own notices
// rather than the model's reasoning, and returns its text without the
// brackets. A notice comes whole in one chunk, as one bracketed line; while
// reasoning streams, only the known notices count, so that a fragment of
// the model's that happens to look like one stays in its thought.
func (p *printer) notice(t string) (string, bool) {
	line := strings.TrimSpace(t)
	if !strings.HasPrefix(line, "[") || !strings.HasSuffix(line, "]") || strings.Contains(line, "\n") {
		return "", false
	}
	if p.inThought && !slices.ContainsFunc(knownNotices, func(k string) bool { return strings.HasPrefix(line, k) }) {
		return "", false
	}
	return line[1 : len(line)-1], true
}

// thought prints a fragment of the model's reasoning. Fragments flow into
// one block (the model streams a few words at a time), its lines indented
// under a "thinking:" label.
func (p *printer) thought(t string) {
	if !p.inThought {
		t = strings.TrimLeft(t, " \t\n")
		if t == "" {
			return
		}
		p.endText()
		fmt.Fprint(p.out, "  thinking: ")
		p.inThought, p.thoughtLineStart = true, false
	}
	for i, part := range strings.Split(t, "\n") {
		if i > 0 {
			fmt.Fprintln(p.out)
			p.thoughtLineStart = true
		}
		if part == "" {
			continue
		}
		if p.thoughtLineStart {
			fmt.Fprint(p.out, "    ")
		}
		fmt.Fprint(p.out, part)
		p.thoughtLineStart = false
	}
}

// endThought closes a reasoning block with a newline.
func (p *printer) endThought() {
	if p.inThought {
		if !p.thoughtLineStart {
			fmt.Fprintln(p.out)
		}
		p.inThought = false
	}
}

// endText closes whatever block is streaming: the model's text or its
// reasoning.
func (p *printer) endText() {
	p.endThought()
	if p.inText {
		fmt.Fprintln(p.out)
		p.inText = false
	}
}

// line prints a line of the printer's own.
func (p *printer) line(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endText()
	fmt.Fprintf(p.out, format+"\n", args...)
}

func firstLines(s string, n int) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("… (%d more lines)", len(lines)-n))
	}
	return lines
}

// markReviewed records that a call's diff was shown for review.
func (p *printer) markReviewed(id string) {
	p.mu.Lock()
	p.reviewed[id] = true
	p.mu.Unlock()
}
