package rpc

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/qwen-ls/qwen-ls/session"
)

// ACP's session/load and session/list over the stored sessions
// (protocol.md §9). initialize advertises loadSession.

// acpLoadSession makes the session's cwd and additionalDirectories roots,
// starts the client's MCP servers as session/new does, reads the session
// back (from this process or its file), and replays it as session/update
// notifications before answering.
func (s *Server) acpLoadSession(ctx context.Context, req *Request) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
		acpFolders
	}
	if err := unmarshalParams(req, &p); err != nil {
		return nil, err
	}
	servers, err := p.check()
	if err != nil {
		return nil, err
	}
	if p.Cwd != "" {
		if err := s.acpRoot(filepath.Clean(p.Cwd)); err != nil {
			return nil, err
		}
	}
	lr, err := s.sessions.Load(p.SessionID)
	if err != nil {
		return nil, sessionError(err)
	}
	if p.Cwd == "" && len(s.ws.Roots.List()) == 0 {
		// Without a cwd the session's own folder becomes the root.
		if err := s.acpRoot(lr.Session.Cwd()); err != nil {
			return nil, err
		}
	}
	s.addExtras(p.acpFolders, servers)
	lr.Session.Replay()
	return map[string]any{"modes": acpModes(lr.Session.Mode()), "configOptions": s.acpConfigOptions(lr.Session)}, nil
}

// acpListSessions is session/list: the stored sessions of the roots, or
// those whose cwd is the cwd given. Listing a folder does not make it a
// root: the agent can reach a folder only once a session is opened there.
func (s *Server) acpListSessions(ctx context.Context, req *Request) (any, error) {
	var p struct {
		Cwd string `json:"cwd"`
	}
	if err := optionalParams(req, &p); err != nil {
		return nil, err
	}
	if p.Cwd == "" {
		return s.listSessions(ctx, req)
	}
	if !filepath.IsAbs(p.Cwd) {
		return nil, Error(CodeInvalidParams, "cwd must be an absolute path, got %q", p.Cwd)
	}
	return sessionList(s.sessions.ListIn(p.Cwd)), nil
}

// acpUpdate turns updates that ACP has no kind for into ones it has: a
// context compression is reported as a thought.
func acpUpdate(u session.Update) session.Update {
	if u.Kind != session.UpdateCompressed || u.TokensBefore == nil || u.TokensAfter == nil {
		return u
	}
	text := fmt.Sprintf("[The conversation was compressed to fit the model's context: about %d tokens before, %d after.]\n", *u.TokensBefore, *u.TokensAfter)
	return session.Update{Kind: session.UpdateAgentThought, Content: &session.ContentBlock{Type: "text", Text: text}}
}
