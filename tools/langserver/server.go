package langserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// Server is one running language server for one root. It is valid until
// it stops (idle, crash, Manager.Close); calls on a stopped server fail,
// and Manager.For then gives a new one.
type Server struct {
	m    *Manager
	spec Spec
	root string
	proc Process
	// pid is the started process's (the sandbox supervisor's when
	// Options.Start wraps it), for tests.
	pid      int
	conn     *jsonrpc2.Conn
	q        *sendQueue
	stderr   *tail
	encoding string
	nextID   atomic.Uint64
	// served is set once a call has succeeded: its crash then starts a
	// new count of restarts.
	served atomic.Bool
	// exited is closed once the process has ended, exitErr set before;
	// gone once the manager has also recorded the end.
	exited  chan struct{}
	gone    chan struct{}
	exitErr error

	mu sync.Mutex
	// open maps the path of each document open in the server to what
	// was sent of it.
	open map[string]*sentDoc
	// diags maps a document's path (docKey) to what was last published.
	diags map[string]*published
	// pubSeq counts publishDiagnostics; changed is closed and replaced
	// at each.
	pubSeq  uint64
	changed chan struct{}
	// busy counts calls in flight, which keep the server from idling.
	busy     int
	lastUse  time.Time
	stopping bool
	idle     *time.Timer
}

// Name is the server's name (Spec.Name).
func (s *Server) Name() string { return s.spec.Name }

// Root is the folder the server was started for.
func (s *Server) Root() string { return s.root }

// PositionEncoding is the position encoding the server chose at
// initialize: "utf-8", "utf-16" (the default when it named none) or
// "utf-32". Positions in Call's params and results are in it.
func (s *Server) PositionEncoding() string { return s.encoding }

// errStopped is the error of a call on a server that was stopped on
// purpose (idle, Close).
var errStopped = errors.New("the language server was stopped")

// Call sends the request method with params (any value that marshals to
// JSON) and returns the server's result as it came. When ctx ends first,
// the request is cancelled ($/cancelRequest) and ctx's error returned. A
// server that dies meanwhile is reported with the end of its stderr.
func (s *Server) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if err := s.use(); err != nil {
		return nil, err
	}
	defer s.unuse()
	res, err := s.call(ctx, method, params)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", s.spec.Name, method, err)
	}
	s.served.Store(true)
	return res, nil
}

func (s *Server) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := jsonrpc2.ID{Num: s.nextID.Add(1)}
	type dispatched struct {
		w   jsonrpc2.Waiter
		err error
	}
	ch := make(chan dispatched, 1)
	s.q.push(func() {
		w, err := s.conn.DispatchCall(context.Background(), method, params, jsonrpc2.PickID(id))
		ch <- dispatched{w, err}
	})
	cancel := func() {
		s.notify("$/cancelRequest", map[string]any{"id": id.Num})
	}
	var d dispatched
	select {
	case d = <-ch:
	case <-ctx.Done():
		cancel()
		return nil, ctx.Err()
	case <-s.exited:
		return nil, s.deadErr()
	}
	if d.err != nil {
		return nil, s.connErr(d.err)
	}
	var res json.RawMessage
	err := d.w.Wait(ctx, &res)
	if ctx.Err() != nil && err == ctx.Err() {
		cancel()
		return nil, err
	}
	if err != nil {
		return nil, s.connErr(err)
	}
	return res, nil
}

// notify queues the notification method.
func (s *Server) notify(method string, params any) {
	s.q.push(func() {
		_ = s.conn.Notify(context.Background(), method, params)
	})
}

// connErr turns a failure of the connection into the server's own
// story: stopped, or dead with its stderr.
func (s *Server) connErr(err error) error {
	if !errors.Is(err, jsonrpc2.ErrClosed) && !errors.Is(err, os.ErrClosed) {
		return err
	}
	select {
	case <-s.exited:
	case <-time.After(time.Second):
	}
	return s.deadErr()
}

// deadErr describes a server that has ended or is ending.
func (s *Server) deadErr() error {
	s.mu.Lock()
	stopping := s.stopping
	s.mu.Unlock()
	if stopping {
		return errStopped
	}
	return errors.New(s.crashReport())
}

// crashReport says how the server ended, with the end of its stderr.
func (s *Server) crashReport() string {
	how := "ended"
	select {
	case <-s.exited:
		if s.exitErr != nil {
			how = "exited (" + s.exitErr.Error() + ")"
		} else {
			how = "exited"
		}
		// The last words come just before the end.
		select {
		case <-s.stderr.done:
		case <-time.After(200 * time.Millisecond):
		}
	default:
	}
	msg := fmt.Sprintf("language server %s %s", s.spec.Name, how)
	if t := s.stderr.String(); t != "" {
		msg += "; its stderr ended with:\n" + t
	}
	return msg
}

// use marks a call in flight, or fails on a server that is stopping.
func (s *Server) use() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return errStopped
	}
	select {
	case <-s.exited:
		return errors.New(s.crashReport())
	default:
	}
	s.busy++
	s.lastUse = time.Now()
	return nil
}

func (s *Server) unuse() {
	s.mu.Lock()
	s.busy--
	s.lastUse = time.Now()
	s.mu.Unlock()
}

func (s *Server) touch() {
	s.mu.Lock()
	s.lastUse = time.Now()
	s.mu.Unlock()
}

