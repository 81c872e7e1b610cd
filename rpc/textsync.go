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

// bigDocument is the size of didOpen or didChange params past which the
// document's text is decoded by unquoteString rather than by the protocol
// package (which takes several times its size to do it), and a whole new
// text is decoded and indexed off the read path (Overlay.OpenLater).
const bigDocument = 1 << 20

func (s *Server) didOpen(ctx context.Context, req *request) (any, error) {
	if len(req.Params) >= bigDocument {
		if done, err := s.didOpenBig(req); done {
			return nil, err
		}
	}
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
	var texts [][]byte // the changes' texts still to decode, when big
	if len(req.Params) >= bigDocument {
		var ok bool
		if texts, ok = bigTexts(req.params(), &p); !ok {
			texts = nil
		}
	}
	if texts == nil {
		if err := decode(req, &p); err != nil {
			return nil, err
		}
	}
	path, err := s.uriToPath(string(p.TextDocument.URI))
	if err != nil {
		return nil, nil
	}
	if len(texts) == 1 && texts[0] != nil {
		if _, whole := p.ContentChanges[0].(*protocol.TextDocumentContentChangeWholeDocument); whole {
			if err := s.ws.Overlay.ReplaceLater(path, p.TextDocument.Version, s.decodeLater(texts[0])); err != nil {
				return nil, fmt.Errorf("%w; the server's copy of %s was left at its previous version, so close and reopen the file to resync", err, path)
			}
			return nil, nil
		}
	}
	changes := make([]workspace.Change, 0, len(p.ContentChanges))
	for i, c := range p.ContentChanges {
		var text string
		switch c := c.(type) {
		case *protocol.TextDocumentContentChangeWholeDocument:
			text = c.Text
		case *protocol.TextDocumentContentChangePartial:
			text = c.Text
		}
		if i < len(texts) && texts[i] != nil {
			text = unquoteString(texts[i])
		}
		switch c := c.(type) {
		case *protocol.TextDocumentContentChangeWholeDocument:
			changes = append(changes, workspace.Change{Text: text})
		case *protocol.TextDocumentContentChangePartial:
			r := workspace.Range{
				Start: workspace.Position{Line: int(c.Range.Start.Line), Character: int(c.Range.Start.Character)},
				End:   workspace.Position{Line: int(c.Range.End.Line), Character: int(c.Range.End.Character)},
			}
			changes = append(changes, workspace.Change{Range: &r, Text: text})
		default:
			return nil, invalidParams(req.Method, fmt.Errorf("unknown content change %T", c))
		}
	}
	if err := s.ws.Overlay.Apply(path, p.TextDocument.Version, changes, s.clientCaps().Encoding); err != nil {
		return nil, fmt.Errorf("%w; the server's copy of %s was left at its previous version, so close and reopen the file to resync", err, path)
	}
	return nil, nil
}

// didOpenBig handles a didOpen whose params are big: the protocol package
// decodes them with the text left out, and the text is decoded and
// indexed on a goroutine of the overlay's, so the read path goes on to the
// next message at once; what reads this document waits for it. done is
// false when the params are not in the shape this expects; the ordinary
// path then handles (or refuses) them.
func (s *Server) didOpenBig(req *request) (done bool, err error) {
	pv := req.params()
	params := pv.raw
	ts, te, ok := pv.member("textDocument")
	if !ok {
		return false, nil
	}
	xs, xe, ok := pv.sub(ts, te).member("text")
	if !ok || params[ts+xs] != '"' {
		return false, nil
	}
	raw := params[ts+xs : ts+xe]
	small := cutOut(params, [][2]int{{ts + xs, ts + xe}})
	var p protocol.DidOpenTextDocumentParams
	if err := protocol.Unmarshal(small, &p); err != nil {
		return true, invalidParams(req.Method, err)
	}
	s.noteClientURIs(small)
	path, err := s.uriToPath(string(p.TextDocument.URI))
	if err != nil {
		s.log.Debugf("didOpen: not tracking %s: %v", p.TextDocument.URI, err)
		return true, nil
	}
	s.ws.Overlay.OpenLater(path, p.TextDocument.Version, s.decodeLater(raw))
	return true, nil
}

// decodeLater returns the function that decodes raw for the overlay. raw
// is a slice of the whole message, which is garbage once decoded: the
// function lets go of it and asks for the memory to be handed back.
func (s *Server) decodeLater(raw []byte) func() string {
	return func() string {
		text := unquoteString(raw)
		raw = nil
		s.mem.soon()
		return text
	}
}

// bigTexts decodes the params of a big didChange into p with the changes'
// texts left out, and returns those texts (raw JSON strings, nil for a
// change whose text is not a string), by change. ok is false when the
// params are not in the shape this expects.
func bigTexts(pv jsonValue, p *protocol.DidChangeTextDocumentParams) (texts [][]byte, ok bool) {
	params := pv.raw
	cs, ce, ok := pv.member("contentChanges")
	if !ok {
		return nil, false
	}
	changes := pv.sub(cs, ce)
	var cuts [][2]int
	for _, el := range changes.elements() {
		ev := changes.sub(el[0], el[1])
		e := ev.raw
		if e[0] != '{' {
			return nil, false
		}
		xs, xe, found := ev.member("text")
		if !found || e[xs] != '"' {
			texts = append(texts, nil)
			continue
		}
		texts = append(texts, e[xs:xe])
		cuts = append(cuts, [2]int{cs + el[0] + xs, cs + el[0] + xe})
	}
	if err := protocol.Unmarshal(cutOut(params, cuts), p); err != nil || len(p.ContentChanges) != len(texts) {
		return nil, false
	}
	return texts, true
}

// cutOut returns a copy of b with each span (in order, not overlapping)
// replaced by an empty JSON string.
func cutOut(b []byte, spans [][2]int) []byte {
	n := len(b)
	for _, sp := range spans {
		n -= sp[1] - sp[0] - 2
	}
	out := make([]byte, 0, n)
	at := 0
	for _, sp := range spans {
		out = append(append(out, b[at:sp[0]]...), `""`...)
		at = sp[1]
	}
	return append(out, b[at:]...)
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
