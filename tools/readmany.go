package tools

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

//go:embed readmany.md
var readManyDescription string

const readManySchema = `{
  "type": "object",
  "properties": {
    "paths": {
      "type": "array",
      "items": {"type": "string"},
      "minItems": 1,
      "description": "Glob patterns or paths relative to the workspace roots (src/**/*.go, README.md), or absolute paths inside the workspace."
    },
    "include": {
      "type": "array",
      "items": {"type": "string"},
      "description": "More glob patterns to read, added to paths."
    },
    "exclude": {
      "type": "array",
      "items": {"type": "string"},
      "description": "Glob patterns of files to leave out."
    },
    "recursive": {
      "type": "boolean",
      "description": "Search subdirectories (default true; ** in a pattern decides the depth)."
    },
    "useDefaultExcludes": {
      "type": "boolean",
      "description": "Also skip build output, editor folders, binary files, .env and memory files (default true)."
    },
    "file_filtering_options": {
      "type": "object",
      "description": "Override the workspace's ignore-file settings for this call.",
      "properties": {
        "respect_git_ignore": {"type": "boolean", "description": "Skip files excluded by .gitignore (default true)."},
        "respect_qwen_ignore": {"type": "boolean", "description": "Skip files excluded by .qwenignore (default true)."}
      }
    }
  },
  "required": ["paths"]
}`

// The limits of tools.md §3.7.
const (
	readManyMaxFiles     = 100
	readManyShownRead    = 10
	readManyShownSkipped = 5
)

// ReadManyFiles is the read_many_files tool (tools.md §3.7).
type ReadManyFiles struct {
	Base
	env *Env
}

// NewReadManyFiles returns the read_many_files tool working in env.
func NewReadManyFiles(env *Env) *ReadManyFiles {
	return &ReadManyFiles{env: env, Base: Base{Spec: Spec{
		Name:        "read_many_files",
		DisplayName: "ReadManyFiles",
		Description: readManyDescription,
		Schema:      []byte(readManySchema),
		Kind:        KindRead,
	}}}
}

// Validate refuses blank entries of paths.
func (r *ReadManyFiles) Validate(params map[string]any) *ToolError {
	paths, _ := stringsParam(params, "paths")
	for _, p := range paths {
		if strings.TrimSpace(p) == "" {
			return InvalidParams("Each entry of 'paths' must be a non-empty string.")
		}
	}
	return nil
}

// readManyPatterns is paths ∪ include, trimmed, blanks and repeats left out.
func readManyPatterns(params map[string]any) []string {
	paths, _ := stringsParam(params, "paths")
	include, _ := stringsParam(params, "include")
	var out []string
	for _, p := range append(slices.Clone(paths), include...) {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// Describe lists the patterns.
func (r *ReadManyFiles) Describe(params map[string]any) string {
	return "Reading files matching: " + strings.Join(readManyPatterns(params), ", ")
}

// rmfSkip is one item the call did not read, with the reason.
type rmfSkip struct {
	path, reason string
}

// Execute searches, then reads the files through the read pipeline with
// per-file shares of the limits.
func (r *ReadManyFiles) Execute(ctx context.Context, call *Call, params map[string]any, _ func(Output)) (Result, error) {
	useDefaults := true
	if b, ok := boolParam(params, "useDefaultExcludes"); ok {
		useDefaults = b
	}
	exclude, _ := stringsParam(params, "exclude")
	s := &rmfSearch{
		env: r.env, ctx: ctx, filter: r.env.fileFilteringOf(params), defaults: useDefaults,
		memory: r.env.Settings().Strings("context.fileName"), patterns: readManyPatterns(params),
		found: map[string]bool{},
	}
	if _, set := r.env.Settings().Get("context.fileName"); !set {
		s.memory = []string{"QWEN.md", "AGENTS.md"}
	}
	for _, x := range exclude {
		if x = strings.TrimSpace(x); x != "" {
			s.exclude = append(s.exclude, x)
		}
	}
	for _, p := range append(slices.Clone(s.patterns), s.exclude...) {
		if !doublestar.ValidatePattern(filepath.ToSlash(p)) {
			return ErrorResult(errorReadManyFilesSearch, fmt.Sprintf("The file search failed: %q is not a valid glob pattern.", p)), nil
		}
	}
	if err := s.run(); err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return ErrorResult(errorReadManyFilesSearch, "The file search failed: "+err.Error()), nil
	}

	files := s.files
	slices.Sort(files)
	if len(files) > readManyMaxFiles {
		for _, f := range files[readManyMaxFiles:] {
			s.skipped = append(s.skipped, rmfSkip{f, "over the 100-file limit"})
		}
		files = files[:readManyMaxFiles]
	}
	return r.read(ctx, call, files, s.skipped, s)
}

// read reads the chosen files and builds the result.
func (r *ReadManyFiles) read(ctx context.Context, call *Call, files []string, skipped []rmfSkip, s *rmfSearch) (Result, error) {
	n := max(len(files), 1)
	lines, chars := 0, 0
	if l := r.env.lineLimit(); l > 0 {
		lines = max(10, l/n)
	}
	if t := r.env.threshold(); t > 0 {
		chars = max(1000, t/n)
	}
	var ledger *Ledger
	if call != nil {
		ledger = call.Ledger
	}
	var parts []Part
	var text strings.Builder
	var read []string
	flush := func() {
		if text.Len() > 0 {
			parts = append(parts, TextPart(text.String()))
			text.Reset()
		}
	}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		if err := syncClient(ctx, call, f); err != nil {
			if ctx.Err() != nil {
				return Result{}, ctx.Err()
			}
			terr, _ := readFailure(f, err)
			skipped = append(skipped, rmfSkip{f, terr.Message})
			continue
		}
		c, err := r.env.readContent(ctx, readSpec{Path: f, Limit: lines, Budget: chars})
		if err != nil {
			return Result{}, err
		}
		switch {
		case c.Err != nil:
			skipped = append(skipped, rmfSkip{f, c.Err.Message})
			continue
		case c.Media != nil:
			flush()
			parts = append(parts, Part{InlineData: c.Media})
		case c.Windowed:
			fmt.Fprintf(&text, "--- %s ---\n\n", f)
			if w := c.Window; w.Truncated {
				fmt.Fprintf(&text, "Lines %d-%d of %d.\n---\n", w.Start, w.End, w.Total)
			}
			text.WriteString(c.Window.Text)
			text.WriteString("\n\n")
		default:
			skipped = append(skipped, rmfSkip{f, rmfSkipReason(c)})
			continue
		}
		read = append(read, f)
		if c.Entry != nil {
			ledger.record(f, *c.Entry)
		}
	}
	named, skipped := s.namedNotRead(read, skipped)
	display := Markdown(r.display(read, skipped))
	if len(read) == 0 {
		return TextResult("No file was read: nothing matched, or every match was skipped."+namedNote(named), display), nil
	}
	text.WriteString("\n--- end of files ---")
	text.WriteString(namedNote(named))
	flush()
	return Result{LLMContent: parts, Display: display}, nil
}