// startServer starts spec's server for root and initializes it. On
// failure the server is returned too when its process was started (and
// has ended by then).
func (m *Manager) startServer(spec Spec, root string) (*Server, error) {
	exe, err := spec.LookPath()
	if err != nil {
		return nil, fmt.Errorf("language server %s: %w", spec.Name, err)
	}
	p, err := newPipes()
	if err != nil {
		return nil, fmt.Errorf("language server %s: %w", spec.Name, err)
	}
	cmd := exec.Command(exe, spec.Command[1:]...)
	cmd.Dir = root
	cmd.Env = append(append([]string(nil), m.env...), spec.Env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.stdinR, p.stdoutW, p.stderrW
	proc, err := m.startFn(cmd)
	if err != nil {
		p.closeAll()
		return nil, fmt.Errorf("start language server %s: %w", spec.Name, err)
	}
	p.closeChild()
	s := &Server{
		m: m, spec: spec, root: root, proc: proc,
		q:       newSendQueue(),
		stderr:  newTail(),
		exited:  make(chan struct{}),
		gone:    make(chan struct{}),
		open:    map[string]*sentDoc{},
		diags:   map[string]*published{},
		changed: make(chan struct{}),
		lastUse: time.Now(),
	}
	if cmd.Process != nil {
		s.pid = cmd.Process.Pid
	}
	go s.stderr.readFrom(p.stderrR)
	stream := jsonrpc2.NewBufferedStream(stdio{r: p.stdoutR, w: p.stdinW}, jsonrpc2.VSCodeObjectCodec{})
	s.conn = jsonrpc2.NewConn(context.Background(), stream, handler{s}, jsonrpc2.SetLogger(logger{m}))
	go s.q.run()
	go func() {
		s.exitErr = proc.Wait()
		close(s.exited)
		_ = s.conn.Close()
		s.q.close()
		m.ended(s)
		close(s.gone)
	}()

	ctx, cancel := context.WithTimeout(context.Background(), m.opts.StartTimeout)
	defer cancel()
	res, err := s.call(ctx, "initialize", initializeParams(spec, root))
	if err != nil {
		var answered *jsonrpc2.Error
		switch {
		case errors.As(err, &answered):
			err = fmt.Errorf("language server %s refused initialize: %s", spec.Name, answered.Message)
		case ctx.Err() == nil:
			// The server is ending (a write to it can fail before its
			// exit is seen): its exit status and last words say why.
			select {
			case <-s.exited:
			case <-time.After(time.Second):
			}
			err = s.deadErr()
		default:
			err = fmt.Errorf("language server %s did not answer initialize within %v", spec.Name, m.opts.StartTimeout)
		}
		s.kill()
		return s, err
	}
	var init struct {
		Capabilities struct {
			PositionEncoding string `json:"positionEncoding"`
		} `json:"capabilities"`
	}
	_ = json.Unmarshal(res, &init)
	s.encoding = init.Capabilities.PositionEncoding
	if s.encoding == "" {
		s.encoding = "utf-16"
	}
	s.notify("initialized", struct{}{})
	if spec.Settings != nil {
		s.notify("workspace/didChangeConfiguration", map[string]any{"settings": spec.Settings})
	}
	return s, nil
}

// kill ends a server that failed to start, and waits for it.
func (s *Server) kill() {
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	_ = s.proc.Kill()
	<-s.exited
	_ = s.proc.Kill()
}

// stop asks the server to shut down and exit, and kills it when it has
// not after grace; it returns once the process has ended.
func (s *Server) stop(grace time.Duration) {
	s.mu.Lock()
	s.stopping = true
	if s.idle != nil {
		s.idle.Stop()
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if _, err := s.call(ctx, "shutdown", nil); err == nil {
		s.notify("exit", nil)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-s.exited:
	case <-t.C:
	}
	_ = s.proc.Kill()
	<-s.exited
	_ = s.proc.Kill()
}

// armIdle starts the idle clock: the server stops once no call has been
// made for d.
func (s *Server) armIdle(d time.Duration) {
	if d <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idle = time.AfterFunc(d, func() { s.idleCheck(d) })
}

func (s *Server) idleCheck(d time.Duration) {
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return
	}
	if left := d - time.Since(s.lastUse); s.busy > 0 || left > 0 {
		if left <= 0 {
			left = d
		}
		s.idle.Reset(left)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.m.stopIdle(s)
}

// logger sends jsonrpc2's complaints to Options.Logf.
type logger struct{ m *Manager }

func (l logger) Printf(format string, v ...any) { l.m.logf(strings.TrimSuffix(format, "\n"), v...) }

// sendQueue writes to a server in order from one goroutine, so that no
// caller (the editor's read path feeding didChange above all) ever waits
// on a server that does not read, and replies to the server never wait
// behind the read loop.
type sendQueue struct {
	mu     sync.Mutex
	items  []func()
	closed bool
	wake   chan struct{}
	done   chan struct{}
}

func newSendQueue() *sendQueue {
	return &sendQueue{wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (q *sendQueue) push(f func()) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		// Run it anyway: on a closed connection it fails at once, which
		// is the answer its caller waits for.
		go f()
		return
	}
	q.items = append(q.items, f)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *sendQueue) run() {
	for {
		q.mu.Lock()
		items := q.items
		q.items = nil
		closed := q.closed
		q.mu.Unlock()
		for _, f := range items {
			f()
		}
		if closed {
			close(q.done)
			return
		}
		<-q.wake
	}
}

func (q *sendQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}
