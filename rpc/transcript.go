package rpc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/qwen-ls/qwen-ls/session"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// The conversation of a plain LSP client as a Markdown document
// (docs/protocol.md, "Plain LSP clients"): one file per session under
// <qwen home>/transcripts/<project>/<session>.md. The server appends to
// it as a turn runs; the person writes a question under the last
// "## You" heading and saves the file to send it.

// transcriptHint is the comment at the top of every transcript.
const transcriptHint = "<!-- Write your question under the last \"## You\" heading and save this file to send it. -->"

// youHeading and qwenHeading start the person's and the agent's parts.
const (
	youHeading  = "## You"
	qwenHeading = "## qwen"
)

// transcripts are the transcript documents of one connection.
type transcripts struct {
	mu     sync.Mutex
	bySess map[string]*transcript
	byPath map[string]*transcript
}

// transcript is one session's document. mu serialises its writes, which
// run in order on one goroutine at a time (queue).
type transcript struct {
	path      string
	sessionID string

	mu sync.Mutex
	// written is the text the server put in the document: a prefix of
	// what the editor holds, since the person only adds below it.
	written string
	// openAsk says the document ends with an empty "## You" heading.
	openAsk bool
	// running says a turn is running in the session.
	running bool
	// quote is the selection an ask put under the open "## You"
	// heading: saved alone, it is not a question.
	quote string
	// titles are the titles of the running turn's tool calls.
	titles map[string]string
	// pending are chunks not yet written; draining says a goroutine
	// writes them; idle is closed when pending is empty and nothing
	// drains.
	pending  []string
	draining bool
	idle     chan struct{}
}

// transcriptPath is where the transcript of sessionID lives: the project
// folder is named by the first root's base name and a short hash of its
// path, so two projects of the same name do not share one.
func (s *Server) transcriptPath(sessionID string) string {
	root := s.ws.Roots.Primary()
	project := "no-project"
	if root != "" {
		sum := sha256.Sum256([]byte(root))
		project = safeName(filepath.Base(root)) + "-" + hex.EncodeToString(sum[:4])
	}
	return filepath.Join(s.env.QwenHome, "transcripts", project, safeName(sessionID)+".md")
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func safeName(s string) string {
	s = strings.Trim(unsafeChars.ReplaceAllString(s, "_"), "._")
	if s == "" {
		return "_"
	}
	return s
}

func (t *transcript) isRunning() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.running
}

// transcriptFor returns the transcript of sessionID, creating the file
// with its header when it does not exist yet.
func (s *Server) transcriptFor(sessionID string) *transcript {
	s.plain.mu.Lock()
	defer s.plain.mu.Unlock()
	if t := s.plain.bySess[sessionID]; t != nil {
		return t
	}
	if s.plain.bySess == nil {
		s.plain.bySess = map[string]*transcript{}
		s.plain.byPath = map[string]*transcript{}
	}
	t := &transcript{path: s.transcriptPath(sessionID), sessionID: sessionID}
	if data, err := os.ReadFile(t.path); err == nil {
		// A transcript of this session from an earlier connection: the
		// server goes on below it.
		t.written = string(data)
		t.openAsk = endsWithOpenAsk(t.written)
	} else {
		t.pending = append(t.pending, "# qwen-ls conversation\n\n"+transcriptHint+"\n\n")
		s.pruneTranscripts(filepath.Dir(t.path))
	}
	s.plain.bySess[sessionID] = t
	s.plain.byPath[t.path] = t
	return t
}

// keptTranscripts is how many transcripts a project keeps: a new one
// removes the oldest beyond it.
const keptTranscripts = 50

// pruneTranscripts removes the oldest transcripts of dir beyond
// keptTranscripts-1, making room for a new one; those of this connection
// stay. Called with s.plain.mu held.
func (s *Server) pruneTranscripts(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type item struct {
		path string
		mod  time.Time
	}
	var items []item
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		items = append(items, item{filepath.Join(dir, e.Name()), fi.ModTime()})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].mod.After(items[j].mod) })
	for i, it := range items {
		if i < keptTranscripts-1 || s.plain.byPath[it.path] != nil {
			continue
		}
		if err := os.Remove(it.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Debugf("qwen: an old transcript could not be removed: %v", err)
		}
	}
}

