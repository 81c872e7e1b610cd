package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/qwen-ls/qwen-ls/tools/codeintel"
)

// This file holds the lsp tool (tools.md §3.15): Qwen Code's schema, the
// validation, and the questions it asks the Host's code intelligence.
// lspformat.go turns the answers into text.

//go:embed lsp.md
var lspDescription string

const lspSchema = `{
  "type": "object",
  "properties": {
    "operation": {
      "type": "string",
      "description": "What to ask the language server.",
      "enum": ["goToDefinition", "findReferences", "hover", "documentSymbol", "workspaceSymbol", "goToImplementation",
        "prepareCallHierarchy", "incomingCalls", "outgoingCalls", "diagnostics", "workspaceDiagnostics", "codeActions"]
    },
    "filePath": {
      "type": "string",
      "description": "The file: absolute, or relative to the first workspace root."
    },
    "line": {
      "type": "integer",
      "description": "The 1-based line of the position asked about."
    },
    "character": {
      "type": "integer",
      "description": "The 1-based character on that line (the first character is 1); point at the symbol's name."
    },
    "endLine": {
      "type": "integer",
      "description": "The 1-based last line of the range of codeActions."
    },
    "endCharacter": {
      "type": "integer",
      "description": "The 1-based character where the range of codeActions ends."
    },
    "includeDeclaration": {
      "type": "boolean",
      "description": "findReferences: also list the declaration itself. Defaults to false."
    },
    "query": {
      "type": "string",
      "description": "workspaceSymbol: the name, or part of the name, to look for."
    },
    "callHierarchyItem": {
      "type": "object",
      "description": "incomingCalls and outgoingCalls: an item exactly as prepareCallHierarchy printed it.",
      "properties": {
        "name": {"type": "string"},
        "kind": {"type": "string"},
        "rawKind": {"type": "number"},
        "detail": {"type": "string"},
        "uri": {"type": "string"},
        "range": {"type": "object"},
        "selectionRange": {"type": "object"},
        "data": {},
        "serverName": {"type": "string"}
      },
      "required": ["name", "uri", "range", "selectionRange"]
    },
    "limit": {
      "type": "integer",
      "minimum": 1,
      "description": "The most results to show. Defaults to 50."
    },
    "diagnostics": {
      "type": "array",
      "description": "codeActions: the problems to fix, as the diagnostics operation reports them (1-based lines and characters). Defaults to those the server reports in the range.",
      "items": {
        "type": "object",
        "properties": {
          "range": {"type": "object"},
          "severity": {"type": "string", "enum": ["error", "warning", "information", "hint"]},
          "code": {"type": ["string", "number"]},
          "source": {"type": "string"},
          "message": {"type": "string"}
        },
        "required": ["range", "message"]
      }
    },
    "codeActionKinds": {
      "type": "array",
      "items": {"type": "string"},
      "description": "codeActions: only actions of these kinds, such as quickfix, refactor or source.organizeImports."
    }
  },
  "required": ["operation"]
}`

// CodeIntel is a Host that answers questions about code from language
// servers: the editor's own features, or servers qwen-ls starts. Paths are
// absolute and positions are codeintel's (1-based lines, UTF-8 columns).
// The lsp tool asks it; edit and write_file ask it for the diagnostics of
// the file they changed (verdict.go).
type CodeIntel interface {
	// CodeQuery answers one question. A *codeintel.UnavailableError
	// says no server answers for the file (its message is for the
	// model); ctx's error means the call was cancelled; any other error
	// is the server's failure.
	CodeQuery(ctx context.Context, sessionID string, q codeintel.Query) (codeintel.Answer, error)
	// CodeDiagnostics returns diagnostics, with the errors of
	// CodeQuery.
	CodeDiagnostics(ctx context.Context, sessionID string, q codeintel.DiagnosticsQuery) (codeintel.Report, error)
}

// codeIntel returns the code intelligence of call's Host, or nil.
func codeIntel(call *Call) CodeIntel {
	if call == nil || call.Host == nil {
		return nil
	}
	ci, _ := call.Host.(CodeIntel)
	return ci
}

