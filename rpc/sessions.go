package rpc

import (
	"context"
	"time"

	"github.com/qwen-ls/qwen-ls/session"
)

// Sessions that outlive the process: listing and loading stored sessions,
// and undoing a turn's file changes (protocol.md §4).

// sessionStore is where the server keeps sessions: under the qwen home,
// with every configured secret kept out of every file.
func (s *Server) sessionStore(home string) *session.Store {
	return session.NewStore(home, s.secrets.list)
}

func (s *Server) listSessions(ctx context.Context, req *request) (any, error) {
	return sessionList(s.sessions.List()), nil
}

// sessionList is the answer to a session listing.
func sessionList(sessions []session.ListedSession) map[string]any {
	out := []map[string]any{}
	for _, ls := range sessions {
		out = append(out, map[string]any{"sessionId": ls.ID, "cwd": ls.Cwd, "title": ls.Title, "updatedAt": ls.UpdatedAt.UTC().Format(time.RFC3339)})
	}
	return map[string]any{"sessions": out}
}

// loadSession replays a session to the editor: one of this process, or
// one read back from its file. Lines of the file that could not be read
// are named in warnings.
func (s *Server) loadSession(ctx context.Context, req *request) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if err := unmarshalParams(req, &p); err != nil {
		return nil, err
	}
	lr, err := s.sessions.Load(p.SessionID)
	if err != nil {
		return nil, sessionError(err)
	}
	lr.Session.Replay()
	out := map[string]any{"approvalMode": lr.Session.Mode()}
	if len(lr.Problems) > 0 {
		out["warnings"] = lr.Problems
	}
	return out, nil
}

// closeSession ends a session of this server: its turn is cancelled, its
// processes stopped and its file released; it can be loaded again.
func (s *Server) closeSession(ctx context.Context, req *request) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if err := unmarshalParams(req, &p); err != nil {
		return nil, err
	}
	if err := s.endSession(p.SessionID); err != nil {
		return nil, sessionError(err)
	}
	return map[string]any{}, nil
}

// revertTurn puts back the files a turn changed.
func (s *Server) revertTurn(ctx context.Context, req *request) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
		Turn      int    `json:"turn"`
	}
	if err := unmarshalParams(req, &p); err != nil {
		return nil, err
	}
	lr, err := s.sessions.Load(p.SessionID)
	if err != nil {
		return nil, sessionError(err)
	}
	res, err := lr.Session.RevertTurn(ctx, p.Turn)
	if err != nil && res.Turn == 0 {
		// Nothing was tried: nothing to undo, or a busy session.
		return nil, sessionError(err)
	}
	restored, removed := []string{}, []string{}
	for _, f := range res.Restored {
		restored = append(restored, s.pathToURI(f))
	}
	for _, f := range res.Removed {
		removed = append(removed, s.pathToURI(f))
	}
	conflicts := []map[string]any{}
	for _, c := range res.Conflicts {
		conflicts = append(conflicts, map[string]any{"uri": s.pathToURI(c.Path), "diff": c.Diff})
	}
	out := map[string]any{"turn": res.Turn, "restored": restored, "removed": removed, "conflicts": conflicts}
	if err != nil {
		// Some files could not be written: say which, with what was done.
		out["error"] = err.Error()
	}
	return out, nil
}
