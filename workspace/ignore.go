package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// IgnoreVerdict says which ignore files exclude a path. Tools that count
// ignored entries check Git before Qwen (tools.md §2.10).
type IgnoreVerdict struct {
	Git  bool
	Qwen bool
}

// IsDefaultExcludedDir reports whether a directory of this base name is left
// out of searches unless the search starts inside it (tools.md §2.10).
func IsDefaultExcludedDir(name string) bool {
	switch name {
	case ".git", "node_modules", "bower_components", ".svn", ".hg":
		return true
	}
	return false
}

// Ignorer answers whether a path is excluded by .gitignore rules (the
// repository's info/exclude plus every .gitignore from the repository root
// down) or by the .qwenignore of its workspace root.
//
// The repository is found by looking for .git upward from the workspace root
// that contains the path, so each root may sit in its own repository, or in
// none (then git rules do not apply to it). When roots are nested, a path
// belongs to the innermost root that contains it. Repositories nested inside
// a root are not treated specially: their .gitignore files simply apply
// below their directory, like any nested .gitignore.
//
// Parsed ignore files (and files found missing) are cached until Invalidate
// drops them; Watch does that from a Watcher's events.
type Ignorer struct {
	roots *Roots

	mu sync.Mutex
	// files caches parsed ignore files by path; a nil slice records a file
	// that is missing or holds no rule.
	files map[string][]ignoreRule
	// repos caches the repository found for each root.
	repos map[string]repoInfo
	// gen counts invalidations, so a load that raced with one does not
	// store what it read before the file changed.
	gen uint64
	w   *Watcher
}

// repoInfo locates a git repository: dir is its work tree root ("" when the
// root is in no repository), exclude the path of its info/exclude file.
type repoInfo struct {
	dir, exclude string
}

// newIgnorer returns an Ignorer for the given roots; it follows later
// changes of the root set.
func newIgnorer(roots *Roots) *Ignorer {
	return &Ignorer{roots: roots, files: map[string][]ignoreRule{}, repos: map[string]repoInfo{}}
}

// Watch subscribes the Ignorer to w, so an ignore file that changes is read
// again. It also watches the few directories outside the index that hold
// ignore files for the roots: the repository's info directory (or its git
// directory, until info exists) and the directories between a repository
// root and a workspace root below it.
func (ig *Ignorer) Watch(w *Watcher) {
	ig.mu.Lock()
	if ig.w != nil || w == nil {
		ig.mu.Unlock()
		return
	}
	ig.w = w
	known := make(map[string]repoInfo, len(ig.repos))
	for root, r := range ig.repos {
		known[root] = r
	}
	ig.mu.Unlock()
	w.Subscribe(ig.observe)
	for root, r := range known {
		watchRepoDirs(w, root, r)
	}
}

// isIgnoreEvent reports whether ev may change ignore verdicts: an ignore
// file changed, a .git came or went, or a repository's info directory
// appeared (git init writes it just after .git).
func isIgnoreEvent(ev Event) bool {
	switch filepath.Base(ev.Path) {
	case ".gitignore", ".qwenignore", "exclude":
		return true
	case ".git":
		// Only its coming or going matters; git touches it all the time.
		return ev.Op != Changed
	case "info":
		return ev.Op == Created && filepath.Base(filepath.Dir(ev.Path)) == ".git"
	}
	return false
}

// observe updates the caches for one watcher event. It is idempotent, so
// the index calls it too, before it acts on the same event, whichever of the
// two subscribed first.
func (ig *Ignorer) observe(ev Event) {
	if !isIgnoreEvent(ev) {
		return
	}
	ig.Invalidate(ev.Path)
	if filepath.Base(ev.Path) == "info" {
		ig.mu.Lock()
		w := ig.w
		ig.mu.Unlock()
		if w != nil {
			_ = w.Add(ev.Path)
		}
	}
}

// Invalidate forgets what was read from path and from anything below it, so
// the next check reads the disk again. A path named .git also forgets every
// repository found, since one may have appeared or gone.
func (ig *Ignorer) Invalidate(path string) {
	path = filepath.Clean(path)
	prefix := path + string(filepath.Separator)
	ig.mu.Lock()
	defer ig.mu.Unlock()
	ig.gen++
	delete(ig.files, path)
	for p := range ig.files {
		if strings.HasPrefix(p, prefix) {
			delete(ig.files, p)
		}
	}
	if filepath.Base(path) == ".git" {
		clear(ig.repos)
	}
}

