package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// FileEntry is one indexed file. Git and Qwen are its ignore verdict when it
// was indexed, kept so that searches can filter without asking the Ignorer.
type FileEntry struct {
	Path    string
	Size    int64
	ModTime time.Time
	Git     bool
	Qwen    bool
}

// Index is an in-memory list of the files under every workspace root, kept
// current from Watcher events, so that glob need not walk the disk.
//
// What it holds: regular files (and symlinks to regular files) under each
// root, dot files included. Symlinks to directories are not followed.
// Default-excluded directories (IsDefaultExcludedDir) are neither entered
// nor watched. Git-ignored directories are not entered either, so files
// under them are missing from the index; git-ignored files elsewhere are
// present with Git set. Files below a qwen-ignored directory are present
// with Qwen set. A caller that needs what the index leaves out (a search
// inside an excluded directory, or one that does not respect .gitignore
// where ignored directories were skipped) asks Covers, and walks the disk
// when it says false. A root that itself lies in a git-ignored directory is
// indexed anyway, with every file marked Git. With nested roots, the files
// of the inner root are indexed once, under the inner root.
//
// All changes to the index happen on one goroutine, in the order events
// arrive; each event is judged by what the disk holds when it is handled,
// so the index converges on the disk whatever the order of events.
type Index struct {
	roots *Roots
	ig    *Ignorer
	w     *Watcher
	ready chan struct{}
	// workers is the number of goroutines of a walk.
	workers int

	qmu sync.Mutex
	// queue holds work for the updater goroutine, which wake rouses.
	queue  []indexJob
	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{} // closed when the updater returns; nil before Start
	closed bool

	mu sync.RWMutex
	// indexed is the root set the index reflects.
	indexed []string
	// dirs maps every indexed directory to its files, by name.
	dirs map[string]map[string]fileMeta
	// skipped holds the git-ignored directories that were not entered.
	skipped map[string]struct{}
	// snap is the sorted list Files returns, built on demand; snapOK is
	// false after any change.
	snap     []FileEntry
	snapOK   bool
	waiters  map[chan struct{}]struct{}
	watchErr error
}

type fileMeta struct {
	size  int64
	mtime int64 // Unix nanoseconds
	git   bool
	qwen  bool
}

type jobKind uint8

const (
	jobEvent jobKind = iota
	jobRoots
	jobSync
)

type indexJob struct {
	kind jobKind
	ev   Event
	done chan struct{}
}

var errIndexClosed = errors.New("the file index is closed")

// NewIndex returns an index of the files under roots, judged by ig and kept
// current from w's events (w may be nil: then the index does not follow the
// disk after building). Nothing happens until Start.
func NewIndex(roots *Roots, ig *Ignorer, w *Watcher) *Index {
	if ig == nil {
		ig = NewIgnorer(roots)
	}
	return &Index{
		roots:   roots,
		ig:      ig,
		w:       w,
		ready:   make(chan struct{}),
		workers: max(2, 2*runtime.GOMAXPROCS(0)),
		wake:    make(chan struct{}, 1),
		dirs:    map[string]map[string]fileMeta{},
		skipped: map[string]struct{}{},
		waiters: map[chan struct{}]struct{}{},
	}
}

