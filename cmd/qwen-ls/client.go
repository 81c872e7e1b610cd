package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
)

// client is the small editor that demo and exec use to drive a real
// server over JSON-RPC.
type client struct {
	conn *jsonrpc2.Conn

	mu sync.Mutex
	// onUpdate receives qwen/sessionUpdate params in arrival order.
	onUpdate func(sessionID string, update json.RawMessage)
	// onRequest answers server→editor requests; nil answers -32601.
	onRequest func(method string, params json.RawMessage) (any, error)
	// onMessage receives the text of window/showMessage (the folder-trust
	// notice, broken settings files).
	onMessage func(text string)
}

type rwc struct {
	io.Reader
	io.WriteCloser
}

func newClient(ctx context.Context, r io.Reader, w io.WriteCloser) *client {
	c := &client{}
	stream := jsonrpc2.NewBufferedStream(rwc{r, w}, jsonrpc2.VSCodeObjectCodec{})
	// The handler is synchronous so updates print in order; requests
	// from the server are answered on their own goroutine.
	c.conn = jsonrpc2.NewConn(ctx, stream, jsonrpc2.HandlerWithError(c.handle))
	return c
}

func (c *client) handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	var params json.RawMessage
	if req.Params != nil {
		params = *req.Params
	}
	if req.Notif {
		if req.Method == "window/showMessage" {
			var p struct {
				Message string `json:"message"`
			}
			c.mu.Lock()
			f := c.onMessage
			c.mu.Unlock()
			if f != nil && json.Unmarshal(params, &p) == nil {
				f(p.Message)
			}
		}
		if req.Method == "qwen/sessionUpdate" {
			var p struct {
				SessionID string          `json:"sessionId"`
				Update    json.RawMessage `json:"update"`
			}
			if json.Unmarshal(params, &p) == nil {
				c.mu.Lock()
				f := c.onUpdate
				c.mu.Unlock()
				if f != nil {
					f(p.SessionID, p.Update)
				}
			}
		}
		return nil, nil
	}
	c.mu.Lock()
	f := c.onRequest
	c.mu.Unlock()
	if f == nil {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "not handled: " + req.Method}
	}
	return f(req.Method, params)
}

func (c *client) call(ctx context.Context, method string, params, result any) error {
	if err := c.conn.Call(ctx, method, params, result); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}

// start initializes the server with root and options, and opens a session.
func (c *client) start(ctx context.Context, root string, initOptions map[string]any) (string, error) {
	c.mu.Lock()
	canReview := c.onRequest != nil
	c.mu.Unlock()
	params := map[string]any{
		"processId": nil,
		"rootUri":   "file://" + root,
		"capabilities": map[string]any{"experimental": map[string]any{"qwen": map[string]any{
			"sessionUpdates": true, "proposeEdit": canReview, "requestPermission": canReview,
		}}},
	}
	if initOptions != nil {
		params["initializationOptions"] = initOptions
	}
	var initRes json.RawMessage
	if err := c.call(ctx, "initialize", params, &initRes); err != nil {
		return "", err
	}
	if err := c.conn.Notify(ctx, "initialized", map[string]any{}); err != nil {
		return "", err
	}
	var ns struct {
		SessionID string `json:"sessionId"`
	}
	if err := c.call(ctx, "qwen/newSession", map[string]any{"cwd": root}, &ns); err != nil {
		return "", err
	}
	return ns.SessionID, nil
}

// stop sends shutdown and exit.
func (c *client) stop(ctx context.Context) {
	_ = c.conn.Call(ctx, "shutdown", nil, nil)
	_ = c.conn.Notify(ctx, "exit", nil)
	_ = c.conn.Close()
}