// The lsp tool's error types.
const (
	errorLSPUnavailable ErrorType = "lsp_unavailable"
	errorLSPFailed      ErrorType = "lsp_request_failed"
)

// lspDefaultLimit is how many results are shown without a limit.
const lspDefaultLimit = 50

// lspDiagnosticsWait bounds the wait of the diagnostics operation for a
// server to report on the file's current text: the model asked, so it may
// wait longer than an edit's verdict does (a server that has just started
// loads the workspace first).
const lspDiagnosticsWait = 10 * time.Second

// lspTool is the lsp tool.
type lspTool struct {
	Base
	env *Env
}

// NewLSP returns the lsp tool working in env.
func NewLSP(env *Env) Tool {
	return &lspTool{env: env, Base: Base{Spec: Spec{
		Name:        "lsp",
		DisplayName: "Lsp",
		Description: strings.TrimSpace(lspDescription),
		Schema:      json.RawMessage(lspSchema),
		Kind:        KindRead,
	}}}
}

// lspRequest is a validated lsp call.
type lspRequest struct {
	op string
	// abs is the file, or "" for the operations without one.
	abs string
	// line and char are 1-based; char counts characters. endLine and
	// endChar bound codeActions' range (0: the position).
	line, char       int
	endLine, endChar int
	includeDecl      bool
	query            string
	item             *codeintel.CallItem
	diags            []codeintel.Diagnostic
	hasDiags         bool
	kinds            []string
	limit            int
}

// The operations by what they need.
var (
	lspPositionOps = []string{codeintel.Definition, codeintel.Implementation, codeintel.References,
		codeintel.Hover, codeintel.PrepareCallHierarchy}
	lspFileOps = []string{codeintel.DocumentSymbol, codeintel.Diagnostics}
	lspItemOps = []string{codeintel.IncomingCalls, codeintel.OutgoingCalls}
)

func (t *lspTool) Validate(params map[string]any) *ToolError {
	_, terr := t.request(params)
	return terr
}

func (t *lspTool) request(params map[string]any) (*lspRequest, *ToolError) {
	op, _ := String(params, "operation")
	req := &lspRequest{op: op, limit: lspDefaultLimit}
	if n, ok := intParam(params, "limit"); ok {
		req.limit = n
	}
	for _, p := range []struct {
		name string
		to   *int
		what string
	}{
		{"line", &req.line, "the first line of a file is line 1"},
		{"character", &req.char, "the first character of a line is 1"},
		{"endLine", &req.endLine, "the first line of a file is line 1"},
		{"endCharacter", &req.endChar, "the first character of a line is 1"},
	} {
		if _, present := params[p.name]; !present {
			continue
		}
		n, ok := intParam(params, p.name)
		if !ok {
			return nil, InvalidParams(fmt.Sprintf("Argument %q must be a whole number.", p.name))
		}
		if n < 1 {
			return nil, InvalidParams(fmt.Sprintf("Argument %q is 1-based (%s), so %d is not a position.", p.name, p.what, n))
		}
		*p.to = n
	}
	req.includeDecl, _ = boolParam(params, "includeDeclaration")
	rawPath, _ := String(params, "filePath")
	hasPath := strings.TrimSpace(rawPath) != ""

	switch {
	case slices.Contains(lspPositionOps, op), op == codeintel.CodeActions:
		if !hasPath || req.line == 0 || (req.char == 0 && op != codeintel.CodeActions) {
			return nil, InvalidParams(fmt.Sprintf("%s needs filePath, line and character: the file and the 1-based position of the symbol's name in it.", op))
		}
		if req.char == 0 {
			req.char = 1
		}
	case slices.Contains(lspFileOps, op):
		if !hasPath {
			return nil, InvalidParams(fmt.Sprintf("%s needs filePath: the file to look at.", op))
		}
	case op == codeintel.WorkspaceSymbol:
		req.query, _ = String(params, "query")
		req.query = strings.TrimSpace(req.query)
		if req.query == "" {
			return nil, InvalidParams("workspaceSymbol needs query: the name, or part of the name, of the symbol to look for.")
		}
	case slices.Contains(lspItemOps, op):
		item, terr := t.env.callItemArg(params["callHierarchyItem"], op)
		if terr != nil {
			return nil, terr
		}
		req.item = item
	case op == codeintel.WorkspaceDiagnostics:
	default:
		return nil, InvalidParams("params/operation must be equal to one of the allowed values")
	}
	if hasPath && (slices.Contains(lspPositionOps, op) || slices.Contains(lspFileOps, op) || op == codeintel.CodeActions) {
		abs, terr := t.env.searchPathArg(rawPath)
		if terr != nil {
			return nil, terr
		}
		if terr := t.env.checkInside(abs, pathOptions{}); terr != nil {
			return nil, terr
		}
		if terr := t.env.qwenIgnored(abs); terr != nil {
			return nil, terr
		}
		req.abs = abs
	}
	if op == codeintel.CodeActions {
		req.kinds, _ = stringsParam(params, "codeActionKinds")
		if raw, ok := params["diagnostics"]; ok {
			diags, terr := diagnosticsArg(raw)
			if terr != nil {
				return nil, terr
			}
			req.diags, req.hasDiags = diags, true
		}
	}
	return req, nil
}

