package rpc

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/qwen-ls/qwen-ls/tools/codeintel"
)

// The one converter between LSP's wire form and codeintel's, for answers
// from the editor (qwen/lsp) and from the language servers qwen-ls starts:
// URIs become paths and positions in the source's encoding become 1-based
// lines and UTF-8 columns, counted on the text the source sees (the
// overlay's, else the disk's).

// lspConv converts for one source and one answer.
type lspConv struct {
	s *Server
	// enc is the source's position encoding: "utf-8", "utf-16" or
	// "utf-32".
	enc string
	// toURI and toPath convert file URIs in the source's spelling.
	toURI  func(path string) string
	toPath func(uri string) (string, error)
	// server names the source in answers.
	server string
	// lines caches the lines of each file; nil when it cannot be read.
	lines map[string][]string
}

func (s *Server) newConv(enc, server string, toURI func(string) string, toPath func(string) (string, error)) *lspConv {
	return &lspConv{s: s, enc: enc, toURI: toURI, toPath: toPath, server: server, lines: map[string][]string{}}
}

type wirePos struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

type wireRange struct {
	Start wirePos `json:"start"`
	End   wirePos `json:"end"`
}

// lineOf is line l (0-based) of path, and whether it is known.
func (c *lspConv) lineOf(path string, l int) (string, bool) {
	lines, ok := c.lines[path]
	if !ok {
		if snap, err := c.s.ws.ReadText(path); err == nil {
			lines = codeintel.Lines(snap.Text)
		}
		c.lines[path] = lines
	}
	if l < 0 || l >= len(lines) {
		return "", false
	}
	return lines[l], true
}