// transcriptAt returns the transcript stored at path, if this connection
// writes one there.
func (s *Server) transcriptAt(path string) *transcript {
	s.plain.mu.Lock()
	defer s.plain.mu.Unlock()
	return s.plain.byPath[path]
}

// transcriptOf returns sessionID's transcript if it has one.
func (s *Server) transcriptOf(sessionID string) *transcript {
	s.plain.mu.Lock()
	defer s.plain.mu.Unlock()
	return s.plain.bySess[sessionID]
}

// append queues chunk for the document. Chunks are written in order by
// one goroutine at a time, so a tool update never waits for the editor.
func (s *Server) appendTranscript(t *transcript, chunk string) {
	// Secrets are kept out of the transcript as out of session files.
	chunk = s.secrets.scrub(chunk)
	t.mu.Lock()
	t.pending = append(t.pending, chunk)
	start := !t.draining
	if start {
		t.draining = true
		t.idle = make(chan struct{})
	}
	t.mu.Unlock()
	if start {
		go s.drainTranscript(t)
	}
}

// flushTranscript waits until every queued chunk is written.
func (s *Server) flushTranscript(t *transcript) {
	t.mu.Lock()
	if len(t.pending) > 0 && !t.draining {
		// The header of a new transcript.
		t.draining = true
		t.idle = make(chan struct{})
		go s.drainTranscript(t)
	}
	idle := t.idle
	draining := t.draining
	t.mu.Unlock()
	if draining {
		<-idle
	}
}

func (s *Server) drainTranscript(t *transcript) {
	for {
		t.mu.Lock()
		if len(t.pending) == 0 {
			t.draining = false
			close(t.idle)
			t.mu.Unlock()
			return
		}
		chunk := strings.Join(t.pending, "")
		t.pending = nil
		written := t.written
		t.mu.Unlock()
		now := s.writeTranscript(t.path, written, chunk)
		t.mu.Lock()
		t.written = now
		t.mu.Unlock()
	}
}

// writeTranscript puts chunk after written, the server's part of the
// document, and returns the new server part. An open document is changed
// through workspace/applyEdit (never written under the editor); a closed
// one on disk, atomically. Text the person added below the server's part
// stays below it.
func (s *Server) writeTranscript(path, written, chunk string) string {
	if buf, ok := s.ws.Overlay.Get(path); ok && s.clientCaps().ApplyEdit {
		at, insert := placeChunk(buf.Text, written, chunk)
		err := s.insertInBuffer(path, buf, at, insert)
		if err == nil {
			return buf.Text[:at] + insert
		}
		if s.baseCtx.Err() != nil {
			return written
		}
		if !errors.Is(err, errNotApplied) {
			// The editor took the edit but shows other text: go on from
			// what it holds, without writing under it.
			s.log.Warnf("qwen: the transcript %s in the editor: %v", path, err)
			return buf.Text[:at] + insert
		}
		s.log.Warnf("qwen: the transcript %s could not be updated in the editor (%v); writing it to disk", path, err)
	}
	cur := ""
	if data, err := os.ReadFile(path); err == nil {
		cur = string(data)
	} else if !errors.Is(err, fs.ErrNotExist) {
		s.log.Warnf("qwen: the transcript %s could not be read: %v", path, err)
	}
	at, insert := placeChunk(cur, written, chunk)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		s.log.Warnf("qwen: the transcript folder could not be made: %v", err)
		return written
	}
	if err := workspace.WriteFileAtomic(path, []byte(cur[:at]+insert+cur[at:]), 0o600); err != nil {
		s.log.Warnf("qwen: the transcript %s could not be written: %v", path, err)
		return written
	}
	return cur[:at] + insert
}

