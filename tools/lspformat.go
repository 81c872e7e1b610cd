package tools

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/qwen-ls/qwen-ls/tools/codeintel"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// This file turns the answers of the lsp tool into the short text the model
// reads (tools.md §3.15): a location is path:line:character with the text
// of that line, a symbol its kind, name and lines, a hover its signature and
// documentation; results are sorted and capped.

// lspLineMax cuts the text of a line shown beside a location.
const lspLineMax = 160

// lspFormatter formats the answer to one lsp call. It reads the lines it
// shows from the overlay or the disk, only for files inside the roots that
// .qwenignore does not exclude; the other files are named, never read.
type lspFormatter struct {
	env *Env
	req *lspRequest
	// server names what answered, for the headings.
	server string
	// lines caches the lines of each file read; a nil entry is a file
	// that is not shown.
	lines map[string][]string
	// noLimitHint leaves out the advice to raise limit (the verdict
	// after an edit has no limit argument).
	noLimitHint bool
}

// loadTarget reads the file the call is about, which must exist.
func (f *lspFormatter) loadTarget() *ToolError {
	abs := f.req.abs
	snap, err := f.env.Workspace.ReadText(abs)
	if err != nil {
		terr, _ := readFailure(abs, err)
		return terr
	}
	f.lines[abs] = codeintel.Lines(snap.Text)
	return nil
}

// linesOf returns the lines of path, or nil when it is not shown.
func (f *lspFormatter) linesOf(path string) []string {
	if l, ok := f.lines[path]; ok {
		return l
	}
	var lines []string
	if f.env.checkInside(path, pathOptions{}) == nil && f.env.qwenIgnored(path) == nil {
		if snap, err := f.env.Workspace.ReadText(path); err == nil {
			lines = codeintel.Lines(snap.Text)
		}
	}
	f.lines[path] = lines
	return lines
}

// lineText is line (1-based) of path, or "" when not shown.
func (f *lspFormatter) lineText(path string, line int) string {
	lines := f.linesOf(path)
	if line < 1 || line > len(lines) {
		return ""
	}
	return lines[line-1]
}

// bytePos converts the call's 1-based line and character in its file to
// a codeintel position, or says why they do not fit the file.
func (f *lspFormatter) bytePos(line, char int, lineArg, charArg string) (codeintel.Pos, *ToolError) {
	lines := f.lines[f.req.abs]
	rel := f.env.Rel(f.req.abs)
	if line > len(lines) {
		return codeintel.Pos{}, InvalidParams(fmt.Sprintf("%s is %d, past the end of %s, which has %d lines.", lineArg, line, rel, len(lines)))
	}
	text := lines[line-1]
	col, ok := byteColOf(text, char)
	if !ok {
		return codeintel.Pos{}, InvalidParams(fmt.Sprintf("%s is %d, past the end of line %d of %s, which has %d characters: %s",
			charArg, char, line, rel, len([]rune(text)), quoteLine(text)))
	}
	return codeintel.Pos{Line: line, Col: col}, nil
}

// quoteLine shows a line of code in a message.
func quoteLine(s string) string {
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > lspLineMax {
		s = string(r[:lspLineMax]) + "…"
	}
	return "`" + s + "`"
}

