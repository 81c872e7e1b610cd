package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/qwen-ls/qwen-ls/session"
)

// Plain LSP clients (protocol.md §7): prompts through
// workspace/executeCommand, activity through $/progress and
// window/logMessage.

func (s *Server) plainMethods() map[string]Method {
	return map[string]Method{
		// Async: a prompt waits on the model and may ask the user.
		"workspace/executeCommand": {Async: true, Handle: s.executeCommand},
	}
}

// turnProgress tracks the $/progress of running turns, so tool calls can
// be reported as they start.
type turnProgress struct {
	mu     sync.Mutex
	bySess map[string]*progress
}

func (t *turnProgress) set(sessionID string, p *progress) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bySess == nil {
		t.bySess = map[string]*progress{}
	}
	if p == nil {
		delete(t.bySess, sessionID)
	} else {
		t.bySess[sessionID] = p
	}
}

func (t *turnProgress) get(sessionID string) *progress {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bySess[sessionID]
}

func (s *Server) executeCommand(ctx context.Context, req *Request) (any, error) {
	var p struct {
		Command   string            `json:"command"`
		Arguments []json.RawMessage `json:"arguments"`
	}
	if err := unmarshalParams(req, &p); err != nil {
		return nil, err
	}
	arg := func(i int) string {
		if i >= len(p.Arguments) {
			return ""
		}
		var str string
		json.Unmarshal(p.Arguments[i], &str)
		return str
	}
	switch p.Command {
	case "qwen-ls.prompt":
		text := arg(0)
		if strings.TrimSpace(text) == "" {
			return nil, Error(CodeInvalidParams, "qwen-ls.prompt needs the prompt text as its first argument")
		}
		sid, err := s.sessionOrImplicit(arg(1))
		if err != nil {
			return nil, err
		}
		sess, err := s.sessions.Session(sid)
		if err != nil {
			return nil, sessionError(err)
		}
		prog := s.serverProgress(ctx, "qwen: working")
		s.turns.set(sid, prog)
		res, err := sess.Prompt(ctx, []session.ContentBlock{{Type: "text", Text: text}})
		s.turns.set(sid, nil)
		prog.end(res.StopReason)
		if err != nil {
			return nil, sessionError(err)
		}
		s.log.Infof("qwen: turn ended (%s)", res.StopReason)
		return map[string]any{"text": res.LastText, "stopReason": res.StopReason, "sessionId": sid}, nil
	case "qwen-ls.checkSetup":
		return s.checkSetup(ctx, req)
	case "qwen-ls.cancel":
		sid := arg(0)
		if sid == "" {
			s.mu.Lock()
			sid = s.implicitSession
			s.mu.Unlock()
		}
		if sid != "" {
			if err := s.sessions.Cancel(sid); err != nil {
				return nil, sessionError(err)
			}
		}
		return nil, nil
	}
	return nil, Error(CodeInvalidParams, "unknown command %q: qwen-ls offers qwen-ls.prompt, qwen-ls.cancel and qwen-ls.checkSetup", p.Command)
}

// sessionOrImplicit returns sid, or the connection's implicit session,
// created on first use.
func (s *Server) sessionOrImplicit(sid string) (string, error) {
	if sid != "" {
		return sid, nil
	}
	// The session is created outside s.mu: creating it reads the
	// negotiated capabilities, which take s.mu.
	s.implicitMu.Lock()
	defer s.implicitMu.Unlock()
	s.mu.Lock()
	id := s.implicitSession
	s.mu.Unlock()
	if id != "" {
		return id, nil
	}
	info, err := s.sessions.NewSession("", "")
	if err != nil {
		return "", sessionError(err)
	}
	s.mu.Lock()
	s.implicitSession = info.ID
	s.mu.Unlock()
	return info.ID, nil
}

// serverProgress starts server-initiated progress when the client
// supports it (window/workDoneProgress/create).
func (s *Server) serverProgress(ctx context.Context, title string) *progress {
	if !s.Caps().WorkDoneProgress {
		return &progress{}
	}
	token := fmt.Sprintf("qwen-ls-progress-%d", s.host.seq.Add(1))
	if err := s.host.call(ctx, "window/workDoneProgress/create", map[string]any{"token": token}, nil); err != nil {
		return &progress{}
	}
	raw, _ := json.Marshal(token)
	return s.beginProgress(raw, title)
}

func (p *progress) report(msg string) {
	p.send(map[string]any{"kind": "report", "message": msg})
}