// namedNotRead finds the paths the model named that were not read, each
// with the reason: the skip already recorded for it, or the rule that left
// it out of the search. It returns them, and skipped with them first (so
// that the display's short list shows them).
func (s *rmfSearch) namedNotRead(read []string, skipped []rmfSkip) (named, all []rmfSkip) {
	// Matching ignores case, so "readme.md" may have read README.md.
	wasRead := func(named string) bool {
		return slices.ContainsFunc(read, func(f string) bool { return inFolder(strings.ToLower(named), strings.ToLower(f)) })
	}
	taken := map[int]bool{}
	for _, n := range s.named() {
		if len(n.paths) == 0 {
			// It climbs out of the roots; the search said so.
			if i := slices.IndexFunc(skipped, func(k rmfSkip) bool { return k.path == n.pattern }); i >= 0 {
				taken[i] = true
			}
			continue
		}
		if slices.ContainsFunc(n.paths, wasRead) {
			continue
		}
		if i := slices.IndexFunc(skipped, func(k rmfSkip) bool {
			return slices.ContainsFunc(n.paths, func(p string) bool { return strings.EqualFold(k.path, p) })
		}); i >= 0 {
			taken[i] = true
			continue
		}
		reason, at := "", n.paths[0]
		for _, p := range n.paths {
			fi, err := os.Stat(p)
			if err != nil {
				continue
			}
			at = p
			if fi.IsDir() {
				reason = "a directory, and no file below it could be read"
				if why := s.whyLeftOut(p, true); why != "" {
					reason = why
				}
			} else if reason = s.whyLeftOut(p, false); reason == "" {
				reason = "left out of the search"
			}
			break
		}
		if reason == "" {
			if _, open := s.env.Workspace.Overlay.Get(at); open {
				continue
			}
			reason = "not found"
		}
		skipped = append(skipped, rmfSkip{at, reason})
		taken[len(skipped)-1] = true
	}
	for i, k := range skipped {
		if taken[i] {
			named = append(named, k)
		}
	}
	all = append(slices.Clone(named), slices.DeleteFunc(slices.Clone(skipped), func(k rmfSkip) bool {
		return slices.Contains(named, k)
	})...)
	return named, all
}

// namedNote tells the model which of the paths it named were not read, and
// why.
func namedNote(named []rmfSkip) string {
	if len(named) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\nNot read, though named:\n")
	for _, k := range named {
		fmt.Fprintf(&b, "- %s: %s\n", k.path, k.reason)
	}
	return strings.TrimRight(b.String(), "\n")
}

// rmfSkipReason says why a file the pipeline answered with a message
// (instead of its content) counts as skipped.
func rmfSkipReason(c fileContent) string {
	switch {
	case c.Type == FileBinary:
		return "binary file"
	case c.Type.isMedia():
		return fmt.Sprintf("the model does not accept %s input", c.Type.noun())
	case c.Type == fileSVG:
		return "SVG file over 1 MB"
	}
	return c.Message
}

// display is the Markdown summary of §3.7.
func (r *ReadManyFiles) display(read []string, skipped []rmfSkip) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "### ReadManyFiles Result (Target Dir: `%s`)\n\n", r.env.Workspace.Roots.Primary())
	if len(read) == 0 {
		sb.WriteString("No files were read.\n")
	} else {
		fmt.Fprintf(&sb, "Read %d %s:\n", len(read), readPlural(len(read), "file", "files"))
		for _, f := range read[:min(len(read), readManyShownRead)] {
			fmt.Fprintf(&sb, "- `%s`\n", r.env.Rel(f))
		}
		if more := len(read) - readManyShownRead; more > 0 {
			fmt.Fprintf(&sb, "- ...and %d more\n", more)
		}
	}
	if len(skipped) > 0 {
		fmt.Fprintf(&sb, "\nSkipped %d %s:\n", len(skipped), readPlural(len(skipped), "item", "items"))
		for _, s := range skipped[:min(len(skipped), readManyShownSkipped)] {
			fmt.Fprintf(&sb, "- `%s` (%s)\n", r.env.Rel(s.path), s.reason)
		}
		if more := len(skipped) - readManyShownSkipped; more > 0 {
			fmt.Fprintf(&sb, "- ...and %d more\n", more)
		}
	}
	return strings.TrimRight(sb.String(), "\n")
}
