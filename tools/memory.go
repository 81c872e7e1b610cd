package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/qwen-ls/qwen-ls/workspace"
)

//go:embed memory.md
var saveMemoryDescription string

var saveMemorySchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "fact": {
      "type": "string",
      "description": "The fact to remember, as one short, self-contained statement."
    },
    "scope": {
      "type": "string",
      "enum": ["global", "project"],
      "description": "global (the default): the user's memory, used in every project. project: this workspace's memory file, for facts about this project only."
    }
  },
  "required": ["fact"]
}`)

// Memory scopes (tools.md §3.11).
const (
	memoryGlobal  = "global"
	memoryProject = "project"
)

// memorySectionHeader is the heading under which save_memory keeps its
// bullets.
const memorySectionHeader = "## Qwen Added Memories"

// defaultMemoryFileName is the first of context.fileName's defaults.
const defaultMemoryFileName = "QWEN.md"

// describeFactMax is how many characters of the fact the title shows.
const describeFactMax = 60

// SaveMemory is the save_memory tool (tools.md §3.11): it adds a fact to
// the global or the project memory file, through the editor review of
// §2.11. The session reads these files into the system prompt when it
// starts (the next session sees the fact; this one does not reload them).
type SaveMemory struct {
	Base
	env *Env
}

// NewSaveMemory returns the save_memory tool.
func NewSaveMemory(env *Env) *SaveMemory {
	return &SaveMemory{env: env, Base: Base{Spec: Spec{
		Name:        "save_memory",
		DisplayName: "SaveMemory",
		Description: strings.TrimSpace(saveMemoryDescription),
		Schema:      saveMemorySchema,
		Kind:        KindEdit,
	}}}
}

// memoryArgs are the arguments after normalisation.
type memoryArgs struct {
	fact  string
	scope string
}

func parseMemoryArgs(params map[string]any) memoryArgs {
	fact, _ := String(params, "fact")
	scope, _ := String(params, "scope")
	if scope == "" {
		scope = memoryGlobal
	}
	return memoryArgs{fact: normalizeFact(fact), scope: scope}
}

// Validate refuses a fact that is empty once normalised, and a scope other
// than the two (the schema says so too, but a direct call skips it).
func (t *SaveMemory) Validate(params map[string]any) *ToolError {
	a := parseMemoryArgs(params)
	if a.fact == "" {
		return InvalidParams(`Argument "fact" must not be empty.`)
	}
	if a.scope != memoryGlobal && a.scope != memoryProject {
		return InvalidParams(`params/scope must be equal to one of the allowed values`)
	}
	return nil
}

// Describe is "Save to <scope> memory (<~ path>): <fact, first 60 chars>".
func (t *SaveMemory) Describe(params map[string]any) string {
	a := parseMemoryArgs(params)
	where := t.env.MemoryFileName()
	if abs, err := t.env.memoryPath(a.scope); err == nil {
		where = tildePath(abs)
	}
	return fmt.Sprintf("Save to %s memory (%s): %s", a.scope, where, firstRunes(a.fact, describeFactMax))
}

// Locations is the memory file.
func (t *SaveMemory) Locations(params map[string]any) []Location {
	abs, err := t.env.memoryPath(parseMemoryArgs(params).scope)
	if err != nil {
		return nil
	}
	return []Location{{Path: abs}}
}

// ShouldConfirm proposes the memory file with the fact added. The file is
// qwen-ls's own (or the project's memory), written only by this tool, so
// no prior read is asked for (tools.md §3.11), and the global file may lie
// outside the workspace roots (§2.2).
func (t *SaveMemory) ShouldConfirm(ctx context.Context, call *Call, params map[string]any) (*Confirmation, *ToolError) {
	a := parseMemoryArgs(params)
	abs, err := t.env.memoryPath(a.scope)
	if err != nil {
		return nil, memoryFailure(err.Error())
	}
	syncBeforeChange(ctx, call, abs)
	snap, err := t.env.Workspace.ReadText(abs)
	switch {
	case missing(err):
		snap = nil
	case err != nil:
		return nil, memoryFailure(memoryReadFailure(abs, err))
	}
	if terr := checkBufferWritable(call, snap); terr != nil {
		return nil, terr
	}
	current := ""
	if snap != nil {
		current = snap.Text
	}
	newText := addMemory(strings.ReplaceAll(current, "\r\n", "\n"), a.fact)
	if strings.Contains(current, "\r\n") {
		newText = crlfText(newText)
	}
	conf := t.env.changeProposal(abs, "Confirm Memory Save", snap, newText)
	conf.Title = fmt.Sprintf("Confirm Memory Save: %s (%s)", tildePath(abs), a.scope)
	return conf, nil
}

// Execute writes the proposal kept on call (tools.md §2.11). Failures of
// the write itself are §2.11's; anything else is memory_tool_execution_error.
func (t *SaveMemory) Execute(ctx context.Context, call *Call, params map[string]any, _ func(Output)) (Result, error) {
	c, terr := proposalOf(ctx, t, call, params)
	if terr != nil {
		return Result{Error: terr}, nil
	}
	a := parseMemoryArgs(params)
	// Not %q: the model is told the fact exactly as stored, unescaped.
	base := fmt.Sprintf("Saved to %s memory: \"%s\"", a.scope, a.fact)
	return t.env.applyChange(ctx, call, c, base, false)
}

// memoryFailure is the error of tools.md §3.11 for failures outside §2.11.
func memoryFailure(reason string) *ToolError {
	return Errorf(errorMemoryToolExecution, "Could not save the memory: %s", reason)
}

// memoryReadFailure says why the memory file could not be read. The workspace's
// own errors already name the file.
func memoryReadFailure(abs string, err error) string {
	var nr *workspace.NotRegularError
	var big *workspace.TooLargeError
	if errors.As(err, &nr) || errors.As(err, &big) {
		return err.Error()
	}
	return fmt.Sprintf("cannot read %s: %s", abs, rootCause(err))
}

// MemoryFileName is the first name of context.fileName (default QWEN.md):
// the file save_memory writes.
func (e *Env) MemoryFileName() string {
	if names := e.Settings().Strings("context.fileName"); len(names) > 0 && strings.TrimSpace(names[0]) != "" {
		return strings.TrimSpace(names[0])
	}
	return defaultMemoryFileName
}

// memoryPath is the memory file of scope: <QwenHome>/<name> for global,
// <primary root>/<name> for project. A name that is not a plain file name
// (context.fileName may come from a project's settings), or that names one
// of qwen-ls's own files, is refused: save_memory must not be steerable
// into .git/hooks, the settings or the trusted folders list.
func (e *Env) memoryPath(scope string) (string, error) {
	name := e.MemoryFileName()
	if !filepath.IsLocal(name) || strings.ContainsAny(name, `/\`) {
		return "", fmt.Errorf("the memory file name %q from context.fileName is not a plain file name", name)
	}
	if strings.EqualFold(name, "settings.json") || strings.EqualFold(name, workspace.TrustFileName) {
		return "", fmt.Errorf("the memory file name %q from context.fileName names one of qwen-ls's own files", name)
	}
	dir := e.QwenHome
	if scope == memoryProject {
		dir = e.Workspace.Roots.Primary()
		if dir == "" {
			return "", fmt.Errorf("there is no workspace folder to keep project memory in")
		}
	}
	return filepath.Join(dir, name), nil
}

// normalizeFact is the fact as save_memory stores it (tools.md §3.11):
// trimmed, leading "-" bullets removed, and its lines joined by single
// spaces. A bullet is a run of "-" followed by white space, so "-5 °C"
// keeps its sign.
func normalizeFact(fact string) string {
	var parts []string
	for _, l := range strings.Split(strings.ReplaceAll(fact, "\r", "\n"), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	s := strings.Join(parts, " ")
	for {
		rest := strings.TrimLeft(s, "-")
		if rest == s || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
			return s
		}
		s = strings.TrimSpace(rest)
	}
}

// addMemory returns text (LF line endings) with "- <fact>" added to its
// memorySectionHeader section (tools.md §3.11): when there is no such
// header, the header and the bullet are appended after the existing text,
// separated from it by a blank line; otherwise the bullet follows the
// section's last non-blank line, before the next "## " heading. Blank lines
// at the end are dropped, so the result ends with exactly one newline.
func addMemory(text, fact string) string {
	bullet := "- " + fact
	lines := strings.Split(text, "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	header := slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(l) == memorySectionHeader })
	if header < 0 {
		if len(lines) > 0 {
			lines = append(lines, "")
		}
		lines = append(lines, memorySectionHeader, bullet)
		return strings.Join(lines, "\n") + "\n"
	}
	end := len(lines)
	for i := header + 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "## ") {
			end = i
			break
		}
	}
	last := header
	for i := end - 1; i > header; i-- {
		if strings.TrimSpace(lines[i]) != "" {
			last = i
			break
		}
	}
	lines = slices.Insert(lines, last+1, bullet)
	return strings.Join(lines, "\n") + "\n"
}

// tildePath is abs with the user's home folder written as "~" (the "<~
// path>" of tools.md §3.11), or abs itself when it lies elsewhere.
func tildePath(abs string) string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return abs
	}
	home = filepath.Clean(home)
	if home == string(filepath.Separator) {
		return abs
	}
	if abs == home {
		return "~"
	}
	if rest, ok := strings.CutPrefix(abs, home+string(filepath.Separator)); ok {
		return "~/" + filepath.ToSlash(rest)
	}
	return abs
}

// firstRunes is s cut to its first n characters.
func firstRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
