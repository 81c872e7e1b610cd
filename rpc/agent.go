package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/qwen-ls/qwen-ls/registry"
	"github.com/qwen-ls/qwen-ls/session"
	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/toolset"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// The qwen/* session methods (protocol.md §4).

func (s *Server) agentMethods() map[string]method {
	return map[string]method{
		"qwen/newSession":      {Handle: s.newSession},
		"qwen/prompt":          {Async: true, Handle: s.prompt},
		"qwen/cancel":          {Handle: s.cancelSession},
		"qwen/setApprovalMode": {Handle: s.setApprovalMode},
		"qwen/listTools":       {Handle: s.listTools},
		"qwen/didFocus":        {Handle: s.didFocus},
		"qwen/resolveReview":   {Handle: s.resolveReview},
		"qwen/listSessions":    {Handle: s.listSessions},
		"qwen/loadSession":     {Handle: s.loadSession},
		"qwen/closeSession":    {Async: true, Handle: s.closeSession},
		"qwen/revertTurn":      {Async: true, Handle: s.revertTurn},
		"qwen/listModels":      {Handle: s.listModels},
		"qwen/setModel":        {Handle: s.setModel},
		// Async: the check waits on the model for up to 15 s.
		"qwen/checkSetup": {Async: true, Handle: s.checkSetup},
	}
}

// checkSetup answers qwen/checkSetup: one real request to the configured
// model, and which OS sandbox protects commands.
func (s *Server) checkSetup(ctx context.Context, req *request) (any, error) {
	var p struct {
		URI string `json:"uri"`
	}
	_ = json.Unmarshal(req.Params, &p)
	res := s.sessions.CheckSetup(ctx)
	res.Sandbox = sandboxInfo()["summary"].(string)
	servers, allowed := s.langs.setupInfo(p.URI)
	res.LanguageServers, res.LSPAllowed = servers, &allowed
	return res, nil
}

// setupAgent builds the tool registry and the session manager over the
// server's workspace.
func (s *Server) setupAgent() {
	home := s.opts.QwenHome
	if home == "" {
		home = tools.DefaultQwenHome()
	}
	s.env = &tools.Env{Workspace: s.ws, QwenHome: home}
	s.host = &host{s: s}
	s.langs = &langServers{s: s}
	s.ws.Watcher.Subscribe(func(ev workspace.Event) { s.langs.noteDisk(ev.Path) })
	s.registry = registry.New(append(toolset.Builtins(s.env), s.opts.ExtraTools...), filterFromSettings(s.env))
	s.ws.Settings.OnChange(func() { s.registry.SetFilter(filterFromSettings(s.env)) })
	s.sources = registry.NewSources(registry.Options{
		Registry: s.registry,
		Env:      s.env,
		Version:  s.opts.Version,
		Progress: s.sourceProgress,
		Log: func(level registry.LogLevel, msg string) {
			s.log.logf(Level(level), "%s", msg)
		},
	})
	newModel := s.opts.NewModel
	var newModelFor func(string) (session.Model, error)
	var knownModel func(string) error
	if newModel == nil {
		newModel, newModelFor, knownModel = session.ModelsFromSettings(s.ws.Settings, s.opts.Retry)
	}
	s.sessions = session.NewManager(session.Options{
		Env:         s.env,
		Tools:       toolbox{s.registry},
		Host:        s.host,
		NewModel:    newModel,
		NewModelFor: newModelFor,
		KnownModel:  knownModel,
		DefaultMode: s.defaultMode,
		// The first model request of a session waits until every
		// configured tool source has had its first try (tools.md §4.1).
		Ready: s.sources.WaitFirstAttempt,
		Store: s.sessionStore(home),
		Log:   s.log.Warnf,
	})
}

func filterFromSettings(env *tools.Env) registry.Filter {
	st := env.Settings()
	f := registry.Filter{Exclude: st.Strings("tools.exclude"), Disabled: st.Strings("tools.disabled"),
		Deny: func(t tools.Tool) bool { return session.WholeToolDenied(st, t) }}
	// web_search is declared only when a provider is configured
	// (tools.md §3.10).
	f.Exclude = append(f.Exclude, toolset.Unavailable(env)...)
	if _, ok := st.Get("tools.core"); ok {
		f.Core = st.Strings("tools.core")
		if f.Core == nil {
			f.Core = []string{}
		}
	}
	return f
}