// Start builds the index in the background and then follows the watcher.
// It returns at once. ctx bounds the index's whole life, not this call:
// pass the server's context, not a request's. Calling Start again does
// nothing.
func (ix *Index) Start(ctx context.Context) {
	ix.qmu.Lock()
	if ix.done != nil || ix.closed {
		ix.qmu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	ix.cancel = cancel
	ix.done = make(chan struct{})
	ix.qmu.Unlock()
	if ix.w != nil {
		ix.w.Subscribe(ix.onEvent)
	}
	go ix.run(ctx)
}

// Ready is closed when the first build is done. It stays open if the index
// is closed before that, so wait on it together with a context.
func (ix *Index) Ready() <-chan struct{} { return ix.ready }

// RootsChanged makes the index follow the current root set: added roots are
// built, the entries of removed roots dropped. It returns at once.
func (ix *Index) RootsChanged() { ix.enqueue(indexJob{kind: jobRoots}) }

// Sync waits until the index has handled everything queued before the call:
// the first build, watcher events already delivered, root changes. An event
// the editor reports with Watcher.Inject is therefore visible after Sync.
func (ix *Index) Sync(ctx context.Context) error {
	ch := make(chan struct{})
	ix.qmu.Lock()
	if ix.closed {
		ix.qmu.Unlock()
		return errIndexClosed
	}
	if ix.done == nil {
		ix.qmu.Unlock()
		return errors.New("sync the file index: it is not started")
	}
	done := ix.done
	ix.queue = append(ix.queue, indexJob{kind: jobSync, done: ch})
	ix.qmu.Unlock()
	ix.kick()
	select {
	case <-ch:
		return nil
	case <-done:
		return errIndexClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Changed returns a channel that is closed at the next change of the
// index. Callers waiting for a condition check it, then wait on a fresh one.
func (ix *Index) Changed() <-chan struct{} {
	ch := make(chan struct{})
	ix.mu.Lock()
	ix.waiters[ch] = struct{}{}
	ix.mu.Unlock()
	return ch
}

// Files returns every indexed file, sorted by path (byte order). The slice
// is the caller's.
func (ix *Index) Files() []FileEntry {
	return slices.Clone(ix.snapshot())
}

// Walk calls fn for every indexed file in path order until fn returns
// false. It sees one consistent snapshot and holds no lock while fn runs.
func (ix *Index) Walk(fn func(FileEntry) bool) {
	for _, e := range ix.snapshot() {
		if !fn(e) {
			return
		}
	}
}

// WalkUnder is Walk restricted to the files below dir.
func (ix *Index) WalkUnder(dir string, fn func(FileEntry) bool) {
	prefix := filepath.Clean(dir)
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	snap := ix.snapshot()
	i := sort.Search(len(snap), func(i int) bool { return snap[i].Path >= prefix })
	for ; i < len(snap) && strings.HasPrefix(snap[i].Path, prefix); i++ {
		if !fn(snap[i]) {
			return
		}
	}
}

// Covers reports whether the index can answer a search under dir: the first
// build is done, dir is an indexed directory (so not inside a default
// excluded or git-ignored one, nor a directory symlink), and, when the
// search does not respect .gitignore, no git-ignored directory below dir
// was skipped. When it says false, walk the disk instead.
func (ix *Index) Covers(dir string, respectGit bool) bool {
	select {
	case <-ix.ready:
	default:
		return false
	}
	ix.qmu.Lock()
	closed := ix.closed
	ix.qmu.Unlock()
	if closed {
		return false
	}
	dir = filepath.Clean(dir)
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if _, ok := ix.dirs[dir]; !ok {
		return false
	}
	if !respectGit {
		for s := range ix.skipped {
			if isUnder(dir, s) {
				return false
			}
		}
	}
	return true
}

// Err returns the first error met while adding a directory to the watcher
// (such as the system's limit on watches), or nil. The index still holds
// what it walked, but may miss later changes in unwatched directories.
func (ix *Index) Err() error {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.watchErr
}

// Close stops the index, waits for its goroutine and stops watching the
// directories it watched. The Watcher itself stays open.
func (ix *Index) Close() {
	ix.qmu.Lock()
	if ix.closed {
		ix.qmu.Unlock()
		return
	}
	ix.closed = true
	ix.queue = nil
	cancel, done := ix.cancel, ix.done
	ix.qmu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	ix.mu.Lock()
	dirs := ix.dirs
	ix.dirs = map[string]map[string]fileMeta{}
	ix.skipped = map[string]struct{}{}
	ws := ix.changedLocked()
	ix.mu.Unlock()
	wakeAll(ws)
	if ix.w != nil {
		for d := range dirs {
			ix.w.Remove(d)
		}
	}
}

func (ix *Index) onEvent(ev Event) { ix.enqueue(indexJob{kind: jobEvent, ev: ev}) }

// enqueue never blocks: the watcher calls it on its own goroutine.
func (ix *Index) enqueue(j indexJob) {
	ix.qmu.Lock()
	if ix.closed {
		ix.qmu.Unlock()
		return
	}
	ix.queue = append(ix.queue, j)
	ix.qmu.Unlock()
	ix.kick()
}

func (ix *Index) kick() {
	select {
	case ix.wake <- struct{}{}:
	default:
	}
}

func (ix *Index) run(ctx context.Context) {
	defer close(ix.done)
	ix.syncRoots(ctx)
	if ctx.Err() != nil {
		return
	}
	close(ix.ready)
	for {
		select {
		case <-ctx.Done():
			return
		case <-ix.wake:
		}
		ix.qmu.Lock()
		jobs := ix.queue
		ix.queue = nil
		ix.qmu.Unlock()
		ix.process(ctx, jobs)
	}
}

// process handles one batch of jobs. Rescans are gathered and run once at
// the end, so a burst of events in one directory walks it once.
func (ix *Index) process(ctx context.Context, jobs []indexJob) {
	var rescans []string
	var syncs []chan struct{}
	for _, j := range jobs {
		if j.kind == jobRoots {
			ix.syncRoots(ctx)
			break
		}
	}
	for _, j := range jobs {
		switch j.kind {
		case jobEvent:
			ix.apply(j.ev, &rescans)
		case jobSync:
			syncs = append(syncs, j.done)
		}
	}
	ix.rescanAll(ctx, rescans)
	for _, ch := range syncs {
		close(ch)
	}
}

// syncRoots brings the index in line with the root set.
func (ix *Index) syncRoots(ctx context.Context) {
	want := ix.roots.List()
	ix.mu.Lock()
	have := ix.indexed
	ix.indexed = want
	ix.mu.Unlock()
	var rescans []string
	for _, r := range have {
		if slices.Contains(want, r) {
			continue
		}
		if ix.ownerRoot(r) != "" {
			// It was nested in a root that remains: that root takes it over.
			rescans = append(rescans, r)
		} else {
			ix.drop(r)
		}
	}
	for _, r := range want {
		if !slices.Contains(have, r) {
			rescans = append(rescans, r)
		}
	}
	ix.rescanAll(ctx, rescans)
}

// ownerRoot returns the innermost indexed root containing p, or "".
func (ix *Index) ownerRoot(p string) string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	best := ""
	for _, r := range ix.indexed {
		if isUnder(r, p) && len(r) > len(best) {
			best = r
		}
	}
	return best
}

// nestedRoots lists the indexed roots strictly inside root.
func (ix *Index) nestedRoots(root string) []string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var out []string
	for _, r := range ix.indexed {
		if r != root && isUnder(root, r) {
			out = append(out, r)
		}
	}
	return out
}

func (ix *Index) hasDir(dir string) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	_, ok := ix.dirs[dir]
	return ok
}

