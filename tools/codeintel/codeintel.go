// Package codeintel holds the neutral form of what a language server
// knows about code: locations, symbols, hovers, call hierarchies, code
// actions and diagnostics, with absolute paths and 1-based lines and
// columns. The lsp tool and the compiler's verdict after an edit (package
// tools) read it; package rpc produces it from either source of answers,
// the editor's own language features (qwen/lsp) or a language server that
// qwen-ls starts itself, converting URIs and position encodings at that
// edge. Nothing here speaks LSP.
//
// The entry points are Query (one question) and Answer, and
// DiagnosticsQuery and Report for diagnostics.
package codeintel

import (
	"encoding/json"
	"strings"
	"time"
)

// The operations of the lsp tool, by the names the model calls them
// (Qwen Code's).
const (
	Definition           = "goToDefinition"
	References           = "findReferences"
	Hover                = "hover"
	DocumentSymbol       = "documentSymbol"
	WorkspaceSymbol      = "workspaceSymbol"
	Implementation       = "goToImplementation"
	PrepareCallHierarchy = "prepareCallHierarchy"
	IncomingCalls        = "incomingCalls"
	OutgoingCalls        = "outgoingCalls"
	Diagnostics          = "diagnostics"
	WorkspaceDiagnostics = "workspaceDiagnostics"
	CodeActions          = "codeActions"
)

// Pos is a place in a text: a 1-based line and a 1-based column that
// counts bytes of UTF-8 (column 1 is the line's first byte). Lines end at
// "\n", "\r\n" or a lone "\r".
type Pos struct {
	Line int `json:"line"`
	Col  int `json:"col"`
}

// Range is a half-open span between two positions.
type Range struct {
	Start Pos `json:"start"`
	End   Pos `json:"end"`
}

// Location is a range in a file.
type Location struct {
	Path  string `json:"path"`
	Range Range  `json:"range"`
}

// Query is one question to a language server.
type Query struct {
	// Op is one of the operations above (not the two diagnostics ones,
	// which are DiagnosticsQuery's).
	Op string
	// Path is the file asked about (absolute); empty for
	// WorkspaceSymbol, IncomingCalls and OutgoingCalls.
	Path string
	// Pos is the position asked about; Pos to End is the range of
	// CodeActions.
	Pos, End Pos
	// IncludeDeclaration counts the declaration among References.
	IncludeDeclaration bool
	// Query is WorkspaceSymbol's search text.
	Query string
	// Item is the item of IncomingCalls and OutgoingCalls.
	Item *CallItem
	// Diagnostics and Kinds are CodeActions' context.
	Diagnostics []Diagnostic
	Kinds       []string
}

// Answer is what a language server said. Only the fields of the query's
// operation are set.
type Answer struct {
	// Server names what answered: a language server ("gopls"), or the
	// editor's features ("the editor's gopls").
	Server string
	// Locations answer Definition, References and Implementation.
	Locations []Location
	// Symbols answer DocumentSymbol (nested) and WorkspaceSymbol (flat,
	// each with its Path).
	Symbols []Symbol
	// Hover is the hover's text (Markdown or plain text, as the server
	// wrote it).
	Hover string
	// Items answer PrepareCallHierarchy.
	Items []CallItem
	// Calls answer IncomingCalls and OutgoingCalls.
	Calls []Call
	// Actions answer CodeActions.
	Actions []Action
}

// Symbol is a declaration in a file.
type Symbol struct {
	Name   string
	Kind   string
	Detail string
	// Container names the enclosing symbol, when the server says so
	// (workspace symbols).
	Container string
	Path      string
	// Range is the whole declaration; Selection its name.
	Range     Range
	Selection Range
	Children  []Symbol
}

// CallItem is a function or method of a call hierarchy. The model gets it
// as JSON (ItemJSON) and hands it back unchanged for IncomingCalls and
// OutgoingCalls, so it keeps what the server needs to find it again.
type CallItem struct {
	Name      string
	Kind      string
	Detail    string
	Path      string
	Range     Range
	Selection Range
	// Data is the server's own data for the item, passed back verbatim.
	Data json.RawMessage
	// Tags are the item's LSP symbol tags.
	Tags []int
	// Server names what answered for it.
	Server string
}

