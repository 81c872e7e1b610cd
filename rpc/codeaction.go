package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// Code actions for plain LSP clients (docs/protocol.md, "Plain LSP
// clients"): "Qwen: explain", "Qwen: fix this" and "Qwen: ask about
// selection…" on a selection (or the cursor's line), and "Qwen: fix this"
// on each diagnostic the editor sends. Rich clients have their own UI and
// are offered none.

// maxQuoted caps the selection text put into a prompt.
const maxQuoted = 20000

// maxDiagnosticActions caps the diagnostic actions of one request.
const maxDiagnosticActions = 5

type lspPosition struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

type lspRange struct {
	Start lspPosition `json:"start"`
	End   lspPosition `json:"end"`
}

type codeActionParams struct {
	TextDocument struct {
		URI string `json:"uri"`
	} `json:"textDocument"`
	Range   lspRange `json:"range"`
	Context struct {
		Diagnostics []json.RawMessage `json:"diagnostics"`
	} `json:"context"`
}

func (s *Server) codeAction(ctx context.Context, req *request) (any, error) {
	actions := []any{}
	if s.clientCaps().Rich {
		return actions, nil
	}
	var p codeActionParams
	if err := unmarshalParams(req, &p); err != nil {
		return nil, err
	}
	path, err := s.uriToPath(p.TextDocument.URI)
	if err != nil {
		return nil, invalidParams(req.Method, err)
	}
	if s.transcriptAt(path) != nil {
		// The conversation itself: the person writes there.
		return actions, nil
	}
	sel, err := s.selection(path, p.Range)
	if err != nil {
		// A document the server cannot read has no actions.
		s.log.Debugf("code actions for %s: %v", path, err)
		return actions, nil
	}
	prompt := func(title, kind, text string, diags []json.RawMessage) map[string]any {
		a := map[string]any{
			"title":   title,
			"kind":    kind,
			"command": map[string]any{"title": title, "command": "qwen-ls.prompt", "arguments": []any{text}},
		}
		if len(diags) > 0 {
			a["diagnostics"] = diags
		}
		return a
	}
	for i, raw := range p.Context.Diagnostics {
		if i == maxDiagnosticActions {
			break
		}
		var d struct {
			Range   lspRange `json:"range"`
			Message string   `json:"message"`
			Source  string   `json:"source"`
		}
		if json.Unmarshal(raw, &d) != nil || strings.TrimSpace(d.Message) == "" {
			continue
		}
		// The problem's whole lines.
		lines := lspRange{Start: lspPosition{Line: d.Range.Start.Line}, End: lspPosition{Line: d.Range.End.Line + 1}}
		at, err := s.selection(path, lines)
		if err != nil {
			continue
		}
		msg := strings.TrimSpace(d.Message)
		if d.Source != "" {
			msg += " (" + d.Source + ")"
		}
		text := fmt.Sprintf("Fix this problem in %s at line %d: %s\n\nThe code there:\n\n%s\n\nEdit the file to fix it.",
			at.rel, d.Range.Start.Line+1, msg, at.fenced())
		actions = append(actions, prompt("Qwen: fix this ("+cut(oneLine(d.Message), 60)+")", "quickfix", text, []json.RawMessage{raw}))
	}
	actions = append(actions,
		prompt("Qwen: explain", "", fmt.Sprintf("Explain this code from %s (%s):\n\n%s", sel.rel, sel.lines(), sel.fenced()), nil),
		prompt("Qwen: fix this", "quickfix", fmt.Sprintf("Fix this code in %s (%s). Edit the file to make the change.\n\n%s", sel.rel, sel.lines(), sel.fenced()), nil),
		map[string]any{
			"title": "Qwen: ask about selection…",
			"kind":  "",
			"command": map[string]any{"title": "Qwen: ask about selection…", "command": "qwen-ls.ask",
				"arguments": []any{map[string]any{"uri": p.TextDocument.URI, "range": p.Range}}},
		},
	)
	return actions, nil
}

// quoted is a part of a document put into a prompt.
type quoted struct {
	rel        string
	lang       string
	first, end int // 1-based, inclusive lines
	text       string
	cut        bool
}

func (q quoted) lines() string {
	if q.first == q.end {
		return fmt.Sprintf("line %d", q.first)
	}
	return fmt.Sprintf("lines %d-%d", q.first, q.end)
}