// apply handles one watcher event.
func (ix *Index) apply(ev Event, rescans *[]string) {
	p := filepath.Clean(ev.Path)
	name := filepath.Base(p)
	if isIgnoreEvent(ev) {
		ix.ig.observe(ev)
		ix.ignoreFileChanged(p, rescans)
	}
	root := ix.ownerRoot(p)
	if root == "" {
		return
	}
	if p == root {
		if ev.Op != Changed || !ix.hasDir(p) {
			*rescans = append(*rescans, p)
		}
		return
	}
	if !ix.hasDir(filepath.Dir(p)) {
		// Inside a directory the index leaves out, or an event that
		// arrives after its directory was removed.
		return
	}
	st, err := os.Lstat(p)
	if err != nil {
		ix.remove(p)
		return
	}
	switch {
	case st.IsDir():
		if IsDefaultExcludedDir(name) {
			return
		}
		if ev.Op == Changed && (ix.hasDir(p) || ix.isSkipped(p)) {
			return
		}
		// A directory moved in may bring ignore files the cache
		// recorded as missing.
		ix.ig.Invalidate(p)
		*rescans = append(*rescans, p)
	case st.Mode().IsRegular():
		ix.putFile(p, st)
	case st.Mode()&fs.ModeSymlink != 0:
		if t, err := os.Stat(p); err == nil && t.Mode().IsRegular() {
			ix.putFile(p, t)
		} else {
			ix.remove(p)
		}
	default:
		ix.remove(p)
	}
}

func (ix *Index) isSkipped(p string) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	_, ok := ix.skipped[p]
	return ok
}

