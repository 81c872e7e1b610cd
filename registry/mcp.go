package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/qwen-ls/qwen-ls/tools"
)

// MCP servers (tools.md §4.3). The mcp-go client does the transports and the
// initialize handshake, pinned to the last protocol revision that has one
// (roots/list and list_changed belong to it); tools/list and tools/call go
// through the client's transport as plain JSON-RPC with ids of our own, so
// that input schemas stay verbatim and a result whose content the library
// would refuse still reaches the content rules of §4.3.

// Server statuses, as qwen/listTools reports them.
const (
	StatusDisconnected = "disconnected"
	StatusConnecting   = "connecting"
	StatusConnected    = "connected"
)

const (
	defaultCallTimeout        = 600 * time.Second
	defaultStdioDiscovery     = 30 * time.Second
	defaultRemoteDiscovery    = 5 * time.Second
	defaultMimeType           = "application/octet-stream"
	noContentText             = "[The MCP server's answer has no valid content list.]"
	transportStdio            = "stdio"
	transportSSE              = "sse"
	transportHTTP             = "http"
	mcpCommandServer          = "mcp"
	exitNoticeWait            = time.Second
	cancelNotificationTimeout = 5 * time.Second
)

// mcpServer runs one configured MCP server: its connection, its status and
// its tools. Calls reconnect a lost server first.
type mcpServer struct {
	cfg  serverConfig
	host *Sources

	// ctx ends when the server is stopped; every connection lives in it.
	ctx    context.Context
	cancel context.CancelFunc
	// wg tracks the goroutines the server started.
	wg sync.WaitGroup
	// first is closed when the first connection attempt is over.
	first chan struct{}
	// relistMu serialises the tools/list that list_changed asks for.
	relistMu sync.Mutex
	// pubMu orders the server's changes to the registry, so that tools
	// published late never follow the removal by stop. It is taken
	// before mu, and held while calling the registry (mu never is).
	pubMu sync.Mutex

	// mu guards the fields below.
	mu      sync.Mutex
	status  string
	lastErr string
	conn    *mcpConn
	attempt *connectAttempt
	stopped bool
}

// connectAttempt is one connection attempt in flight, shared by every
// caller that needs the server meanwhile.
type connectAttempt struct {
	done chan struct{}
	conn *mcpConn
	err  error
}

var errServerStopped = errors.New("the server was stopped")

func newMCPServer(cfg serverConfig, host *Sources) *mcpServer {
	ctx, cancel := context.WithCancel(context.Background())
	return &mcpServer{cfg: cfg, host: host, ctx: ctx, cancel: cancel,
		first: make(chan struct{}), status: StatusDisconnected}
}

// start makes the first connection attempt in the background; done runs
// when it is over, with a line saying how it went.
func (s *mcpServer) start(done func(string)) {
	s.mu.Lock()
	a := s.attemptLocked()
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		<-a.done
		close(s.first)
		if a.err != nil {
			done(fmt.Sprintf("MCP server '%s': %v", s.cfg.Alias, a.err))
			return
		}
		done(fmt.Sprintf("MCP server '%s': connected", s.cfg.Alias))
	}()
}

// attemptLocked returns the connection attempt in flight, starting one if
// there is none; s.mu must be held.
func (s *mcpServer) attemptLocked() *connectAttempt {
	if s.attempt != nil {
		return s.attempt
	}
	a := &connectAttempt{done: make(chan struct{})}
	s.attempt = a
	if s.stopped {
		a.err = errServerStopped
		s.attempt = nil
		close(a.done)
		return a
	}
	s.status = StatusConnecting
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		conn, defs, err := s.connect()
		var ts []tools.Tool
		if err == nil {
			ts = s.toolsOf(defs)
		}
		var drop *mcpConn
		s.pubMu.Lock()
		s.mu.Lock()
		s.attempt = nil
		publish := false
		switch {
		case s.stopped:
			drop, err = conn, errServerStopped
		case err != nil:
			s.status, s.lastErr = StatusDisconnected, err.Error()
		case len(ts) == 0:
			drop, err, publish = conn, errors.New("the server offers no tools"), true
			s.status, s.lastErr = StatusDisconnected, err.Error()
		default:
			s.conn, s.status, s.lastErr, publish = conn, StatusConnected, "", true
			a.conn = conn
		}
		s.mu.Unlock()
		if publish {
			s.host.reg.SetMCP(s.cfg.Alias, ts)
		}
		s.pubMu.Unlock()
		if drop != nil {
			drop.shutdown(nil)
		}
		switch {
		case errors.Is(err, errServerStopped):
		case err != nil:
			s.host.logf(LogWarning, "MCP server '%s' is not available: %v", s.cfg.Alias, err)
		default:
			s.host.logf(LogInfo, "MCP server '%s' connected.", s.cfg.Alias)
		}
		a.err = err
		close(a.done)
	}()
	return a
}