// units is how many units of enc the character r takes.
func units(r rune, enc string) int {
	switch enc {
	case "utf-8":
		if r == utf8.RuneError {
			return 1
		}
		return utf8.RuneLen(r)
	case "utf-32":
		return 1
	}
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// toWire converts a codeintel position in path to the source's.
func (c *lspConv) toWire(path string, p codeintel.Pos) wirePos {
	w := wirePos{Line: max(p.Line-1, 0), Character: max(p.Col-1, 0)}
	line, ok := c.lineOf(path, w.Line)
	if !ok || c.enc == "utf-8" {
		return w
	}
	n, col := 0, min(w.Character, len(line))
	for i, r := range line {
		if i >= col {
			break
		}
		n += units(r, c.enc)
	}
	w.Character = n
	return w
}

// fromWire converts a source position in path to codeintel's. A
// character past the line's end is its end.
func (c *lspConv) fromWire(path string, w wirePos) codeintel.Pos {
	p := codeintel.Pos{Line: w.Line + 1, Col: w.Character + 1}
	line, ok := c.lineOf(path, w.Line)
	if !ok {
		return p
	}
	if c.enc == "utf-8" {
		p.Col = min(w.Character, len(line)) + 1
		return p
	}
	n := 0
	for i, r := range line {
		if n >= w.Character {
			p.Col = i + 1
			return p
		}
		n += units(r, c.enc)
	}
	p.Col = len(line) + 1
	return p
}

func (c *lspConv) rangeToWire(path string, r codeintel.Range) wireRange {
	return wireRange{Start: c.toWire(path, r.Start), End: c.toWire(path, r.End)}
}

func (c *lspConv) rangeFromWire(path string, r wireRange) codeintel.Range {
	return codeintel.Range{Start: c.fromWire(path, r.Start), End: c.fromWire(path, r.End)}
}

// doc is a TextDocumentIdentifier.
func (c *lspConv) doc(path string) map[string]string {
	return map[string]string{"uri": c.toURI(path)}
}

// request is the LSP method and params of q.
func (c *lspConv) request(q codeintel.Query) (string, any, error) {
	atPos := func() map[string]any {
		return map[string]any{"textDocument": c.doc(q.Path), "position": c.toWire(q.Path, q.Pos)}
	}
	switch q.Op {
	case codeintel.Definition:
		return "textDocument/definition", atPos(), nil
	case codeintel.Implementation:
		return "textDocument/implementation", atPos(), nil
	case codeintel.References:
		p := atPos()
		p["context"] = map[string]bool{"includeDeclaration": q.IncludeDeclaration}
		return "textDocument/references", p, nil
	case codeintel.Hover:
		return "textDocument/hover", atPos(), nil
	case codeintel.PrepareCallHierarchy:
		return "textDocument/prepareCallHierarchy", atPos(), nil
	case codeintel.DocumentSymbol:
		return "textDocument/documentSymbol", map[string]any{"textDocument": c.doc(q.Path)}, nil
	case codeintel.WorkspaceSymbol:
		return "workspace/symbol", map[string]any{"query": q.Query}, nil
	case codeintel.IncomingCalls, codeintel.OutgoingCalls:
		if q.Item == nil {
			return "", nil, fmt.Errorf("%s without an item", q.Op)
		}
		method := "callHierarchy/incomingCalls"
		if q.Op == codeintel.OutgoingCalls {
			method = "callHierarchy/outgoingCalls"
		}
		return method, map[string]any{"item": c.wireItem(*q.Item)}, nil
	case codeintel.CodeActions:
		diags := make([]map[string]any, 0, len(q.Diagnostics))
		for _, d := range q.Diagnostics {
			diags = append(diags, c.wireDiagnostic(q.Path, d))
		}
		ctx := map[string]any{"diagnostics": diags, "triggerKind": 1}
		if len(q.Kinds) > 0 {
			ctx["only"] = q.Kinds
		}
		return "textDocument/codeAction", map[string]any{"textDocument": c.doc(q.Path),
			"range": c.rangeToWire(q.Path, codeintel.Range{Start: q.Pos, End: q.End}), "context": ctx}, nil
	}
	return "", nil, fmt.Errorf("unknown operation %q", q.Op)
}

// answer converts the result of q's request.
func (c *lspConv) answer(q codeintel.Query, raw json.RawMessage) (codeintel.Answer, error) {
	a := codeintel.Answer{Server: c.server}
	if len(raw) == 0 || string(raw) == "null" {
		return a, nil
	}
	var err error
	switch q.Op {
	case codeintel.Definition, codeintel.Implementation, codeintel.References:
		a.Locations, err = c.locations(raw)
	case codeintel.Hover:
		a.Hover, err = hoverText(raw)
	case codeintel.DocumentSymbol:
		a.Symbols, err = c.symbols(q.Path, raw)
	case codeintel.WorkspaceSymbol:
		a.Symbols, err = c.symbols("", raw)
	case codeintel.PrepareCallHierarchy:
		var items []json.RawMessage
		if err = json.Unmarshal(raw, &items); err == nil {
			for _, it := range items {
				if item, ok := c.item(it); ok {
					a.Items = append(a.Items, item)
				}
			}
		}
	case codeintel.IncomingCalls, codeintel.OutgoingCalls:
		a.Calls, err = c.calls(q, raw)
	case codeintel.CodeActions:
		a.Actions, err = actions(raw)
	}
	if err != nil {
		return a, fmt.Errorf("the answer to %s is malformed: %w", q.Op, err)
	}
	return a, nil
}

// locations reads Location, Location[] or LocationLink[].
func (c *lspConv) locations(raw json.RawMessage) ([]codeintel.Location, error) {
	type wireLoc struct {
		URI                  string     `json:"uri"`
		Range                wireRange  `json:"range"`
		TargetURI            string     `json:"targetUri"`
		TargetSelectionRange *wireRange `json:"targetSelectionRange"`
		TargetRange          wireRange  `json:"targetRange"`
	}
	var list []wireLoc
	if strings.HasPrefix(strings.TrimSpace(string(raw)), "{") {
		var one wireLoc
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, err
		}
		list = []wireLoc{one}
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return nil, err
	}
	var out []codeintel.Location
	for _, l := range list {
		uri, r := l.URI, l.Range
		if uri == "" {
			uri, r = l.TargetURI, l.TargetRange
			if l.TargetSelectionRange != nil {
				r = *l.TargetSelectionRange
			}
		}
		p, err := c.toPath(uri)
		if err != nil {
			continue // untitled: and other schemes name no file
		}
		out = append(out, codeintel.Location{Path: p, Range: c.rangeFromWire(p, r)})
	}
	return out, nil
}

