package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Sessions are kept on disk under <QwenHome>/projects/<sanitised root>/
// sessions/<id>.jsonl: one JSON event a line, appended with a single
// write(2) each as it happens. A process killed at any moment leaves every
// event it had written; only power loss or a full disk can cut a line, and
// a cut line is skipped (and reported) on load.
//
// Two processes may write into one folder (two editor windows on one
// root): each session is its own file, appended with O_APPEND so whole
// lines never interleave, and the process that has a session open holds
// an exclusive flock on it: another process can neither continue the
// session (its history would fork inside one file) nor prune it.

// ErrSessionInUse: another process has the session open (-32803,
// reason session_in_use).
var ErrSessionInUse = errors.New("the session is open in another qwen-ls process (another editor window): continue it there, or close that window and load it again")

// storeVersion is the format version in a session file's header.
const storeVersion = 1

// Store is the session folder of one qwen home.
type Store struct {
	home string
	// secrets returns values never to be written (the API key).
	secrets func() []string
	// files are the session files open now (storefiles.go).
	files openFiles
}

// NewStore returns the store under home (<QwenHome>).
func NewStore(home string, secrets func() []string) *Store {
	return &Store{home: home, secrets: secrets}
}

// SanitizeRoot turns a root path into a folder name: every character
// other than a letter, a digit, '-' or '_' becomes '-'.
func SanitizeRoot(root string) string {
	var b strings.Builder
	for _, r := range root {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// Dir is the sessions folder of a root; sessions of a server without
// roots share the folder "-".
func (st *Store) Dir(root string) string {
	if root == "" {
		root = "-"
	}
	return filepath.Join(st.home, "projects", SanitizeRoot(root), "sessions")
}

// find returns the file of a session id, in any project.
func (st *Store) find(id string) (string, error) {
	if !validID(id) {
		return "", fmt.Errorf("%w %q", ErrUnknownSession, id)
	}
	matches, _ := filepath.Glob(filepath.Join(st.home, "projects", "*", "sessions", id+".jsonl"))
	if len(matches) == 0 {
		return "", fmt.Errorf("%w %q: no such session in this process or under %s", ErrUnknownSession, id, filepath.Join(st.home, "projects"))
	}
	return matches[0], nil
}

// validID accepts the ids newID makes (and other plain names), never a
// path.
func validID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// event is one line of a session file. Type says which fields are set.
type event struct {
	Type string    `json:"type"`
	Time time.Time `json:"time"`

	// session (the header)
	Version int    `json:"v,omitempty"`
	ID      string `json:"id,omitempty"`
	Cwd     string `json:"cwd,omitempty"`
	// session, mode
	Mode string `json:"mode,omitempty"`
	// session, model: the model chosen for the session ("" the default)
	Model string `json:"model,omitempty"`
	// title
	Title string `json:"title,omitempty"`
	// turn, checkpoint, reverted
	Turn int `json:"turn,omitempty"`
	// message
	Message *storedMessage `json:"message,omitempty"`
	Tokens  int            `json:"tokens,omitempty"`
	// usage: the prompt tokens the model counted for a request made of
	// the first Count history messages.
	Input int `json:"input,omitempty"`
	Count int `json:"count,omitempty"`
	// todos
	Todos []PlanEntry `json:"todos,omitempty"`
	// compressed: the history that replaces the old one.
	History      []storedMessage `json:"history,omitempty"`
	HistoryToks  []int           `json:"historyTokens,omitempty"`
	TokensBefore int             `json:"tokensBefore,omitempty"`
	TokensAfter  int             `json:"tokensAfter,omitempty"`
	// checkpoint, call
	CallID string       `json:"callId,omitempty"`
	Files  []fileChange `json:"files,omitempty"`
	// call: a finished tool call as the editor was shown it (replay.go)
	Call *shownCall `json:"call,omitempty"`
}

// storedMessage is a Message as written to disk. It has exactly
// Message's fields, so the conversions between them stop compiling when
// a field is added to one and not the other.
type storedMessage struct {
	Role       string     `json:"role"`
	Text       string     `json:"text,omitempty"`
	Parts      []Part     `json:"parts,omitempty"`
	ToolCalls  []ToolCall `json:"toolCalls,omitempty"`
	ToolCallID string     `json:"toolCallId,omitempty"`
	Reasoning  string     `json:"reasoning,omitempty"`
	Typed      string     `json:"typed,omitempty"`
}

func storeMessage(m Message) *storedMessage {
	sm := storedMessage(m)
	return &sm
}

func (m storedMessage) message() Message {
	return Message(m)
}

// sessionLog is an open session file.
type sessionLog struct {
	st   *Store
	path string

	mu  sync.Mutex
	f   *os.File
	err error // the first write error, reported once
	// needNewline: the file ends in a cut line.
	needNewline bool
	// suspended: the file was closed to save descriptors and is opened
	// again by the next write; suspendedSize is its size then
	// (storefiles.go).
	suspended     bool
	suspendedSize int64
}

// errLocked: another open file holds the lock tryLock asked for.
var errLocked = errors.New("the file is locked by another process")

// create makes a new session file with its header; the caller holds the
// file open, and exclusively locked, until the session is closed.
func (st *Store) create(root string, hdr event) (*sessionLog, error) {
	dir := st.Dir(root)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the session folder: %w", err)
	}
	path := filepath.Join(dir, hdr.ID+".jsonl")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create the session file: %w", err)
	}
	_ = tryLock(f)
	l := &sessionLog{st: st, path: path, f: f}
	hdr.Type, hdr.Version = "session", storeVersion
	if err := l.write(hdr); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return l, nil
}

