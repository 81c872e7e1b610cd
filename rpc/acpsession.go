package rpc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/qwen-ls/qwen-ls/session"
)

// ACP's session lifecycle over the stored sessions (protocol.md §9):
// session/load, session/resume, session/list, session/close and
// session/delete. initialize advertises loadSession and
// sessionCapabilities. A session id that is neither in this process nor
// stored is ACP's -32002 (resource not found), on which clients such as
// acpx fall back to session/new.

// acpLoadSession makes the session's cwd and additionalDirectories roots,
// starts the client's MCP servers as session/new does, reads the session
// back (from this process or its file), and replays it as session/update
// notifications before answering.
func (s *Server) acpLoadSession(ctx context.Context, req *request) (any, error) {
	return s.acpReopen(req, true)
}

// acpResumeSession is session/load without the replay.
func (s *Server) acpResumeSession(ctx context.Context, req *request) (any, error) {
	return s.acpReopen(req, false)
}

func (s *Server) acpReopen(req *request, replay bool) (any, error) {
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
		return nil, acpSessionError(err)
	}
	if p.Cwd == "" && len(s.ws.Roots.List()) == 0 {
		// Without a cwd the session's own folder becomes the root.
		if err := s.acpRoot(lr.Session.Cwd()); err != nil {
			return nil, err
		}
	}
	s.addExtras(p.acpFolders, servers)
	if replay {
		lr.Session.Replay()
	}
	if lr.Session.Title() != "" {
		s.acpSessionInfo(lr.Session)
	}
	return map[string]any{"modes": acpModes(lr.Session.Mode()), "configOptions": s.acpConfigOptions(lr.Session)}, nil
}

// acpSessionError is sessionError with ACP's code for an unknown session.
func acpSessionError(err error) error {
	if errors.Is(err, session.ErrUnknownSession) {
		return rpcError(acpNotFound, "%s", err.Error())
	}
	return sessionError(err)
}

// acpCloseSession is session/close: the session's turn is cancelled, its
// processes stopped, its file released, and it is forgotten here (it can
// be loaded again).
func (s *Server) acpCloseSession(ctx context.Context, req *request) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if err := unmarshalParams(req, &p); err != nil {
		return nil, err
	}
	if err := s.endSession(p.SessionID); err != nil {
		return nil, acpSessionError(err)
	}
	return map[string]any{}, nil
}

// endSession closes a session of this process (session/close and
// qwen/closeSession).
func (s *Server) endSession(id string) error {
	if err := s.sessions.CloseSession(id); err != nil {
		return err
	}
	s.env.Processes.KillSession(id)
	return nil
}

// acpDeleteSession is session/delete: a session of this process is closed,
// and its file removed. One another process has open is -32803
// (session_in_use).
func (s *Server) acpDeleteSession(ctx context.Context, req *request) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if err := unmarshalParams(req, &p); err != nil {
		return nil, err
	}
	if _, err := s.sessions.Session(p.SessionID); err == nil {
		s.env.Processes.KillSession(p.SessionID)
	}
	if err := s.sessions.DeleteSession(p.SessionID); err != nil {
		return nil, acpSessionError(err)
	}
	return map[string]any{}, nil
}

// acpLogout is logout: there is no login (the model is configured), so
// there is nothing to end.
func (s *Server) acpLogout(ctx context.Context, req *request) (any, error) {
	return map[string]any{}, nil
}

// acpSessionInfo sends the session's title and last change as a
// session_info_update.
func (s *Server) acpSessionInfo(sess *session.Session) {
	s.acpSend(sess.ID(), map[string]any{
		"sessionUpdate": "session_info_update",
		"title":         sess.Title(),
		"updatedAt":     sess.UpdatedAt().UTC().Format(time.RFC3339),
	})
}

// acpNotice tells the user something outside the conversation: a notice
// update when the client advertises session.notices, else the start of the
// agent's message (markdown is the fallback's text).
func (s *Server) acpNotice(sessionID, severity, title, detail, markdown string) {
	if !s.clientCaps().Notices {
		s.host.Update(sessionID, session.Update{Kind: session.UpdateAgentMessage, Content: &session.ContentBlock{Type: "text", Text: markdown}})
		return
	}
	u := map[string]any{"sessionUpdate": "notice", "severity": severity, "title": title}
	if detail != "" {
		u["description"] = detail
	}
	s.acpSend(sessionID, u)
}

// acpSend writes an ACP-only session/update.
func (s *Server) acpSend(sessionID string, update map[string]any) {
	select {
	case <-s.conn.DisconnectNotify():
		return
	default:
	}
	_ = s.stream.notify("session/update", map[string]any{"sessionId": sessionID, "update": update})
}

// acpListSessions is session/list: the sessions of this process and those
// stored for the roots and for the process's working folder, or those
// whose cwd is the cwd given. A client such as acpx lists with no cwd from
// a new agent process, started in the folder it works in and with no
// session yet, so no roots: the working folder is read as a root would be.
// Listing a folder does not make it a root: the agent can reach a folder
// only once a session is opened there.
func (s *Server) acpListSessions(ctx context.Context, req *request) (any, error) {
	var p struct {
		Cwd string `json:"cwd"`
	}
	if err := optionalParams(req, &p); err != nil {
		return nil, err
	}
	if p.Cwd == "" {
		var wd []string
		if dir, err := os.Getwd(); err == nil {
			wd = append(wd, dir)
		}
		return sessionList(s.sessions.ListAlso(wd...)), nil
	}
	if !filepath.IsAbs(p.Cwd) {
		return nil, rpcError(codeInvalidParams, "cwd must be an absolute path, got %q", p.Cwd)
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