// Call is one edge of a call hierarchy: for IncomingCalls Item is a
// caller and Sites are its calls of the asked item (in Item's file); for
// OutgoingCalls Item is a callee and Sites are the asked item's calls of
// it (in the asked item's file, SitesPath).
type Call struct {
	Item      CallItem
	SitesPath string
	Sites     []Range
}

// Action is a code action the server offers. Actions are listed, never
// applied.
type Action struct {
	Title     string
	Kind      string
	Preferred bool
	// Disabled is why the action cannot be applied now ("" when it can).
	Disabled string
}

// The LSP severities of a diagnostic.
const (
	SeverityError       = 1
	SeverityWarning     = 2
	SeverityInformation = 3
	SeverityHint        = 4
)

// Diagnostic is one problem a server reports.
type Diagnostic struct {
	Range Range
	// Severity is one of the Severity constants; 0 when the server gave
	// none (clients treat that as an error).
	Severity int
	Code     string
	Source   string
	Message  string
}

// FileDiagnostics are the diagnostics of one file.
type FileDiagnostics struct {
	Path        string
	Diagnostics []Diagnostic
}

// DiagnosticsQuery asks for diagnostics.
type DiagnosticsQuery struct {
	// Path is the file asked about; empty asks for every file the server
	// reports on.
	Path string
	// Fresh waits, at most Wait, until the server has reported on the
	// current text of Path (the overlay's, else the disk's); without it
	// the answer is what the server last reported.
	Fresh bool
	Wait  time.Duration
	// Others, with Path, also returns what the server last reported for
	// other files (importers that a change of Path broke).
	Others bool
	// Changed says that Path was just written: with Fresh, a report made
	// before the question does not count, even from a source that keeps
	// no versions of the file (an editor that does not have it open).
	Changed bool
}

// Report is the answer to a DiagnosticsQuery.
type Report struct {
	Server string
	// Files holds Path first (when asked, even without diagnostics), then
	// the other files.
	Files []FileDiagnostics
	// Stale is set when Fresh was asked and the server had not reported
	// on the current text within Wait: Files are then older.
	Stale bool
	// Quiet is set instead when an editor saw no new report on a changed
	// file within Wait. Editors do not say that a check found nothing
	// new (VS Code's TypeScript publishes only diagnostics that changed),
	// so Files are the editor's current ones, which stand for the new
	// text as far as it knows.
	Quiet bool
}

// UnavailableError says that no language server answers for a file (or
// for the workspace): none is known or installed for its language, the
// folder is not trusted, or the server could not start. Message is the
// whole explanation the model reads, with what the person can do.
type UnavailableError struct {
	Message string
}

func (e *UnavailableError) Error() string { return e.Message }

// symbolKinds are the names of LSP's SymbolKind values, by number.
var symbolKinds = [...]string{1: "File", "Module", "Namespace", "Package", "Class", "Method", "Property",
	"Field", "Constructor", "Enum", "Interface", "Function", "Variable", "Constant", "String", "Number",
	"Boolean", "Array", "Object", "Key", "Null", "EnumMember", "Struct", "Event", "Operator", "TypeParameter"}

// KindName is the name of an LSP SymbolKind ("Function" for 12); an
// unknown number gives "Symbol".
func KindName(n int) string {
	if n > 0 && n < len(symbolKinds) {
		return symbolKinds[n]
	}
	return "Symbol"
}

// KindNumber is the LSP SymbolKind of a name KindName gives (any case);
// an unknown name gives 12, Function, the kind call hierarchies hold.
func KindNumber(name string) int {
	for i, k := range symbolKinds {
		if i > 0 && strings.EqualFold(k, name) {
			return i
		}
	}
	return 12
}

// Lines splits text at the line breaks of LSP ("\n", "\r\n" and a lone
// "\r"), without the breaks: line n of a position is Lines(text)[n].
func Lines(text string) []string {
	var lines []string
	start := 0
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\n':
			lines = append(lines, text[start:i])
			start = i + 1
		case '\r':
			lines = append(lines, text[start:i])
			if i+1 < len(text) && text[i+1] == '\n' {
				i++
			}
			start = i + 1
		}
	}
	return append(lines, text[start:])
}
