package registry

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/sys/unix"

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
		tr, err = transport.NewStreamableHTTP(s.cfg.URL, transport.WithHTTPHeaders(s.cfg.Headers),
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

// mcpConn is one connection to a server: for stdio, one process.
type mcpConn struct {
	server *mcpServer
	client *client.Client
	tr     transport.Interface
	// ctx ends when the connection is shut down.
	ctx    context.Context
	cancel context.CancelFunc
	nextID atomic.Int64

	// Stdio only: the process; exited, closed once the process has
	// exited (it is reaped only at shutdown); its stderr; wg tracks the
	// exit watcher.
	cmd    *exec.Cmd
	exited chan struct{}
	stderr *stderrLog
	wg     sync.WaitGroup

	// lostCh is closed when the transport reported the connection lost.
	lostCh   chan struct{}
	lostOnce sync.Once

	// mu guards progress: the live-output function of each call in
	// flight, by progress token.
	mu       sync.Mutex
	progress map[string]func(progressNote)

	closeOnce sync.Once
	closed    chan struct{}
	reason    string
}

// command makes the stdio server's process: its own process group, the
// configured working directory, the environment overlaid on qwen-ls's.
func (c *mcpConn) command(_ context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
	cmd := exec.Command(command, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = c.server.cfg.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = c.stderr.w
	c.cmd = cmd
	return cmd, nil
}

// watchExit closes c.exited when the server process exits. It waits with
// WNOWAIT, leaving the reaping to the transport's Close, so the process
// (and its group id) stays ours until shutdown.
func (c *mcpConn) watchExit() {
	c.exited = make(chan struct{})
	pid := c.cmd.Process.Pid
	// A pidfd pins this very process; without one (old kernels) the pid
	// is still ours, since nothing reaps it before shutdown.
	fd, fdErr := unix.PidfdOpen(pid, 0)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(c.exited)
		var info unix.Siginfo
		for {
			var err error
			if fdErr == nil {
				err = unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOWAIT, nil)
			} else {
				err = unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			}
			if err != unix.EINTR {
				break
			}
		}
		if fdErr == nil {
			unix.Close(fd)
		}
		c.server.goTracked(func() { c.server.lost(c, errProcessExited) })
	}()
}

var (
	errProcessExited  = errors.New("the server process exited")
	errConnectionLost = errors.New("the connection was lost")
)

// dead reports whether the connection can no longer carry a request.
func (c *mcpConn) dead() bool {
	for _, ch := range []chan struct{}{c.exited, c.lostCh, c.closed} {
		if ch == nil {
			continue
		}
		select {
		case <-ch:
			return true
		default:
		}
	}
	return false
}

// shutdown ends the connection once: the client closes (stdin first, so a
// stdio server may exit by itself), then the process group is stopped. It
// returns why the connection ended, worded for users: cause, or for a
// process that exited on its own, how it exited.
func (c *mcpConn) shutdown(cause error) string {
	c.closeOnce.Do(func() {
		exitedFirst := false
		if c.exited != nil && exiting(cause) {
			// A pipe that closed usually means the process is exiting;
			// give it a moment so the reason can say how.
			select {
			case <-c.exited:
				exitedFirst = true
			case <-time.After(exitNoticeWait):
			}
		}
		c.cancel()
		done := make(chan struct{})
		go func() {
			_ = c.client.Close()
			close(done)
		}()
		if c.exited != nil {
			select {
			case <-c.exited:
			case <-time.After(killGrace):
			}
			tools.TerminateGroup(c.cmd.Process.Pid)
		}
		<-done
		c.wg.Wait()
		if c.stderr != nil {
			c.stderr.finish()
		}
		c.reason = c.describeEnd(cause, exitedFirst)
		close(c.closed)
	})
	<-c.closed
	return c.reason
}

// exiting reports whether a connection failure looks like the other end
// going away: a closed pipe or stream, or the process's exit.
func exiting(cause error) bool {
	return errors.Is(cause, errProcessExited) || errors.Is(cause, transport.ErrTransportClosed) ||
		errors.Is(cause, io.EOF) || errors.Is(cause, syscall.EPIPE)
}

