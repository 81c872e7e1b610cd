package tools

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// readManyExcludedDirs are the directories useDefaultExcludes adds.
var readManyExcludedDirs = []string{".vscode", ".idea", "dist", "build", "coverage", "__pycache__"}

// rmfSearch is one run of the file search.
type rmfSearch struct {
	env      *Env
	ctx      context.Context
	filter   fileFiltering
	defaults bool
	memory   []string
	patterns []string
	exclude  []string

	found   map[string]bool
	files   []string
	skipped []rmfSkip
}

// rmfBase is where relative patterns are matched: a root (filtered by the
// ignore files) or the project temp dir (not filtered).
type rmfBase struct {
	dir      string
	filtered bool
}

// run matches the patterns in every root (and, for absolute patterns
// inside it, the project temp dir), filling s.files and s.skipped.
func (s *rmfSearch) run() error {
	bases := make([]rmfBase, 0, 2)
	for _, root := range s.env.Workspace.Roots.List() {
		bases = append(bases, rmfBase{dir: root, filtered: true})
	}
	tmp := workspace.RealPath(s.env.ProjectTempDir())
	bases = append(bases, rmfBase{dir: tmp})

	for _, p := range s.patterns {
		if !s.placeable(p, bases) {
			s.skipped = append(s.skipped, rmfSkip{p, "outside the workspace"})
		}
	}
	for i, b := range bases {
		var pats []string
		for _, p := range s.patterns {
			if rel, ok := relPattern(p, b.dir, i < len(bases)-1); ok {
				pats = append(pats, rel)
			}
		}
		if len(pats) == 0 {
			continue
		}
		var excl []string
		for _, x := range s.exclude {
			if rel, ok := relPattern(x, b.dir, true); ok {
				excl = append(excl, rel)
			}
		}
		if err := s.searchBase(b, pats, excl); err != nil {
			return err
		}
	}
	return nil
}

// placeable reports whether pattern p can match anything in the bases:
// relative patterns that stay inside a root, and absolute ones under a
// root or the temp dir.
func (s *rmfSearch) placeable(p string, bases []rmfBase) bool {
	for i, b := range bases {
		if _, ok := relPattern(p, b.dir, i < len(bases)-1); ok {
			return true
		}
	}
	return false
}

// relPattern turns pattern p into a slash pattern relative to
// dir. Relative patterns apply to roots only (relativeOK) and must not
// climb out of them; absolute ones apply when their fixed part (before the
// first glob character) lies in dir, symlinks resolved.
func relPattern(p, dir string, relativeOK bool) (string, bool) {
	slash := filepath.ToSlash(p)
	if !filepath.IsAbs(p) {
		if !relativeOK {
			return "", false
		}
		clean := pathCleanPattern(slash)
		if clean == ".." || strings.HasPrefix(clean, "../") {
			return "", false
		}
		if clean == "." {
			clean = "**"
		}
		return clean, true
	}
	base, rest := doublestar.SplitPattern(slash)
	realBase := workspace.RealPath(filepath.FromSlash(base))
	rel, err := filepath.Rel(dir, realBase)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	out := filepath.ToSlash(rel)
	switch {
	case out == "." && rest == "":
		out = "**"
	case out == ".":
		out = rest
	case rest != "":
		out += "/" + rest
	}
	return out, true
}

// pathCleanPattern cleans the fixed "./" and "//" noise out of a relative
// slash pattern, leaving glob characters alone.
func pathCleanPattern(p string) string {
	for strings.HasPrefix(p, "./") {
		p = p[2:]
	}
	var segs []string
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "", ".":
		case "..":
			if len(segs) > 0 && segs[len(segs)-1] != ".." {
				segs = segs[:len(segs)-1]
			} else {
				segs = append(segs, "..")
			}
		default:
			segs = append(segs, seg)
		}
	}
	if len(segs) == 0 {
		return "."
	}
	return strings.Join(segs, "/")
}

