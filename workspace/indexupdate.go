package workspace

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

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