// ready returns a live connection, connecting first when there is none.
func (s *mcpServer) ready(ctx context.Context) (*mcpConn, error) {
	s.mu.Lock()
	c := s.conn
	if c != nil && !c.dead() {
		s.mu.Unlock()
		return c, nil
	}
	if c != nil {
		// The process exited or the transport went away, and the
		// watcher has not dealt with it yet: do it here, once.
		s.mu.Unlock()
		s.lost(c, errConnectionLost)
		s.mu.Lock()
	}
	a := s.attemptLocked()
	s.mu.Unlock()
	select {
	case <-a.done:
		return a.conn, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// stop ends the server: its tools leave the registry, its connection and
// process end, and stop waits for its goroutines.
func (s *mcpServer) stop() {
	s.pubMu.Lock()
	s.mu.Lock()
	s.stopped = true
	conn := s.conn
	s.conn, s.status = nil, StatusDisconnected
	s.mu.Unlock()
	s.host.reg.SetMCP(s.cfg.Alias, nil)
	s.pubMu.Unlock()
	s.cancel()
	if conn != nil {
		conn.shutdown(nil)
	}
	s.wg.Wait()
}

// goTracked runs f in a goroutine that stop waits for, unless the server
// has stopped.
func (s *mcpServer) goTracked(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// lost handles a connection that broke (its process exited, or its
// transport failed): the server becomes disconnected, and the loss is
// reported once. It returns why the connection was lost.
func (s *mcpServer) lost(c *mcpConn, cause error) string {
	s.mu.Lock()
	current := s.conn == c
	if current {
		s.conn, s.status = nil, StatusDisconnected
	}
	s.mu.Unlock()
	reason := c.shutdown(cause)
	if current {
		s.mu.Lock()
		if s.status == StatusDisconnected && !s.stopped {
			s.lastErr = reason
		}
		s.mu.Unlock()
		s.host.logf(LogWarning, "MCP server '%s' disconnected: %s", s.cfg.Alias, reason)
	}
	return reason
}

// toolsOf makes the tools of defs that the filters keep; of two tools with
// one name the first is kept.
func (s *mcpServer) toolsOf(defs []toolDef) []tools.Tool {
	var ts []tools.Tool
	seen := map[string]bool{}
	for _, d := range defs {
		if d.Name == "" || seen[d.Name] || !s.cfg.wantsTool(d.Name) {
			continue
		}
		seen[d.Name] = true
		ts = append(ts, newMCPTool(s, d))
	}
	return ts
}

// relist lists the tools again after notifications/tools/list_changed.
func (s *mcpServer) relist(c *mcpConn) {
	s.relistMu.Lock()
	defer s.relistMu.Unlock()
	ctx, cancel := context.WithTimeout(c.ctx, s.cfg.DiscoveryTimeout)
	defer cancel()
	defs, err := c.listTools(ctx)
	if err != nil {
		if c.ctx.Err() == nil && ctx.Err() == nil && !isRPCError(err) {
			s.lost(c, err)
			return
		}
		s.host.logf(LogWarning, "MCP server '%s' changed its tools, but listing them failed: %v", s.cfg.Alias, err)
		return
	}
	ts := s.toolsOf(defs)
	n := len(ts)
	s.pubMu.Lock()
	s.mu.Lock()
	current := !s.stopped && s.conn == c
	if current && n == 0 {
		s.conn, s.status, s.lastErr = nil, StatusDisconnected, "the server offers no tools"
	}
	s.mu.Unlock()
	if current {
		s.host.reg.SetMCP(s.cfg.Alias, ts)
	}
	s.pubMu.Unlock()
	if !current {
		return
	}
	if n == 0 {
		c.shutdown(nil)
		s.host.logf(LogInfo, "MCP server '%s' offers no tools any more and was disconnected.", s.cfg.Alias)
		return
	}
	s.host.logf(LogInfo, "MCP server '%s' changed its tools; it now has %d.", s.cfg.Alias, n)
}

// statusNow returns the status and the last error.
func (s *mcpServer) statusNow() (string, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status, s.lastErr
}

// connect starts a connection: the transport (and the process, for stdio),
// the initialize handshake and tools/list, all within the discovery
// timeout.
func (s *mcpServer) connect() (*mcpConn, []toolDef, error) {
	if s.cfg.Invalid != "" {
		return nil, nil, errors.New(s.cfg.Invalid)
	}
	timeout := s.cfg.DiscoveryTimeout
	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	defer cancel()
	c, err := s.dial()
	if err != nil {
		return nil, nil, err
	}
	// The connection outlives this attempt only if the attempt succeeds.
	stopAfter := context.AfterFunc(ctx, c.cancel)
	fail := func(err error) (*mcpConn, []toolDef, error) {
		stopAfter()
		cause := err
		if ctx.Err() == context.DeadlineExceeded {
			cause = fmt.Errorf("no answer within %d ms (discoveryTimeoutMs)", timeout.Milliseconds())
		}
		return nil, nil, errors.New(c.shutdown(cause))
	}

	err = c.client.Start(c.ctx)
	if c.sup != nil {
		// The tree's end is tied to its supervisor's, started or not.
		c.sup.Started()
	}
	if c.stderr != nil {
		c.stderr.read()
	}
	if err != nil {
		return fail(err)
	}
	if c.cmd != nil && c.cmd.Process != nil {
		c.watchExit()
	}
	if s.cfg.Transport == transportSSE {
		c.client.OnConnectionLost(func(err error) {
			c.markLost()
			s.goTracked(func() { s.lost(c, fmt.Errorf("the event stream ended: %w", err)) })
		})
	}
	_, err = c.client.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION,
		ClientInfo:      mcp.Implementation{Name: "qwen-ls", Version: s.host.version},
		Capabilities: mcp.ClientCapabilities{Roots: &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{ListChanged: true}},
	}})
	if err != nil {
		return fail(err)
	}
	defs, err := c.listTools(ctx)
	if err != nil {
		return fail(err)
	}
	if !stopAfter() {
		return fail(ctx.Err())
	}
	return c, defs, nil
}

