package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// This file holds the glob tool (tools.md §3.6).

//go:embed glob.md
var globDescription string

const globSchema = `{
  "type": "object",
  "properties": {
    "pattern": {
      "type": "string",
      "description": "The glob pattern to match file paths against, such as \"**/*.go\" or \"src/**/*.{ts,tsx}\"."
    },
    "path": {
      "type": "string",
      "description": "The directory to search: absolute, or relative to the first workspace root. Leave it out to search every workspace root."
    },
    "case_sensitive": {
      "type": "boolean",
      "description": "Match letter case exactly. Defaults to false."
    },
    "respect_git_ignore": {
      "type": "boolean",
      "description": "Leave out files that .gitignore excludes. Defaults to true."
    }
  },
  "required": ["pattern"]
}`

// globRecent is how recently a file must have changed to be listed first.
const globRecent = 24 * time.Hour

// globMaxFiles caps the number of paths shown (with truncateToolOutputLines).
const globMaxFiles = 100

// Glob is the glob tool: it lists the files whose paths, relative to the
// search directory, match a doublestar pattern.
type Glob struct {
	Base
	env *Env
}

// NewGlob returns the glob tool working on env's workspace.
func NewGlob(env *Env) *Glob {
	return &Glob{
		Base: Base{Spec: Spec{
			Name:        "glob",
			DisplayName: "Glob",
			Description: globDescription,
			Schema:      json.RawMessage(globSchema),
			Kind:        KindSearch,
		}},
		env: env,
	}
}

// globRequest is a validated glob call.
type globRequest struct {
	// pattern is matched against paths relative to each directory.
	pattern string
	// dirs are the search directories; explicit says they come from the
	// path argument or an absolute pattern rather than the roots.
	dirs     []string
	explicit bool
	caseSens bool
	filter   searchFilter
}

func (g *Glob) Validate(params map[string]any) *ToolError {
	_, terr := g.request(params)
	return terr
}

func (g *Glob) request(params map[string]any) (*globRequest, *ToolError) {
	pattern, _ := String(params, "pattern")
	if strings.TrimSpace(pattern) == "" {
		return nil, InvalidParams(`Argument "pattern" must not be empty.`)
	}
	if !doublestar.ValidatePattern(pattern) {
		return nil, InvalidParams(`"` + pattern + `" is not a valid glob pattern.`)
	}
	req := &globRequest{pattern: pattern}
	for strings.HasPrefix(req.pattern, "./") {
		// Paths are matched relative to the directory, without "./".
		req.pattern = req.pattern[2:]
	}
	req.caseSens, _ = boolParam(params, "case_sensitive")
	respectGit, ok := boolParam(params, "respect_git_ignore")
	if !ok {
		respectGit = true
	}
	req.filter = searchFilter{RespectGit: respectGit, RespectQwen: g.env.respectQwenIgnore()}

	dirArg, hasDir := String(params, "path")
	if filepath.IsAbs(pattern) {
		// The static part of an absolute pattern names the directory; it is
		// checked like path and replaces it.
		base, rest := doublestar.SplitPattern(filepath.ToSlash(pattern))
		dirArg, hasDir, req.pattern = base, true, rest
		if rest == "" {
			return nil, InvalidParams(`"` + pattern + `" is not a valid glob pattern.`)
		}
	}
	if hasDir && strings.TrimSpace(dirArg) != "" {
		dir, terr := g.env.searchDir(dirArg, true)
		if terr != nil {
			return nil, terr
		}
		req.dirs, req.explicit = []string{dir}, true
	} else {
		req.dirs = g.env.Workspace.Roots.List()
	}
	return req, nil
}

func (g *Glob) Describe(params map[string]any) string {
	return g.env.describeSearch(params)
}

func (g *Glob) Locations(params map[string]any) []Location {
	return g.env.searchLocations(params)
}

// globHit is one matching file.
type globHit struct {
	path  string
	mtime time.Time
}

func (g *Glob) Execute(ctx context.Context, _ *Call, params map[string]any, _ func(Output)) (Result, error) {
	req, terr := g.request(params)
	if terr != nil {
		return Result{Error: terr}, nil
	}
	pattern, _ := String(params, "pattern")
	start := time.Now()
	hits, err := g.find(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return ErrorResult(errorGlobExecution, "The file search failed: "+err.Error()), nil
	}

	loc := searchLocation(req.dirs, req.explicit)
	if len(hits) == 0 {
		return TextResult(fmt.Sprintf("No files match \"%s\" %s.", pattern, loc), Markdown("No files found")), nil
	}
	limit := globMaxFiles
	if l := g.env.lineLimit(); l > 0 && l < limit {
		limit = l
	}
	shown := firstGlobHits(hits, start, limit)
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s matching \"%s\" %s (changed in the last 24 hours first, newest first; then by path):\n---\n",
		len(hits), searchPlural(len(hits), "file", "files"), pattern, loc)
	for i, h := range shown {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(h.path)
	}
	display := fmt.Sprintf("Found %d matching %s", len(hits), searchPlural(len(hits), "file", "files"))
	if k := len(hits) - len(shown); k > 0 {
		fmt.Fprintf(&b, "\n---\n[%d more %s not shown]", k, searchPlural(k, "file", "files"))
		display += " (truncated)"
	}
	return TextResult(b.String(), Markdown(display)), nil
}

