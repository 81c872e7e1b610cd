package registry

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/qwen-ls/qwen-ls/tools"
)

// LogLevel is how important a log line is. The values are LSP's
// MessageType numbers, so window/logMessage can carry them as they are.
type LogLevel int

// The log levels.
const (
	LogError   LogLevel = 1
	LogWarning LogLevel = 2
	LogInfo    LogLevel = 3
	LogDebug   LogLevel = 4
)

// ProgressKind is the kind of a $/progress value.
type ProgressKind string

// The $/progress kinds.
const (
	ProgressBegin  ProgressKind = "begin"
	ProgressReport ProgressKind = "report"
	ProgressEnd    ProgressKind = "end"
)

// Progress is one step of a discovery round, for $/progress. A round is one
// pass over the sources that had to start: the first one after Start, then
// one per settings change that starts anything. Each round begins, reports
// once per source that finished its attempt, and ends; the rpc layer gives
// each round its own token.
type Progress struct {
	Round   int
	Kind    ProgressKind
	Title   string
	Message string
	// Percentage is how many of the round's sources have finished.
	Percentage int
}

// progressTitle is the title of every round.
const progressTitle = "qwen: discovering tools"

// Options configures Sources.
type Options struct {
	// Registry receives the discovered and MCP tools. Sources also takes
	// over its OnWarning, to log naming clashes.
	Registry *Registry
	// Env gives the workspace (settings, roots) and the §2.8 output
	// folder. Its Workspace is required.
	Env *tools.Env
	// Version is qwen-ls's version, which the MCP client reports.
	Version string
	// Progress, when set, receives the discovery rounds, in order within
	// a round.
	Progress func(Progress)
	// Log, when set, receives what the user should be able to read in the
	// log (window/logMessage for info and above; MCP servers' stderr comes
	// at debug).
	//
	// Both are called from Sources' own goroutines; they must not block
	// for long nor call back into Sources.
	Log func(LogLevel, string)
}

// Sources owns the tool sources besides the built-ins: command discovery
// (tools.md §4.2) and the MCP servers (§4.3). It starts them, in parallel,
// when Start is called (after the editor's initialized), keeps the registry
// up to date as they come and go, follows the settings, and stops every
// process it started on Close.
type Sources struct {
	reg      *Registry
	env      *tools.Env
	version  string
	progress func(Progress)
	log      func(LogLevel, string)

	// ctx ends at Close; it stops the reload loop.
	ctx    context.Context
	cancel context.CancelFunc
	// life tracks the tool calls in flight, which Close waits for.
	life     *lifetime
	kickCh   chan struct{}
	loopDone chan struct{}

	// mu guards the fields below.
	mu      sync.Mutex
	started bool
	closed  bool
	servers map[string]*mcpServer
	disc    *discoveryRun
	rounds  int
	// pending is closed when a settings change not yet looked at has been
	// applied; applying, when the change being applied has been.
	pending  chan struct{}
	applying chan struct{}

	closeOnce sync.Once
}

// discoveryRun is the current discovery: its settings and its run.
type discoveryRun struct {
	cfg    discoveryConfig
	cancel context.CancelFunc
	// done is closed when the run is over (or there was nothing to run).
	done chan struct{}
}

// NewSources returns the sources for a workspace; nothing starts before
// Start.
func NewSources(opts Options) *Sources {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sources{
		reg:      opts.Registry,
		env:      opts.Env,
		version:  opts.Version,
		progress: opts.Progress,
		log:      opts.Log,
		ctx:      ctx,
		cancel:   cancel,
		life:     newLifetime(),
		kickCh:   make(chan struct{}, 1),
		loopDone: make(chan struct{}),
		servers:  map[string]*mcpServer{},
	}
	s.reg.OnWarning(func(w string) { s.logf(LogWarning, "%s", w) })
	return s
}

// Start starts every configured source in the background and follows the
// settings from then on. Call it once the editor has sent initialized,
// never before the initialize answer; calls after the first do nothing.
func (s *Sources) Start() {
	s.mu.Lock()
	if s.started || s.closed {
		s.mu.Unlock()
		return
	}
	s.started = true
	s.mu.Unlock()
	s.env.Workspace.Settings.OnChange(s.kick)
	go s.loop()
	s.kick()
}

