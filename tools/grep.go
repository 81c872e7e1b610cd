package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// grep_search (tools.md §3.5) runs in-process: the files of the search
// directories (searchfiles.go's searchFiles) are scanned in parallel, a required
// literal taken from the parsed pattern skips files and lines that cannot
// match before the regexp runs, and the hits are put back in path order.

//go:embed grep.md
var grepDescription string

const grepSchema = `{
  "type": "object",
  "properties": {
    "pattern": {
      "type": "string",
      "description": "The regular expression (Go RE2 syntax) to look for in each line. Matching ignores case unless the pattern starts with (?-i)."
    },
    "path": {
      "type": "string",
      "description": "The directory (or single file) to search: absolute, or relative to the first workspace root. Leave it out to search every workspace root."
    },
    "glob": {
      "type": "string",
      "description": "Only search files whose path matches this glob, such as \"*.go\" or \"src/**/*.{ts,tsx}\". A glob without a slash matches the file name."
    },
    "limit": {
      "type": "integer",
      "minimum": 1,
      "description": "The most matching lines to show."
    }
  },
  "required": ["pattern"]
}`

// GrepSearch is the grep_search tool (alias search_file_content): it lists
// the lines of the workspace's files that match a regular expression.
type GrepSearch struct {
	Base
	env *Env
}

// NewGrepSearch returns the grep_search tool working on env's workspace.
func NewGrepSearch(env *Env) *GrepSearch {
	return &GrepSearch{
		Base: Base{Spec: Spec{
			Name:        "grep_search",
			DisplayName: "Grep",
			Description: grepDescription,
			Schema:      json.RawMessage(grepSchema),
			Kind:        KindSearch,
			Aliases:     []string{"search_file_content"},
		}},
		env: env,
	}
}

// grepRequest is a validated grep_search call.
type grepRequest struct {
	pattern string
	m       *grepMatcher
	// dirs are the directories searched; file is set instead when path
	// names a file. explicit says the path argument chose them.
	dirs     []string
	file     string
	explicit bool
	// glob filters files; globLower is its lowered form, globBase says
	// it matches base names (it has no slash).
	glob      string
	globLower string
	globBase  bool
	limit     int
}

func (g *GrepSearch) Validate(params map[string]any) *ToolError {
	_, terr := g.request(params)
	return terr
}

func (g *GrepSearch) request(params map[string]any) (*grepRequest, *ToolError) {
	pattern, _ := String(params, "pattern")
	if strings.TrimSpace(pattern) == "" {
		return nil, InvalidParams(`Argument "pattern" must not be empty.`)
	}
	m, terr := compileGrepPattern(pattern)
	if terr != nil {
		return nil, terr
	}
	req := &grepRequest{pattern: pattern, m: m}
	if raw, ok := String(params, "path"); ok && strings.TrimSpace(raw) != "" {
		p, terr := g.env.searchDir(raw, false)
		if terr != nil {
			return nil, terr
		}
		req.explicit = true
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			req.dirs = []string{p}
		} else {
			req.file = p
		}
	} else {
		req.dirs = g.env.Workspace.Roots.List()
	}
	if glob, ok := String(params, "glob"); ok && glob != "" {
		if !doublestar.ValidatePattern(glob) {
			return nil, InvalidParams(`"` + glob + `" is not a valid glob pattern.`)
		}
		req.glob, req.globLower = glob, strings.ToLower(glob)
		req.globBase = !strings.Contains(glob, "/")
	}
	if n, ok := intParam(params, "limit"); ok {
		req.limit = n
	}
	return req, nil
}

func (g *GrepSearch) Describe(params map[string]any) string {
	out := g.env.describeSearch(params)
	if glob, ok := String(params, "glob"); ok && glob != "" {
		out += " (filter: '" + glob + "')"
	}
	return out
}

func (g *GrepSearch) Locations(params map[string]any) []Location {
	return g.env.searchLocations(params)
}

func (g *GrepSearch) Execute(ctx context.Context, _ *Call, params map[string]any, _ func(Output)) (Result, error) {
	req, terr := g.request(params)
	if terr != nil {
		return Result{Error: terr}, nil
	}
	targets, err := g.targets(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return ErrorResult(errorGrepExecution, "The text search failed: "+err.Error()), nil
	}
	lineCap := g.env.lineLimit()
	if req.limit > 0 && (lineCap <= 0 || req.limit < lineCap) {
		lineCap = req.limit
	}
	s := &grepScan{
		env:       g.env,
		m:         req.m,
		targets:   targets,
		lineCap:   lineCap,
		threshold: g.env.threshold(),
	}
	if err := s.run(ctx); err != nil {
		return Result{}, err
	}
	return s.result(req), nil
}