// searchBase walks base.dir (from the deepest fixed directory the
// patterns share, when there is one) and collects the matching files.
func (s *rmfSearch) searchBase(b rmfBase, pats, excl []string) error {
	start := b.dir
	if common := commonFixedDir(b.dir, pats); common != "" {
		if fi, err := os.Stat(filepath.Join(b.dir, filepath.FromSlash(common))); err == nil && fi.IsDir() {
			start = filepath.Join(b.dir, filepath.FromSlash(common))
		}
	}
	m := rmfMatch{pats: lowerAll(pats), excl: lowerAll(excl),
		inExcluded: b.filtered && underDefaultExcludedDir(b.dir, start)}

	err := s.env.walkDirInside(start, pathOptions{AllowTemp: true}, func(p string, d fs.DirEntry, err error) error {
		if cerr := s.ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if p == start {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			// An unreadable directory below the start is left out.
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if p == start || !b.filtered {
				return nil
			}
			if (!m.inExcluded && workspace.IsDefaultExcludedDir(d.Name())) ||
				(s.defaults && slices.Contains(readManyExcludedDirs, d.Name())) {
				return fs.SkipDir
			}
			v := s.env.Workspace.Ignore.Check(p, true)
			if (s.filter.git && v.Git) || (s.filter.qwen && v.Qwen) {
				return fs.SkipDir
			}
			return nil
		}
		s.consider(b, p, d, m)
		return nil
	})
	if err != nil {
		return err
	}
	// Open buffers that are not on disk yet: their text is what the tools
	// read (§2.3).
	if b.filtered {
		for _, p := range s.env.Workspace.Overlay.Paths() {
			rel, err := filepath.Rel(b.dir, p)
			if err != nil || rel == "." || strings.HasPrefix(rel, "..") || s.found[p] {
				continue
			}
			if _, err := os.Lstat(p); err == nil {
				continue
			}
			if !m.inExcluded && underDefaultExcludedDir(b.dir, p) {
				continue
			}
			s.consider(b, p, nil, m)
		}
	}
	return nil
}

// rmfMatch is what one base's files are matched against.
type rmfMatch struct {
	pats, excl []string // lower case
	// inExcluded says the walk starts inside a default-excluded
	// directory, which then does not exclude what is below it.
	inExcluded bool
}

func lowerAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strings.ToLower(x)
	}
	return out
}

// consider decides about one file found below base b.
func (s *rmfSearch) consider(b rmfBase, p string, d fs.DirEntry, m rmfMatch) {
	rel := filepath.ToSlash(strings.TrimPrefix(strings.TrimPrefix(p, b.dir), string(filepath.Separator)))
	lower := strings.ToLower(rel)
	if s.found[p] || !matchAny(m.pats, lower) || matchAny(m.excl, lower) {
		return
	}
	if d != nil && d.Type()&fs.ModeSymlink != 0 {
		st, err := os.Stat(p)
		if err != nil || st.IsDir() {
			return
		}
		if s.env.checkInside(p, pathOptions{AllowTemp: true}) != nil {
			s.found[p] = true
			s.skipped = append(s.skipped, rmfSkip{p, "outside the workspace"})
			return
		}
	}
	if b.filtered && s.defaultExcluded(rel) {
		return
	}
	if b.filtered {
		v := s.env.Workspace.Ignore.Check(p, false)
		switch {
		case s.filter.git && v.Git:
			s.found[p] = true
			s.skipped = append(s.skipped, rmfSkip{p, "ignored by .gitignore"})
			return
		case s.filter.qwen && v.Qwen:
			s.found[p] = true
			s.skipped = append(s.skipped, rmfSkip{p, "ignored by .qwenignore"})
			return
		}
	}
	s.found[p] = true
	if t, ok := fileTypeByName(p); ok && t.isMedia() && !s.namedByPattern(p) {
		s.skipped = append(s.skipped, rmfSkip{p, "media or PDF file not named by a pattern"})
		return
	}
	s.files = append(s.files, p)
}

// defaultExcluded applies the file-level default excludes of §2.10 that
// useDefaultExcludes adds (directories are pruned during the walk).
func (s *rmfSearch) defaultExcluded(rel string) bool {
	if !s.defaults {
		return false
	}
	name := filepath.Base(rel)
	if name == ".DS_Store" || name == ".env" || isBinaryExtension(name) || slices.Contains(s.memory, name) {
		return true
	}
	for _, seg := range strings.Split(rel, "/") {
		if slices.Contains(readManyExcludedDirs, seg) {
			return true
		}
	}
	return false
}

// namedByPattern reports whether some pattern names the file's extension
// or its base name, which media and PDFs need to be read (§3.7).
func (s *rmfSearch) namedByPattern(p string) bool {
	base := strings.ToLower(filepath.Base(p))
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(p)), ".")
	for _, pat := range s.patterns {
		pat = strings.ToLower(pat)
		if strings.Contains(pat, base) {
			return true
		}
		for i := strings.Index(pat, ext); ext != "" && i >= 0; {
			end := i + len(ext)
			if i > 0 && strings.ContainsRune(".,{", rune(pat[i-1])) &&
				(end == len(pat) || strings.ContainsRune(",}/", rune(pat[end]))) {
				return true
			}
			next := strings.Index(pat[i+1:], ext)
			if next < 0 {
				break
			}
			i += 1 + next
		}
	}
	return false
}

