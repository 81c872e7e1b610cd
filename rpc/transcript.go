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
// the file on disk as a turn runs, and the editor reloads it; the person
// writes a question under the last "## You" heading and saves the file to
// send it.

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
	// the file, since the person only adds below it.
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
	// noReload says the editor, which has the document open, did not
	// read it again after a write (awaitReload).
	noReload bool
	// seenOpen says the editor had the document open when last looked.
	seenOpen bool
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
// document, in the file on disk, atomically, and returns the new server
// part. Text the person saved below the server's part stays below it.
//
// The file is written on disk even while the editor has it open, and never
// through workspace/applyEdit: an edit would leave the editor's document
// modified (unsaved) and the file behind it. The editor reloads the file
// (docs/protocol.md, "Plain LSP clients"); each write is followed by
// $/progress, which the Neovim snippet of the README reloads it on.
func (s *Server) writeTranscript(path, written, chunk string) string {
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
// below. When cur is behind written (the file was replaced by an older
// copy, such as an editor saving what it loaded before the last write),
// the missing part is inserted too; when the person changed the server's
// part, chunk goes at the end.
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
	s.flushTranscript(t)
	t.mu.Lock()
	// Right below the heading, the answer needs no blank line of its own;
	// below a tool line it does.
	sep := "\n"
	if strings.HasSuffix(t.written, "\n\n") {
		sep = ""
	}
	t.mu.Unlock()
	var b strings.Builder
	if strings.TrimSpace(answer) != "" {
		b.WriteString(sep + strings.TrimSpace(answer) + "\n")
		sep = "\n"
	}
	if err != nil {
		fmt.Fprintf(&b, "%s**Error:** %s\n", sep, errText(err))
		sep = "\n"
	}
	b.WriteString(sep + youHeading + "\n\n")
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
	line := toolLine(updateOutcome(u), title)
	s.appendTranscript(t, line)
	// On disk before the progress report that tells it: an editor that
	// reloads the transcript on progress shows the line.
	s.flushTranscript(t)
	if p := s.turns.get(t.sessionID); p != nil {
		p.report(strings.TrimSpace(strings.TrimPrefix(line, "- ")))
	}
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

// turnLines returns the 0-based lines of the running turn's "## You" and
// "## qwen" headings. It is called once the turn's start is written, when
// the server's part ends with the "## qwen" heading.
func (t *transcript) turnLines() (you, qwen int) {
	t.mu.Lock()
	w := t.written
	t.mu.Unlock()
	i := strings.LastIndex(w, "\n"+qwenHeading+"\n")
	if i < 0 {
		n := lastLine(w)
		return n, n
	}
	qwen = strings.Count(w[:i+1], "\n")
	you = qwen
	if j := strings.LastIndex(w[:i+1], "\n"+youHeading+"\n"); j >= 0 {
		you = strings.Count(w[:j+1], "\n")
	}
	return you, qwen
}

// lastLine is the 0-based line of text's last line (the one a final
// newline ends, not the empty one after it).
func lastLine(text string) int {
	n := strings.Count(text, "\n")
	if n > 0 && strings.HasSuffix(text, "\n") {
		n--
	}
	return n
}

// lastLine is the 0-based line of the last line of the server's part.
func (t *transcript) lastLine() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return lastLine(t.written)
}

// showTranscript asks the editor to show the transcript with the cursor on
// line (0-based), taking the focus only when takeFocus (the person is
// about to write in it). It asks twice: first without focus, on the last
// line of the server's part, then on line. The first request opens the
// document beside the current one in an editor that would otherwise put it
// in place of the code the person is in (Neovim opens a window without
// focus, and puts a document that takes the focus in the current window);
// it also brings the end into view, so that moving up to line leaves what
// follows line in view (an editor scrolls only as far as the cursor
// needs). It reports whether the editor showed the transcript.
func (s *Server) showTranscript(ctx context.Context, t *transcript, line int, takeFocus bool) bool {
	if !s.clientCaps().ShowDocument {
		return false
	}
	last := t.lastLine()
	if !s.showTranscriptAt(ctx, t, last, false) {
		return false
	}
	if line == last && !takeFocus {
		return true
	}
	return s.showTranscriptAt(ctx, t, line, takeFocus)
}

// showTranscriptAt sends one window/showDocument. The cursor is put on
// line only in a document the editor has open (its didOpen seen), once
// the editor holds what was written (awaitReload), and never past the end
// of the editor's text: a document it has not told the server about may
// be an older copy, where a line past its end is an error (Neovim shows
// it).
func (s *Server) showTranscriptAt(ctx context.Context, t *transcript, line int, takeFocus bool) bool {
	params := map[string]any{"uri": s.pathToURI(t.path), "external": false, "takeFocus": takeFocus}
	if text, open := s.awaitReload(ctx, t); open {
		pos := map[string]any{"line": min(line, lastLine(text)), "character": 0}
		params["selection"] = map[string]any{"start": pos, "end": pos}
	}
	var res struct {
		Success bool `json:"success"`
	}
	if err := s.host.call(ctx, "window/showDocument", params, &res); err != nil {
		s.log.Debugf("window/showDocument: %v", err)
		return false
	}
	return res.Success
}

// reloadWait is how long the server waits for an editor that has the
// transcript open to read it again after a write.
const reloadWait = 2 * time.Second

// awaitReload waits until the editor's copy of the transcript, when it has
// one open, holds the server's part: the editor reads the file again
// after a write (Neovim through the README's snippet, on the $/progress
// that follows each write), and the request to show it must not overtake
// that. A reload may close and open the document (Neovim does): a
// document the editor had open and has closed is waited for too. An
// editor that does not catch up within reloadWait is not waited for again
// until it does. It returns the editor's text and whether it has the
// transcript open.
func (s *Server) awaitReload(ctx context.Context, t *transcript) (string, bool) {
	ov := s.ws.Overlay
	t.mu.Lock()
	want, stale, seen := t.written, t.noReload, t.seenOpen
	t.mu.Unlock()
	changed := ov.Changed()
	buf, open := ov.Get(t.path)
	caughtUp := open && strings.HasPrefix(buf.Text, want)
	t.mu.Lock()
	if open {
		t.seenOpen = true
	}
	if caughtUp {
		// It caught up after all (the person saved, or reloaded).
		t.noReload = false
	}
	t.mu.Unlock()
	if caughtUp || stale || (!open && !seen) {
		return buf.Text, open
	}
	timer := time.NewTimer(reloadWait)
	defer timer.Stop()
	for {
		select {
		case <-changed:
		case <-timer.C:
			buf, open = ov.Get(t.path)
			t.mu.Lock()
			// Closed for good, or open and not read again.
			t.seenOpen = open
			t.noReload = open
			t.mu.Unlock()
			if open {
				s.log.Debugf("qwen: the editor did not read the transcript %s again; it is shown as the editor has it", t.path)
			}
			return buf.Text, open
		case <-ctx.Done():
			return buf.Text, open
		}
		changed = ov.Changed()
		if b, ok := ov.Get(t.path); ok {
			buf, open = b, true
			if strings.HasPrefix(b.Text, want) {
				return b.Text, true
			}
		}
	}
}

// transcriptChanged follows a change of the transcript outside a turn
// (an ask, an open "## You") that write has made: it is written on disk,
// then told with a $/progress begin and end, the signal an editor can
// reload it on, as a turn's progress is.
func (s *Server) transcriptChanged(ctx context.Context, t *transcript, write func()) {
	prog := s.serverProgress(ctx, "qwen: transcript")
	write()
	s.flushTranscript(t)
	prog.end("written")
}
