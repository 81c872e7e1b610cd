package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/procgroup"
	"github.com/qwen-ls/qwen-ls/tools/sandbox"
)

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
	cmd *exec.Cmd
	// sup is the supervisor of a stdio server, nil for the other transports.
	sup    *sandbox.Supervised
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
// configured working directory, the environment overlaid on qwen-ls's
// without its secrets (tools.ChildEnv). The overlay is the server's own
// "env" setting, so a variable named there reaches it even when it holds
// a secret: "env": {"GITHUB_TOKEN": "$GITHUB_TOKEN"} passes it on.
func (c *mcpConn) command(_ context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
	cmd := exec.Command(command, args...)
	cmd.Env = append(childEnv(c.server.host.env), env...)
	cmd.Dir = c.server.cfg.Dir
	procgroup.Prepare(cmd)
	cmd.Stderr = c.stderr.w
	// The supervisor kills the server and all it started if qwen-ls dies.
	sup, err := sandbox.Wrap(cmd, sandbox.Policy{Mode: sandbox.None})
	if err != nil {
		return nil, err
	}
	c.cmd, c.sup = cmd, sup
	return cmd, nil
}

// childEnv is the environment of a process the registry starts: qwen-ls's
// own without its secrets, as the settings of env name them.
func childEnv(env *tools.Env) []string {
	if env == nil || env.Workspace == nil {
		return tools.ChildEnv(nil)
	}
	return tools.ChildEnv(env.Settings())
}

// watchExit puts the started server process in its group (a job on
// Windows) and closes c.exited when it exits. The wait leaves the reaping
// to the transport's Close, so the process (and its group id) stays ours
// until shutdown.
func (c *mcpConn) watchExit() {
	c.exited = make(chan struct{})
	pid := c.cmd.Process.Pid
	if err := procgroup.Adopt(pid); err != nil {
		c.server.host.logf(LogDebug, "MCP server '%s': its process could not be given a group of its own: %v", c.server.cfg.Alias, err)
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(c.exited)
		procgroup.WaitExit(pid)
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
			procgroup.Terminate(c.cmd.Process.Pid)
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
		return "was killed by signal " + procgroup.SignalName(ws.Signal())
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
