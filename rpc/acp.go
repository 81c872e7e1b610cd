package rpc

import (
	"context"
	"encoding/json"
	"path/filepath"

	"github.com/qwen-ls/qwen-ls/session"
)

// The Agent Client Protocol adapter (--acp, protocol.md §9): newline-
// delimited JSON-RPC, ACP's method names, and the same core. There is no
// LSP lifecycle and no buffer overlay: the process serves until stdin
// closes, and files are read from and written to the disk.

// acpVersion is the ACP protocol version spoken.
const acpVersion = 1

func (s *Server) acpMethods() map[string]method {
	return map[string]method{
		"initialize":       {Handle: s.acpInitialize},
		"session/new":      {Handle: s.acpNewSession},
		"session/load":     {Handle: s.acpLoadSession},
		"session/list":     {Handle: s.acpListSessions},
		"session/prompt":   {Async: true, Handle: s.acpPrompt},
		"session/cancel":   {Handle: s.cancelSession},
		"session/set_mode": {Handle: s.acpSetMode},
		// ACP's session config options (stable): mode and model.
		"session/set_config_option": {Handle: s.acpSetConfigOption},
		// The unstable session/set_model of earlier ACP SDKs.
		"session/set_model": {Handle: s.acpSetModel},
		// Session lifecycle (acpsession.go). Closing waits for the
		// cancelled turn, which may need the client's answers (terminal
		// kill and release): off the read path.
		"session/resume": {Handle: s.acpResumeSession},
		"session/close":  {Async: true, Handle: s.acpCloseSession},
		"session/delete": {Async: true, Handle: s.acpDeleteSession},
		"logout":         {Handle: s.acpLogout},
	}
}

func (s *Server) acpInitialize(ctx context.Context, req *request) (any, error) {
	var p struct {
		ProtocolVersion    *int            `json:"protocolVersion"`
		ClientCapabilities json.RawMessage `json:"clientCapabilities"`
	}
	if len(req.Params) > 0 {
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, invalidParams(req.Method, err)
		}
	}
	if p.ProtocolVersion == nil {
		return nil, rpcError(codeInvalidParams, "initialize needs protocolVersion (this agent speaks ACP version %d)", acpVersion)
	}
	// Every ACP client takes session updates and answers permission
	// requests; edits are asked as permission requests with a diff. ACP
	// has no workspace/applyEdit: the buffers a client sent are written
	// through fs/write_text_file or to the disk (host.CanApplyToBuffers).
	caps := clientCaps{Rich: true, SessionUpdates: true, RequestPermission: true}
	readACPClientCaps(&caps, p.ClientCapabilities)
	s.mu.Lock()
	s.caps = caps
	s.state = stateInitialized
	s.mu.Unlock()
	s.log.setEditor(nil)
	// Version negotiation: the client's version when this agent speaks
	// it, else the latest this agent speaks (the client then decides).
	return map[string]any{
		"protocolVersion": acpVersion,
		"agentCapabilities": map[string]any{
			"loadSession": acpCanLoadSession,
			"promptCapabilities": map[string]any{
				"image": s.env.Settings().Bool("model.modalities.image", false), "audio": false, "embeddedContext": true,
			},
			"mcpCapabilities": map[string]any{"http": true, "sse": true},
			// Each is an empty object when supported (acpsession.go).
			"sessionCapabilities": map[string]any{
				"list": map[string]any{}, "additionalDirectories": map[string]any{},
				"resume": map[string]any{}, "close": map[string]any{}, "delete": map[string]any{},
			},
		},
		"authMethods": []any{},
		"agentInfo":   map[string]any{"name": "qwen-ls", "title": "Qwen Code (qwen-ls)", "version": s.opts.Version},
	}, nil
}

// acpCanLoadSession is the loadSession capability: session/load brings
// back a session of an earlier process from its file on disk.
const acpCanLoadSession = true

// acpModes describes the approval modes as ACP session modes.
func acpModes(current string) map[string]any {
	var modes []map[string]any
	for _, m := range session.Modes {
		modes = append(modes, map[string]any{"id": m, "name": m})
	}
	return map[string]any{"currentModeId": current, "availableModes": modes}
}

// acpRoot makes a session's cwd a workspace root: in ACP the client names
// the folder per session, not at initialize.
func (s *Server) acpRoot(cwd string) error {
	if cwd == "" || !filepath.IsAbs(cwd) {
		return rpcError(codeInvalidParams, "cwd must be an absolute path, got %q", cwd)
	}
	if len(s.ws.Roots.List()) == 0 {
		s.ws.SetRoots([]string{cwd})
		s.startOnce.Do(s.start)
		return nil
	}
	s.ws.AddRoot(cwd)
	return nil
}

// acpFolders are the parameters session/new and session/load share: the
// session's folders and the client's MCP servers.
type acpFolders struct {
	Cwd                   string            `json:"cwd"`
	AdditionalDirectories []string          `json:"additionalDirectories"`
	MCPServers            []json.RawMessage `json:"mcpServers"`
}