func (q quoted) fenced() string {
	fence := "```"
	for strings.Contains(q.text, fence) {
		fence += "`"
	}
	out := fence + q.lang + "\n" + strings.TrimRight(q.text, "\n") + "\n" + fence
	if q.cut {
		out += fmt.Sprintf("\n(the selection is longer; only its first %d bytes are shown)", maxQuoted)
	}
	return out
}

// selection is the text of r in path, from the editor's buffer when it is
// open, else from the disk. An empty range stands for its whole line.
func (s *Server) selection(path string, r lspRange) (quoted, error) {
	var text string
	if buf, ok := s.ws.Overlay.Get(path); ok {
		text = buf.Text
	} else {
		data, err := os.ReadFile(path)
		if err != nil {
			return quoted{}, err
		}
		text, _ = workspace.DecodeFileText(data)
	}
	enc := s.clientCaps().Encoding
	if r.End.Line < r.Start.Line || (r.End.Line == r.Start.Line && r.End.Character < r.Start.Character) {
		r.Start, r.End = r.End, r.Start
	}
	if r.Start == r.End {
		r.Start.Character = 0
		r.End = lspPosition{Line: r.Start.Line + 1}
	}
	start, err := workspace.OffsetOf(text, workspace.Position{Line: r.Start.Line, Character: r.Start.Character}, enc)
	if err != nil {
		start = clampLine(text, r.Start.Line)
	}
	end, err := workspace.OffsetOf(text, workspace.Position{Line: r.End.Line, Character: r.End.Character}, enc)
	if err != nil {
		end = clampLine(text, r.End.Line)
	}
	if end < start {
		end = start
	}
	// A selection that ends in the indentation of a line (a linewise
	// selection sent with the next line's first column) ends before it.
	if i := strings.LastIndexByte(text[start:end], '\n'); i >= 0 && strings.TrimSpace(text[start+i+1:end]) == "" {
		end = start + i + 1
	}
	q := quoted{rel: s.env.Rel(path), lang: strings.TrimPrefix(filepath.Ext(path), "."), text: text[start:end]}
	q.first = strings.Count(text[:start], "\n") + 1
	q.end = q.first + strings.Count(strings.TrimRight(q.text, "\n"), "\n")
	if len(q.text) > maxQuoted {
		q.text, q.cut = strings.ToValidUTF8(q.text[:maxQuoted], ""), true
	}
	return q, nil
}

// clampLine is the offset of line's start, or the end of text.
func clampLine(text string, line int) int {
	off := 0
	for i := 0; i < line; i++ {
		j := strings.IndexByte(text[off:], '\n')
		if j < 0 {
			return len(text)
		}
		off += j + 1
	}
	return off
}

func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// askAbout is qwen-ls.ask: the selection goes under the transcript's open
// "## You" heading and the transcript is shown; the person writes the
// question below it and saves the file to send it.
func (s *Server) askAbout(ctx context.Context, uri string, rawRange json.RawMessage) (any, error) {
	if s.clientCaps().Rich || s.opts.ACP {
		return nil, rpcError(codeInvalidParams, "qwen-ls.ask is for clients without experimental.qwen: ask in the chat instead")
	}
	path, err := s.uriToPath(uri)
	if err != nil {
		return nil, rpcError(codeInvalidParams, "qwen-ls.ask needs {uri, range} as its argument: %v", err)
	}
	var r lspRange
	if len(rawRange) > 0 {
		if err := json.Unmarshal(rawRange, &r); err != nil {
			return nil, rpcError(codeInvalidParams, "qwen-ls.ask: the range is malformed: %v", err)
		}
	}
	sel, err := s.selection(path, r)
	if err != nil {
		return nil, rpcError(codeInvalidParams, "qwen-ls.ask: %s cannot be read: %v", path, err)
	}
	sid, err := s.sessionOrImplicit("")
	if err != nil {
		return nil, err
	}
	t := s.transcriptFor(sid)
	quote := fmt.Sprintf("About %s (%s):\n\n%s\n\n<!-- Write your question below, then save this file. -->\n\n", sel.rel, sel.lines(), sel.fenced())
	s.transcriptChanged(ctx, t, func() { s.transcriptAsk(t, quote) })
	msg := fmt.Sprintf("Write your question under the selection in %s and save the file to send it.", t.path)
	// The person writes next, below the selection.
	if !s.showTranscript(ctx, t, t.lastLine(), true) {
		s.showMessage(LevelInfo, "qwen: "+msg)
	}
	return map[string]any{"message": msg, "transcript": t.path}, nil
}