// ignoreFileChanged queues the rescans that a changed ignore file (or a
// .git appearing or going) calls for: the verdicts below it may all change.
func (ix *Index) ignoreFileChanged(p string, rescans *[]string) {
	dir := filepath.Dir(p)
	ix.mu.RLock()
	roots := ix.indexed
	ix.mu.RUnlock()
	switch filepath.Base(p) {
	case ".qwenignore":
		if slices.Contains(roots, dir) {
			*rescans = append(*rescans, dir)
		}
	case ".gitignore":
		if o := ix.ownerRoot(dir); o != "" && ix.ig.repo(o).dir != "" && ix.hasDir(dir) {
			*rescans = append(*rescans, dir)
		}
		// Roots below dir (or dir itself) in the same repository inherit
		// its rules.
		for _, r := range roots {
			if r != dir && isUnder(dir, r) {
				if repo := ix.ig.repo(r).dir; repo != "" && isUnder(repo, dir) {
					*rescans = append(*rescans, r)
				}
			}
		}
	case "exclude":
		for _, r := range roots {
			if ix.ig.repo(r).exclude == p {
				*rescans = append(*rescans, r)
			}
		}
	case "info":
		for _, r := range roots {
			if filepath.Dir(ix.ig.repo(r).exclude) == p {
				*rescans = append(*rescans, r)
			}
		}
	case ".git":
		for _, r := range roots {
			if isUnder(dir, r) {
				*rescans = append(*rescans, r)
			}
		}
	}
}

// putFile records a file from its stat.
func (ix *Index) putFile(p string, st fs.FileInfo) {
	v := ix.ig.Check(p, false)
	m := fileMeta{size: st.Size(), mtime: st.ModTime().UnixNano(), git: v.Git, qwen: v.Qwen}
	dir, name := filepath.Dir(p), filepath.Base(p)
	var unwatch []string
	ix.mu.Lock()
	files, ok := ix.dirs[dir]
	if !ok {
		ix.mu.Unlock()
		return
	}
	// A directory replaced by a file.
	_, wasDir := ix.dirs[p]
	_, wasSkipped := ix.skipped[p]
	if wasDir || wasSkipped {
		unwatch = ix.dropLocked(p, ix.nestedLocked(p))
	}
	if old, had := files[name]; had && old == m && !wasDir && !wasSkipped {
		ix.mu.Unlock()
		return
	}
	if files == nil {
		files = map[string]fileMeta{}
		ix.dirs[dir] = files
	}
	files[name] = m
	ws := ix.changedLocked()
	ix.mu.Unlock()
	wakeAll(ws)
	ix.unwatch(unwatch)
}

// remove forgets p: a file, or a directory and everything below it.
func (ix *Index) remove(p string) {
	var unwatch []string
	ix.mu.Lock()
	_, isDir := ix.dirs[p]
	_, isSkipped := ix.skipped[p]
	switch {
	case isDir || isSkipped:
		unwatch = ix.dropLocked(p, ix.nestedLocked(p))
	default:
		files := ix.dirs[filepath.Dir(p)]
		if _, ok := files[filepath.Base(p)]; !ok {
			ix.mu.Unlock()
			return
		}
		delete(files, filepath.Base(p))
	}
	ws := ix.changedLocked()
	ix.mu.Unlock()
	wakeAll(ws)
	if isDir {
		ix.ig.Invalidate(p)
	}
	ix.unwatch(unwatch)
}

// drop forgets everything under dir except nested roots.
func (ix *Index) drop(dir string) {
	ix.mu.Lock()
	unwatch := ix.dropLocked(dir, ix.nestedLocked(dir))
	ws := ix.changedLocked()
	ix.mu.Unlock()
	wakeAll(ws)
	ix.unwatch(unwatch)
}

func (ix *Index) nestedLocked(dir string) []string {
	var out []string
	for _, r := range ix.indexed {
		if r != dir && isUnder(dir, r) {
			out = append(out, r)
		}
	}
	return out
}

// dropLocked deletes dir and what lies below it, except inside keep, and
// returns the directories that were indexed (and so watched).
func (ix *Index) dropLocked(dir string, keep []string) []string {
	var gone []string
	for d := range ix.dirs {
		if isUnder(dir, d) && !underAny(keep, d) {
			gone = append(gone, d)
			delete(ix.dirs, d)
		}
	}
	for s := range ix.skipped {
		if isUnder(dir, s) && !underAny(keep, s) {
			delete(ix.skipped, s)
		}
	}
	return gone
}