// Check returns the ignore verdict for an absolute path. isDir says whether
// the path names a directory, which matters for patterns ending in "/".
// A path outside every root is never ignored.
func (ig *Ignorer) Check(absPath string, isDir bool) IgnoreVerdict {
	p := filepath.Clean(absPath)
	root := ig.rootOf(p)
	if root == "" {
		p = RealPath(p)
		if root = ig.rootOf(p); root == "" {
			return IgnoreVerdict{}
		}
	}
	if p == root {
		fr := ig.dirFrame(root, root)
		return IgnoreVerdict{Git: fr.gitIgn}
	}
	fr := ig.dirFrame(root, filepath.Dir(p))
	return fr.verdict(p, isDir)
}

// rootOf returns the innermost root containing p, or "".
func (ig *Ignorer) rootOf(p string) string {
	best := ""
	for _, r := range ig.roots.List() {
		if isUnder(r, p) && len(r) > len(best) {
			best = r
		}
	}
	return best
}

// repo returns the repository of a root, looking for .git upward from it.
func (ig *Ignorer) repo(root string) repoInfo {
	ig.mu.Lock()
	r, ok := ig.repos[root]
	w := ig.w
	ig.mu.Unlock()
	if ok {
		return r
	}
	r = findRepo(root)
	ig.mu.Lock()
	ig.repos[root] = r
	ig.mu.Unlock()
	if w != nil {
		watchRepoDirs(w, root, r)
	}
	return r
}

func findRepo(root string) repoInfo {
	for d := root; ; {
		g := filepath.Join(d, ".git")
		if st, err := os.Lstat(g); err == nil {
			if st.IsDir() {
				return repoInfo{dir: d, exclude: filepath.Join(g, "info", "exclude")}
			}
			if st.Mode().IsRegular() {
				return repoInfo{dir: d, exclude: filepath.Join(gitFileDir(g, d), "info", "exclude")}
			}
		}
		parent := filepath.Dir(d)
		if parent == d {
			return repoInfo{}
		}
		d = parent
	}
}

// gitFileDir follows a .git file ("gitdir: <path>", used by worktrees and
// submodules) to the directory that holds info/exclude: the common
// directory of a worktree, else the git directory itself.
func gitFileDir(gitFile, workTree string) string {
	data, err := os.ReadFile(gitFile)
	if err != nil {
		return gitFile
	}
	line, _, _ := strings.Cut(string(data), "\n")
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return gitFile
	}
	dir = strings.TrimSpace(dir)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(workTree, dir)
	}
	if c, err := os.ReadFile(filepath.Join(dir, "commondir")); err == nil {
		common := strings.TrimSpace(string(c))
		if !filepath.IsAbs(common) {
			common = filepath.Join(dir, common)
		}
		return filepath.Clean(common)
	}
	return dir
}

func watchRepoDirs(w *Watcher, root string, r repoInfo) {
	_ = w.Add(root)
	if r.dir == "" {
		return
	}
	info := filepath.Dir(r.exclude)
	if _, err := os.Stat(info); err == nil {
		_ = w.Add(info)
	} else {
		// Watch the git directory until info appears in it; look again
		// in case it appeared before the watch was in place.
		_ = w.Add(filepath.Dir(info))
		if _, err := os.Stat(info); err == nil {
			_ = w.Add(info)
		}
	}
	for d := filepath.Dir(root); isUnder(r.dir, d); d = filepath.Dir(d) {
		_ = w.Add(d)
		if d == r.dir {
			break
		}
	}
}

// rules returns the parsed rules of one ignore file, from the cache when
// it is there.
func (ig *Ignorer) rules(path string) []ignoreRule {
	ig.mu.Lock()
	rs, ok := ig.files[path]
	gen := ig.gen
	ig.mu.Unlock()
	if ok {
		return rs
	}
	data, err := os.ReadFile(path)
	if err == nil {
		rs = parseIgnore(data)
	}
	ig.mu.Lock()
	if ig.gen == gen {
		ig.files[path] = rs
	}
	ig.mu.Unlock()
	return rs
}

// ignoreLayer is the rules of one ignore file, applied to paths below dir.
type ignoreLayer struct {
	dir   string
	rules []ignoreRule
}

// ignoreFrame is what is known about one directory: the rules that apply to
// its entries and whether the directory itself is excluded (then so is
// everything below it, whatever later rules say).
type ignoreFrame struct {
	gitOn   bool
	gitIgn  bool
	git     []ignoreLayer // lowest precedence first
	qwenIgn bool
	qwen    []ignoreLayer
}

