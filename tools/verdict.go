package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/qwen-ls/qwen-ls/tools/codeintel"
)

// The compiler's verdict (tools.md §3.15): after edit or write_file change
// a file that a language server covers, their result ends with the errors
// the change introduced, so that a turn that breaks the build learns it
// without asking. The errors are compared with a baseline taken just before
// the change; an error counts as the same when its file, message, source
// and code are, wherever its line moved. Only errors are reported, not
// warnings.

// verdictWait bounds each wait for the server: for the baseline, and for
// its report on the new text (docs/design.md "Code intelligence").
const verdictWait = 2 * time.Second

// verdictMax caps the errors listed.
const verdictMax = 10

// verdict is a change's baseline, taken before the change is written.
type verdict struct {
	ci        CodeIntel
	sessionID string
	abs       string
	env       *Env
	base      codeintel.Report
}

// takeBaseline asks the Host's code intelligence for abs's diagnostics
// before a change. It returns nil, and the change gets no verdict, when no
// server covers the file (or there is no code intelligence at all).
func (e *Env) takeBaseline(ctx context.Context, call *Call, abs string) *verdict {
	ci := codeIntel(call)
	if ci == nil {
		return nil
	}
	rep, err := ci.CodeDiagnostics(ctx, call.SessionID, codeintel.DiagnosticsQuery{Path: abs, Fresh: true, Wait: verdictWait, Others: true})
	if err != nil {
		return nil
	}
	return &verdict{ci: ci, sessionID: call.SessionID, abs: abs, env: e, base: rep}
}

// finish ends a successful change's result with the verdict. A failed or
// cancelled change is returned as it is, and so is the result when the
// turn is cancelled during the wait: the change was made all the same.
func (v *verdict) finish(ctx context.Context, res Result, err error) (Result, error) {
	if v == nil || err != nil || res.Error != nil || ctx.Err() != nil {
		return res, err
	}
	rep, qerr := v.ci.CodeDiagnostics(ctx, v.sessionID, codeintel.DiagnosticsQuery{Path: v.abs, Fresh: true, Wait: verdictWait, Others: true, Changed: true})
	if qerr != nil {
		var un *codeintel.UnavailableError
		if ctx.Err() != nil || errors.As(qerr, &un) {
			return res, nil
		}
		return appendText(res, fmt.Sprintf("The language server failed to report errors after this change: %v", qerr)), nil
	}
	return appendText(res, v.text(rep)), nil
}

// appendText adds a paragraph at the end of res's text.
func appendText(res Result, text string) Result {
	for i := len(res.LLMContent) - 1; i >= 0; i-- {
		if res.LLMContent[i].InlineData == nil {
			parts := append([]Part(nil), res.LLMContent...)
			parts[i].Text += "\n\n" + text
			res.LLMContent = parts
			return res
		}
	}
	res.LLMContent = append(res.LLMContent, TextPart(text))
	return res
}

// diagKey is what identifies an error across line shifts.
type diagKey struct{ path, message, source, code string }

func diagKeyOf(path string, d codeintel.Diagnostic) diagKey {
	return diagKey{path, strings.TrimSpace(d.Message), d.Source, d.Code}
}

func isError(d codeintel.Diagnostic) bool {
	return d.Severity == codeintel.SeverityError || d.Severity == 0
}

// located is one error with its file.
type locatedDiag struct {
	path string
	d    codeintel.Diagnostic
}

// errorsOf are the errors of rep: abs's first, then the other files'.
func errorsOf(rep codeintel.Report, abs string) []locatedDiag {
	var own, other []locatedDiag
	for _, fd := range rep.Files {
		for _, d := range sortDiagnostics(fd.Diagnostics) {
			if !isError(d) {
				continue
			}
			if fd.Path == abs {
				own = append(own, locatedDiag{fd.Path, d})
			} else {
				other = append(other, locatedDiag{fd.Path, d})
			}
		}
	}
	return append(own, other...)
}

// text is the verdict's paragraph.
func (v *verdict) text(after codeintel.Report) string {
	server := after.Server
	if server == "" {
		server = "The language server"
	}
	if after.Stale {
		return fmt.Sprintf("%s had not checked the new text within %d s, so it is not known yet whether this change introduced errors; "+
			"ask with the lsp tool's diagnostics operation if it matters.", sentenceStart(server), int(verdictWait.Seconds()))
	}
	before := map[diagKey]int{}
	for _, ld := range errorsOf(v.base, v.abs) {
		before[diagKeyOf(ld.path, ld.d)]++
	}
	var introduced []locatedDiag
	old := 0
	for _, ld := range errorsOf(after, v.abs) {
		k := diagKeyOf(ld.path, ld.d)
		if before[k] > 0 && !v.base.Stale {
			before[k]--
			old++
			continue
		}
		introduced = append(introduced, ld)
	}
	oldNote := ""
	if old > 0 {
		oldNote = fmt.Sprintf(" %s already there before this change.", upperFirst(plural(old, "error was", "errors were")))
	}
	if len(introduced) == 0 {
		if after.Quiet {
			return fmt.Sprintf("No new errors: %s reported no change within %d s of this change.%s",
				inSentence(server), int(verdictWait.Seconds()), oldNote)
		}
		if old > 0 {
			return fmt.Sprintf("No new errors reported by %s.%s", inSentence(server), oldNote)
		}
		return fmt.Sprintf("No errors reported by %s.", inSentence(server))
	}
	f := &lspFormatter{env: v.env, req: &lspRequest{limit: verdictMax}, lines: map[string][]string{}, noLimitHint: true}
	line := func(i int) string {
		ld := introduced[i]
		l := f.diagnosticLine(ld.path, ld.d)
		if ld.path != v.abs {
			l = strings.Replace(l, ": error: ", ": error (in another file, which uses this one): ", 1)
		}
		return l
	}
	heading := fmt.Sprintf("%s reports %s after this change:", sentenceStart(server), plural(len(introduced), "new error", "new errors"))
	if v.base.Stale {
		heading = fmt.Sprintf("%s reports %s after this change (it had not checked the file before it, so some may be older):",
			sentenceStart(server), plural(len(introduced), "error", "errors"))
	}
	return f.capped(heading, len(introduced), line) + oldNoteLine(oldNote)
}

func oldNoteLine(note string) string {
	if note == "" {
		return ""
	}
	return "\n" + strings.TrimSpace(note)
}

// inSentence is a server's name inside a sentence.
func inSentence(server string) string {
	if server == "The language server" {
		return "the language server"
	}
	return server
}

// sentenceStart is a server's name at the start of a sentence: "the
// editor's gopls" takes a capital, a bare name such as gopls does not.
func sentenceStart(server string) string {
	if strings.HasPrefix(server, "the ") {
		return "The " + server[len("the "):]
	}
	return server
}