// defaultMode is initializationOptions.approvalMode, else the setting
// tools.approvalMode, else default.
func (s *Server) defaultMode() string {
	caps := s.clientCaps()
	if len(caps.InitOptions) > 0 {
		var io initOptions
		if json.Unmarshal(caps.InitOptions, &io) == nil && io.ApprovalMode != "" {
			return io.ApprovalMode
		}
	}
	return s.ws.Settings.String("tools.approvalMode", session.ModeDefault)
}

// toolbox adapts the registry to the session's Toolbox.
type toolbox struct{ r *registry.Registry }

func (t toolbox) Tools() session.ToolSet { return toolSet{t.r.Snapshot()} }

type toolSet struct{ s *registry.Snapshot }

func (t toolSet) Lookup(name string) (tools.Tool, *tools.ToolError) {
	e, err := t.s.Lookup(name)
	if err != nil {
		return nil, err
	}
	return e.Tool, nil
}

func (t toolSet) Declarations() []session.ToolDecl {
	ds := t.s.Declarations()
	out := make([]session.ToolDecl, len(ds))
	for i, d := range ds {
		out[i] = session.ToolDecl{Name: d.Name, Description: d.Description, Parameters: d.Parameters}
	}
	return out
}

func (t toolSet) Names() []string { return t.s.Names() }

func unmarshalParams(req *request, v any) error {
	if len(req.Params) == 0 || string(req.Params) == "null" {
		return invalidParams(req.Method, fmt.Errorf("params are required"))
	}
	if err := json.Unmarshal(req.Params, v); err != nil {
		return invalidParams(req.Method, err)
	}
	return nil
}

// optionalParams reads params that may be left out: absent, null and an
// empty array (Lua clients send an empty table as []) all mean none.
func optionalParams(req *request, v any) error {
	switch strings.TrimSpace(string(req.Params)) {
	case "", "null", "[]":
		return nil
	}
	if err := json.Unmarshal(req.Params, v); err != nil {
		return invalidParams(req.Method, err)
	}
	return nil
}

// sessionError maps the session's errors to JSON-RPC errors (§8).
func sessionError(err error) error {
	var nm *session.NoModelError
	var me *session.ModelError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nm):
		return rpcErrorWithData(CodeNoModel, nm.Setup(), "%s", nm.Error())
	case errors.Is(err, session.ErrUnknownSession), errors.Is(err, session.ErrBadMode), errors.Is(err, session.ErrNothingToRevert),
		errors.Is(err, session.ErrUnknownModel):
		return rpcError(codeInvalidParams, "%s", err.Error())
	case errors.Is(err, session.ErrSessionInUse):
		return rpcErrorWithData(codeRequestFailed, map[string]string{"reason": "session_in_use"}, "%s", err.Error())
	case errors.Is(err, session.ErrBusy):
		return rpcErrorWithData(codeRequestFailed, map[string]string{"reason": "session_busy"}, "%s", err.Error())
	case errors.Is(err, session.ErrMaxSessionTurns):
		return rpcErrorWithData(codeRequestFailed, map[string]string{"reason": "max_session_turns"}, "%s", err.Error())
	case errors.As(err, &me):
		code := int64(codeInternalError)
		if me.Kind == session.ErrAuth {
			code = CodeNoModel
		}
		setup, _ := me.Setup()
		return rpcErrorWithData(code, setup, "%s", me.Error())
	}
	return rpcError(codeInternalError, "%s", err.Error())
}

func (s *Server) newSession(ctx context.Context, req *request) (any, error) {
	var p struct {
		Cwd          string `json:"cwd"`
		ApprovalMode string `json:"approvalMode"`
		Model        string `json:"model"`
	}
	if err := optionalParams(req, &p); err != nil {
		return nil, err
	}
	// model chooses among the configured models (as qwen/setModel);
	// checked before the session exists, so a wrong id leaves none.
	choose := p.Model != "" && s.sessions.CanChooseModel()
	if choose {
		if err := s.sessions.CheckModelID(p.Model); err != nil {
			return nil, sessionError(err)
		}
	}
	info, err := s.sessions.NewSession(p.Cwd, p.ApprovalMode)
	if err != nil {
		return nil, sessionError(err)
	}
	if choose {
		if err := s.chooseModel(info.ID, p.Model); err != nil {
			return nil, err
		}
		info.Model = p.Model
	}
	var model any
	if info.Model != "" {
		model = info.Model
	}
	tools := info.Tools
	if tools == nil {
		tools = []string{}
	}
	return map[string]any{"sessionId": info.ID, "approvalMode": info.Mode, "model": model, "tools": tools}, nil
}

