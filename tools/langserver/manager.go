package langserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Options configure a Manager. The zero value works: built-in servers,
// plain process start, files read from disk.
type Options struct {
	// Specs are the servers, in order of preference; nil means
	// Builtin(). Specs(extra) puts the lsp settings' first.
	Specs []Spec
	// Start starts a server's command, whose argv, Dir, Env and standard
	// streams are set; nil starts it plainly, in a process group of its
	// own. The wiring puts it under the sandbox here.
	Start func(cmd *exec.Cmd) (Process, error)
	// Env is the servers' environment before Spec.Env; nil means this
	// process's.
	Env []string
	// Text gives the text of a file asked about that was never opened
	// with DidOpen (the overlay's, or the disk's); nil reads the disk.
	Text func(path string) (string, error)
	// IdleTimeout stops a server that had no call for that long; 0 means
	// 5 minutes, a negative value never.
	IdleTimeout time.Duration
	// StartTimeout bounds a server's start and initialize; 0 means 60 s.
	StartTimeout time.Duration
	// StopGrace is how long a server has to shut down and exit before it
	// is killed; 0 means 2 s.
	StopGrace time.Duration
	// MaxRestarts is how many times in a row a server that crashed is
	// started again for the same root (a crash after it answered a call
	// starts the count again); 0 means 3, a negative value none.
	MaxRestarts int
	// Logf logs what the servers report as errors and what ends them;
	// nil discards it.
	Logf func(format string, args ...any)
}

// Manager starts language servers on demand, one per server and root,
// and feeds them the documents' text. Its methods are safe for
// concurrent use.
type Manager struct {
	opts    Options
	env     []string
	startFn func(cmd *exec.Cmd) (Process, error)

	mu     sync.Mutex
	closed bool
	slots  map[slotKey]*slot
	// docs are the documents the servers see, by path; versions the last
	// version given to each path, kept after close so that versions only
	// grow.
	docs     map[string]*document
	versions map[string]int32
	// live counts servers from start to the end of their process.
	live sync.WaitGroup
}

type slotKey struct{ name, root string }

// slot is one server and root: the running server, if any, and its
// history.
type slot struct {
	spec Spec
	root string
	cur  *Server
	// starting is closed when a start under way has ended (startErr set).
	starting chan struct{}
	startErr error
	crashes  int
	// lastCrash is the report of the last crash.
	lastCrash string
}

// document is a file's text as the servers get it.
type document struct {
	text    string
	version int32
	// editor says the text came from DidOpen/DidChange; otherwise from
	// Options.Text, and Wrote refreshes it.
	editor bool
}

// New makes a Manager; nothing starts until For.
func New(opts Options) *Manager {
	if opts.Specs == nil {
		opts.Specs = Builtin()
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = 5 * time.Minute
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 60 * time.Second
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = 2 * time.Second
	}
	if opts.MaxRestarts == 0 {
		opts.MaxRestarts = 3
	}
	m := &Manager{opts: opts, env: opts.Env, startFn: opts.Start,
		slots: map[slotKey]*slot{}, docs: map[string]*document{}, versions: map[string]int32{}}
	if m.env == nil {
		m.env = os.Environ()
	}
	if m.startFn == nil {
		m.startFn = startPlain
	}
	return m
}

func (m *Manager) logf(format string, args ...any) {
	if m.opts.Logf != nil {
		m.opts.Logf(format, args...)
	}
}

// NoServerError is For's error when no server can serve a file: none
// covers it, or none of those that do is installed (Missing).
type NoServerError struct {
	Path    string
	Missing []Spec
}

func (e *NoServerError) Error() string {
	if len(e.Missing) == 0 {
		return fmt.Sprintf("no language server covers %s", filepath.Base(e.Path))
	}
	names := make([]string, len(e.Missing))
	for i, s := range e.Missing {
		names[i] = s.Name + " (" + s.Command[0] + ")"
	}
	return fmt.Sprintf("no language server for %s is installed: %s not found on PATH", filepath.Base(e.Path), strings.Join(names, ", "))
}

// errClosed is the error of For after Close.
var errClosed = errors.New("language servers: closed")

// For returns the server covering path (a clean absolute path inside the
// clean absolute root), starting it for root, or the folder within root
// its root markers point to, if it is not running. Callers that ask at
// the same time share one start. The document is opened in the server
// if it is not yet, with the text of DidOpen or else Options.Text.
func (m *Manager) For(ctx context.Context, root, path string) (*Server, error) {
	root, path = filepath.Clean(root), filepath.Clean(path)
	if !within(root, path) {
		return nil, fmt.Errorf("language server for %s: not inside %s", path, root)
	}
	spec, err := m.pick(path)
	if err != nil {
		return nil, err
	}
	s, err := m.server(ctx, spec, rootFor(spec, root, path))
	if err != nil {
		return nil, err
	}
	if err := m.ensureOpen(s, path); err != nil {
		return nil, err
	}
	s.touch()
	return s, nil
}