// reopen opens an existing session file for appending, and locks it. A
// file whose last line was cut gets a newline before the next event, so
// that event starts a line of its own (the cut line stays, and is skipped
// on load).
func (st *Store) reopen(path string) (*sessionLog, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the session file for writing: %w", err)
	}
	if err := tryLock(f); err != nil {
		f.Close()
		if errors.Is(err, errLocked) {
			return nil, ErrSessionInUse
		}
		return nil, fmt.Errorf("lock the session file: %w", err)
	}
	l := &sessionLog{st: st, path: path, f: f}
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], fi.Size()-1); err == nil && last[0] != '\n' {
			l.needNewline = true
		}
	}
	return l, nil
}

// write appends one event as one line with a single write call. An event
// whose message holds a text of more than largeEventText is the
// exception: see writeLarge.
func (l *sessionLog) write(ev event) error {
	if ev.Time.IsZero() {
		ev.Time = time.Now().UTC()
	}
	if line, ok := splitLargeText(ev); ok {
		return l.writeLarge(line)
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode a session event: %w", err)
	}
	b = l.st.redact(b)
	b = append(b, '\n')
	// Runs after the unlock below: it may close other logs' files.
	defer l.st.keepOpen(l)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.resumeLocked(); err != nil {
		if l.err == nil {
			l.err = err
		}
		return err
	}
	if l.needNewline {
		b = append([]byte{'\n'}, b...)
		l.needNewline = false
	}
	if _, err := l.f.Write(b); err != nil {
		err = fmt.Errorf("append to %s: %w", l.path, err)
		if l.err == nil {
			l.err = err
		}
		return err
	}
	return nil
}

// close releases the file (and its lock) for good.
func (l *sessionLog) close() {
	l.mu.Lock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
	l.suspended = false
	l.mu.Unlock()
	l.st.forget(l)
}

// redact replaces every secret in an encoded event. A secret is looked
// for as json.Marshal writes it inside a string, since that is how it
// appears in the event: a key holding '&', '<', '>', '"' or a backslash is
// escaped there and would not match as it is.
func (st *Store) redact(b []byte) []byte { return redactWith(b, st.escapedSecrets()) }

// escapedSecrets are the secrets as json.Marshal writes them inside a
// string.
func (st *Store) escapedSecrets() [][]byte {
	if st.secrets == nil {
		return nil
	}
	var out [][]byte
	for _, s := range st.secrets() {
		if len(s) < 8 {
			continue
		}
		enc, err := json.Marshal(s)
		if err != nil {
			continue
		}
		out = append(out, enc[1:len(enc)-1])
	}
	return out
}

// redactWith replaces each of secrets in b. It copies b only when a
// secret is there: bytes.ReplaceAll always returns a copy, which for an
// event of tens of megabytes is tens of megabytes more.
func redactWith(b []byte, secrets [][]byte) []byte {
	for _, enc := range secrets {
		if bytes.Contains(b, enc) {
			b = bytes.ReplaceAll(b, enc, []byte("[redacted]"))
		}
	}
	return b
}

// loaded is what a session file holds, rebuilt.
type loaded struct {
	path    string
	id      string
	cwd     string
	mode    string
	model   string
	title   string
	created time.Time
	updated time.Time
	turns   int
	history []Message
	tokens  []int
	// transcript is every message ever added, for replay, once a
	// compression has made it differ from history (ownTranscript).
	transcript    []Message
	ownTranscript bool
	calib         calibration
	todos         []PlanEntry
	hasTodos      bool
	checkpoint    []checkpointRecord
	reverted      map[int]bool
	shown         map[string]*shownCall
	// problems are the lines that could not be read.
	problems []string
}