// where names a position: rel:line:character, or path:line for a file
// that is not shown (its characters cannot be counted).
func (f *lspFormatter) where(path string, p codeintel.Pos) string {
	lines := f.linesOf(path)
	if lines == nil || p.Line < 1 || p.Line > len(lines) {
		return fmt.Sprintf("%s:%d", f.env.Rel(path), p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", f.env.Rel(path), p.Line, charColOf(lines[p.Line-1], p.Col))
}

// located is where plus the text of the line, when it is shown.
func (f *lspFormatter) located(path string, p codeintel.Pos) string {
	w := f.where(path, p)
	if text := strings.TrimSpace(f.lineText(path, p.Line)); text != "" {
		if r := []rune(text); len(r) > lspLineMax {
			text = string(r[:lspLineMax]) + "…"
		}
		return w + ": " + text
	}
	return w
}

// target names the position the call asked about.
func (f *lspFormatter) target() string {
	return fmt.Sprintf("%s:%d:%d", f.env.Rel(f.req.abs), f.req.line, f.req.char)
}

// from is " (server)", or "" when unknown.
func (f *lspFormatter) from() string {
	if f.server == "" {
		return ""
	}
	return " (" + f.server + ")"
}

// capped writes heading and the first limit of total lines (line(i) makes
// the i-th, so that only those shown are made), then how many were left
// out.
func (f *lspFormatter) capped(heading string, total int, line func(i int) string) string {
	var b strings.Builder
	b.WriteString(heading)
	n := min(total, f.req.limit)
	for i := range n {
		b.WriteString("\n")
		b.WriteString(line(i))
	}
	if rest := total - n; rest > 0 {
		if f.noLimitHint {
			fmt.Fprintf(&b, "\n[%d more not shown]", rest)
		} else {
			fmt.Fprintf(&b, "\n[%d more not shown; raise limit to see them]", rest)
		}
	}
	return b.String()
}

// all is capped's line for lines already made.
func all(lines []string) func(int) string { return func(i int) string { return lines[i] } }

// plural is "1 thing" or "n things".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func (f *lspFormatter) answer(a codeintel.Answer) Result {
	f.server = a.Server
	switch f.req.op {
	case codeintel.Definition, codeintel.Implementation, codeintel.References:
		return f.locations(a.Locations)
	case codeintel.Hover:
		return f.hover(a.Hover)
	case codeintel.DocumentSymbol:
		return f.documentSymbols(a.Symbols)
	case codeintel.WorkspaceSymbol:
		return f.workspaceSymbols(a.Symbols)
	case codeintel.PrepareCallHierarchy:
		return f.callItems(a.Items)
	case codeintel.IncomingCalls, codeintel.OutgoingCalls:
		return f.calls(a.Calls)
	case codeintel.CodeActions:
		return f.actions(a.Actions)
	}
	return TextResult("", nil)
}

// nothing is the answer when the server found nothing at the position,
// with the line, so that a position off the symbol's name shows.
func (f *lspFormatter) nothing(what string) Result {
	msg := fmt.Sprintf("No %s found at %s%s. The line reads %s; line and character must point at the symbol's name.",
		what, f.target(), f.from(), quoteLine(f.lineText(f.req.abs, f.req.line)))
	return TextResult(msg, Markdown("No "+what+" found"))
}

func (f *lspFormatter) locations(locs []codeintel.Location) Result {
	what := map[string][2]string{
		codeintel.Definition:     {"definition", "definitions"},
		codeintel.Implementation: {"implementation", "implementations"},
		codeintel.References:     {"reference", "references"},
	}[f.req.op]
	if len(locs) == 0 {
		return f.nothing(what[0])
	}
	locs = slices.Clone(locs)
	slices.SortFunc(locs, func(a, b codeintel.Location) int {
		return cmp.Or(strings.Compare(f.env.Rel(a.Path), f.env.Rel(b.Path)), cmp.Compare(a.Range.Start.Line, b.Range.Start.Line),
			cmp.Compare(a.Range.Start.Col, b.Range.Start.Col))
	})
	locs = slices.CompactFunc(locs, func(a, b codeintel.Location) bool { return a.Path == b.Path && a.Range.Start == b.Range.Start })
	count := plural(len(locs), what[0], what[1])
	heading := fmt.Sprintf("%s of the symbol at %s%s:", upperFirst(count), f.target(), f.from())
	return TextResult(f.capped(heading, len(locs), func(i int) string { return f.located(locs[i].Path, locs[i].Range.Start) }), Markdown("Found "+count))
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// hover shows the hover's text with Markdown code fences taken out: the
// signature, then the documentation.
func (f *lspFormatter) hover(text string) Result {
	var kept []string
	for _, l := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			continue
		}
		kept = append(kept, strings.TrimRight(l, " \t"))
	}
	body := strings.TrimSpace(strings.Join(kept, "\n"))
	if body == "" {
		return f.nothing("hover information")
	}
	if max := f.env.threshold(); max > 0 && len(body) > max {
		body = strings.ToValidUTF8(body[:max], "") + "\n[the rest of the hover is not shown]"
	}
	return TextResult(fmt.Sprintf("Hover at %s%s:\n%s", f.target(), f.from(), body), Markdown("Hover information"))
}