func underAny(roots []string, p string) bool {
	for _, r := range roots {
		if isUnder(r, p) {
			return true
		}
	}
	return false
}

func (ix *Index) unwatch(dirs []string) {
	if ix.w == nil {
		return
	}
	for _, d := range dirs {
		ix.w.Remove(d)
	}
}

// changedLocked marks the snapshot stale and takes the waiters to wake once
// the lock is released.
func (ix *Index) changedLocked() map[chan struct{}]struct{} {
	ix.snapOK = false
	ix.snap = nil
	ws := ix.waiters
	ix.waiters = map[chan struct{}]struct{}{}
	return ws
}

func wakeAll(ws map[chan struct{}]struct{}) {
	for ch := range ws {
		close(ch)
	}
}

func (ix *Index) snapshot() []FileEntry {
	ix.mu.RLock()
	if ix.snapOK {
		s := ix.snap
		ix.mu.RUnlock()
		return s
	}
	ix.mu.RUnlock()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if !ix.snapOK {
		n := 0
		for _, files := range ix.dirs {
			n += len(files)
		}
		// Sorting indexes rather than the entries themselves moves 4 bytes
		// per swap instead of a 56-byte struct full of pointers.
		paths := make([]string, 0, n)
		metas := make([]fileMeta, 0, n)
		for d, files := range ix.dirs {
			for name, m := range files {
				paths = append(paths, joinPath(d, name))
				metas = append(metas, m)
			}
		}
		order := make([]int32, len(paths))
		for i := range order {
			order[i] = int32(i)
		}
		slices.SortFunc(order, func(a, b int32) int { return strings.Compare(paths[a], paths[b]) })
		snap := make([]FileEntry, len(order))
		for i, k := range order {
			m := metas[k]
			snap[i] = FileEntry{Path: paths[k], Size: m.size, ModTime: time.Unix(0, m.mtime), Git: m.git, Qwen: m.qwen}
		}
		ix.snap, ix.snapOK = snap, true
	}
	return ix.snap
}

func joinPath(dir, name string) string {
	if strings.HasSuffix(dir, string(filepath.Separator)) {
		return dir + name
	}
	return dir + string(filepath.Separator) + name
}

// rescanAll walks each directory again and replaces what the index held
// under it. A directory inside another one of the list (in the same root)
// is covered by that one's walk.
func (ix *Index) rescanAll(ctx context.Context, dirs []string) {
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	var todo []string
	for _, d := range dirs {
		covered := false
		for _, t := range todo {
			if isUnder(t, d) && ix.ownerRoot(t) == ix.ownerRoot(d) {
				covered = true
				break
			}
		}
		if !covered {
			todo = append(todo, d)
		}
	}
	for _, d := range todo {
		if ctx.Err() != nil {
			return
		}
		ix.rescan(ctx, d)
	}
}

// rescan walks dir, a root or a directory whose parent is indexed.
func (ix *Index) rescan(ctx context.Context, dir string) {
	root := ix.ownerRoot(dir)
	if root == "" {
		return
	}
	nested := ix.nestedRoots(root)
	var fr *ignoreFrame
	if dir == root {
		fr = ix.ig.rootFrame(root)
	} else {
		parent := filepath.Dir(dir)
		if !ix.hasDir(parent) || IsDefaultExcludedDir(filepath.Base(dir)) {
			return
		}
		pf := ix.ig.dirFrame(root, parent)
		fr = pf.child(dir, true)
		if fr.gitIgn && !pf.gitIgn {
			ix.replace(dir, &walkResult{skipped: []string{dir}}, nested)
			return
		}
		fr = fr.enter(dir, ix.ig.rules(filepath.Join(dir, ".gitignore")))
	}
	res := ix.walk(ctx, walkJob{dir: dir, fr: fr, entered: true}, nested)
	if ctx.Err() != nil {
		return
	}
	ix.replace(dir, res, nested)
}