// rootFrame is the frame of a root directory, before its own children.
func (ig *Ignorer) rootFrame(root string) *ignoreFrame {
	fr := &ignoreFrame{}
	r := ig.repo(root)
	if r.dir != "" {
		fr.gitOn = true
		if rs := ig.rules(r.exclude); rs != nil {
			fr.git = []ignoreLayer{{dir: r.dir, rules: rs}}
		}
		// Walk from the repository root down to the workspace root: a
		// root may lie in an ignored directory, and the .gitignore files
		// above it apply inside it.
		d := r.dir
		fr = fr.enter(d, ig.rules(filepath.Join(d, ".gitignore")))
		if root != r.dir {
			for _, name := range strings.Split(root[len(r.dir)+len(sepAfter(r.dir)):], string(filepath.Separator)) {
				d = filepath.Join(d, name)
				fr = fr.child(d, true).enter(d, ig.rules(filepath.Join(d, ".gitignore")))
			}
		}
	}
	if rs := ig.rules(filepath.Join(root, ".qwenignore")); rs != nil {
		fr.qwen = []ignoreLayer{{dir: root, rules: rs}}
	}
	return fr
}

// dirFrame is the frame of dir, a directory inside root (or root itself),
// reading each .gitignore on the way from the cache or the disk.
func (ig *Ignorer) dirFrame(root, dir string) *ignoreFrame {
	fr := ig.rootFrame(root)
	if dir == root {
		return fr
	}
	d := root
	for _, name := range strings.Split(dir[len(root)+len(sepAfter(root)):], string(filepath.Separator)) {
		d = filepath.Join(d, name)
		fr = fr.child(d, true)
		if fr.gitOn {
			fr = fr.enter(d, ig.rules(filepath.Join(d, ".gitignore")))
		}
	}
	return fr
}

// sepAfter is the separator that follows dir in the paths below it: none
// after the file-system root.
func sepAfter(dir string) string {
	if strings.HasSuffix(dir, string(filepath.Separator)) {
		return ""
	}
	return string(filepath.Separator)
}

// verdict judges an entry of the frame's directory.
func (fr *ignoreFrame) verdict(path string, isDir bool) IgnoreVerdict {
	v := IgnoreVerdict{Qwen: fr.qwenIgn || matchLayers(fr.qwen, path, isDir)}
	if fr.gitOn {
		v.Git = fr.gitIgn || filepath.Base(path) == ".git" || matchLayers(fr.git, path, isDir)
	}
	return v
}

// child is the frame of the subdirectory path, before its own .gitignore.
func (fr *ignoreFrame) child(path string, isDir bool) *ignoreFrame {
	v := fr.verdict(path, isDir)
	if v.Git == fr.gitIgn && v.Qwen == fr.qwenIgn {
		return fr
	}
	c := *fr
	c.gitIgn, c.qwenIgn = v.Git, v.Qwen
	return &c
}

// enter adds the rules of dir's .gitignore; frames share their layers, so
// the slice is always copied before it grows.
func (fr *ignoreFrame) enter(dir string, rules []ignoreRule) *ignoreFrame {
	if rules == nil || !fr.gitOn {
		return fr
	}
	c := *fr
	c.git = append(fr.git[:len(fr.git):len(fr.git)], ignoreLayer{dir: dir, rules: rules})
	return &c
}

// matchLayers applies git's precedence: the last matching rule of the
// deepest file wins; a negated rule that wins re-includes the path.
func matchLayers(layers []ignoreLayer, path string, isDir bool) bool {
	if len(layers) == 0 {
		return false
	}
	slash := filepath.ToSlash(path)
	base := slash[strings.LastIndexByte(slash, '/')+1:]
	for i := len(layers) - 1; i >= 0; i-- {
		l := layers[i]
		n := len(l.dir) + len(sepAfter(l.dir))
		if len(slash) <= n {
			continue
		}
		rel := slash[n:]
		for j := len(l.rules) - 1; j >= 0; j-- {
			if l.rules[j].match(rel, base, isDir) {
				return !l.rules[j].negate
			}
		}
	}
	return false
}

// isUnder reports whether p is dir or lies below it (both clean).
func isUnder(dir, p string) bool {
	if len(p) < len(dir) || p[:len(dir)] != dir {
		return false
	}
	return len(p) == len(dir) || p[len(dir)] == filepath.Separator || strings.HasSuffix(dir, string(filepath.Separator))
}