// placeChunk says where chunk goes in cur, the document's text: after
// written, the server's part, with what the person wrote below it kept
// below. When cur is behind written (an editor that loaded the file before
// the last write), the missing part is inserted too; when the person
// changed the server's part, chunk goes at the end.
func placeChunk(cur, written, chunk string) (at int, insert string) {
	switch {
	case strings.HasPrefix(cur, written):
		return len(written), chunk
	case strings.HasPrefix(written, cur):
		return len(cur), written[len(cur):] + chunk
	case cur != "" && !strings.HasSuffix(cur, "\n"):
		return len(cur), "\n" + chunk
	}
	return len(cur), chunk
}

var errNotApplied = errors.New("the editor did not apply the change")

// insertInBuffer inserts text at byte offset at of the open buffer buf
// with workspace/applyEdit, and waits (2 s at most) for the buffer to
// show it. An insertion at the very end of a text that ends in a newline
// is sent before that newline (the same result): editors differ on a
// position past the last line.
func (s *Server) insertInBuffer(path string, buf workspace.Buffer, at int, text string) error {
	c := s.clientCaps()
	want := buf.Text[:at] + text + buf.Text[at:]
	off, ins := at, text
	if at == len(buf.Text) && at > 0 && buf.Text[at-1] == '\n' && strings.HasSuffix(text, "\n") {
		off, ins = at-1, "\n"+text[:len(text)-1]
	}
	edits := []map[string]any{textEdit(buf.Text, off, off, ins, c.Encoding)}
	uri := s.pathToURI(path)
	var edit map[string]any
	if c.DocumentChanges {
		edit = map[string]any{"documentChanges": []any{map[string]any{
			"textDocument": map[string]any{"uri": uri, "version": buf.Version},
			"edits":        edits,
		}}}
	} else {
		edit = map[string]any{"changes": map[string]any{uri: edits}}
	}
	ov := s.ws.Overlay
	changed := ov.Changed()
	var res struct {
		Applied       bool   `json:"applied"`
		FailureReason string `json:"failureReason"`
	}
	if err := s.host.call(s.baseCtx, "workspace/applyEdit", map[string]any{"label": "qwen-ls transcript", "edit": edit}, &res); err != nil {
		return fmt.Errorf("%w: %v", errNotApplied, err)
	}
	if !res.Applied {
		return fmt.Errorf("%w: %s", errNotApplied, res.FailureReason)
	}
	deadline := time.NewTimer(applyWait)
	defer deadline.Stop()
	for {
		b, ok := ov.Get(path)
		if !ok {
			return fmt.Errorf("%w: the document was closed", errNotApplied)
		}
		if b.Text == want {
			return nil
		}
		select {
		case <-changed:
			changed = ov.Changed()
		case <-deadline.C:
			return errors.New("the editor's text differs from the change sent")
		case <-s.baseCtx.Done():
			return s.baseCtx.Err()
		}
	}
}

// endsWithOpenAsk reports whether text ends with an empty "## You"
// section.
func endsWithOpenAsk(text string) bool {
	return strings.HasSuffix(strings.TrimRight(text, "\n "), "\n"+youHeading) || strings.TrimSpace(text) == youHeading
}

// startTurn writes the person's prompt and the agent's heading.
func (s *Server) transcriptStart(t *transcript, prompt string) {
	t.mu.Lock()
	t.running = true
	t.titles = map[string]string{}
	open := t.openAsk
	t.openAsk = false
	t.quote = ""
	t.mu.Unlock()
	chunk := strings.TrimRight(prompt, "\n") + "\n\n" + qwenHeading + "\n\n"
	if !open {
		chunk = youHeading + "\n\n" + chunk
	}
	s.appendTranscript(t, chunk)
}

// transcriptEnd writes the answer (or the error) and a new empty "## You"
// section for the next question, and waits until it is written.
func (s *Server) transcriptEnd(t *transcript, answer string, err error) {
	var b strings.Builder
	if strings.TrimSpace(answer) != "" {
		b.WriteString("\n" + strings.TrimSpace(answer) + "\n")
	}
	if err != nil {
		fmt.Fprintf(&b, "\n**Error:** %s\n", errText(err))
	}
	b.WriteString("\n" + youHeading + "\n\n")
	t.mu.Lock()
	t.running = false
	t.titles = nil
	t.openAsk = true
	t.mu.Unlock()
	s.appendTranscript(t, b.String())
	s.flushTranscript(t)
}

