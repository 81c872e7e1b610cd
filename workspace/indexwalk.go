package workspace

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

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
		if t.IsRegular() && IsTempName(name) && isStaleTemp(name, info.ModTime(), ix.since) {
			// A temp file of WriteFileAtomic that was never renamed:
			// its process died mid-write, and the target still holds
			// what it held before. Nothing else names files this way.
			if os.Remove(p) == nil {
				continue
			}
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