func (t *lspTool) Describe(params map[string]any) string {
	op, _ := String(params, "operation")
	switch op {
	case codeintel.WorkspaceSymbol:
		q, _ := String(params, "query")
		return fmt.Sprintf("%s %q", op, q)
	case codeintel.WorkspaceDiagnostics:
		return op
	case codeintel.IncomingCalls, codeintel.OutgoingCalls:
		if m, ok := params["callHierarchyItem"].(map[string]any); ok {
			if name, ok := m["name"].(string); ok {
				return op + " of " + name
			}
		}
		return op
	}
	p, _ := String(params, "filePath")
	where := p
	if abs, terr := t.env.searchPathArg(p); terr == nil {
		where = t.env.Rel(abs)
	}
	if line, ok := intParam(params, "line"); ok {
		where += fmt.Sprintf(":%d", line)
		if ch, ok := intParam(params, "character"); ok {
			where += fmt.Sprintf(":%d", ch)
		}
	}
	return op + " at " + readTitlePath(where)
}

func (t *lspTool) Locations(params map[string]any) []Location {
	req, terr := t.request(params)
	if terr != nil || req.abs == "" {
		return nil
	}
	return []Location{{Path: req.abs, Line: req.line}}
}

func (t *lspTool) Execute(ctx context.Context, call *Call, params map[string]any, _ func(Output)) (Result, error) {
	req, terr := t.request(params)
	if terr != nil {
		return Result{Error: terr}, nil
	}
	ci := codeIntel(call)
	if ci == nil {
		return Result{Error: NewError(errorLSPUnavailable,
			"No language server is available here: qwen-ls runs without an editor connection that could start one. Use grep_search and read_file instead.")}, nil
	}
	f := &lspFormatter{env: t.env, req: req, lines: map[string][]string{}}
	q := codeintel.Query{Op: req.op, Path: req.abs, IncludeDeclaration: req.includeDecl, Query: req.query, Item: req.item, Kinds: req.kinds}
	if req.abs != "" {
		if err := syncClient(ctx, call, req.abs); err != nil {
			if ctx.Err() != nil {
				return Result{}, ctx.Err()
			}
			if pathMissing(err) {
				return Result{Error: Errorf(errorFileNotFound, "%s does not exist.", req.abs)}, nil
			}
		}
		if terr := f.loadTarget(); terr != nil {
			return Result{Error: terr}, nil
		}
		if req.line > 0 {
			pos, terr := f.bytePos(req.line, req.char, "line", "character")
			if terr != nil {
				return Result{Error: terr}, nil
			}
			q.Pos, q.End = pos, pos
		}
		if req.endLine > 0 || req.endChar > 0 {
			endLine, endChar := req.endLine, req.endChar
			if endLine == 0 {
				endLine = req.line
			}
			if endChar == 0 {
				endChar = len([]rune(f.lineText(req.abs, endLine))) + 1
			}
			end, terr := f.bytePos(endLine, endChar, "endLine", "endCharacter")
			if terr != nil {
				return Result{Error: terr}, nil
			}
			q.End = end
		}
	}

	switch req.op {
	case codeintel.Diagnostics, codeintel.WorkspaceDiagnostics:
		dq := codeintel.DiagnosticsQuery{Path: req.abs}
		if req.abs != "" {
			dq.Fresh, dq.Wait = true, lspDiagnosticsWait
		}
		rep, err := ci.CodeDiagnostics(ctx, call.SessionID, dq)
		if res, done, err := lspFailure(ctx, err); done {
			return res, err
		}
		return f.diagnostics(rep), nil
	case codeintel.CodeActions:
		if req.hasDiags {
			q.Diagnostics = req.diags
		} else if rep, err := ci.CodeDiagnostics(ctx, call.SessionID, codeintel.DiagnosticsQuery{Path: req.abs}); err == nil {
			q.Diagnostics = overlapping(rep, req.abs, codeintel.Range{Start: q.Pos, End: q.End})
		} else if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
	}
	ans, err := ci.CodeQuery(ctx, call.SessionID, q)
	if res, done, err := lspFailure(ctx, err); done {
		return res, err
	}
	return f.answer(ans), nil
}