// symbolSpan is "line 8" or "lines 3-5".
func symbolSpan(r codeintel.Range) string {
	if r.End.Line <= r.Start.Line {
		return fmt.Sprintf("line %d", r.Start.Line)
	}
	return fmt.Sprintf("lines %d-%d", r.Start.Line, r.End.Line)
}

// symbolLine is "Function Add, lines 3-5: func(a, b int) int".
func symbolLine(s codeintel.Symbol) string {
	line := fmt.Sprintf("%s %s, %s", s.Kind, s.Name, symbolSpan(s.Range))
	if d := strings.TrimSpace(s.Detail); d != "" && !strings.Contains(d, "\n") {
		line += ": " + d
	}
	return line
}

func (f *lspFormatter) documentSymbols(syms []codeintel.Symbol) Result {
	rel := f.env.Rel(f.req.abs)
	if len(syms) == 0 {
		return TextResult(fmt.Sprintf("%s declares no symbols%s.", rel, f.from()), Markdown("No symbols found"))
	}
	var lines []string
	var walk func(ss []codeintel.Symbol, depth int)
	walk = func(ss []codeintel.Symbol, depth int) {
		ss = slices.Clone(ss)
		slices.SortStableFunc(ss, func(a, b codeintel.Symbol) int {
			return cmp.Or(cmp.Compare(a.Range.Start.Line, b.Range.Start.Line), cmp.Compare(a.Range.Start.Col, b.Range.Start.Col))
		})
		for _, s := range ss {
			lines = append(lines, strings.Repeat("  ", depth)+symbolLine(s))
			walk(s.Children, depth+1)
		}
	}
	walk(syms, 0)
	return TextResult(f.capped(fmt.Sprintf("%s in %s%s:", upperFirst(plural(len(lines), "symbol", "symbols")), rel, f.from()), len(lines), all(lines)),
		Markdown(fmt.Sprintf("Found %s", plural(len(lines), "symbol", "symbols"))))
}

func (f *lspFormatter) workspaceSymbols(syms []codeintel.Symbol) Result {
	q := f.req.query
	if len(syms) == 0 {
		return TextResult(fmt.Sprintf("No symbols match %q%s.", q, f.from()), Markdown("No symbols found"))
	}
	syms = slices.Clone(syms)
	// Exact names first, then by place.
	slices.SortStableFunc(syms, func(a, b codeintel.Symbol) int {
		ea, eb := a.Name == q, b.Name == q
		if ea != eb {
			if ea {
				return -1
			}
			return 1
		}
		return cmp.Or(strings.Compare(f.env.Rel(a.Path), f.env.Rel(b.Path)), cmp.Compare(a.Selection.Start.Line, b.Selection.Start.Line))
	})
	line := func(i int) string {
		s := syms[i]
		name := s.Name
		if s.Container != "" && !strings.HasPrefix(name, s.Container+".") {
			name = s.Container + "." + name
		}
		return fmt.Sprintf("%s %s: %s", s.Kind, name, f.where(s.Path, s.Selection.Start))
	}
	count := plural(len(syms), "symbol", "symbols")
	return TextResult(f.capped(fmt.Sprintf("%s match %q%s:", upperFirst(count), q, f.from()), len(syms), line), Markdown("Found "+count))
}