// hoverText is the text of a Hover: MarkupContent, a MarkedString or an
// array of them (a {language, value} becomes a fenced block).
func hoverText(raw json.RawMessage) (string, error) {
	var h struct {
		Contents json.RawMessage `json:"contents"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return "", err
	}
	var part func(v json.RawMessage) string
	part = func(v json.RawMessage) string {
		t := strings.TrimSpace(string(v))
		switch {
		case strings.HasPrefix(t, `"`):
			var s string
			_ = json.Unmarshal(v, &s)
			return s
		case strings.HasPrefix(t, "["):
			var items []json.RawMessage
			_ = json.Unmarshal(v, &items)
			var parts []string
			for _, it := range items {
				if p := part(it); p != "" {
					parts = append(parts, p)
				}
			}
			return strings.Join(parts, "\n\n")
		case strings.HasPrefix(t, "{"):
			var m struct {
				Kind     string `json:"kind"`
				Value    string `json:"value"`
				Language string `json:"language"`
			}
			_ = json.Unmarshal(v, &m)
			if m.Language != "" {
				return "```" + m.Language + "\n" + m.Value + "\n```"
			}
			return m.Value
		}
		return ""
	}
	return part(h.Contents), nil
}

// wireSymbol is a DocumentSymbol, a SymbolInformation or a
// WorkspaceSymbol.
type wireSymbol struct {
	Name           string          `json:"name"`
	Kind           int             `json:"kind"`
	Detail         string          `json:"detail"`
	ContainerName  string          `json:"containerName"`
	Range          *wireRange      `json:"range"`
	SelectionRange *wireRange      `json:"selectionRange"`
	Children       []wireSymbol    `json:"children"`
	Location       json.RawMessage `json:"location"`
}

// symbols reads DocumentSymbol[] (in path) or SymbolInformation[] /
// WorkspaceSymbol[] (each with its location).
func (c *lspConv) symbols(path string, raw json.RawMessage) ([]codeintel.Symbol, error) {
	var list []wireSymbol
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, err
	}
	var conv func(ws wireSymbol) (codeintel.Symbol, bool)
	conv = func(ws wireSymbol) (codeintel.Symbol, bool) {
		s := codeintel.Symbol{Name: ws.Name, Kind: codeintel.KindName(ws.Kind), Detail: ws.Detail, Container: ws.ContainerName, Path: path}
		if len(ws.Location) > 0 {
			var loc struct {
				URI   string     `json:"uri"`
				Range *wireRange `json:"range"`
			}
			if json.Unmarshal(ws.Location, &loc) != nil {
				return s, false
			}
			p, err := c.toPath(loc.URI)
			if err != nil {
				return s, false
			}
			s.Path = p
			if loc.Range != nil {
				s.Range = c.rangeFromWire(p, *loc.Range)
				s.Selection = s.Range
			}
			return s, true
		}
		if s.Path == "" {
			return s, false
		}
		if ws.Range != nil {
			s.Range = c.rangeFromWire(s.Path, *ws.Range)
		}
		s.Selection = s.Range
		if ws.SelectionRange != nil {
			s.Selection = c.rangeFromWire(s.Path, *ws.SelectionRange)
		}
		for _, ch := range ws.Children {
			if cs, ok := conv(ch); ok {
				s.Children = append(s.Children, cs)
			}
		}
		return s, true
	}
	var out []codeintel.Symbol
	for _, ws := range list {
		if s, ok := conv(ws); ok {
			out = append(out, s)
		}
	}
	return out, nil
}

// item reads a CallHierarchyItem.
func (c *lspConv) item(raw json.RawMessage) (codeintel.CallItem, bool) {
	var w struct {
		Name           string          `json:"name"`
		Kind           int             `json:"kind"`
		Tags           []int           `json:"tags"`
		Detail         string          `json:"detail"`
		URI            string          `json:"uri"`
		Range          wireRange       `json:"range"`
		SelectionRange wireRange       `json:"selectionRange"`
		Data           json.RawMessage `json:"data"`
	}
	if json.Unmarshal(raw, &w) != nil {
		return codeintel.CallItem{}, false
	}
	p, err := c.toPath(w.URI)
	if err != nil {
		return codeintel.CallItem{}, false
	}
	return codeintel.CallItem{Name: w.Name, Kind: codeintel.KindName(w.Kind), Tags: w.Tags, Detail: w.Detail, Path: p,
		Range: c.rangeFromWire(p, w.Range), Selection: c.rangeFromWire(p, w.SelectionRange), Data: w.Data, Server: c.server}, true
}