// lspFailure turns a failed question into the call's result; done is
// false when there was no failure.
func lspFailure(ctx context.Context, err error) (res Result, done bool, goErr error) {
	if err == nil {
		return Result{}, false, nil
	}
	if ctx.Err() != nil {
		return Result{}, true, ctx.Err()
	}
	var un *codeintel.UnavailableError
	if errors.As(err, &un) {
		return Result{Error: NewError(errorLSPUnavailable, un.Message)}, true, nil
	}
	return Result{Error: Errorf(errorLSPFailed, "The language server failed to answer: %v", err)}, true, nil
}

// overlapping are the diagnostics of abs in rep that touch r.
func overlapping(rep codeintel.Report, abs string, r codeintel.Range) []codeintel.Diagnostic {
	var out []codeintel.Diagnostic
	for _, fd := range rep.Files {
		if fd.Path != abs {
			continue
		}
		for _, d := range fd.Diagnostics {
			if !posLess(r.End, d.Range.Start) && !posLess(d.Range.End, r.Start) {
				out = append(out, d)
			}
		}
	}
	return out
}

func posLess(a, b codeintel.Pos) bool {
	return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
}

// callItemArg reads callHierarchyItem as prepareCallHierarchy printed it
// (callItemJSON): a file URI inside the workspace, 0-based ranges whose
// characters count bytes.
func (e *Env) callItemArg(raw any, op string) (*codeintel.CallItem, *ToolError) {
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, InvalidParams(fmt.Sprintf("%s needs callHierarchyItem: one of the items prepareCallHierarchy printed, passed back exactly as it was. Call prepareCallHierarchy on the function's name first.", op))
	}
	bad := func(what string) *ToolError {
		return InvalidParams(fmt.Sprintf("callHierarchyItem %s. Pass an item exactly as prepareCallHierarchy printed it.", what))
	}
	item := &codeintel.CallItem{}
	item.Name, _ = m["name"].(string)
	item.Kind, _ = m["kind"].(string)
	item.Detail, _ = m["detail"].(string)
	item.Server, _ = m["serverName"].(string)
	if item.Kind == "" {
		if n, ok := intParam(m, "rawKind"); ok {
			item.Kind = codeintel.KindName(n)
		}
	}
	uri, _ := m["uri"].(string)
	if item.Name == "" || uri == "" {
		return nil, bad("lacks its name or uri")
	}
	p, err := e.Workspace.Paths.PathFlavor().PathFromURI(uri)
	if err != nil {
		return nil, bad("has a uri that names no file (" + uri + ")")
	}
	if terr := e.checkInside(p, pathOptions{}); terr != nil {
		return nil, terr
	}
	item.Path = p
	var ok1, ok2 bool
	if item.Range, ok1 = rangeArg(m["range"], 0); !ok1 {
		return nil, bad("has no valid range")
	}
	if item.Selection, ok2 = rangeArg(m["selectionRange"], 0); !ok2 {
		return nil, bad("has no valid selectionRange")
	}
	if d, ok := m["data"]; ok {
		item.Data, _ = json.Marshal(d)
	}
	if tags, ok := m["tags"].([]any); ok {
		for _, t := range tags {
			if n, ok := t.(float64); ok {
				item.Tags = append(item.Tags, int(n))
			}
		}
	}
	return item, nil
}