// pick is the first spec that covers path and is installed.
func (m *Manager) pick(path string) (Spec, error) {
	var missing []Spec
	for _, s := range m.opts.Specs {
		if _, ok := s.Covers(path); !ok {
			continue
		}
		if _, err := s.LookPath(); err != nil {
			missing = append(missing, s)
			continue
		}
		return s, nil
	}
	return Spec{}, &NoServerError{Path: path, Missing: missing}
}

// server returns the running server of spec for root, starting it once
// for all who ask.
func (m *Manager) server(ctx context.Context, spec Spec, root string) (*Server, error) {
	key := slotKey{spec.Name, root}
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil, errClosed
		}
		sl := m.slots[key]
		if sl == nil {
			sl = &slot{spec: spec, root: root}
			m.slots[key] = sl
		}
		if sl.cur != nil {
			s := sl.cur
			m.mu.Unlock()
			select {
			case <-s.exited:
				// Dead, and not yet recorded: once it is, start anew
				// (or give up after too many crashes).
				<-s.gone
				continue
			default:
			}
			return s, nil
		}
		if ch := sl.starting; ch != nil {
			m.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			m.mu.Lock()
			err, cur := sl.startErr, sl.cur
			m.mu.Unlock()
			if cur != nil {
				return cur, nil
			}
			if err != nil {
				return nil, err
			}
			continue
		}
		if max := m.opts.MaxRestarts; sl.crashes > 0 && (max < 0 || sl.crashes > max) {
			m.mu.Unlock()
			return nil, fmt.Errorf("language server %s crashed %d times in %s and is not started again; the last time: %s",
				spec.Name, sl.crashes, root, sl.lastCrash)
		}
		ch := make(chan struct{})
		sl.starting, sl.startErr = ch, nil
		m.live.Add(1)
		m.mu.Unlock()
		// The start is not the first caller's alone: it goes on when that
		// caller gives up, for the others and the next.
		go m.start(sl, ch)
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// start starts sl's server, makes it current and sends it the documents
// the editor has open that it covers.
func (m *Manager) start(sl *slot, ch chan struct{}) {
	s, err := m.startServer(sl.spec, sl.root)
	m.mu.Lock()
	defer close(ch)
	defer m.mu.Unlock()
	sl.starting = nil
	if err != nil {
		sl.crashes++
		sl.lastCrash = err.Error()
		sl.startErr = err
		m.logf("%v", err)
		if s == nil {
			// No process: nothing will call ended.
			m.live.Done()
		}
		return
	}
	if m.closed {
		sl.startErr = errClosed
		go func() {
			s.stop(m.opts.StopGrace)
		}()
		return
	}
	sl.cur = s
	for path, d := range m.docs {
		if d.editor && covers(s, path) {
			m.syncLocked(s, path, d)
		}
	}
	s.armIdle(m.opts.IdleTimeout)
}

// ended is called once a server's process has ended, on purpose or not.
func (m *Manager) ended(s *Server) {
	defer m.live.Done()
	s.mu.Lock()
	stopping := s.stopping
	s.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	sl := m.slots[slotKey{s.spec.Name, s.root}]
	if sl == nil || sl.cur != s {
		return
	}
	sl.cur = nil
	if !stopping {
		if s.served.Load() {
			// It worked for a while: count its crashes afresh, so that
			// only a server that keeps failing is given up.
			sl.crashes = 0
		}
		sl.crashes++
		sl.lastCrash = s.crashReport()
		m.logf("%s", sl.lastCrash)
	}
}

// stopIdle stops s, which has had no call for the idle time.
func (m *Manager) stopIdle(s *Server) {
	m.mu.Lock()
	if sl := m.slots[slotKey{s.spec.Name, s.root}]; sl != nil && sl.cur == s {
		sl.cur = nil
	}
	m.mu.Unlock()
	s.stop(m.opts.StopGrace)
}

// Servers are the servers running now, by name and root.
func (m *Manager) Servers() []*Server {
	m.mu.Lock()
	var out []*Server
	for _, sl := range m.slots {
		if sl.cur != nil {
			out = append(out, sl.cur)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b *Server) int {
		if c := strings.Compare(a.spec.Name, b.spec.Name); c != 0 {
			return c
		}
		return strings.Compare(a.root, b.root)
	})
	return out
}

// Close stops every server (shutdown, exit, then kill after the grace)
// and returns once their processes have ended. For fails afterwards.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	var running []*Server
	for _, sl := range m.slots {
		if sl.cur != nil {
			running = append(running, sl.cur)
			sl.cur = nil
		}
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range running {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.stop(m.opts.StopGrace)
		}()
	}
	wg.Wait()
	m.live.Wait()
	return nil
}