// WaitFirstAttempt returns once every configured source has finished its
// first attempt (each bounded by its own timeout), including the sources a
// settings change has just added, or when ctx ends. The first model request
// of a session waits on it. Before Start and after Close it returns at
// once.
func (s *Sources) WaitFirstAttempt(ctx context.Context) error {
	for {
		s.mu.Lock()
		if !s.started || s.closed {
			s.mu.Unlock()
			return nil
		}
		var wait []chan struct{}
		again := true
		switch {
		case s.pending != nil:
			wait = append(wait, s.pending)
		case s.applying != nil:
			wait = append(wait, s.applying)
		default:
			again = false
			for _, srv := range s.servers {
				wait = append(wait, srv.first)
			}
			if s.disc != nil {
				wait = append(wait, s.disc.done)
			}
		}
		s.mu.Unlock()
		for _, ch := range wait {
			select {
			case <-ch:
			case <-ctx.Done():
				return ctx.Err()
			case <-s.ctx.Done():
				return nil
			}
		}
		if !again {
			return nil
		}
	}
}

// Servers returns every configured MCP server (after mcp.allowed and
// mcp.excluded) with its status and last error, by alias.
func (s *Sources) Servers() []ServerStatus {
	s.mu.Lock()
	servers := make([]*mcpServer, 0, len(s.servers))
	for _, srv := range s.servers {
		servers = append(servers, srv)
	}
	s.mu.Unlock()
	out := make([]ServerStatus, 0, len(servers))
	for _, srv := range servers {
		status, err := srv.statusNow()
		out = append(out, ServerStatus{Alias: srv.cfg.Alias, Status: status, Error: err})
	}
	slices.SortFunc(out, func(a, b ServerStatus) int { return strings.Compare(a.Alias, b.Alias) })
	return out
}

// RootsChanged tells the connected MCP servers that the workspace roots
// changed (notifications/roots/list_changed), and applies what depends on
// the primary root (where discovery and stdio servers run).
func (s *Sources) RootsChanged() {
	s.mu.Lock()
	servers := make([]*mcpServer, 0, len(s.servers))
	for _, srv := range s.servers {
		servers = append(servers, srv)
	}
	s.mu.Unlock()
	for _, srv := range servers {
		srv.goTracked(func() {
			srv.mu.Lock()
			c := srv.conn
			srv.mu.Unlock()
			if c == nil {
				return
			}
			ctx, cancel := context.WithTimeout(c.ctx, cancelNotificationTimeout)
			defer cancel()
			_ = c.client.RootListChanges(ctx)
		})
	}
	s.kick()
}

// Close stops every source: MCP server processes and the discovery run are
// stopped (their process groups killed), calls in flight end as cancelled,
// and Close returns once all of it is over. The registry keeps the
// discovered tools, which no longer run.
func (s *Sources) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		started := s.started
		s.mu.Unlock()
		s.cancel()
		if started {
			<-s.loopDone
		}
		s.mu.Lock()
		servers := make([]*mcpServer, 0, len(s.servers))
		for _, srv := range s.servers {
			servers = append(servers, srv)
		}
		disc := s.disc
		s.mu.Unlock()
		// Calls in flight end first, as cancelled, then the processes.
		s.life.cancel()
		stopAll(servers)
		if disc != nil {
			disc.cancel()
			<-disc.done
		}
		s.life.close()
	})
}

// closing reports whether Close has begun.
func (s *Sources) closing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// kick asks the loop to apply the settings again.
func (s *Sources) kick() {
	s.mu.Lock()
	if !s.started || s.closed {
		s.mu.Unlock()
		return
	}
	if s.pending == nil {
		s.pending = make(chan struct{})
	}
	s.mu.Unlock()
	select {
	case s.kickCh <- struct{}{}:
	default:
	}
}

// loop applies the settings each time kick asks, one change at a time.
func (s *Sources) loop() {
	defer close(s.loopDone)
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.kickCh:
		}
		s.mu.Lock()
		s.applying, s.pending = s.pending, nil
		s.mu.Unlock()
		s.apply()
		s.mu.Lock()
		if s.applying != nil {
			close(s.applying)
			s.applying = nil
		}
		s.mu.Unlock()
	}
}