// replace swaps what the index holds under dir for a walk's result.
func (ix *Index) replace(dir string, res *walkResult, nested []string) {
	var unwatch []string
	ix.mu.Lock()
	for d := range ix.dirs {
		if isUnder(dir, d) && !underAny(nested, d) {
			if _, still := res.dirs[d]; !still {
				unwatch = append(unwatch, d)
			}
			delete(ix.dirs, d)
		}
	}
	for s := range ix.skipped {
		if isUnder(dir, s) && !underAny(nested, s) {
			delete(ix.skipped, s)
		}
	}
	for d, files := range res.dirs {
		ix.dirs[d] = files
	}
	for _, s := range res.skipped {
		ix.skipped[s] = struct{}{}
	}
	if files := ix.dirs[filepath.Dir(dir)]; files != nil && filepath.Dir(dir) != dir {
		// A file that a directory replaced.
		delete(files, filepath.Base(dir))
	}
	if res.watchErr != nil && ix.watchErr == nil {
		ix.watchErr = res.watchErr
	}
	ws := ix.changedLocked()
	ix.mu.Unlock()
	wakeAll(ws)
	ix.unwatch(unwatch)
}

type walkJob struct {
	dir string
	fr  *ignoreFrame
	// entered says fr already holds dir's own .gitignore.
	entered bool
}

type walkResult struct {
	mu       sync.Mutex
	dirs     map[string]map[string]fileMeta
	skipped  []string
	watchErr error
}

// walk lists dir and everything below it with ix.workers goroutines that
// share a stack of directories still to list.
func (ix *Index) walk(ctx context.Context, start walkJob, nested []string) *walkResult {
	res := &walkResult{dirs: map[string]map[string]fileMeta{}}
	var (
		mu     sync.Mutex
		cond   = sync.NewCond(&mu)
		stack  = []walkJob{start}
		active int
		wg     sync.WaitGroup
	)
	for range ix.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var found []walkJob
			for {
				mu.Lock()
				for len(stack) == 0 && active > 0 {
					cond.Wait()
				}
				if len(stack) == 0 {
					mu.Unlock()
					return
				}
				j := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				active++
				mu.Unlock()

				found = ix.visit(ctx, j, nested, res, found[:0])

				mu.Lock()
				stack = append(stack, found...)
				active--
				if len(found) > 0 || active == 0 {
					cond.Broadcast()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return res
}

// visit lists one directory, records its files and returns its
// subdirectories to visit.
func (ix *Index) visit(ctx context.Context, j walkJob, nested []string, res *walkResult, sub []walkJob) []walkJob {
	if ctx.Err() != nil {
		return sub
	}
	if ix.w != nil {
		// Watch before listing, so nothing created meanwhile is missed.
		if err := ix.w.Add(j.dir); err != nil {
			res.mu.Lock()
			if res.watchErr == nil {
				res.watchErr = err
			}
			res.mu.Unlock()
		}
	}
	f, err := os.Open(j.dir)
	if err != nil {
		return sub
	}
	ents, _ := f.ReadDir(-1)
	f.Close()

	fr := j.fr
	if !j.entered && fr.gitOn {
		for _, e := range ents {
			if e.Name() == ".gitignore" && !e.IsDir() {
				fr = fr.enter(j.dir, ix.ig.rules(joinPath(j.dir, ".gitignore")))
				break
			}
		}
	}
	n := 0
	for _, e := range ents {
		if !e.IsDir() {
			n++
		}
	}
	var files map[string]fileMeta
	if n > 0 {
		files = make(map[string]fileMeta, n)
	}
	var skipped []string
	for _, e := range ents {
		name := e.Name()
		p := joinPath(j.dir, name)
		t := e.Type()
		var info fs.FileInfo
		switch {
		case t.IsDir():
			if IsDefaultExcludedDir(name) || slices.Contains(nested, p) {
				continue
			}
			c := fr.child(p, true)
			if c.gitIgn && !fr.gitIgn {
				skipped = append(skipped, p)
				continue
			}
			sub = append(sub, walkJob{dir: p, fr: c})
			continue
		case t.IsRegular():
			info, err = e.Info()
		case t&fs.ModeSymlink != 0:
			info, err = os.Stat(p)
		default:
			continue
		}
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		v := fr.verdict(p, false)
		files[name] = fileMeta{size: info.Size(), mtime: info.ModTime().UnixNano(), git: v.Git, qwen: v.Qwen}
	}
	res.mu.Lock()
	res.dirs[j.dir] = files
	res.skipped = append(res.skipped, skipped...)
	res.mu.Unlock()
	return sub
}