// describeEnd words why a connection ended.
func (c *mcpConn) describeEnd(cause error, exitedFirst bool) string {
	var reason string
	if exitedFirst && c.cmd != nil && c.cmd.ProcessState != nil {
		reason = "the server process " + exitText(c.cmd.ProcessState)
	} else if cause != nil {
		reason = errorText(cause)
	} else {
		reason = "the connection was closed"
	}
	if c.stderr != nil {
		if last := c.stderr.lastLine(); last != "" && (exitedFirst || cause != nil) {
			reason += " (its last stderr line: " + last + ")"
		}
	}
	return reason
}

// exitText says how a process ended: "exited with code 3", "was killed by
// signal SIGKILL".
func exitText(ps *os.ProcessState) string {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "was killed by signal " + unix.SignalName(ws.Signal())
	}
	return fmt.Sprintf("exited with code %d", ps.ExitCode())
}

// errorText words an error from the transport or the handshake.
func errorText(err error) string {
	var te *transport.Error
	if errors.As(err, &te) {
		err = te.Err
	}
	if errors.Is(err, transport.ErrTransportClosed) {
		return "the connection was closed"
	}
	return err.Error()
}

// markLost records that the transport reported the connection lost.
func (c *mcpConn) markLost() { c.lostOnce.Do(func() { close(c.lostCh) }) }

// rpcError is a JSON-RPC error answer: the server is there and answered.
type rpcError struct{ details *mcp.JSONRPCErrorDetails }

func (e *rpcError) Error() string {
	return fmt.Sprintf("error %d: %s", e.details.Code, e.details.Message)
}

func isRPCError(err error) bool {
	var re *rpcError
	return errors.As(err, &re)
}

// request sends one JSON-RPC request on the transport and returns the raw
// result. A JSON-RPC error answer is an *rpcError; when ctx ends first, the
// server is told with notifications/cancelled.
func (c *mcpConn) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := mcp.NewRequestId("qwen-ls-" + strconv.FormatInt(c.nextID.Add(1), 10))
	resp, err := c.tr.SendRequest(ctx, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: id, Method: method, Params: params,
	})
	if err != nil {
		if ctx.Err() != nil {
			c.cancelRequest(id, ctx.Err())
			return nil, ctx.Err()
		}
		return nil, err
	}
	if resp.Error != nil {
		return nil, &rpcError{resp.Error}
	}
	return resp.Result, nil
}

// cancelRequest sends notifications/cancelled for a request whose caller
// gave up, off the caller's path and best effort.
func (c *mcpConn) cancelRequest(id mcp.RequestId, why error) {
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: string(mcp.MethodNotificationCancelled),
		Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": why.Error()}},
	}}
	c.server.goTracked(func() {
		ctx, cancel := context.WithTimeout(c.ctx, cancelNotificationTimeout)
		defer cancel()
		_ = c.tr.SendNotification(ctx, n)
	})
}

// toolDef is one tool as tools/list describes it.
type toolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations struct {
		ReadOnlyHint *bool `json:"readOnlyHint"`
	} `json:"annotations"`
}