// find lists the files of every search directory that match, each once.
func (g *Glob) find(ctx context.Context, req *globRequest) ([]globHit, error) {
	var hits []globHit
	seen := map[string]bool{}
	for _, dir := range req.dirs {
		pattern := req.pattern
		if globLiteralExists(dir, pattern) {
			// A name such as "a[1].txt" that exists means itself.
			pattern = globEscape(pattern)
		}
		if !req.caseSens {
			pattern = strings.ToLower(pattern)
		}
		match := globMatcher(pattern, req.caseSens)
		err := g.env.searchFiles(ctx, dir, req.filter, func(f searchFile) {
			if !match(f.Path[len(dir)+len(searchSep(dir)):]) {
				return
			}
			if len(req.dirs) > 1 {
				if seen[f.Path] {
					return
				}
				seen[f.Path] = true
			}
			hits = append(hits, globHit{path: f.Path, mtime: f.ModTime})
		})
		if err != nil {
			return nil, err
		}
	}
	return hits, nil
}

// globMatcher returns the test for one relative path. pattern is already
// lowered when the match ignores case. The common shapes "**/*.ext" and
// "*.ext" are answered without the general matcher.
func globMatcher(pattern string, caseSens bool) func(rel string) bool {
	lower := func(s string) string { return s }
	if !caseSens {
		lower = strings.ToLower
	}
	if ext, ok := strings.CutPrefix(pattern, "**/*"); ok && globPlainSuffix(ext) {
		return func(rel string) bool {
			base := rel[strings.LastIndexByte(rel, '/')+1:]
			return len(base) >= len(ext) && lower(base[len(base)-len(ext):]) == ext
		}
	}
	slashed := filepath.Separator != '/'
	return func(rel string) bool {
		if slashed {
			rel = filepath.ToSlash(rel)
		}
		return doublestar.MatchUnvalidated(pattern, lower(rel))
	}
}

// globPlainSuffix reports whether s holds no glob syntax and no slash, so
// that "*"+s matches exactly the names ending in s.
func globPlainSuffix(s string) bool {
	return s != "" && !strings.ContainsAny(s, `*?[]{}\/`)
}

// globLiteralExists reports whether dir/pattern names an existing file, for
// names that hold glob syntax.
func globLiteralExists(dir, pattern string) bool {
	if !strings.ContainsAny(pattern, `*?[]{}\`) {
		return false
	}
	fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(pattern)))
	return err == nil && fi.Mode().IsRegular()
}

// globEscape escapes every character that doublestar treats as syntax.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]{}\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// globOrder orders hits as they are listed: the files changed within
// globRecent of start first, newest first (ties by path), then the others
// by path.
func globOrder(start time.Time) func(a, b globHit) int {
	cutoff := start.Add(-globRecent)
	return func(a, b globHit) int {
		ra, rb := a.mtime.After(cutoff), b.mtime.After(cutoff)
		switch {
		case ra && !rb:
			return -1
		case rb && !ra:
			return 1
		case ra && rb:
			if c := b.mtime.Compare(a.mtime); c != 0 {
				return c
			}
		}
		return strings.Compare(a.path, b.path)
	}
}

// firstGlobHits returns the first k of hits in globOrder, in that order.
// Only those are shown, so rather than sorting every hit it keeps the k
// best in a heap, comparing precomputed keys: a glob of a large tree that
// was just cloned (every file recent) matches tens of thousands.
func firstGlobHits(hits []globHit, start time.Time, k int) []globHit {
	cmp := globOrder(start)
	if len(hits) <= k {
		slices.SortFunc(hits, cmp)
		return hits
	}
	// key orders as globOrder does before it looks at paths: recent files
	// first, newest first; all older files alike.
	cutoff := start.Add(-globRecent)
	key := make([]int64, len(hits))
	for i, h := range hits {
		key[i] = math.MaxInt64
		if h.mtime.After(cutoff) {
			key[i] = -h.mtime.UnixNano()
		}
	}
	before := func(a, b int32) bool {
		if key[a] != key[b] {
			return key[a] < key[b]
		}
		return hits[a].path < hits[b].path
	}
	// heap holds the indexes of the k best so far; its root is the last
	// of them (every parent comes after its children).
	heap := make([]int32, k)
	siftDown := func(i int) {
		for {
			last, l, r := i, 2*i+1, 2*i+2
			if l < k && before(heap[last], heap[l]) {
				last = l
			}
			if r < k && before(heap[last], heap[r]) {
				last = r
			}
			if last == i {
				return
			}
			heap[i], heap[last] = heap[last], heap[i]
			i = last
		}
	}
	// From the end: the index lists files by path, and a checkout writes
	// them in that order, so the newest come last; taking them first lets
	// one comparison with the root turn away most of the others.
	n := len(hits)
	for j := range heap {
		heap[j] = int32(n - 1 - j)
	}
	for j := k/2 - 1; j >= 0; j-- {
		siftDown(j)
	}
	for i := n - 1 - k; i >= 0; i-- {
		if before(int32(i), heap[0]) {
			heap[0] = int32(i)
			siftDown(0)
		}
	}
	out := make([]globHit, k)
	for j, i := range heap {
		out[j] = hits[i]
	}
	slices.SortFunc(out, cmp)
	return out
}
