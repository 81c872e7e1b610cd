package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"go.lsp.dev/protocol"

	"github.com/qwen-ls/qwen-ls/session"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// approvalModes are the approval modes the server advertises, in order:
// the editors offer these and no others.
var approvalModes = session.Modes

// protocolVersion is the qwen protocol version of protocol.md.
const protocolVersion = 1

func (s *Server) builtinMethods() map[string]method {
	return map[string]method{
		"initialize":                          {Handle: s.initialize},
		"initialized":                         {Handle: s.initialized},
		"shutdown":                            {Handle: s.shutdown},
		"textDocument/didOpen":                {Handle: s.didOpen},
		"textDocument/didChange":              {Handle: s.didChange},
		"textDocument/didSave":                {Handle: s.didSave},
		"textDocument/didClose":               {Handle: s.didClose},
		"workspace/didChangeWorkspaceFolders": {Handle: s.didChangeWorkspaceFolders},
		"workspace/didChangeWatchedFiles":     {Handle: s.didChangeWatchedFiles},
		"workspace/didChangeConfiguration":    {Handle: s.didChangeConfiguration},
	}
}

// decode unmarshals LSP params with go.lsp.dev/protocol's own decoder (its
// v1 types do not decode with encoding/json) and maps a failure to -32602.
func decode(req *request, v any) error {
	if len(req.Params) == 0 || string(req.Params) == "null" {
		return invalidParams(req.Method, fmt.Errorf("params are required"))
	}
	if err := protocol.Unmarshal(req.Params, v); err != nil {
		return invalidParams(req.Method, err)
	}
	return nil
}

// qwenClientCaps is experimental.qwen in the client's capabilities.
type qwenClientCaps struct {
	SessionUpdates    bool `json:"sessionUpdates"`
	RequestPermission bool `json:"requestPermission"`
	ProposeEdit       bool `json:"proposeEdit"`
	DeferredReview    bool `json:"deferredReview"`
	LSP               bool `json:"lsp"`
}

// initOptions is the part of initializationOptions the server checks at
// initialize (protocol.md §2).
type initOptions struct {
	ApprovalMode string         `json:"approvalMode"`
	Model        map[string]any `json:"model"`
	Settings     map[string]any `json:"settings"`
	// WorkspaceTrusted is the editor's own trust in the workspace (VS
	// Code's workspace trust): true trusts it, false keeps it untrusted
	// even when the trust list names it (docs/protocol.md, folder trust).
	WorkspaceTrusted *bool `json:"workspaceTrusted"`
}

func (s *Server) initialize(ctx context.Context, req *request) (any, error) {
	var p protocol.InitializeParams
	if err := decode(req, &p); err != nil {
		return nil, err
	}
	caps := clientCaps{Encoding: workspace.UTF16}
	if g := p.Capabilities.General; g != nil && slices.Contains(g.PositionEncodings, protocol.PositionEncodingKindUTF8) {
		caps.Encoding = workspace.UTF8
	}
	if w := p.Capabilities.Workspace; w != nil {
		caps.ApplyEdit = w.ApplyEdit != nil && *w.ApplyEdit
		if we := w.WorkspaceEdit; we != nil && we.DocumentChanges != nil {
			caps.DocumentChanges = *we.DocumentChanges
		}
	}
	if w := p.Capabilities.Window; w != nil {
		caps.WorkDoneProgress = w.WorkDoneProgress != nil && *w.WorkDoneProgress
		caps.ShowMessage = w.ShowMessage != nil
		caps.ShowDocument = w.ShowDocument != nil && w.ShowDocument.Support
	}
	if len(p.Capabilities.Experimental) > 0 {
		var exp struct {
			Qwen *qwenClientCaps `json:"qwen"`
		}
		if err := json.Unmarshal(p.Capabilities.Experimental, &exp); err != nil {
			return nil, invalidParams(req.Method, fmt.Errorf("capabilities.experimental: %w", err))
		}
		if q := exp.Qwen; q != nil {
			caps.Rich = q.SessionUpdates || q.RequestPermission || q.ProposeEdit
			caps.SessionUpdates = q.SessionUpdates
			caps.RequestPermission = q.RequestPermission
			caps.ProposeEdit = q.ProposeEdit
			caps.DeferredReview = q.DeferredReview
			caps.LSP = q.LSP
		}
	}
	var io initOptions
	if len(p.InitializationOptions) > 0 && string(p.InitializationOptions) != "null" {
		if err := json.Unmarshal(p.InitializationOptions, &io); err != nil {
			return nil, invalidParams(req.Method, fmt.Errorf("initializationOptions: %w", err))
		}
		if io.ApprovalMode != "" && !slices.Contains(approvalModes, io.ApprovalMode) {
			return nil, invalidParams(req.Method, fmt.Errorf("initializationOptions.approvalMode %q is not one of %v", io.ApprovalMode, approvalModes))
		}
		caps.InitOptions = append(json.RawMessage(nil), p.InitializationOptions...)
	}

	roots, err := s.initRoots(&p)
	if err != nil {
		return nil, invalidParams(req.Method, err)
	}
	// The editor's trust is known before the workspace settings are read,
	// so an untrusted folder's settings are never in force, even briefly.
	s.ws.Settings.SetEditorTrust(io.WorkspaceTrusted)
	s.ws.SetRoots(roots)
	s.noteClientURIs(req.Params)
	if io.Settings != nil || io.Model != nil {
		s.ws.Settings.SetEditorLayerFromInit(io.Settings, io.Model)
	}

	s.mu.Lock()
	s.caps = caps
	s.state = stateInitialized
	s.mu.Unlock()

	return s.initializeResult(caps)
}