// rangeArg reads {start: {line, character}, end: {…}} whose numbers are
// based at base (0 or 1) into a codeintel range, whose are 1-based.
func rangeArg(raw any, base int) (codeintel.Range, bool) {
	m, ok := raw.(map[string]any)
	if !ok {
		return codeintel.Range{}, false
	}
	pos := func(v any) (codeintel.Pos, bool) {
		pm, ok := v.(map[string]any)
		if !ok {
			return codeintel.Pos{}, false
		}
		l, ok1 := intParam(pm, "line")
		c, ok2 := intParam(pm, "character")
		if !ok1 || !ok2 || l < base || c < base {
			return codeintel.Pos{}, false
		}
		return codeintel.Pos{Line: l - base + 1, Col: c - base + 1}, true
	}
	s, ok1 := pos(m["start"])
	end, ok2 := pos(m["end"])
	return codeintel.Range{Start: s, End: end}, ok1 && ok2
}

// diagnosticsArg reads codeActions' diagnostics: ranges with 1-based lines
// and characters, as the diagnostics operation prints them. Characters are
// taken as bytes here; the servers match diagnostics by message and line.
func diagnosticsArg(raw any) ([]codeintel.Diagnostic, *ToolError) {
	arr, ok := raw.([]any)
	if !ok {
		return nil, InvalidParams(`Argument "diagnostics" must be an array of {range, severity, message} objects.`)
	}
	out := make([]codeintel.Diagnostic, 0, len(arr))
	for i, v := range arr {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, InvalidParams(fmt.Sprintf("diagnostics[%d] must be an object with range and message.", i))
		}
		r, ok := rangeArg(m["range"], 1)
		msg, _ := m["message"].(string)
		if !ok || msg == "" {
			return nil, InvalidParams(fmt.Sprintf("diagnostics[%d] needs a range ({start: {line, character}, end: {line, character}}, 1-based) and a message.", i))
		}
		d := codeintel.Diagnostic{Range: r, Message: msg, Severity: severityOf(m["severity"])}
		d.Source, _ = m["source"].(string)
		switch c := m["code"].(type) {
		case string:
			d.Code = c
		case float64:
			d.Code = fmt.Sprint(c)
		case json.Number:
			d.Code = c.String()
		}
		out = append(out, d)
	}
	return out, nil
}

func severityOf(v any) int {
	s, _ := v.(string)
	for i, name := range severityNames {
		if i > 0 && strings.EqualFold(s, name) {
			return i
		}
	}
	return codeintel.SeverityError
}

// severityNames name the LSP severities, by number.
var severityNames = [...]string{1: "error", "warning", "information", "hint"}

// byteColOf converts a 1-based character column of line to a 1-based
// byte column; ok is false past the line's end (one past its last
// character is its end, and allowed).
func byteColOf(line string, char int) (int, bool) {
	n := 1
	for i := range line {
		if n == char {
			return i + 1, true
		}
		n++
	}
	if n == char {
		return len(line) + 1, true
	}
	return 0, false
}

// charColOf converts a 1-based byte column of line to a 1-based
// character column (a column inside a character counts as that
// character).
func charColOf(line string, col int) int {
	if col <= 1 {
		return 1
	}
	if col > len(line)+1 {
		col = len(line) + 1
	}
	for col > 1 && col <= len(line) && !utf8.RuneStart(line[col-1]) {
		col--
	}
	return utf8.RuneCountInString(line[:col-1]) + 1
}
