package rpc

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/qwen-ls/qwen-ls/session"
	"github.com/qwen-ls/qwen-ls/tools"
)

// host is the session.Host of one connection.
type host struct {
	s *Server
}

// Update implements session.Host: rich clients get qwen/sessionUpdate.
func (h *host) Update(sessionID string, u session.Update) {
	if !h.s.Caps().SessionUpdates {
		return
	}
	_ = h.s.conn.Notify(context.Background(), "qwen/sessionUpdate", map[string]any{"sessionId": sessionID, "update": u})
}

// CanAsk implements session.Host. Editor review and permission prompts
// are not wired yet, so calls that need the user are denied with a clear
// message.
func (h *host) CanAsk() bool { return false }

func (h *host) RequestPermission(ctx context.Context, sessionID string, req session.PermissionRequest) (session.PermissionAnswer, error) {
	return session.PermissionAnswer{}, fmt.Errorf("this editor cannot be asked for permission yet")
}

func (h *host) ReviewEdit(ctx context.Context, sessionID string, req session.EditReview) (session.EditAnswer, error) {
	return session.EditAnswer{}, fmt.Errorf("this editor cannot review edits yet")
}

func (h *host) ApplyToBuffer(ctx context.Context, path string, version int32, newText string) error {
	return &tools.BufferEditError{Reason: "applying edits to open buffers is not available yet"}
}

func (h *host) CanApplyToBuffers() bool { return false }

// progress reports a long request with $/progress when the client gave a
// work-done token (protocol.md §5).
type progress struct {
	s     *Server
	token json.RawMessage
}

func (s *Server) beginProgress(token json.RawMessage, title string) *progress {
	if len(token) == 0 || string(token) == "null" {
		return &progress{}
	}
	p := &progress{s: s, token: token}
	p.send(map[string]any{"kind": "begin", "title": title, "cancellable": true})
	return p
}

func (p *progress) report(msg string) {
	p.send(map[string]any{"kind": "report", "message": msg})
}

func (p *progress) end(msg string) {
	p.send(map[string]any{"kind": "end", "message": msg})
}

func (p *progress) send(value map[string]any) {
	if p.s == nil {
		return
	}
	_ = p.s.conn.Notify(context.Background(), "$/progress", map[string]any{"token": p.token, "value": value})
}