// wireItem is it as a CallHierarchyItem.
func (c *lspConv) wireItem(it codeintel.CallItem) map[string]any {
	m := map[string]any{
		"name": it.Name, "kind": codeintel.KindNumber(it.Kind), "uri": c.toURI(it.Path),
		"range": c.rangeToWire(it.Path, it.Range), "selectionRange": c.rangeToWire(it.Path, it.Selection),
	}
	if it.Detail != "" {
		m["detail"] = it.Detail
	}
	if len(it.Tags) > 0 {
		m["tags"] = it.Tags
	}
	if len(it.Data) > 0 {
		m["data"] = it.Data
	}
	return m
}

// calls reads CallHierarchyIncomingCall[] or CallHierarchyOutgoingCall[].
// An incoming call's ranges lie in its caller's file, an outgoing call's
// in the asked item's.
func (c *lspConv) calls(q codeintel.Query, raw json.RawMessage) ([]codeintel.Call, error) {
	var list []struct {
		From       json.RawMessage `json:"from"`
		To         json.RawMessage `json:"to"`
		FromRanges []wireRange     `json:"fromRanges"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, err
	}
	var out []codeintel.Call
	for _, w := range list {
		other := w.From
		if q.Op == codeintel.OutgoingCalls {
			other = w.To
		}
		it, ok := c.item(other)
		if !ok {
			continue
		}
		call := codeintel.Call{Item: it, SitesPath: it.Path}
		if q.Op == codeintel.OutgoingCalls {
			call.SitesPath = q.Item.Path
		}
		for _, r := range w.FromRanges {
			call.Sites = append(call.Sites, c.rangeFromWire(call.SitesPath, r))
		}
		out = append(out, call)
	}
	return out, nil
}

// actions reads (Command | CodeAction)[]: only what lists them.
func actions(raw json.RawMessage) ([]codeintel.Action, error) {
	var list []struct {
		Title       string                   `json:"title"`
		Kind        string                   `json:"kind"`
		IsPreferred bool                     `json:"isPreferred"`
		Disabled    *struct{ Reason string } `json:"disabled"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, err
	}
	var out []codeintel.Action
	for _, w := range list {
		if w.Title == "" {
			continue
		}
		a := codeintel.Action{Title: w.Title, Kind: w.Kind, Preferred: w.IsPreferred}
		if w.Disabled != nil {
			a.Disabled = w.Disabled.Reason
			if a.Disabled == "" {
				a.Disabled = "no reason given"
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// diagnostics reads an LSP Diagnostic[] of path.
func (c *lspConv) diagnostics(path string, raw json.RawMessage) []codeintel.Diagnostic {
	var list []struct {
		Range    wireRange       `json:"range"`
		Severity int             `json:"severity"`
		Code     json.RawMessage `json:"code"`
		Source   string          `json:"source"`
		Message  string          `json:"message"`
	}
	if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	out := make([]codeintel.Diagnostic, 0, len(list))
	for _, w := range list {
		d := codeintel.Diagnostic{Range: c.rangeFromWire(path, w.Range), Severity: w.Severity, Source: w.Source, Message: w.Message}
		var code any
		if json.Unmarshal(w.Code, &code) == nil && code != nil {
			d.Code = fmt.Sprint(code)
		}
		out = append(out, d)
	}
	return out
}

// wireDiagnostic is d (of path) as an LSP Diagnostic.
func (c *lspConv) wireDiagnostic(path string, d codeintel.Diagnostic) map[string]any {
	m := map[string]any{"range": c.rangeToWire(path, d.Range), "message": d.Message}
	if d.Severity > 0 {
		m["severity"] = d.Severity
	}
	if d.Code != "" {
		m["code"] = d.Code
	}
	if d.Source != "" {
		m["source"] = d.Source
	}
	return m
}
