package rpc

import (
	"context"
	"encoding/json"
	"fmt"

	"go.lsp.dev/protocol"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// Text synchronisation. These handlers run on the read goroutine, in
// arrival order, so every request sees every change sent before it.

func (s *Server) didOpen(ctx context.Context, req *request) (any, error) {
	var p protocol.DidOpenTextDocumentParams
	if err := decode(req, &p); err != nil {
		return nil, err
	}
	s.noteClientURIs(req.Params)
	path, err := s.uriToPath(string(p.TextDocument.URI))
	if err != nil {
		s.log.Debugf("didOpen: not tracking %s: %v", p.TextDocument.URI, err)
		return nil, nil
	}
	s.ws.Overlay.Open(path, p.TextDocument.Version, p.TextDocument.Text)
	return nil, nil
}

func (s *Server) didChange(ctx context.Context, req *request) (any, error) {
	var p protocol.DidChangeTextDocumentParams
	if err := decode(req, &p); err != nil {
		return nil, err
	}
	path, err := s.uriToPath(string(p.TextDocument.URI))
	if err != nil {
		return nil, nil
	}
	changes := make([]workspace.Change, 0, len(p.ContentChanges))
	for _, c := range p.ContentChanges {
		switch c := c.(type) {
		case *protocol.TextDocumentContentChangeWholeDocument:
			changes = append(changes, workspace.Change{Text: c.Text})
		case *protocol.TextDocumentContentChangePartial:
			r := workspace.Range{
				Start: workspace.Position{Line: int(c.Range.Start.Line), Character: int(c.Range.Start.Character)},
				End:   workspace.Position{Line: int(c.Range.End.Line), Character: int(c.Range.End.Character)},
			}
			changes = append(changes, workspace.Change{Range: &r, Text: c.Text})
		default:
			return nil, invalidParams(req.Method, fmt.Errorf("unknown content change %T", c))
		}
	}
	if err := s.ws.Overlay.Apply(path, p.TextDocument.Version, changes, s.clientCaps().Encoding); err != nil {
		return nil, fmt.Errorf("%w; the server's copy of %s was left at its previous version, so close and reopen the file to resync", err, path)
	}
	return nil, nil
}

func (s *Server) didSave(ctx context.Context, req *request) (any, error) {
	var p protocol.DidSaveTextDocumentParams
	if err := decode(req, &p); err != nil {
		return nil, err
	}
	if path, err := s.uriToPath(string(p.TextDocument.URI)); err == nil {
		s.ws.Overlay.Saved(path)
	}
	return nil, nil
}

func (s *Server) didClose(ctx context.Context, req *request) (any, error) {
	var p protocol.DidCloseTextDocumentParams
	if err := decode(req, &p); err != nil {
		return nil, err
	}
	if path, err := s.uriToPath(string(p.TextDocument.URI)); err == nil {
		s.ws.Overlay.Close(path)
	}
	return nil, nil
}

func (s *Server) didChangeWorkspaceFolders(ctx context.Context, req *request) (any, error) {
	var p protocol.DidChangeWorkspaceFoldersParams
	if err := decode(req, &p); err != nil {
		return nil, err
	}
	s.noteClientURIs(req.Params)
	for _, f := range p.Event.Removed {
		if path, err := s.uriToPath(string(f.URI)); err == nil {
			s.ws.RemoveRoot(path)
		}
	}
	for _, f := range p.Event.Added {
		if path, err := s.uriToPath(string(f.URI)); err == nil {
			s.ws.AddRoot(path)
		} else {
			s.log.Warnf("didChangeWorkspaceFolders: %v", err)
		}
	}
	s.log.Infof("workspace roots: %v", s.ws.Roots.List())
	s.sources.RootsChanged()
	return nil, nil
}

func (s *Server) didChangeWatchedFiles(ctx context.Context, req *request) (any, error) {
	var p protocol.DidChangeWatchedFilesParams
	if err := decode(req, &p); err != nil {
		return nil, err
	}
	for _, ch := range p.Changes {
		path, err := s.uriToPath(string(ch.URI))
		if err != nil {
			continue
		}
		op := workspace.Changed
		switch ch.Type {
		case protocol.FileChangeTypeCreated:
			op = workspace.Created
		case protocol.FileChangeTypeDeleted:
			op = workspace.Deleted
		}
		s.ws.Watcher.Inject(workspace.Event{Path: path, Op: op})
	}
	return nil, nil
}

// didChangeConfiguration replaces the editor's settings layer
// (protocol.md §10). Its params are {settings: {...same keys as
// settings.json...}}; a null or missing settings object clears the layer.
func (s *Server) didChangeConfiguration(ctx context.Context, req *request) (any, error) {
	var p struct {
		Settings json.RawMessage `json:"settings"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, invalidParams(req.Method, err)
	}
	var m map[string]any
	if len(p.Settings) > 0 && string(p.Settings) != "null" {
		if err := json.Unmarshal(p.Settings, &m); err != nil {
			return nil, invalidParams(req.Method, fmt.Errorf("settings must be an object: %w", err))
		}
	}
	s.ws.Settings.SetEditorLayer(m)
	return nil, nil
}
