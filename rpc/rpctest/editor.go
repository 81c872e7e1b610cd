// Package rpctest is a fake editor for end-to-end tests: it drives a real
// qwen-ls server over a pipe (in process, with Start) or over a child
// process's stdio (StartProcess), speaking JSON-RPC with LSP framing written
// independently of the server's own. It opens, edits and closes buffers,
// answers the server's requests with handlers the test installs, and lets
// tests wait on the server's notifications instead of sleeping.
package rpctest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// DefaultTimeout bounds every wait of the fake editor, so a broken server
// fails a test instead of hanging it.
const DefaultTimeout = 20 * time.Second

// Message is any JSON-RPC message the server sent.
type Message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *RPCError       `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

// Handler answers one server→editor request. Returning an *RPCError sends
// that error.
type Handler func(params json.RawMessage) (any, error)

// Editor is the fake editor.
type Editor struct {
	// Server is the in-process server (nil for StartProcess).
	Server *rpc.Server
	// Home is the server's private ~/.qwen (Start only).
	Home string

	t testing.TB
	w io.WriteCloser

	wmu sync.Mutex // serialises writes

	mu       sync.Mutex
	nextID   int
	pending  map[string]chan Message
	notes    []Message // every notification, in arrival order
	orphans  []Message // responses whose id is null or unknown
	answered []string  // ids of the responses to our requests, in arrival order
	handlers map[string]Handler
	onNote   map[string]func(json.RawMessage)
	requests []Message // every server→editor request
	changed  chan struct{}
	readErr  error
	versions map[string]int32
	texts    map[string]string
	applied  []AppliedEdit

	done     chan struct{}
	exitCode int
}

// Options for Start.
type Options struct {
	Server rpc.Options
}

// Start runs a real server in this process, connected to a new fake
// editor through pipes. The server is stopped when the test ends, and the
// test fails if a goroutine started since Start, or a process the server
// started, outlives it (leaks.go). Both checks assume the test does not run
// in parallel with others (t.Parallel), as none here do.
func Start(t testing.TB, opts rpc.Options) *Editor {
	t.Helper()
	lc := startLeakCheck(t)
	// Processes the in-process server starts inherit this process's
	// environment, and so the tag.
	t.Setenv(leakTagVar, lc.tag)
	toServerR, toServerW := io.Pipe()
	toEditorR, toEditorW := io.Pipe()
	if opts.Workspace == nil {
		// A hermetic workspace: settings come from temp folders, never
		// from the real home or /etc.
		dir := t.TempDir()
		ws := workspace.New(workspace.Options{Settings: workspace.SettingsOptions{
			UserDir:    filepath.Join(dir, "home", ".qwen"),
			SystemPath: filepath.Join(dir, "etc", "settings.json"),
			Getenv:     func(string) (string, bool) { return "", false },
		}})
		t.Cleanup(func() { _ = ws.Close() })
		opts.Workspace = ws
		if opts.QwenHome == "" {
			opts.QwenHome = filepath.Join(dir, "home", ".qwen")
		}
	}
	if opts.Retry == (rpc.RetryPolicy{}) {
		// Retries in tests wait milliseconds, not seconds (a Retry-After
		// from the scripted model is still honoured).
		opts.Retry = rpc.RetryPolicy{Attempts: 3, Base: 5 * time.Millisecond, Max: 3 * time.Second}
	}
	srv := rpc.NewServer(opts)
	e := newEditor(t, toEditorR, toServerW)
	e.Server = srv
	e.Home = opts.QwenHome
	go func() {
		code := srv.Serve(context.Background(), toServerR, toEditorW)
		_ = toEditorW.Close()
		_ = toServerR.Close()
		e.mu.Lock()
		e.exitCode = code
		e.mu.Unlock()
		close(e.done)
	}()
	t.Cleanup(func() {
		_ = toServerW.Close()
		select {
		case <-e.done:
		case <-time.After(DefaultTimeout):
			t.Errorf("rpctest: the server did not stop after its input closed")
		}
	})
	return e
}

// StartProcess runs the qwen-ls binary at bin with args and connects a new
// fake editor to its stdio. Its stderr goes to the test log. The test
// fails if a process the server started outlives it, or a goroutine started
// since StartProcess outlives the test (leaks.go).
func StartProcess(t testing.TB, cmd *exec.Cmd) *Editor {
	t.Helper()
	lc := startLeakCheck(t)
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, lc.env())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Stderr == nil {
		cmd.Stderr = &testWriter{t: t}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	e := newEditor(t, stdout, stdin)
	go func() {
		err := cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			code = -1
		}
		e.mu.Lock()
		e.exitCode = code
		e.mu.Unlock()
		close(e.done)
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-e.done:
		case <-time.After(DefaultTimeout):
			_ = cmd.Process.Kill()
			t.Errorf("rpctest: the server process did not exit after stdin closed")
		}
	})
	return e
}

func newEditor(t testing.TB, r io.Reader, w io.WriteCloser) *Editor {
	e := &Editor{
		t:        t,
		w:        w,
		pending:  map[string]chan Message{},
		handlers: map[string]Handler{},
		changed:  make(chan struct{}),
		versions: map[string]int32{},
		texts:    map[string]string{},
		done:     make(chan struct{}),
	}
	go e.readLoop(bufio.NewReader(r))
	return e
}

// CloseInput closes the server's input, as an editor that goes away
// without shutdown and exit does.
func (e *Editor) CloseInput() {
	e.wmu.Lock()
	defer e.wmu.Unlock()
	_ = e.w.Close()
}

// Done is closed when the server has stopped.
func (e *Editor) Done() <-chan struct{} { return e.done }

// ExitCode waits for the server to stop and returns its exit code.
func (e *Editor) ExitCode() int {
	e.t.Helper()
	select {
	case <-e.done:
	case <-time.After(DefaultTimeout):
		e.t.Fatalf("rpctest: the server did not stop")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.exitCode
}

// Handle installs the answer to a server→editor request method.
func (e *Editor) Handle(method string, h Handler) {
	e.mu.Lock()
	e.handlers[method] = h
	e.mu.Unlock()
}

// WriteRaw writes bytes to the server as they are, for framing tests.
func (e *Editor) WriteRaw(b []byte) {
	e.t.Helper()
	e.wmu.Lock()
	defer e.wmu.Unlock()
	if _, err := e.w.Write(b); err != nil {
		e.t.Fatalf("rpctest: write: %v", err)
	}
}

// SendFrame frames body with a Content-Length header and writes it.
func (e *Editor) SendFrame(body []byte) {
	e.t.Helper()
	e.WriteRaw(append([]byte("Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"), body...))
}

func (e *Editor) send(v any) {
	e.t.Helper()
	body, err := json.Marshal(v)
	if err != nil {
		e.t.Fatalf("rpctest: marshal: %v", err)
	}
	e.SendFrame(body)
}

// Notify sends a notification.
func (e *Editor) Notify(method string, params any) {
	e.t.Helper()
	e.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// Call sends a request and waits for its response. An error response comes
// back as *RPCError.
func (e *Editor) Call(method string, params any) (json.RawMessage, error) {
	e.t.Helper()
	id, ch := e.Send(method, params)
	return e.Wait(id, ch)
}

// Send sends a request without waiting; pass the results to Wait. The id
// is numeric.
func (e *Editor) Send(method string, params any) (json.RawMessage, chan Message) {
	e.t.Helper()
	e.mu.Lock()
	e.nextID++
	id := json.RawMessage(strconv.Itoa(e.nextID))
	e.mu.Unlock()
	return id, e.SendWithID(id, method, params)
}

// SendWithID sends a request with a caller-chosen id (such as a string).
func (e *Editor) SendWithID(id json.RawMessage, method string, params any) chan Message {
	e.t.Helper()
	ch := make(chan Message, 1)
	e.mu.Lock()
	e.pending[normID(id)] = ch
	e.mu.Unlock()
	msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	e.send(msg)
	return ch
}

// Wait waits for the response to a request sent with Send.
func (e *Editor) Wait(id json.RawMessage, ch chan Message) (json.RawMessage, error) {
	e.t.Helper()
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, m.Error
		}
		return m.Result, nil
	case <-e.done:
		return nil, fmt.Errorf("rpctest: the server stopped before answering request %s", id)
	case <-time.After(DefaultTimeout):
		e.t.Fatalf("rpctest: no response to request %s within %s", id, DefaultTimeout)
		return nil, nil
	}
}

// Notifications returns every notification received so far with method
// (all of them when method is "").
func (e *Editor) Notifications(method string) []Message {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Message
	for _, m := range e.notes {
		if method == "" || m.Method == method {
			out = append(out, m)
		}
	}
	return out
}

// Requests returns every server→editor request received with method.
func (e *Editor) Requests(method string) []Message {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Message
	for _, m := range e.requests {
		if method == "" || m.Method == method {
			out = append(out, m)
		}
	}
	return out
}

// WaitNotification waits until a notification with method satisfies match
// (nil matches any) and returns its params. It looks at notifications that
// already arrived too.
func (e *Editor) WaitNotification(method string, match func(params json.RawMessage) bool) json.RawMessage {
	e.t.Helper()
	var found json.RawMessage
	e.waitFor(fmt.Sprintf("notification %s", method), func() bool {
		for _, m := range e.notes {
			if m.Method == method && (match == nil || match(m.Params)) {
				found = m.Params
				return true
			}
		}
		return false
	})
	return found
}

// Orphans returns the responses received so far that matched no request
// and that WaitOrphan has not taken.
func (e *Editor) Orphans() []Message {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Message(nil), e.orphans...)
}

// AnsweredIDs returns the ids of the responses to the editor's requests in
// the order they arrived.
func (e *Editor) AnsweredIDs() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.answered...)
}

// WaitOrphan waits for a response that matched no request (id null or
// unknown), such as the server's answer to an unparseable frame, and
// removes it from the list.
func (e *Editor) WaitOrphan() Message {
	e.t.Helper()
	var found Message
	e.waitFor("an error response with no matching request", func() bool {
		if len(e.orphans) == 0 {
			return false
		}
		found = e.orphans[0]
		e.orphans = e.orphans[1:]
		return true
	})
	return found
}

// waitFor evaluates cond under the lock each time a message arrives.
func (e *Editor) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.After(DefaultTimeout)
	for {
		e.mu.Lock()
		ok := cond()
		ch := e.changed
		readErr := e.readErr
		e.mu.Unlock()
		if ok {
			return
		}
		if readErr != nil {
			e.t.Fatalf("rpctest: waiting for %s: the connection ended: %v", what, readErr)
		}
		select {
		case <-ch:
		case <-deadline:
			e.t.Fatalf("rpctest: waiting for %s: nothing within %s", what, DefaultTimeout)
		}
	}
}

func (e *Editor) readLoop(r *bufio.Reader) {
	for {
		body, err := ReadFrame(r)
		if err != nil {
			e.mu.Lock()
			e.readErr = err
			close(e.changed)
			e.changed = make(chan struct{})
			e.mu.Unlock()
			return
		}
		var m Message
		if err := json.Unmarshal(body, &m); err != nil {
			e.t.Errorf("rpctest: the server sent a body that is not a JSON-RPC message: %v: %q", err, body)
			continue
		}
		e.dispatch(m)
		if m.Method != "" && m.ID == nil {
			e.mu.Lock()
			f := e.onNote[m.Method]
			e.mu.Unlock()
			if f != nil {
				f(m.Params)
			}
		}
	}
}

// OnNotification makes the fake editor react to each notification of
// method, in arrival order, before it reads the next message, as an
// editor's handler does (e.g. reading a file again on $/progress).
func (e *Editor) OnNotification(method string, f func(params json.RawMessage)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.onNote == nil {
		e.onNote = map[string]func(json.RawMessage){}
	}
	e.onNote[method] = f
}

func (e *Editor) dispatch(m Message) {
	e.mu.Lock()
	defer func() {
		close(e.changed)
		e.changed = make(chan struct{})
		e.mu.Unlock()
	}()
	switch {
	case m.Method != "" && m.ID != nil:
		e.requests = append(e.requests, m)
		h := e.handlers[m.Method]
		go e.answer(m, h)
	case m.Method != "":
		e.notes = append(e.notes, m)
	default:
		key := normID(m.ID)
		if ch, ok := e.pending[key]; ok && key != "null" {
			delete(e.pending, key)
			e.answered = append(e.answered, key)
			ch <- m
			return
		}
		e.orphans = append(e.orphans, m)
	}
}

// answer runs a handler off the read loop, as a real editor does.
func (e *Editor) answer(m Message, h Handler) {
	resp := map[string]any{"jsonrpc": "2.0", "id": m.ID}
	if h == nil {
		resp["error"] = RPCError{Code: -32601, Message: "the fake editor has no handler for " + m.Method}
	} else if res, err := h(m.Params); err != nil {
		var re *RPCError
		if !errors.As(err, &re) {
			re = &RPCError{Code: -32603, Message: err.Error()}
		}
		resp["error"] = re
	} else {
		if res == nil {
			res = json.RawMessage("null")
		}
		resp["result"] = res
	}
	body, err := json.Marshal(resp)
	if err != nil {
		e.t.Errorf("rpctest: marshal answer: %v", err)
		return
	}
	e.wmu.Lock()
	defer e.wmu.Unlock()
	_, _ = e.w.Write(append([]byte("Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"), body...))
}

// ReadFrame reads one LSP message body (Content-Length framing) from r.
func ReadFrame(r *bufio.Reader) ([]byte, error) {
	length := -1
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if length >= 0 {
				break
			}
			continue
		}
		if name, value, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil {
				return nil, fmt.Errorf("bad Content-Length from server: %q", line)
			}
			length = n
		}
	}
	body := make([]byte, length)
	_, err := io.ReadFull(r, body)
	return body, err
}

func normID(id json.RawMessage) string {
	s := strings.TrimSpace(string(id))
	if s == "" {
		return "null"
	}
	return s
}

type testWriter struct{ t testing.TB }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Logf("server stderr: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
