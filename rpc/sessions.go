package rpc

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/qwen-ls/qwen-ls/session"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// Sessions that outlive the process: listing and loading stored sessions,
// and undoing a turn's file changes (protocol.md §4).

// sessionStore is where the server keeps sessions: under the qwen home,
// with every configured secret kept out of every file.
func (s *Server) sessionStore(home string) *session.Store {
	return session.NewStore(home, s.secrets.list)
}

// secretSet is the configured secrets, kept current with the settings:
// the session files, the log and the error replies leave them out.
type secretSet struct {
	mu      sync.Mutex
	secrets []string
}

// watchSecrets starts following the settings' secrets.
func (s *Server) watchSecrets() {
	s.secrets.set(configuredSecrets(s.ws.Settings))
	s.ws.Settings.OnChange(func() { s.secrets.set(configuredSecrets(s.ws.Settings)) })
}

func (ss *secretSet) set(v []string) {
	// Longest first, so that a secret that contains another is replaced
	// whole.
	slices.SortFunc(v, func(a, b string) int { return len(b) - len(a) })
	ss.mu.Lock()
	ss.secrets = v
	ss.mu.Unlock()
}

func (ss *secretSet) list() []string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.secrets
}

// scrub removes from text every configured secret of eight characters or
// more, then whatever looks like a key (scrubSecrets).
func (ss *secretSet) scrub(text string) string {
	for _, v := range ss.list() {
		if len(v) >= 8 {
			text = strings.ReplaceAll(text, v, "[redacted]")
		}
	}
	return scrubSecrets(text)
}

// secretKey matches the names of settings that hold secrets.
var secretKey = regexp.MustCompile(`(?i)(api[_-]?key|token|secret|password|authorization)`)

// configuredSecrets are the values a session file must never hold: the
// model's key (from the settings or the environment), and every string in
// the settings under a name that says secret, or in an MCP server's env
// or headers.
func configuredSecrets(st *workspace.Settings) []string {
	out := []string{st.Model().APIKey}
	var walk func(v any, secret bool)
	walk = func(v any, secret bool) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(x, secret || secretKey.MatchString(k) || k == "env" || k == "headers")
			}
		case []any:
			for _, x := range v {
				walk(x, secret)
			}
		case string:
			if secret && len(v) >= 8 {
				out = append(out, v)
			}
		}
	}
	walk(st.Merged(), false)
	return out
}

func (s *Server) listSessions(ctx context.Context, req *Request) (any, error) {
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
func (s *Server) loadSession(ctx context.Context, req *Request) (any, error) {
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

// revertTurn puts back the files a turn changed.
func (s *Server) revertTurn(ctx context.Context, req *Request) (any, error) {
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
		restored = append(restored, pathToURI(f))
	}
	for _, f := range res.Removed {
		removed = append(removed, pathToURI(f))
	}
	conflicts := []map[string]any{}
	for _, c := range res.Conflicts {
		conflicts = append(conflicts, map[string]any{"uri": pathToURI(c.Path), "diff": c.Diff})
	}
	out := map[string]any{"turn": res.Turn, "restored": restored, "removed": removed, "conflicts": conflicts}
	if err != nil {
		// Some files could not be written: say which, with what was done.
		out["error"] = err.Error()
	}
	return out, nil
}
