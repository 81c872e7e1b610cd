package tools

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

//go:embed listdir.md
var listDirDescription string

const listDirSchema = `{
  "type": "object",
  "properties": {
    "path": {
      "type": "string",
      "description": "The absolute path of the directory to list, starting with /."
    },
    "ignore": {
      "type": "array",
      "items": {"type": "string"},
      "description": "Name patterns of entries to leave out, matched against the entry's name: * matches any run of characters, ? one character."
    },
    "file_filtering_options": {
      "type": "object",
      "description": "Override the workspace's ignore-file settings for this call.",
      "properties": {
        "respect_git_ignore": {
          "type": "boolean",
          "description": "Leave out entries excluded by .gitignore (default: the context.fileFiltering.respectGitIgnore setting, true)."
        },
        "respect_qwen_ignore": {
          "type": "boolean",
          "description": "Leave out entries excluded by .qwenignore (default: the context.fileFiltering.respectQwenIgnore setting, true)."
        }
      }
    }
  },
  "required": ["path"]
}`

// listDirMax is the most entries one listing shows (also capped by
// tools.truncateToolOutputLines).
const listDirMax = 100

// ListDirectory is the list_directory tool (tools.md §3.1).
type ListDirectory struct {
	Base
	env *Env
}

// NewListDirectory returns the list_directory tool working in env.
func NewListDirectory(env *Env) *ListDirectory {
	return &ListDirectory{env: env, Base: Base{Spec: Spec{
		Name:        "list_directory",
		DisplayName: "ListFiles",
		Description: listDirDescription,
		Schema:      []byte(listDirSchema),
		Kind:        KindSearch,
	}}}
}

// fileFiltering is the effective ignore-file choice of one call: the
// per-call file_filtering_options over the settings.
type fileFiltering struct {
	git, qwen bool
}

func (e *Env) fileFilteringOf(params map[string]any) fileFiltering {
	f := fileFiltering{git: e.respectGitIgnore(), qwen: e.respectQwenIgnore()}
	if opts, ok := params["file_filtering_options"].(map[string]any); ok {
		if b, ok := boolParam(opts, "respect_git_ignore"); ok {
			f.git = b
		}
		if b, ok := boolParam(opts, "respect_qwen_ignore"); ok {
			f.qwen = b
		}
	}
	return f
}

func (l *ListDirectory) dir(params map[string]any) (string, *ToolError) {
	raw, _ := String(params, "path")
	if strings.TrimSpace(raw) == "" {
		return "", InvalidParams(`Argument "path" must not be empty.`)
	}
	return l.env.absPath(raw, pathOptions{AllowTemp: true})
}

// Validate checks the path (§2.2).
func (l *ListDirectory) Validate(params map[string]any) *ToolError {
	_, terr := l.dir(params)
	return terr
}

// Describe is the directory's display path.
func (l *ListDirectory) Describe(params map[string]any) string {
	abs, terr := l.dir(params)
	if terr != nil {
		raw, _ := String(params, "path")
		return readTitlePath(raw)
	}
	return readTitlePath(l.env.Rel(abs))
}

// Locations is the directory.
func (l *ListDirectory) Locations(params map[string]any) []Location {
	abs, terr := l.dir(params)
	if terr != nil {
		return nil
	}
	return []Location{{Path: abs}}
}

type listEntry struct {
	name  string
	isDir bool
}

// Execute lists the directory.
func (l *ListDirectory) Execute(ctx context.Context, _ *Call, params map[string]any, _ func(Output)) (Result, error) {
	abs, terr := l.dir(params)
	if terr != nil {
		return Result{Error: terr}, nil
	}
	fi, err := os.Stat(abs)
	switch {
	case err != nil && pathMissing(err):
		return ErrorResult(errorLsExecution, abs+" does not exist."), nil
	case err != nil:
		return ErrorResult(errorLsExecution, fmt.Sprintf("Could not list %s: %s", abs, readErrReason(err))), nil
	case !fi.IsDir():
		return Result{Error: NewError(errorPathIsNotADirectory, abs+" is not a directory."),
			Display: Markdown("Error: Path is not a directory.")}, nil
	}
	dirents, err := l.env.readDirInside(abs, pathOptions{AllowTemp: true})
	if err != nil {
		return ErrorResult(errorLsExecution, fmt.Sprintf("Could not list %s: %s", abs, readErrReason(err))), nil
	}
	if len(dirents) == 0 {
		return TextResult(abs+" is an empty directory.", Markdown("Directory is empty.")), nil
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}

	filter := l.env.fileFilteringOf(params)
	patterns, _ := stringsParam(params, "ignore")
	var entries []listEntry
	gitIgnored, qwenIgnored := 0, 0
	for _, d := range dirents {
		p := filepath.Join(abs, d.Name())
		st, err := os.Stat(p)
		if err != nil {
			continue
		}
		v := l.env.Workspace.Ignore.Check(p, st.IsDir())
		switch {
		case filter.git && v.Git:
			gitIgnored++
			continue
		case filter.qwen && v.Qwen:
			qwenIgnored++
			continue
		}
		if slices.ContainsFunc(patterns, func(pat string) bool { return nameMatch(pat, d.Name()) }) {
			continue
		}
		entries = append(entries, listEntry{name: d.Name(), isDir: st.IsDir()})
	}
	slices.SortFunc(entries, func(a, b listEntry) int {
		if a.isDir != b.isDir {
			if a.isDir {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})

	limit := listDirMax
	if n := l.env.lineLimit(); n > 0 {
		limit = min(limit, n)
	}
	total := len(entries)
	shown := entries[:min(total, limit)]
	var sb strings.Builder
	fmt.Fprintf(&sb, "Contents of %s (%d %s):\n---\n", abs, total, readPlural(total, "entry", "entries"))
	for i, e := range shown {
		if i > 0 {
			sb.WriteByte('\n')
		}
		if e.isDir {
			sb.WriteString("[DIR] ")
		}
		sb.WriteString(e.name)
	}
	more := total - len(shown)
	if more > 0 {
		fmt.Fprintf(&sb, "\n---\n[%d more %s not shown]", more, readPlural(more, "entry", "entries"))
	}
	ignored := ignoredCounts(gitIgnored, qwenIgnored)
	if ignored != "" {
		sb.WriteString("\n\n" + ignored)
	}
	display := fmt.Sprintf("Listed %d item(s)", total)
	if ignored != "" {
		display += " " + ignored
	}
	if more > 0 {
		display += " (truncated)"
	}
	return TextResult(sb.String(), Markdown(display)), nil
}

// ignoredCounts is "(<g> git-ignored, <q> qwen-ignored)" with only the
// non-zero parts, or "" when nothing was ignored.
func ignoredCounts(git, qwen int) string {
	var parts []string
	if git > 0 {
		parts = append(parts, fmt.Sprintf("%d git-ignored", git))
	}
	if qwen > 0 {
		parts = append(parts, fmt.Sprintf("%d qwen-ignored", qwen))
	}
	if len(parts) == 0 {
		return ""
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// nameMatch matches a name against a pattern in which "*" stands for any
// run of characters and "?" for one character; every other character,
// "[" and "\" included, stands for itself.
func nameMatch(pattern, name string) bool {
	p, n := []rune(pattern), []rune(name)
	// Greedy match with one backtrack point: the last "*" seen.
	pi, ni := 0, 0
	star, mark := -1, 0
	for ni < len(n) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == n[ni]):
			pi++
			ni++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, ni
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			ni = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