func (s *Server) prompt(ctx context.Context, req *request) (any, error) {
	var p struct {
		SessionID     string                 `json:"sessionId"`
		Prompt        []session.ContentBlock `json:"prompt"`
		WorkDoneToken json.RawMessage        `json:"workDoneToken"`
	}
	if err := unmarshalParams(req, &p); err != nil {
		return nil, err
	}
	sess, err := s.sessions.Session(p.SessionID)
	if err != nil {
		return nil, sessionError(err)
	}
	progress := s.beginProgress(p.WorkDoneToken, "qwen: working")
	s.turns.set(p.SessionID, progress)
	res, err := sess.PromptAs(ctx, p.Prompt, req.typed)
	s.turns.set(p.SessionID, nil)
	progress.end(res.StopReason)
	if err != nil {
		return nil, sessionError(err)
	}
	out := map[string]any{"stopReason": res.StopReason}
	if res.Usage != (session.Usage{}) {
		out["usage"] = res.Usage
	}
	return out, nil
}

func (s *Server) cancelSession(ctx context.Context, req *request) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if err := unmarshalParams(req, &p); err != nil {
		return nil, err
	}
	if err := s.sessions.Cancel(p.SessionID); err != nil {
		s.log.Warnf("qwen/cancel: %v", err)
	}
	return nil, nil
}

func (s *Server) setApprovalMode(ctx context.Context, req *request) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
		Mode      string `json:"mode"`
	}
	if err := unmarshalParams(req, &p); err != nil {
		return nil, err
	}
	return s.setMode(p.SessionID, p.Mode)
}

// setMode changes a session's approval mode (qwen/setApprovalMode and
// ACP's session/set_mode).
func (s *Server) setMode(sessionID, mode string) (any, error) {
	sess, err := s.sessions.Session(sessionID)
	if err != nil {
		return nil, sessionError(err)
	}
	if err := sess.SetMode(mode); err != nil {
		return nil, sessionError(err)
	}
	return map[string]any{}, nil
}

func (s *Server) listTools(ctx context.Context, req *request) (any, error) {
	infos := s.registry.Snapshot().Infos()
	if infos == nil {
		infos = []registry.Info{}
	}
	servers := s.sources.Servers()
	if servers == nil {
		servers = []registry.ServerStatus{}
	}
	return map[string]any{"tools": infos, "servers": servers}, nil
}

func (s *Server) didFocus(ctx context.Context, req *request) (any, error) {
	var p struct {
		URI       string `json:"uri"`
		Selection *struct {
			Start struct{ Line, Character int } `json:"start"`
			End   struct{ Line, Character int } `json:"end"`
		} `json:"selection"`
	}
	if err := unmarshalParams(req, &p); err != nil {
		return nil, err
	}
	if p.URI == "" {
		s.sessions.SetFocus(nil)
		return nil, nil
	}
	path, err := s.uriToPath(p.URI)
	if err != nil {
		return nil, invalidParams(req.Method, err)
	}
	f := &session.Focus{Path: path}
	if sel := p.Selection; sel != nil && sel.Start != sel.End {
		f.StartLine, f.EndLine = sel.Start.Line+1, sel.End.Line+1
		if b, ok := s.ws.Overlay.Get(path); ok {
			f.Selected = selectedLines(b.Text, f.StartLine, f.EndLine)
		}
	}
	s.sessions.SetFocus(f)
	return nil, nil
}

// maxFocusLines bounds the selection text given to the model.
const maxFocusLines = 200

// selectedLines returns lines start..end (1-based, inclusive) of text.
func selectedLines(text string, start, end int) string {
	lines := strings.Split(text, "\n")
	if start < 1 || start > len(lines) {
		return ""
	}
	end = min(end, len(lines), start+maxFocusLines-1)
	return strings.Join(lines[start-1:end], "\n")
}

// sourceProgress reports tool discovery as server-initiated $/progress,
// one token per discovery round.
func (s *Server) sourceProgress(p registry.Progress) {
	s.srcMu.Lock()
	defer s.srcMu.Unlock()
	switch p.Kind {
	case registry.ProgressBegin:
		s.srcProgress = s.serverProgress(s.baseCtx, p.Title)
		if p.Message != "" {
			s.srcProgress.report(p.Message)
		}
	case registry.ProgressReport:
		if s.srcProgress != nil {
			s.srcProgress.report(p.Message)
		}
	case registry.ProgressEnd:
		if s.srcProgress != nil {
			s.srcProgress.end(p.Message)
			s.srcProgress = nil
		}
	}
}
