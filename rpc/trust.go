package rpc

import (
	"context"
	"fmt"
	"strings"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// Folder trust (docs/protocol.md, "Folder trust"): the workspace settings
// that start processes, widen permissions, raise the approval mode or
// change the model endpoint apply only in a trusted folder. The server
// tells the editor once what it ignored and offers to trust the folder.

// The showMessageRequest actions: trust the folder, leave it untrusted for
// now, or record that it is never to be trusted (no more questions).
const (
	trustAction    = "Trust this folder"
	notNowAction   = "Not now"
	distrustAction = "Don't trust"
)

// checkTrust tells the user, once per folder and set of ignored settings,
// that an untrusted folder's settings were ignored. It runs from settings
// callbacks, which must not block, so the question goes out on its own
// goroutine.
func (s *Server) checkTrust() {
	t := s.ws.Settings.Trust()
	s.noteRefused(t)
	if t.Trusted || len(t.Ignored) == 0 || s.baseCtx.Err() != nil {
		return
	}
	key := t.Root + "\x00" + strings.Join(t.Ignored, "\x00")
	if !s.firstTelling(key) {
		return
	}
	msg := s.secrets.scrub(untrustedMessage(t))
	s.log.Warnf("%s", msg)
	if t.Denied {
		// A folder the user marked DO_NOT_TRUST needs no question. The
		// log says it.
		return
	}
	if s.opts.ACP {
		// ACP has no message request outside a session: the notice opens
		// the agent's answer to the next prompt (takeACPTrustNotice).
		s.trustMu.Lock()
		s.acpTrustNotice = s.secrets.scrub(untrustedACPMessage(t))
		s.trustMu.Unlock()
		return
	}
	if !s.clientCaps().ShowMessage {
		// A notification does not wait for the editor: sent at once, so
		// it arrives before anything the server answers next.
		_ = s.conn.Notify(context.Background(), "window/showMessage", map[string]any{"type": int(LevelWarn), "message": msg})
		return
	}
	s.askTrust(t, msg)
}

// firstTelling reports whether the notice named key is told for the first
// time in this server's life, and marks it told.
func (s *Server) firstTelling(key string) bool {
	s.trustMu.Lock()
	defer s.trustMu.Unlock()
	if s.trustTold == nil {
		s.trustTold = map[string]bool{}
	}
	if s.trustTold[key] {
		return false
	}
	s.trustTold[key] = true
	return true
}

// noteRefused tells the user, once per settings file and set of
// settings, that the workspace settings set what only the user may (full
// access for the commands that run unasked), trusted or not, and that it
// was ignored: a warning in the log and, for an LSP client, on screen.
// Trusting the folder changes nothing, so nothing is asked.
func (s *Server) noteRefused(t workspace.Trust) {
	if len(t.Refused) == 0 || s.baseCtx.Err() != nil {
		return
	}
	key := "refused\x00" + t.File + "\x00" + strings.Join(t.Refused, "\x00")
	if !s.firstTelling(key) {
		return
	}
	msg := s.secrets.scrub(fmt.Sprintf("qwen-ls: %s sets %s, which only your user, editor or system settings may set, so it was ignored "+
		"(a workspace may narrow the sandbox, never turn it off).", t.File, strings.Join(t.Refused, ", ")))
	s.log.Warnf("%s", msg)
	if !s.opts.ACP {
		_ = s.conn.Notify(context.Background(), "window/showMessage", map[string]any{"type": int(LevelWarn), "message": msg})
	}
}

// untrustedMessage names what was ignored and how to trust the folder.
func untrustedMessage(t workspace.Trust) string {
	return fmt.Sprintf("qwen-ls: the folder %s is not trusted (%s), so these settings from %s were ignored: %s. "+
		"Trust the folder only if you trust its authors: choose %q, or run `qwen-ls trust %s` in a shell.",
		t.Root, t.Why, t.File, strings.Join(t.Ignored, ", "), trustAction, shellQuote(t.Root))
}

// untrustedACPMessage is the notice for an ACP client, where the only way
// to trust the folder is the shell command.
func untrustedACPMessage(t workspace.Trust) string {
	return fmt.Sprintf("**qwen-ls:** the folder `%s` is not trusted (%s), so these settings from `%s` were ignored: %s. "+
		"Trust the folder only if you trust its authors: run `qwen-ls trust %s` in a shell; it applies from the next prompt.\n\n",
		t.Root, t.Why, t.File, strings.Join(t.Ignored, ", "), shellQuote(t.Root))
}

// takeACPTrustNotice sends a waiting folder-trust notice as the start of
// the agent's message in sessionID, once, unless the folder has been
// trusted meanwhile.
func (s *Server) takeACPTrustNotice(sessionID string) {
	s.trustMu.Lock()
	msg := s.acpTrustNotice
	s.acpTrustNotice = ""
	s.trustMu.Unlock()
	if msg == "" || s.ws.Settings.Trust().Trusted {
		return
	}
	plain := strings.TrimSpace(strings.NewReplacer("**", "", "`", "").Replace(msg))
	s.acpNotice(sessionID, "warning", "This folder is not trusted: some of its settings were ignored", plain, msg)
}

// askTrust puts the notice to the user as a window/showMessageRequest with
// "Trust this folder". The request is written at once, so it reaches the
// editor before anything the server sends next; the answer is awaited on
// its own goroutine, since settings callbacks must not block.
func (s *Server) askTrust(t workspace.Trust, msg string) {
	params := map[string]any{"type": int(LevelWarn), "message": msg, "actions": []any{
		map[string]any{"title": trustAction}, map[string]any{"title": notNowAction}, map[string]any{"title": distrustAction},
	}}
	w, err := s.conn.DispatchCall(context.Background(), "window/showMessageRequest", params)
	if err != nil {
		s.log.Warnf("the folder-trust question failed: %v", err)
		return
	}
	s.async.Add(1)
	go func() {
		defer s.async.Done()
		var res *messageActionItem
		if err := w.Wait(s.baseCtx, &res); err != nil {
			if s.baseCtx.Err() == nil {
				s.log.Warnf("the folder-trust question failed: %v", err)
			}
			return
		}
		s.trustAnswer(t, res)
	}()
}

// trustAnswer acts on the answer to the folder-trust question.
func (s *Server) trustAnswer(t workspace.Trust, res *messageActionItem) {
	switch {
	case res != nil && res.Title == trustAction:
		s.trustFolder(t.Root)
	case res != nil && res.Title == distrustAction:
		if file := s.ws.Settings.TrustFile(); file != "" {
			if err := workspace.SetTrustLevel(file, t.Root, workspace.DoNotTrust); err != nil {
				s.log.Warnf("could not record that %s is not trusted: %v", t.Root, err)
				return
			}
		}
		s.log.Infof("the folder %s is marked DO_NOT_TRUST; qwen-ls will not ask again", t.Root)
	default:
		s.log.Infof("the folder %s stays untrusted", t.Root)
	}
}

// trustFolder trusts root at the user's request: recorded in the trust
// list, so it holds for later starts, and in force at once.
func (s *Server) trustFolder(root string) {
	if file := s.ws.Settings.TrustFile(); file != "" {
		if err := workspace.SetTrustLevel(file, root, workspace.TrustFolder); err != nil {
			s.log.Warnf("could not record the trust: %v", err)
			_ = s.conn.Notify(context.Background(), "window/showMessage", map[string]any{"type": int(LevelWarn),
				"message": fmt.Sprintf("qwen-ls: %s is trusted until the editor closes, but could not be recorded: %v", root, err)})
		}
	}
	s.ws.Settings.GrantTrust(root)
	s.log.Infof("the folder %s is trusted: its workspace settings apply in full", root)
}

// messageActionItem is the editor's answer to window/showMessageRequest
// (null when the user dismissed it).
type messageActionItem struct {
	Title string `json:"title"`
}

// shellQuote quotes p for a POSIX shell when it needs it.
func shellQuote(p string) string {
	if p != "" && strings.IndexFunc(p, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+,:@%", r))
	}) < 0 {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}