// apply brings the running sources in line with the settings: servers
// removed or changed are stopped, new or changed ones started, and
// discovery runs again when its settings changed.
func (s *Sources) apply() {
	settings := s.env.Workspace.Settings
	primary := s.env.Workspace.Roots.Primary()
	cfgs := readServerConfigs(settings, primary)
	dcfg := readDiscoveryConfig(settings, primary)

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	var stops []*mcpServer
	for alias, srv := range s.servers {
		if c, ok := cfgs[alias]; !ok || !reflect.DeepEqual(c, srv.cfg) {
			stops = append(stops, srv)
			delete(s.servers, alias)
		}
	}
	var starts []serverConfig
	for alias, c := range cfgs {
		if _, ok := s.servers[alias]; !ok {
			starts = append(starts, c)
		}
	}
	rediscover := s.disc == nil || s.disc.cfg != dcfg
	s.mu.Unlock()

	stopAll(stops)
	slices.SortFunc(starts, func(a, b serverConfig) int { return strings.Compare(a.Alias, b.Alias) })
	n := len(starts)
	if rediscover && dcfg.Discovery != "" && dcfg.Call != "" {
		n++
	}
	r := s.newRound(n)
	for _, c := range starts {
		srv := newMCPServer(c, s)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		s.servers[c.Alias] = srv
		s.mu.Unlock()
		srv.start(r.finish)
	}
	if rediscover {
		s.rediscover(dcfg, r)
	}
}

// stopAll stops servers in parallel and waits for them.
func stopAll(servers []*mcpServer) {
	var wg sync.WaitGroup
	for _, srv := range servers {
		wg.Go(srv.stop)
	}
	wg.Wait()
}

// rediscover replaces the discovery run: the previous one is stopped, and
// the new one's result replaces every discovered tool.
func (s *Sources) rediscover(cfg discoveryConfig, r *round) {
	ctx, cancel := context.WithCancel(s.ctx)
	run := &discoveryRun{cfg: cfg, cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	prev := s.disc
	s.disc = run
	s.mu.Unlock()
	if prev != nil {
		prev.cancel()
		<-prev.done
	}
	switch {
	case cfg.Discovery == "":
		s.reg.SetDiscovered(nil)
		close(run.done)
		return
	case cfg.Call == "":
		s.reg.SetDiscovered(nil)
		s.logf(LogWarning, "A tool discovery command is set but no call command (tools.toolCallCommand), so no discovered tool could run; none is registered.")
		close(run.done)
		return
	}
	go func() {
		defer close(run.done)
		decls, warnings, err := runDiscovery(ctx, cfg)
		if ctx.Err() != nil {
			r.finish("tool discovery: stopped")
			return
		}
		if err != nil {
			s.reg.SetDiscovered(nil)
			s.logf(LogWarning, "%v", err)
			r.finish("tool discovery: failed")
			return
		}
		builtin := map[string]bool{}
		for _, n := range s.reg.BuiltinNames() {
			builtin[n] = true
		}
		runner := &callRunner{call: cfg.Call, dir: cfg.Dir, timeout: cfg.Timeout, env: s.env, life: s.life}
		ts, more := discoveredTools(decls, builtin, cfg, runner)
		for _, w := range append(warnings, more...) {
			s.logf(LogWarning, "%s", w)
		}
		s.reg.SetDiscovered(ts)
		s.logf(LogInfo, "Tool discovery found %d tools.", len(ts))
		r.finish(fmt.Sprintf("tool discovery: %d tools", len(ts)))
	}()
}

// logf sends a line to the log, if there is one.
func (s *Sources) logf(level LogLevel, format string, args ...any) {
	if s.log != nil {
		s.log(level, fmt.Sprintf(format, args...))
	}
}

// roots returns the workspace roots, for roots/list.
func (s *Sources) roots() []string { return s.env.Workspace.Roots.List() }

// round counts the sources of one discovery round as they finish.
type round struct {
	s     *Sources
	id    int
	total int

	// mu guards finished and orders the round's $/progress values.
	mu       sync.Mutex
	finished int
}

// newRound begins a round of total sources; a round of none reports
// nothing.
func (s *Sources) newRound(total int) *round {
	s.mu.Lock()
	s.rounds++
	r := &round{s: s, id: s.rounds, total: total}
	s.mu.Unlock()
	if total > 0 {
		r.emit(Progress{Kind: ProgressBegin, Title: progressTitle,
			Message: fmt.Sprintf("starting %d tool sources", total)})
	}
	return r
}

// finish records that one source finished its attempt; msg says how.
func (r *round) finish(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished >= r.total {
		return
	}
	r.finished++
	r.emit(Progress{Kind: ProgressReport, Message: msg, Percentage: r.finished * 100 / r.total})
	if r.finished == r.total {
		r.emit(Progress{Kind: ProgressEnd, Message: "tool discovery finished"})
	}
}

func (r *round) emit(p Progress) {
	if r.s.progress != nil {
		p.Round = r.id
		r.s.progress(p)
	}
}
