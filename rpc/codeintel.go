package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/qwen-ls/qwen-ls/tools/codeintel"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// Code intelligence for the tools (tools.CodeIntel, docs/design.md "Code
// intelligence"): a question goes to the editor with qwen/lsp when the
// client said it answers them (experimental.qwen.lsp), and to a language
// server qwen-ls starts itself (langservers.go) when it did not, or when
// it answered served: false. Both answers go through one converter
// (lspconvert.go).

// editorSlack is how much longer than the asked wait qwen-ls waits for the
// editor's answer to qwen/diagnostics, for a client that does not keep to
// timeoutMs.
const editorSlack = time.Second

// CodeQuery implements tools.CodeIntel.
func (h *host) CodeQuery(ctx context.Context, sessionID string, q codeintel.Query) (codeintel.Answer, error) {
	s := h.s
	if s.editorAnswersLSP() {
		conv := s.editorConv()
		method, params, err := conv.request(q)
		if err != nil {
			return codeintel.Answer{}, err
		}
		raw, servers, served, err := s.askEditor(ctx, sessionID, method, params)
		if err != nil {
			return codeintel.Answer{}, err
		}
		if served {
			conv.server = editorName(servers)
			if q.Item != nil {
				// The item came from the editor too.
				conv.server = nonEmpty(q.Item.Server, conv.server)
			}
			return conv.answer(q, raw)
		}
	}
	return s.langs.query(ctx, q)
}

// CodeDiagnostics implements tools.CodeIntel.
func (h *host) CodeDiagnostics(ctx context.Context, sessionID string, q codeintel.DiagnosticsQuery) (codeintel.Report, error) {
	s := h.s
	if s.editorAnswersLSP() {
		rep, served, err := s.editorDiagnostics(ctx, sessionID, q)
		if err != nil || served {
			return rep, err
		}
	}
	return s.langs.diagnostics(ctx, q)
}

// editorAnswersLSP reports whether the client answers qwen/lsp. ACP has
// no such request.
func (s *Server) editorAnswersLSP() bool {
	return !s.opts.ACP && s.clientCaps().LSP
}

// editorConv converts for the editor: its URIs, its position encoding.
func (s *Server) editorConv() *lspConv {
	enc := "utf-16"
	if s.clientCaps().Encoding == workspace.UTF8 {
		enc = "utf-8"
	}
	return s.newConv(enc, "the editor", s.pathToURI, s.uriToPath)
}

func editorName(servers []string) string {
	if len(servers) == 0 {
		return "the editor"
	}
	return "the editor's " + strings.Join(servers, " and ")
}

func nonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// askEditor sends qwen/lsp. served is false when the editor has nothing
// for the document; a JSON-RPC error answer is the editor's error, shown
// to the model.
func (s *Server) askEditor(ctx context.Context, sessionID, method string, params any) (raw json.RawMessage, servers []string, served bool, err error) {
	var ans struct {
		Served  bool            `json:"served"`
		Result  json.RawMessage `json:"result"`
		Servers []string        `json:"servers"`
		Reason  string          `json:"reason"`
	}
	err = s.host.call(ctx, "qwen/lsp", map[string]any{"sessionId": sessionID, "method": method, "params": params}, &ans)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, false, ctx.Err()
		}
		var je *jsonrpc2.Error
		if errors.As(err, &je) {
			return nil, nil, false, fmt.Errorf("the editor answered %s with an error: %s", method, je.Message)
		}
		return nil, nil, false, fmt.Errorf("the editor did not answer %s: %w", method, err)
	}
	if !ans.Served {
		if ans.Reason != "" {
			s.log.Debugf("qwen/lsp %s: the editor does not serve it: %s", method, ans.Reason)
		}
		return nil, nil, false, nil
	}
	return ans.Result, ans.Servers, true, nil
}

// editorDiagnostics asks the editor with qwen/diagnostics. For a fresh
// report on a file a tool just changed it names the version the overlay
// holds, or version 0 (any report that arrives after the request) for a
// file the editor does not have open; otherwise it asks for what the
// editor has now, without waiting: the editor's diagnostics of an open
// file are its verdict on that text, and an editor whose checks found
// nothing new publishes nothing that a wait could see. For the same
// reason a wait that runs out is quiet, not stale.
func (s *Server) editorDiagnostics(ctx context.Context, sessionID string, q codeintel.DiagnosticsQuery) (codeintel.Report, bool, error) {
	conv := s.editorConv()
	params := map[string]any{}
	wait := time.Duration(0)
	if q.Path != "" {
		params["uri"] = s.pathToURI(q.Path)
		if v, _ := s.ws.Overlay.Version(q.Path); q.Fresh && q.Changed {
			wait = q.Wait
			params["version"] = v
			params["timeoutMs"] = wait.Milliseconds()
		}
	}
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, wait+editorSlack+10*time.Second)
	raw, servers, served, err := s.askEditor(wctx, sessionID, "qwen/diagnostics", params)
	cancel()
	if err != nil || !served {
		if err != nil && ctx.Err() == nil && wctx.Err() != nil {
			err = fmt.Errorf("the editor did not answer qwen/diagnostics within %v", wait+editorSlack+10*time.Second)
		}
		return codeintel.Report{}, served, err
	}
	rep := codeintel.Report{Server: editorName(servers), Quiet: wait > 0 && time.Since(start) >= wait}
	if q.Path != "" {
		rep.Files = append(rep.Files, codeintel.FileDiagnostics{Path: q.Path})
	}
	add := func(raw json.RawMessage, skip string) {
		var files []struct {
			URI         string          `json:"uri"`
			Diagnostics json.RawMessage `json:"diagnostics"`
		}
		_ = json.Unmarshal(raw, &files)
		for _, f := range files {
			p, err := s.uriToPath(f.URI)
			if err != nil || (skip != "" && p == skip) {
				continue
			}
			ds := conv.diagnostics(p, f.Diagnostics)
			if q.Path != "" && p == q.Path && skip == "" {
				rep.Files[0].Diagnostics = append(rep.Files[0].Diagnostics, ds...)
				continue
			}
			rep.Files = append(rep.Files, codeintel.FileDiagnostics{Path: p, Diagnostics: ds})
		}
	}
	add(raw, "")
	if q.Path != "" && q.Others {
		all, _, ok, err := s.askEditor(ctx, sessionID, "qwen/diagnostics", map[string]any{})
		if err == nil && ok {
			add(all, q.Path)
		}
	}
	return rep, true, nil
}