// check validates the additional directories and the MCP servers before
// anything changes, and returns the servers as settings entries.
func (f acpFolders) check() (map[string]any, error) {
	for _, d := range f.AdditionalDirectories {
		if !filepath.IsAbs(d) {
			return nil, rpcError(codeInvalidParams, "additionalDirectories must hold absolute paths, got %q", d)
		}
	}
	return acpMCPServers(f.MCPServers)
}

// addExtras makes the additional directories roots and starts the
// client's MCP servers (from check).
func (s *Server) addExtras(f acpFolders, servers map[string]any) {
	for _, d := range f.AdditionalDirectories {
		s.ws.AddRoot(filepath.Clean(d))
	}
	s.addClientMCPServers(servers)
}

func (s *Server) acpNewSession(ctx context.Context, req *request) (any, error) {
	var p acpFolders
	if err := unmarshalParams(req, &p); err != nil {
		return nil, err
	}
	// Without a model the session could never answer: say what to set
	// now rather than at the first prompt.
	if err := s.sessions.CheckModel(); err != nil {
		return nil, sessionError(err)
	}
	servers, err := p.check()
	if err != nil {
		return nil, err
	}
	if err := s.acpRoot(filepath.Clean(p.Cwd)); err != nil {
		return nil, err
	}
	s.addExtras(p, servers)
	info, err := s.sessions.NewSession(filepath.Clean(p.Cwd), "")
	if err != nil {
		return nil, sessionError(err)
	}
	sess, err := s.sessions.Session(info.ID)
	if err != nil {
		return nil, sessionError(err)
	}
	// Stored at once: ACP clients create a session in one process and
	// load or resume it from the next (acpsession.go).
	sess.StoreNow()
	return map[string]any{"sessionId": info.ID, "modes": acpModes(info.Mode), "configOptions": s.acpConfigOptions(sess)}, nil
}

func (s *Server) acpPrompt(ctx context.Context, req *request) (any, error) {
	var p struct {
		SessionID string                 `json:"sessionId"`
		Prompt    []session.ContentBlock `json:"prompt"`
	}
	if err := unmarshalParams(req, &p); err != nil {
		return nil, err
	}
	sess, err := s.sessions.Session(p.SessionID)
	if err != nil {
		return nil, sessionError(err)
	}
	s.takeACPTrustNotice(p.SessionID)
	title := sess.Title()
	res, err := sess.PromptAs(ctx, s.acpAttachLinks(ctx, p.SessionID, p.Prompt), req.typed)
	if t := sess.Title(); t != title {
		s.acpSessionInfo(sess)
	}
	if err != nil {
		return nil, sessionError(err)
	}
	out := map[string]any{"stopReason": res.StopReason}
	if res.Usage != (session.Usage{}) {
		// ACP's (unstable) turn usage has the same fields, with the
		// cache reads as cachedReadTokens.
		u := map[string]any{"inputTokens": res.Usage.InputTokens, "outputTokens": res.Usage.OutputTokens, "totalTokens": res.Usage.TotalTokens}
		if res.Usage.CachedTokens > 0 {
			u["cachedReadTokens"] = res.Usage.CachedTokens
		}
		out["usage"] = u
	}
	return out, nil
}

func (s *Server) acpSetMode(ctx context.Context, req *request) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
		ModeID    string `json:"modeId"`
	}
	if err := unmarshalParams(req, &p); err != nil {
		return nil, err
	}
	return s.setMode(p.SessionID, p.ModeID)
}

// acpReviewEdit asks about an edit as session/request_permission with a
// diff item and the three edit options (tools.md §2.11).
func (h *host) acpReviewEdit(ctx context.Context, sessionID string, r session.EditReview) (session.EditAnswer, error) {
	var old *string
	if !r.IsNewFile {
		old = &r.OldText
	}
	newText := r.NewText
	// No title: the client merges toolCall into the call it shows, and
	// the call keeps its own title (see RequestPermission).
	toolCall := map[string]any{
		"toolCallId": r.ToolCallID, "kind": "edit",
		"content":   []session.ToolContent{{Type: "diff", Path: r.Path, OldText: old, NewText: &newText}},
		"locations": []session.Location{{Path: r.Path}},
	}
	options := []session.PermissionOption{
		{OptionID: session.OptionProceedAlways, Name: "Allow All Edits", Kind: "allow_always"},
		{OptionID: session.OptionProceedOnce, Name: "Allow", Kind: "allow_once"},
		{OptionID: session.OptionCancel, Name: "Reject", Kind: "reject_once"},
	}
	var raw json.RawMessage
	if err := h.call(ctx, "session/request_permission", map[string]any{"sessionId": sessionID, "toolCall": toolCall, "options": options}, &raw); err != nil {
		return session.EditAnswer{}, err
	}
	ans, err := parsePermission(raw, options)
	if err != nil {
		return session.EditAnswer{}, err
	}
	switch {
	case ans.Cancelled:
		return session.EditAnswer{Outcome: "cancelled"}, nil
	case ans.OptionID == session.OptionProceedAlways:
		return session.EditAnswer{Outcome: "accepted", Always: true}, nil
	case ans.OptionID == session.OptionProceedOnce:
		return session.EditAnswer{Outcome: "accepted"}, nil
	}
	return session.EditAnswer{Outcome: "rejected"}, nil
}
