package workspace

import (
	"context"
	"errors"
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
	// since is when the index was made; a walk removes the WriteFileAtomic
	// temp files that isStaleTemp calls leftovers of a killed process.
	since time.Time
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

// newIndex returns an index of the files under roots, judged by ig and kept
// current from w's events (w may be nil: then the index does not follow the
// disk after building). Nothing happens until Start.
func newIndex(roots *Roots, ig *Ignorer, w *Watcher) *Index {
	if ig == nil {
		ig = newIgnorer(roots)
	}
	return &Index{
		roots:   roots,
		ig:      ig,
		w:       w,
		ready:   make(chan struct{}),
		since:   time.Now(),
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