// grepTarget is one file to scan.
type grepTarget struct {
	path string
	// show is the path printed in the File: line.
	show string
	// size is the size on disk, -1 when unknown.
	size int64
	// buffer says the text comes from an open editor buffer.
	buffer bool
}

// targets lists the files to scan, in output order.
func (g *GrepSearch) targets(ctx context.Context, req *grepRequest) ([]grepTarget, error) {
	ws := g.env.Workspace
	open := map[string]bool{}
	for _, p := range ws.Overlay.Paths() {
		open[p] = true
	}
	filter := searchFilter{RespectGit: g.env.respectGitIgnore(), RespectQwen: g.env.respectQwenIgnore()}
	if req.file != "" {
		// A file named by path is filtered like the files of a directory.
		if filter.drops(ws.Ignore.Check(req.file, false)) {
			return nil, nil
		}
		name := filepath.Base(req.file)
		if req.glob != "" && !doublestar.MatchUnvalidated(req.globLower, strings.ToLower(name)) {
			return nil, nil
		}
		skip, _ := grepSkipsFile(name, open[req.file])
		if skip {
			return nil, nil
		}
		return []grepTarget{{path: req.file, show: name, size: -1, buffer: open[req.file]}}, nil
	}
	var out []grepTarget
	seen := map[string]bool{}
	for _, dir := range req.dirs {
		first := len(out)
		err := g.env.searchFiles(ctx, dir, filter, func(f searchFile) {
			rel := f.Path[len(dir)+len(searchSep(dir)):]
			if req.glob != "" {
				subject := rel
				if req.globBase {
					subject = filepath.Base(rel)
				}
				if !doublestar.MatchUnvalidated(req.globLower, strings.ToLower(filepath.ToSlash(subject))) {
					return
				}
			}
			buffer := open[f.Path]
			if skip, _ := grepSkipsFile(filepath.Base(rel), buffer); skip {
				return
			}
			if len(req.dirs) > 1 {
				if seen[f.Path] {
					return
				}
				seen[f.Path] = true
			}
			show := rel
			if len(req.dirs) > 1 {
				show = f.Path
			}
			out = append(out, grepTarget{path: f.Path, show: show, size: f.Size, buffer: buffer})
		})
		if err != nil {
			return nil, err
		}
		slices.SortFunc(out[first:], func(a, b grepTarget) int { return strings.Compare(a.path, b.path) })
	}
	return out, nil
}

// result formats the hits per §3.5.
func (s *grepScan) result(req *grepRequest) Result {
	total := 0
	for _, h := range s.hits {
		total += h.count
	}
	var loc string
	switch {
	case req.file != "":
		loc = "under " + req.file
	default:
		loc = searchLocation(req.dirs, req.explicit)
	}
	filter := ""
	if req.glob != "" {
		filter = ` (files matching "` + req.glob + `")`
	}
	if total == 0 {
		return TextResult(fmt.Sprintf(`No lines match "%s" %s%s.`, req.pattern, loc, filter), Markdown("No matches found"))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d matching %s for \"%s\" %s%s:\n---", total, searchPlural(total, "line", "lines"), req.pattern, loc, filter)
	shown, used, stopped := 0, 0, false
	for i, h := range s.hits {
		if stopped {
			break
		}
		if h.count == 0 {
			continue
		}
		if len(h.lines) == 0 || (s.lineCap > 0 && shown >= s.lineCap) {
			break
		}
		b.WriteString("\nFile: ")
		b.WriteString(s.targets[i].show)
		for _, l := range h.lines {
			if s.lineCap > 0 && shown >= s.lineCap {
				stopped = true
				break
			}
			line := "L" + strconv.Itoa(l.n) + ": " + l.text
			if s.threshold > 0 && used+l.chars > s.threshold {
				line = grepCutRunes(line, max(s.threshold-used, 10)) + "..."
				stopped = true
			}
			b.WriteByte('\n')
			b.WriteString(line)
			used += l.chars
			shown++
			if stopped {
				break
			}
		}
		b.WriteString("\n---")
	}
	display := fmt.Sprintf("Found %d %s", total, searchPlural(total, "match", "matches"))
	if k := total - shown; k > 0 {
		fmt.Fprintf(&b, "\n[%d more matching %s not shown]", k, searchPlural(k, "line", "lines"))
		display += " (truncated)"
	}
	return TextResult(b.String(), Markdown(display))
}

// grepCutRunes returns the first n characters of s.
func grepCutRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