// load reads a session file. Lines that do not parse are skipped and
// reported; a cut last line is expected after a crash and reported as such.
func (st *Store) load(path string) (*loaded, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open the session file: %w", err)
	}
	defer f.Close()
	ld := &loaded{path: path, reverted: map[int]bool{}, shown: map[string]*shownCall{}}
	r := bufio.NewReaderSize(f, 64<<10)
	sawHeader := false
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			if err != io.EOF {
				return nil, fmt.Errorf("read %s: %w", path, err)
			}
			break
		}
		complete := line[len(line)-1] == '\n'
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var ev event
		if jerr := json.Unmarshal(line, &ev); jerr != nil {
			if !complete {
				ld.problems = append(ld.problems, fmt.Sprintf("the last line (%d) of %s was cut short, probably by a crash while it was written; that event was dropped", n, path))
			} else {
				ld.problems = append(ld.problems, fmt.Sprintf("line %d of %s is not a valid event (%v); it was skipped", n, path, jerr))
			}
			continue
		}
		if ev.Type == "session" {
			sawHeader = true
		}
		ld.apply(ev)
		if !complete {
			// A whole event without its newline: keep it; reopen adds
			// the newline before the next event.
			ld.problems = append(ld.problems, fmt.Sprintf("the last line (%d) of %s has no final newline", n, path))
		}
	}
	if !sawHeader {
		return nil, fmt.Errorf("%s is not a session file: it has no session header", path)
	}
	if ld.id == "" {
		ld.id = strings.TrimSuffix(filepath.Base(path), ".jsonl")
	}
	return ld, nil
}

func (ld *loaded) apply(ev event) {
	if !ev.Time.IsZero() {
		ld.updated = ev.Time
	}
	switch ev.Type {
	case "session":
		ld.id, ld.cwd, ld.mode, ld.model, ld.created = ev.ID, ev.Cwd, ev.Mode, ev.Model, ev.Time
	case "title":
		if ld.title == "" {
			ld.title = ev.Title
		}
	case "mode":
		ld.mode = ev.Mode
	case "model":
		ld.model = ev.Model
	case "turn":
		ld.turns = max(ld.turns, ev.Turn)
	case "message":
		if ev.Message != nil {
			m := ev.Message.message()
			ld.history = append(ld.history, m)
			ld.tokens = append(ld.tokens, ev.Tokens)
			if ld.ownTranscript {
				ld.transcript = append(ld.transcript, m)
			}
		}
	case "usage":
		ld.calib = calibration{input: ev.Input, count: ev.Count}
	case "todos":
		ld.todos, ld.hasTodos = ev.Todos, true
	case "compressed":
		if !ld.ownTranscript {
			// The messages so far become the transcript; history starts
			// again in a new array.
			ld.transcript, ld.ownTranscript = ld.history, true
		}
		ld.history = ld.history[:0:0]
		for _, m := range ev.History {
			ld.history = append(ld.history, m.message())
		}
		ld.tokens = append([]int(nil), ev.HistoryToks...)
		for len(ld.tokens) < len(ld.history) {
			ld.tokens = append(ld.tokens, estimateMessage(ld.history[len(ld.tokens)]))
		}
		ld.calib = calibration{}
	case "checkpoint":
		ld.checkpoint = append(ld.checkpoint, checkpointRecord{Turn: ev.Turn, CallID: ev.CallID, Files: ev.Files})
	case "reverted":
		ld.reverted[ev.Turn] = true
	case "call":
		if ev.Call != nil && ev.CallID != "" {
			ld.shown[ev.CallID] = ev.Call
		}
	}
}

// header reads a session file's header and title without reading the rest:
// both are written before the first message.
func (st *Store) header(path string) (ListedSession, bool) {
	f, err := os.Open(path)
	if err != nil {
		return ListedSession{}, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ListedSession{}, false
	}
	ls := ListedSession{ID: strings.TrimSuffix(filepath.Base(path), ".jsonl"), UpdatedAt: fi.ModTime(), Title: "(no prompt yet)"}
	r := bufio.NewReaderSize(f, 8<<10)
	ok := false
	for i := 0; i < 4; i++ {
		line, err := r.ReadBytes('\n')
		var ev struct {
			Type  string `json:"type"`
			Cwd   string `json:"cwd"`
			Title string `json:"title"`
		}
		if json.Unmarshal(line, &ev) == nil {
			switch ev.Type {
			case "session":
				ls.Cwd, ok = ev.Cwd, true
			case "title":
				ls.Title = ev.Title
				return ls, ok
			}
		}
		if err != nil {
			break
		}
	}
	return ls, ok
}

// list returns the sessions stored for the roots.
func (st *Store) list(roots []string) []ListedSession {
	var out []ListedSession
	seen := map[string]bool{}
	for _, root := range roots {
		dir := st.Dir(root)
		if seen[dir] {
			continue
		}
		seen[dir] = true
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".jsonl") {
				continue
			}
			if ls, ok := st.header(filepath.Join(dir, e.Name())); ok {
				out = append(out, ls)
			}
		}
	}
	return out
}