// listTools runs tools/list, following the pages.
func (c *mcpConn) listTools(ctx context.Context) ([]toolDef, error) {
	var all []toolDef
	cursor := ""
	seen := map[string]bool{}
	for {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		raw, err := c.request(ctx, string(mcp.MethodToolsList), params)
		if err != nil {
			return nil, err
		}
		var page struct {
			Tools      []toolDef `json:"tools"`
			NextCursor string    `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, fmt.Errorf("the tools/list answer is not valid: %w", err)
		}
		all = append(all, page.Tools...)
		if page.NextCursor == "" {
			return all, nil
		}
		if seen[page.NextCursor] {
			return nil, errors.New("the tools/list pages repeat a cursor")
		}
		seen[page.NextCursor] = true
		cursor = page.NextCursor
	}
}

// progressNote is one notifications/progress.
type progressNote struct {
	progress, total float64
	hasTotal        bool
	message         string
}

// notification handles the server's notifications: progress of calls in
// flight, and tool list changes.
func (c *mcpConn) notification(n mcp.JSONRPCNotification) {
	switch n.Method {
	case string(mcp.MethodNotificationProgress):
		f := n.Params.AdditionalFields
		token := fmt.Sprint(f["progressToken"])
		note := progressNote{}
		note.progress, _ = f["progress"].(float64)
		note.total, note.hasTotal = f["total"].(float64)
		note.message, _ = f["message"].(string)
		c.mu.Lock()
		out := c.progress[token]
		c.mu.Unlock()
		if out != nil {
			out(note)
		}
	case string(mcp.MethodNotificationToolsListChanged):
		c.server.goTracked(func() { c.server.relist(c) })
	}
}

// call runs tools/call for t and converts the answer (tools.md §4.3).
func (s *mcpServer) call(ctx context.Context, t *mcpTool, params map[string]any, onOutput func(tools.Output)) (tools.Result, error) {
	alias, name := s.cfg.Alias, t.remote
	if !s.host.life.enter() {
		return tools.Result{}, context.Canceled
	}
	defer s.host.life.leave()
	// The call also ends when the Sources close.
	parent := ctx
	ctx, cancelCall := context.WithCancel(ctx)
	defer cancelCall()
	defer context.AfterFunc(s.host.life.ctx, cancelCall)()
	cancelled := func() error {
		if parent.Err() != nil {
			return parent.Err()
		}
		return context.Canceled
	}

	c, err := s.ready(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, cancelled()
		}
		return tools.ErrorResult(tools.ErrorMCPTool, fmt.Sprintf("MCP server '%s' is not available: %v", alias, err)), nil
	}

	token := "qwen-ls-progress-" + strconv.FormatInt(c.nextID.Add(1), 10)
	if onOutput != nil {
		c.mu.Lock()
		c.progress[token] = func(n progressNote) { onOutput(tools.Output{Text: n.String()}) }
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			delete(c.progress, token)
			c.mu.Unlock()
		}()
	}
	if params == nil {
		params = map[string]any{}
	}
	callCtx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	raw, err := c.request(callCtx, string(mcp.MethodToolsCall), map[string]any{
		"name":      name,
		"arguments": params,
		"_meta":     map[string]any{"progressToken": token},
	})
	switch {
	case ctx.Err() != nil || s.host.life.ctx.Err() != nil:
		// Cancelled, even if an answer made it meanwhile.
		return tools.Result{}, cancelled()
	case err == nil:
	case callCtx.Err() != nil:
		return tools.ErrorResult(tools.ErrorMCPTool, fmt.Sprintf("The MCP tool %q did not answer within %d ms.", name, s.cfg.Timeout.Milliseconds())), nil
	case isRPCError(err):
		var re *rpcError
		errors.As(err, &re)
		detail, _ := json.Marshal(re.details)
		return tools.Result{
			Error:   tools.Errorf(tools.ErrorMCPTool, "The MCP tool %q failed for the arguments %s: %s", name, compactJSON(params), detail),
			Display: tools.Markdown(fmt.Sprintf("MCP tool %q failed: %s", name, re.details.Message)),
		}, nil
	default:
		if s.host.closing() {
			return tools.Result{}, cancelled()
		}
		// The server may have acted on the request, so it is not sent
		// again; the next call reconnects.
		reason := s.lost(c, err)
		return tools.ErrorResult(tools.ErrorMCPTool, fmt.Sprintf("MCP server '%s' connection lost during the call: %s", alias, reason)), nil
	}
	return convertCallResult(s.host.env, alias, name, params, raw), nil
}

// String is the live output line: "Progress: <progress>[/<total>] <message>".
func (n progressNote) String() string {
	s := "Progress: " + strconv.FormatFloat(n.progress, 'f', -1, 64)
	if n.hasTotal {
		s += "/" + strconv.FormatFloat(n.total, 'f', -1, 64)
	}
	if n.message != "" {
		s += " " + n.message
	}
	return s
}

// convertCallResult turns a tools/call result into a tool result (tools.md
// §4.3, Content).
func convertCallResult(env *tools.Env, alias, name string, params map[string]any, raw json.RawMessage) tools.Result {
	var res struct {
		Content json.RawMessage `json:"content"`
		IsError bool            `json:"isError"`
	}
	_ = json.Unmarshal(raw, &res)
	if res.IsError {
		content := "null"
		var b bytes.Buffer
		if len(res.Content) > 0 && json.Compact(&b, res.Content) == nil {
			content = b.String()
		}
		return tools.Result{
			Error:   tools.Errorf(tools.ErrorMCPTool, "The MCP tool %q returned an error for the arguments %s: %s", name, compactJSON(params), content),
			Display: tools.Markdown(fmt.Sprintf("MCP tool %q returned an error.", name)),
		}
	}
	var items []json.RawMessage
	if json.Unmarshal(res.Content, &items) != nil || items == nil {
		return tools.TextResult(noContentText, tools.Markdown(noContentText))
	}
	var parts []tools.Part
	var notes []string
	text := func(s string) {
		t, note := truncateOutput(env, "mcp__"+alias+"__"+name, s)
		parts = append(parts, tools.TextPart(t))
		if note != "" {
			notes = append(notes, note)
		}
	}
	media := func(line, mime, data string) {
		parts = append(parts, tools.TextPart(line), tools.Part{InlineData: &tools.InlineData{MimeType: mime, Data: data}})
	}
	for _, it := range items {
		var c struct {
			Type     string  `json:"type"`
			Text     *string `json:"text"`
			Data     string  `json:"data"`
			MimeType string  `json:"mimeType"`
			URI      string  `json:"uri"`
			Name     string  `json:"name"`
			Title    string  `json:"title"`
			Resource *struct {
				MimeType string  `json:"mimeType"`
				Text     *string `json:"text"`
				Blob     *string `json:"blob"`
			} `json:"resource"`
		}
		if json.Unmarshal(it, &c) != nil {
			continue
		}
		switch c.Type {
		case "text":
			if c.Text != nil {
				text(*c.Text)
			}
		case "image", "audio":
			media(fmt.Sprintf("[The tool %q returned %s data (%s).]", name, c.Type, c.MimeType), c.MimeType, c.Data)
		case "resource":
			switch r := c.Resource; {
			case r == nil:
			case r.Text != nil:
				text(*r.Text)
			case r.Blob != nil:
				mime := cmp.Or(r.MimeType, defaultMimeType)
				media(fmt.Sprintf("[The tool %q returned an embedded resource (%s).]", name, mime), mime, *r.Blob)
			}
		case "resource_link":
			parts = append(parts, tools.TextPart(fmt.Sprintf("Linked resource %q: %s", cmp.Or(c.Title, c.Name), c.URI)))
		}
	}
	lines := make([]string, 0, len(parts)+len(notes))
	for _, p := range parts {
		if p.InlineData != nil {
			lines = append(lines, "["+p.InlineData.MimeType+"]")
		} else {
			lines = append(lines, p.Text)
		}
	}
	lines = append(lines, notes...)
	return tools.Result{LLMContent: parts, Display: tools.Markdown(strings.Join(lines, "\n"))}
}

// stderrLog sends a stdio server's stderr to the log, a line at a time,
// and keeps the last line for error messages.
type stderrLog struct {
	server *mcpServer
	// r and w are the pipe the server writes to; done is closed when r
	// has been read to its end.
	r, w *os.File
	done chan struct{}

	mu      sync.Mutex
	partial []byte
	last    string
}

// read starts reading the pipe, once the process has been started (or
// failed to start) and the pipe's write end is no longer needed here.
func (w *stderrLog) read() {
	w.w.Close()
	go func() {
		defer close(w.done)
		_, _ = io.Copy(w, w.r)
		w.r.Close()
	}()
}

// finish waits a moment for the pipe's end (a process the group kill missed
// may hold it), then stops reading.
func (w *stderrLog) finish() {
	select {
	case <-w.done:
	case <-time.After(exitNoticeWait):
		w.r.Close()
		<-w.done
	}
}

func (w *stderrLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.partial = append(w.partial, p...)
	var lines []string
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimRight(string(w.partial[:i]), "\r")
		w.partial = w.partial[i+1:]
		if strings.TrimSpace(line) != "" {
			lines = append(lines, line)
			w.last = line
		}
	}
	if len(w.partial) > 64<<10 { // a line without end: log what there is
		lines = append(lines, string(w.partial))
		w.partial = nil
	}
	w.mu.Unlock()
	for _, l := range lines {
		w.server.host.logf(LogDebug, "MCP server '%s' stderr: %s", w.server.cfg.Alias, l)
	}
	return len(p), nil
}

func (w *stderrLog) lastLine() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if l := strings.TrimSpace(string(w.partial)); l != "" {
		return l
	}
	return w.last
}

// mcpTool is one tool of an MCP server. The registry gives it its
// registered name (tools.md §4.4) through withName.
type mcpTool struct {
	tools.Base
	server   *mcpServer
	remote   string
	readOnly bool

	// mu guards named: this tool under each registered name it has had,
	// kept so that its compiled schema is reused across rebuilds.
	mu    sync.Mutex
	named map[string]*mcpTool
}

func newMCPTool(s *mcpServer, d toolDef) *mcpTool {
	schema := d.InputSchema
	if !isJSONObject(schema) {
		schema = json.RawMessage(defaultParameters)
	}
	readOnly := d.Annotations.ReadOnlyHint != nil && *d.Annotations.ReadOnlyHint
	kind := tools.KindOther
	if readOnly {
		kind = tools.KindRead
	}
	return &mcpTool{
		Base: tools.Base{Spec: tools.Spec{
			Name:          sanitizeName(d.Name),
			DisplayName:   fmt.Sprintf("%s (%s MCP Server)", d.Name, s.cfg.Alias),
			Description:   d.Description,
			Schema:        schema,
			Kind:          kind,
			StreamsOutput: true,
			Source:        tools.MCPSource(s.cfg.Alias),
		}},
		server:   s,
		remote:   d.Name,
		readOnly: readOnly,
	}
}

func (t *mcpTool) remoteName() string { return t.remote }

func (t *mcpTool) withName(name string) tools.Tool {
	if name == t.Spec.Name {
		return t
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if n, ok := t.named[name]; ok {
		return n
	}
	spec := t.Spec
	spec.Name = name
	n := &mcpTool{Base: tools.Base{Spec: spec}, server: t.server, remote: t.remote, readOnly: t.readOnly}
	if t.named == nil {
		t.named = map[string]*mcpTool{}
	}
	t.named[name] = n
	return n
}

// Describe is the arguments as compact JSON.
func (t *mcpTool) Describe(params map[string]any) string { return compactJSON(params) }

// ShouldConfirm asks unless the server is trusted or the tool says it only
// reads.
func (t *mcpTool) ShouldConfirm(context.Context, *tools.Call, map[string]any) (*tools.Confirmation, *tools.ToolError) {
	if t.server.cfg.Trust || t.readOnly {
		return nil, nil
	}
	alias := t.server.cfg.Alias
	return &tools.Confirmation{
		Title: fmt.Sprintf("Confirm MCP Tool: %s (%s)", t.remote, alias),
		Details: &tools.MCPConfirmation{
			ServerName:      alias,
			ToolName:        t.remote,
			ToolDisplayName: t.DisplayName(),
			PermissionRules: []string{"mcp__" + alias + "__" + t.remote},
		},
	}, nil
}

func (t *mcpTool) Execute(ctx context.Context, _ *tools.Call, params map[string]any, onOutput func(tools.Output)) (tools.Result, error) {
	return t.server.call(ctx, t, params, onOutput)
}

// ServerStatus is one configured MCP server as qwen/listTools reports it
// (protocol.md §4).
type ServerStatus struct {
	Alias  string `json:"alias"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}