// callItemJSON is an item as the model passes it back (callItemArg reads
// it): a file URI and 0-based ranges whose characters count bytes.
func (f *lspFormatter) callItemJSON(it codeintel.CallItem) string {
	r := func(x codeintel.Range) map[string]any {
		return map[string]any{
			"start": map[string]int{"line": x.Start.Line - 1, "character": x.Start.Col - 1},
			"end":   map[string]int{"line": x.End.Line - 1, "character": x.End.Col - 1},
		}
	}
	m := map[string]any{
		"name": it.Name, "kind": it.Kind, "rawKind": codeintel.KindNumber(it.Kind),
		"uri":   f.env.Workspace.Paths.PathFlavor().URIFromPath(it.Path, workspace.URIForm{}),
		"range": r(it.Range), "selectionRange": r(it.Selection),
	}
	if it.Detail != "" {
		m["detail"] = it.Detail
	}
	if len(it.Data) > 0 && string(it.Data) != "null" {
		m["data"] = it.Data
	}
	if len(it.Tags) > 0 {
		m["tags"] = it.Tags
	}
	if it.Server != "" {
		m["serverName"] = it.Server
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func (f *lspFormatter) callItems(items []codeintel.CallItem) Result {
	if len(items) == 0 {
		return f.nothing("function or method")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s at %s%s. Pass one unchanged as callHierarchyItem to incomingCalls or outgoingCalls:",
		upperFirst(plural(len(items), "call hierarchy item", "call hierarchy items")), f.target(), f.from())
	for _, it := range items[:min(len(items), f.req.limit)] {
		fmt.Fprintf(&b, "\n%s %s: %s\n%s", it.Kind, it.Name, f.where(it.Path, it.Selection.Start), f.callItemJSON(it))
	}
	return TextResult(b.String(), Markdown("Found "+plural(len(items), "item", "items")))
}

func (f *lspFormatter) calls(calls []codeintel.Call) Result {
	name := f.req.item.Name
	incoming := f.req.op == codeintel.IncomingCalls
	if len(calls) == 0 {
		what := "No function calls %s%s."
		if !incoming {
			what = "%s calls no function%s."
		}
		return TextResult(fmt.Sprintf(what, name, f.from()), Markdown("No calls found"))
	}
	calls = slices.Clone(calls)
	slices.SortFunc(calls, func(a, b codeintel.Call) int {
		return cmp.Or(strings.Compare(f.env.Rel(a.Item.Path), f.env.Rel(b.Item.Path)), cmp.Compare(a.Item.Selection.Start.Line, b.Item.Selection.Start.Line))
	})
	line := func(i int) string {
		c := calls[i]
		var sites []string
		for j, s := range c.Sites {
			if j == 3 {
				sites = append(sites, fmt.Sprintf("and %d more", len(c.Sites)-3))
				break
			}
			sites = append(sites, f.where(c.SitesPath, s.Start))
		}
		l := fmt.Sprintf("%s %s: %s", c.Item.Kind, c.Item.Name, f.where(c.Item.Path, c.Item.Selection.Start))
		if len(sites) > 0 {
			l += "; calls at " + strings.Join(sites, ", ")
		}
		return l + "\n" + f.callItemJSON(c.Item)
	}
	heading := fmt.Sprintf("%s of %s%s:", upperFirst(plural(len(calls), "caller", "callers")), name, f.from())
	if !incoming {
		heading = fmt.Sprintf("%s calls %s%s:", name, plural(len(calls), "function", "functions"), f.from())
	}
	return TextResult(f.capped(heading, len(calls), line), Markdown("Found "+plural(len(calls), "call", "calls")))
}

func (f *lspFormatter) actions(acts []codeintel.Action) Result {
	if len(acts) == 0 {
		return TextResult(fmt.Sprintf("No code actions are offered at %s%s.", f.target(), f.from()), Markdown("No code actions"))
	}
	lines := make([]string, len(acts))
	for i, a := range acts {
		l := a.Title
		if a.Kind != "" {
			l += " [" + a.Kind + "]"
		}
		if a.Preferred {
			l += " (preferred)"
		}
		if a.Disabled != "" {
			l += " (not available: " + a.Disabled + ")"
		}
		lines[i] = l
	}
	heading := fmt.Sprintf("%s at %s%s (listed only; make the change with edit):", upperFirst(plural(len(acts), "code action", "code actions")), f.target(), f.from())
	return TextResult(f.capped(heading, len(lines), all(lines)), Markdown("Found "+plural(len(acts), "code action", "code actions")))
}

// diagnosticLine is "rel:line:character: error: message (source code)"
// with the text of the line on the next one.
func (f *lspFormatter) diagnosticLine(path string, d codeintel.Diagnostic) string {
	sev := "error"
	if d.Severity > 0 && d.Severity < len(severityNames) {
		sev = severityNames[d.Severity]
	}
	line := fmt.Sprintf("%s: %s: %s", f.where(path, d.Range.Start), sev, strings.TrimSpace(d.Message))
	if tag := strings.TrimSpace(d.Source + " " + d.Code); tag != "" {
		line += " (" + tag + ")"
	}
	if text := strings.TrimSpace(f.lineText(path, d.Range.Start.Line)); text != "" {
		line += "\n    " + quoteLine(text)
	}
	return line
}

// sortDiagnostics orders diagnostics by place, then by severity.
func sortDiagnostics(ds []codeintel.Diagnostic) []codeintel.Diagnostic {
	ds = slices.Clone(ds)
	slices.SortStableFunc(ds, func(a, b codeintel.Diagnostic) int {
		return cmp.Or(cmp.Compare(a.Range.Start.Line, b.Range.Start.Line), cmp.Compare(a.Range.Start.Col, b.Range.Start.Col),
			cmp.Compare(a.Severity, b.Severity))
	})
	return ds
}

func (f *lspFormatter) diagnostics(rep codeintel.Report) Result {
	f.server = rep.Server
	files := slices.Clone(rep.Files)
	slices.SortFunc(files, func(a, b codeintel.FileDiagnostics) int { return strings.Compare(f.env.Rel(a.Path), f.env.Rel(b.Path)) })
	type located struct {
		path string
		d    codeintel.Diagnostic
	}
	var lines []located
	nfiles := 0
	for _, fd := range files {
		if f.req.abs != "" && fd.Path != f.req.abs {
			continue
		}
		if len(fd.Diagnostics) > 0 {
			nfiles++
		}
		for _, d := range sortDiagnostics(fd.Diagnostics) {
			lines = append(lines, located{fd.Path, d})
		}
	}
	stale := ""
	if rep.Stale {
		stale = fmt.Sprintf(" The server had not finished checking the current text after %d s, so this is its previous report; ask again shortly.", int(lspDiagnosticsWait.Seconds()))
	}
	where := "the workspace"
	if f.req.abs != "" {
		where = f.env.Rel(f.req.abs)
	}
	if len(lines) == 0 {
		return TextResult(fmt.Sprintf("No problems reported in %s%s.%s", where, f.from(), stale), Markdown("No problems"))
	}
	count := plural(len(lines), "problem", "problems")
	heading := fmt.Sprintf("%s in %s%s:", upperFirst(count), where, f.from())
	if f.req.abs == "" {
		heading = fmt.Sprintf("%s in %s%s:", upperFirst(count), plural(nfiles, "file", "files"), f.from())
	}
	if stale != "" {
		heading = strings.TrimSpace(stale) + "\n" + heading
	}
	line := func(i int) string { return f.diagnosticLine(lines[i].path, lines[i].d) }
	return TextResult(f.capped(heading, len(lines), line), Markdown(upperFirst(count)))
}