// matchAny reports whether rel (lower case) matches one of the patterns.
func matchAny(pats []string, rel string) bool {
	for _, p := range pats {
		if ok, _ := doublestar.Match(p, rel); ok {
			return true
		}
		if !strings.HasSuffix(p, "/**") {
			if ok, _ := doublestar.Match(p+"/**", rel); ok {
				return true
			}
		}
	}
	return false
}

// hasGlobMeta reports whether p holds a glob character.
func hasGlobMeta(p string) bool { return strings.ContainsAny(p, "*?[{\\") }

// commonFixedDir is the directory, relative to dir, that every pattern's
// fixed part starts with, or "" when there is none. A pattern without
// glob characters names a file or a directory: its fixed directory is the
// directory itself, or the file's parent.
func commonFixedDir(dir string, pats []string) string {
	var common []string
	for i, p := range pats {
		base := "."
		if hasGlobMeta(p) {
			base, _ = doublestar.SplitPattern(p)
		} else if fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p))); err == nil && fi.IsDir() {
			base = p
		} else if j := strings.LastIndexByte(p, '/'); j > 0 {
			base = p[:j]
		}
		if base == "." || base == "" {
			return ""
		}
		segs := strings.Split(base, "/")
		if i == 0 {
			common = segs
			continue
		}
		k := 0
		for k < len(common) && k < len(segs) && common[k] == segs[k] {
			k++
		}
		common = common[:k]
		if k == 0 {
			return ""
		}
	}
	return strings.Join(common, "/")
}

// underDefaultExcludedDir reports whether p lies inside a default-excluded
// directory below dir (p itself included).
func underDefaultExcludedDir(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	if err != nil || strings.HasPrefix(rel, "..") {
		return false
	}
	for _, seg := range strings.Split(filepath.ToSlash(rel), "/") {
		if workspace.IsDefaultExcludedDir(seg) {
			return true
		}
	}
	return false
}

// rmfNamed is an entry of paths or include without glob characters: a
// file or directory the model named, and the absolute paths it may mean
// (one per root for a relative name).
type rmfNamed struct {
	pattern string
	paths   []string
}

// named lists the patterns that name one path rather than a glob.
func (s *rmfSearch) named() []rmfNamed {
	var out []rmfNamed
	for _, p := range s.patterns {
		if hasGlobMeta(p) {
			continue
		}
		n := rmfNamed{pattern: p}
		if filepath.IsAbs(p) {
			n.paths = []string{filepath.Clean(p)}
		} else if clean := pathCleanPattern(filepath.ToSlash(p)); clean != ".." && !strings.HasPrefix(clean, "../") {
			for _, root := range s.env.Workspace.Roots.List() {
				n.paths = append(n.paths, filepath.Join(root, filepath.FromSlash(clean)))
			}
		}
		out = append(out, n)
	}
	return out
}

// whyLeftOut says why the search did not pick p, a path the model named
// that exists: the rule of §3.7 that left it out, or "" when none did.
func (s *rmfSearch) whyLeftOut(p string, isDir bool) string {
	if s.env.checkInside(p, pathOptions{AllowTemp: true}) != nil {
		return "outside the workspace"
	}
	root := ""
	for _, r := range s.env.Workspace.Roots.List() {
		if inFolder(r, p) && len(r) > len(root) {
			root = r
		}
	}
	if root == "" {
		return ""
	}
	rel := filepath.ToSlash(strings.TrimPrefix(strings.TrimPrefix(p, root), string(filepath.Separator)))
	if rel != "" && matchAny(lowerAll(s.exclude), strings.ToLower(rel)) {
		return "matched by exclude"
	}
	// The directories on the way down, then the path itself.
	segs := strings.Split(rel, "/")
	dir := root
	for i, seg := range segs {
		if seg == "" {
			break
		}
		dir = filepath.Join(dir, seg)
		last := i == len(segs)-1
		if !last || isDir {
			if workspace.IsDefaultExcludedDir(seg) {
				return "inside " + seg + ", which searches leave out; name a pattern that starts inside it"
			}
			if s.defaults && slices.Contains(readManyExcludedDirs, seg) {
				return "inside " + seg + ", which useDefaultExcludes leaves out"
			}
		}
		v := s.env.Workspace.Ignore.Check(dir, !last || isDir)
		switch {
		case s.filter.git && v.Git:
			return "ignored by .gitignore"
		case s.filter.qwen && v.Qwen:
			return "ignored by .qwenignore"
		}
	}
	if !isDir && s.defaultExcluded(rel) {
		return "excluded by default (useDefaultExcludes)"
	}
	return ""
}