// transcriptUpdate adds a finished tool call's line to the transcript of
// a running turn: its outcome, kind and title.
func (s *Server) transcriptUpdate(t *transcript, u session.Update) {
	t.mu.Lock()
	if !t.running {
		t.mu.Unlock()
		return
	}
	if u.Kind == session.UpdateToolCall {
		t.titles[u.ToolCallID] = strings.TrimSpace(u.ToolKind + " " + oneLine(u.Title))
		t.mu.Unlock()
		return
	}
	title := t.titles[u.ToolCallID]
	t.mu.Unlock()
	if u.Kind != session.UpdateToolCallUpd || (u.Status != session.StatusCompleted && u.Status != session.StatusFailed) {
		return
	}
	if title == "" {
		title = oneLine(u.Title)
	}
	if title == "" {
		title = "tool call " + u.ToolCallID
	}
	s.appendTranscript(t, toolLine(updateOutcome(u), title))
}

// toolLine is a finished call's line: ✓, or ✗/⊘ and how it ended.
func toolLine(outcome, title string) string {
	switch outcome {
	case "completed":
		return "- ✓ " + title + "\n"
	case "rejected":
		return "- ✗ " + title + " (rejected)\n"
	case "cancelled":
		return "- ⊘ " + title + " (cancelled)\n"
	}
	return "- ✗ " + title + " (failed)\n"
}

// question returns what the person wrote under the last "## You" heading
// of text, without comments, or "" when that section is empty or already
// answered.
func question(text string) string {
	i := strings.LastIndex("\n"+text, "\n"+youHeading+"\n")
	if i < 0 {
		return ""
	}
	body := text[i+len(youHeading)+1:]
	// An agent heading after it: already sent.
	if strings.HasPrefix(body, qwenHeading) || strings.Contains(body, "\n"+qwenHeading) {
		return ""
	}
	return strings.TrimSpace(htmlComment.ReplaceAllString(body, ""))
}

// transcriptAsk makes the document end with an open "## You" section,
// with quote (a selection to ask about, or "") in it.
func (s *Server) transcriptAsk(t *transcript, quote string) {
	t.mu.Lock()
	open := t.openAsk
	t.openAsk = true
	if quote != "" {
		t.quote += quote
	}
	t.mu.Unlock()
	chunk := quote
	if !open {
		chunk = youHeading + "\n\n" + quote
	}
	if chunk != "" {
		s.appendTranscript(t, chunk)
	}
}

// transcriptTake makes the document's text cur, whose last "## You"
// section holds a question, the server's part, and writes the agent's
// heading below it.
func (s *Server) transcriptTake(t *transcript, cur string) {
	if !strings.HasSuffix(cur, "\n") {
		cur += "\n"
	}
	t.mu.Lock()
	t.written = cur
	t.running = true
	t.titles = map[string]string{}
	t.openAsk = false
	t.quote = ""
	t.mu.Unlock()
	s.appendTranscript(t, "\n"+qwenHeading+"\n\n")
}

var htmlComment = regexp.MustCompile(`(?s)<!--.*?-->`)

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// showTranscript asks the editor to show the transcript (when it can):
// takeFocus only when the person just started the prompt.
func (s *Server) showTranscript(ctx context.Context, t *transcript, takeFocus bool) bool {
	if !s.clientCaps().ShowDocument {
		return false
	}
	var res struct {
		Success bool `json:"success"`
	}
	err := s.host.call(ctx, "window/showDocument", map[string]any{
		"uri": s.pathToURI(t.path), "external": false, "takeFocus": takeFocus,
	}, &res)
	if err != nil {
		s.log.Debugf("window/showDocument: %v", err)
		return false
	}
	return res.Success
}