// initRoots takes the roots from workspaceFolders, else rootUri, else
// rootPath.
func (s *Server) initRoots(p *protocol.InitializeParams) ([]string, error) {
	if folders, ok := p.WorkspaceFolders.Get(); ok {
		var roots []string
		for _, f := range folders {
			path, err := s.uriToPath(string(f.URI))
			if err != nil {
				return nil, fmt.Errorf("workspaceFolders: %w", err)
			}
			roots = append(roots, path)
		}
		return roots, nil
	}
	// Clients that send no workspaceFolders (older ones, and plain LSP
	// clients) still send rootUri or rootPath, deprecated as they are.
	//lint:ignore SA1019 see above
	if p.RootURI != nil && *p.RootURI != "" {
		//lint:ignore SA1019 see above
		path, err := s.uriToPath(string(*p.RootURI))
		if err != nil {
			return nil, fmt.Errorf("rootUri: %w", err)
		}
		return []string{path}, nil
	}
	//lint:ignore SA1019 see above
	if rp, ok := p.RootPath.Get(); ok && rp != "" {
		return []string{rp}, nil
	}
	return nil, nil
}

// setupProblem is initialize's experimental.qwen.setup: a prompt's setup
// error data with its message.
type setupProblem struct {
	session.Setup
	Message string `json:"message"`
}

func (s *Server) initializeResult(caps clientCaps) (any, error) {
	enc := protocol.PositionEncodingKindUTF16
	if caps.Encoding == workspace.UTF8 {
		enc = protocol.PositionEncodingKindUTF8
	}
	yes, no := true, false
	incremental := protocol.TextDocumentSyncKindIncremental
	tools := []string{}
	if s.opts.ToolNames != nil {
		tools = append(tools, s.opts.ToolNames()...)
	} else {
		tools = append(tools, s.registry.Snapshot().Names()...)
	}
	qwen := map[string]any{
		"protocolVersion": protocolVersion,
		"model":           nil,
		"approvalModes":   approvalModes,
		"tools":           tools,
		"sandbox":         sandboxInfo(),
	}
	if name := s.sessions.ModelName(); name != "" {
		qwen["model"] = name
	} else if setup, msg, ok := s.sessions.ModelSetup(); ok {
		// What is missing, so that an editor says more than "no model"
		// when a model is configured but cannot be reached.
		qwen["setup"] = setupProblem{Setup: setup, Message: msg}
	}
	exp, err := json.Marshal(map[string]any{"qwen": qwen})
	if err != nil {
		return nil, err
	}
	result := protocol.InitializeResult{
		Capabilities: protocol.ServerCapabilities{
			PositionEncoding: enc,
			TextDocumentSync: &protocol.TextDocumentSyncOptions{
				OpenClose: &yes,
				Change:    &incremental,
				Save:      &protocol.SaveOptions{IncludeText: &no},
			},
			ExecuteCommandProvider: protocol.ExecuteCommandOptions{Commands: plainCommands},
			Workspace: &protocol.WorkspaceOptions{
				WorkspaceFolders: &protocol.WorkspaceFoldersServerCapabilities{
					Supported:           &yes,
					ChangeNotifications: protocol.Boolean(true),
				},
			},
			Experimental: exp,
		},
		ServerInfo: protocol.ServerInfo{Name: "qwen-ls", Version: protocol.NewOptional(s.opts.Version)},
	}
	if !caps.Rich {
		// Plain clients get the agent through code actions.
		result.Capabilities.CodeActionProvider = protocol.Boolean(true)
	}
	raw, err := protocol.Marshal(result)
	if err != nil {
		return nil, fmt.Errorf("encode initialize result: %w", err)
	}
	return json.RawMessage(raw), nil
}

func (s *Server) initialized(ctx context.Context, req *request) (any, error) {
	s.log.setEditor(func(level Level, msg string) {
		_ = s.conn.Notify(context.Background(), "window/logMessage", map[string]any{"type": int(level), "message": msg})
	})
	s.ws.Settings.OnProblem(s.warnSettings)
	for _, p := range s.ws.Settings.Problems() {
		s.warnSettings(p)
	}
	if s.ws.WatchErr != nil {
		s.log.Warnf("file watching is off (%v); the file index follows the editor's change notifications only", s.ws.WatchErr)
	}
	// Discovery commands and MCP servers start only now, never before the
	// initialize answer (protocol.md §2).
	s.startOnce.Do(s.start)
	s.log.Infof("qwen-ls %s ready; workspace roots: %v", s.opts.Version, s.ws.Roots.List())
	return nil, nil
}

// start begins indexing, the tool sources and the folder-trust notices,
// once the roots are known.
func (s *Server) start() {
	s.ws.Start(s.baseCtx)
	s.sources.Start()
	s.ws.Settings.OnChange(s.checkTrust)
	s.checkTrust()
}

func (s *Server) shutdown(ctx context.Context, req *request) (any, error) {
	s.mu.Lock()
	first := s.state != stateShutdown
	s.state = stateShutdown
	cancels := make([]context.CancelFunc, 0, len(s.inflight))
	for _, c := range s.inflight {
		cancels = append(cancels, c)
	}
	s.mu.Unlock()
	if first {
		for _, c := range cancels {
			c()
		}
	}
	return nil, nil
}

// warnSettings tells the user that a settings file stopped parsing.
func (s *Server) warnSettings(p workspace.SettingsProblem) {
	s.log.Warnf("settings: %v", p)
	_ = s.conn.Notify(context.Background(), "window/showMessage", map[string]any{
		"type":    int(LevelWarn),
		"message": s.secrets.scrub(fmt.Sprintf("qwen-ls: %s could not be read, so its last good settings (if any) stay in force: %v", p.File, p.Err)),
	})
}