// dial makes the client and its transport, not yet started.
func (s *mcpServer) dial() (*mcpConn, error) {
	ctx, cancel := context.WithCancel(s.ctx)
	c := &mcpConn{server: s, ctx: ctx, cancel: cancel, progress: map[string]func(progressNote){},
		closed: make(chan struct{}), lostCh: make(chan struct{})}
	quiet := slog.New(slog.DiscardHandler)
	var tr transport.Interface
	var err error
	switch s.cfg.Transport {
	case transportStdio:
		if s.cfg.Dir != "" {
			if fi, statErr := os.Stat(s.cfg.Dir); statErr != nil || !fi.IsDir() {
				cancel()
				return nil, fmt.Errorf("its working directory %s does not exist", s.cfg.Dir)
			}
		}
		// The server's stderr goes to a pipe of our own, read to its
		// end, so that the last line it wrote before exiting is known.
		r, w, pipeErr := os.Pipe()
		if pipeErr != nil {
			cancel()
			return nil, pipeErr
		}
		c.stderr = &stderrLog{server: s, r: r, w: w, done: make(chan struct{})}
		tr = transport.NewStdioWithOptions(s.cfg.Command, s.cfg.Env, s.cfg.Args,
			transport.WithCommandFunc(c.command),
			transport.WithCommandLogger(quiet))
	case transportSSE:
		tr, err = transport.NewSSE(s.cfg.URL, transport.WithHeaders(s.cfg.Headers), transport.WithSSELogger(quiet))
	case transportHTTP:
		// The standalone GET stream carries list_changed from servers on
		// protocol versions before 2026-07-28, which most still speak.
		tr, err = transport.NewStreamableHTTP(s.cfg.URL, transport.WithHTTPHeaders(s.cfg.Headers),
			//lint:ignore SA1019 see above
			transport.WithContinuousListening(), transport.WithHTTPLogger(quiet))
	default:
		err = fmt.Errorf("unknown transport %q", s.cfg.Transport)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	c.tr = tr
	c.client = client.NewClient(tr,
		client.WithRootsHandler(rootsHandler{s.host}),
		client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	c.client.OnNotification(c.notification)
	return c, nil
}

// rootsHandler answers roots/list with the workspace roots.
type rootsHandler struct{ host *Sources }

func (h rootsHandler) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	roots := []mcp.Root{}
	for _, p := range h.host.roots() {
		u := url.URL{Scheme: "file", Path: filepath.ToSlash(p)}
		roots = append(roots, mcp.Root{URI: u.String(), Name: filepath.Base(p)})
	}
	return &mcp.ListRootsResult{Roots: roots}, nil
}

// ServerStatus is one configured MCP server as qwen/listTools reports it
// (protocol.md §4).
type ServerStatus struct {
	Alias  string `json:"alias"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}
