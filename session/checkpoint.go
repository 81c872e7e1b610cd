package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// Checkpoints: before a call that can change files runs, the session
// notes what those files hold, and after it, what they hold then, so that
// qwen/revertTurn can put a turn's files back. Edit-kind tools name their
// target; a shell command that is not read-only may touch anything, so the
// tracked (indexed, not ignored) files of the roots are snapshotted before
// and after it. Contents go to a content-addressed store shared by the
// sessions of a root (<root folder>/checkpoints/objects/<sha256>, next to
// its sessions folder): a file already stored costs nothing, and a warm
// snapshot only stats files whose size, times and inode are unchanged
// since they were hashed. Pruning sessions collects the contents that no
// remaining session names.

// racyMargin: a file whose times are this close to when it was hashed is
// hashed again, since file times come from a coarse clock and a change
// made just after hashing could keep them.
const racyMargin = int64(100 * time.Millisecond)

// maxSnapshotFile is the largest file a shell snapshot keeps;
// maxSnapshotFiles and maxSnapshotBytes bound a whole snapshot.
const (
	maxSnapshotFile  = 16 << 20
	maxSnapshotFiles = 200_000
	maxSnapshotBytes = 2 << 30
)

// fileChange is one file a call changed: content hashes before and after
// ("" when the file did not exist) and the file's permission bits before.
type fileChange struct {
	Path   string `json:"path"`
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	Perm   uint32 `json:"perm,omitempty"`
}

// checkpointRecord is what one call changed, in which turn.
type checkpointRecord struct {
	Turn   int
	CallID string
	Files  []fileChange
}

// objectStore keeps file contents by hash: on disk next to the session
// file, or in memory for a session that is not kept on disk.
type objectStore struct {
	dir string
	mu  sync.Mutex
	mem map[string][]byte
}

func hashOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func (o *objectStore) path(h string) string {
	return filepath.Join(o.dir, "objects", h[:2], h[2:])
}

// put stores data and returns its hash.
func (o *objectStore) put(data []byte) (string, error) {
	h := hashOf(data)
	if o.dir == "" {
		o.mu.Lock()
		if o.mem == nil {
			o.mem = map[string][]byte{}
		}
		if _, ok := o.mem[h]; !ok {
			o.mem[h] = slices.Clone(data)
		}
		o.mu.Unlock()
		return h, nil
	}
	p := o.path(h)
	if _, err := os.Lstat(p); err == nil {
		// Reused: mark it recent, so that a collection running in
		// another process meanwhile keeps it.
		now := time.Now()
		_ = os.Chtimes(p, now, now)
		return h, nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return "", fmt.Errorf("store a checkpoint: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return "", fmt.Errorf("store a checkpoint: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("store a checkpoint: %w", errors.Join(werr, cerr))
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("store a checkpoint: %w", err)
	}
	return h, nil
}

// get returns stored content.
func (o *objectStore) get(h string) ([]byte, error) {
	if o.dir == "" {
		o.mu.Lock()
		defer o.mu.Unlock()
		if b, ok := o.mem[h]; ok {
			return b, nil
		}
		return nil, fmt.Errorf("the checkpoint content %s is missing", h[:12])
	}
	b, err := os.ReadFile(o.path(h))
	if err != nil {
		return nil, fmt.Errorf("the checkpoint content %s is missing (%v); the session's checkpoints may have been removed", h[:12], err)
	}
	return b, nil
}

// statKey identifies a file's state cheaply.
type statKey struct {
	size, mtime, ctime int64
	ino                uint64
}

type cacheEntry struct {
	key  statKey
	perm uint32
	hash string
	// hashedAt is when the content was read: a file changed within the
	// same clock tick as its last hashing keeps its times, so such an
	// entry is not trusted.
	hashedAt int64
}

// snapshotter takes the shell snapshots of one session.
type snapshotter struct {
	mu    sync.Mutex
	objs  *objectStore
	cache map[string]cacheEntry
}

func statOf(fi fs.FileInfo) (statKey, uint32) {
	k := statKey{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	k.ctime, k.ino = changeStamp(fi)
	return k, uint32(fi.Mode().Perm())
}

// snapEntry is one file of a snapshot.
type snapEntry struct {
	hash string
	perm uint32
}

// trackedFiles lists the indexed files of the roots that no ignore file
// excludes.
func trackedFiles(ctx context.Context, ws *workspace.Workspace) ([]string, error) {
	if err := ws.Index.Sync(ctx); err != nil {
		return nil, fmt.Errorf("the file index is not available for a snapshot: %w", err)
	}
	var out []string
	var total int64
	ws.Index.Walk(func(e workspace.FileEntry) bool {
		if !e.Git && !e.Qwen && e.Size <= maxSnapshotFile {
			out = append(out, e.Path)
			total += e.Size
		}
		return true
	})
	if len(out) > maxSnapshotFiles || total > maxSnapshotBytes {
		return nil, fmt.Errorf("the workspace has %d tracked files (%d MB), more than a snapshot takes (%d files, %d MB); add the large parts to .qwenignore to make commands undoable",
			len(out), total>>20, maxSnapshotFiles, maxSnapshotBytes>>20)
	}
	return out, nil
}

// cold reports whether no snapshot was taken yet.
func (sn *snapshotter) cold() bool {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	return len(sn.cache) == 0
}

// snapshot records the content of paths, storing what is new.
func (sn *snapshotter) snapshot(paths []string) (map[string]snapEntry, error) {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	if sn.cache == nil {
		sn.cache = map[string]cacheEntry{}
	}
	out := make(map[string]snapEntry, len(paths))
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxSnapshotFile {
			delete(sn.cache, p)
			continue
		}
		key, perm := statOf(fi)
		if c, ok := sn.cache[p]; ok && c.key == key && key.mtime < c.hashedAt-racyMargin && key.ctime < c.hashedAt-racyMargin {
			out[p] = snapEntry{hash: c.hash, perm: perm}
			continue
		}
		at := time.Now().UnixNano()
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		h, err := sn.objs.put(data)
		if err != nil {
			return nil, err
		}
		sn.cache[p] = cacheEntry{key: key, perm: perm, hash: h, hashedAt: at}
		out[p] = snapEntry{hash: h, perm: perm}
	}
	return out, nil
}

// owner is the session whose turn a call belongs to: a subagent's calls
// count for the parent's turn.
func (s *Session) owner() *Session {
	if h, ok := s.hostOverride.(*subagentHost); ok {
		return h.parent
	}
	return s
}

// snapshotterOf is the session's shell snapshotter, made at first use
// over the content store next to the session file (in memory for a
// session that has none).
func (s *Session) snapshotterOf() *snapshotter {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.snaps == nil {
		dir := ""
		if s.log != nil {
			dir = checkpointDir(filepath.Dir(s.log.path))
		}
		s.snaps = &snapshotter{objs: &objectStore{dir: dir}}
	}
	return s.snaps
}

// objects is the session's content store.
func (s *Session) objects() *objectStore { return s.snapshotterOf().objs }

// pendingCheckpoint is a call's before-state, completed after it runs.
type pendingCheckpoint struct {
	owner *Session
	// edit: the target files' states before.
	paths  []string
	before map[string]fileState
	// shell: the snapshot before.
	snap map[string]snapEntry
}

// fileState is what a file holds as the editor sees it: an open buffer's
// text, else the bytes on disk.
type fileState struct {
	exists bool
	data   []byte
	perm   uint32
	// buffer is set when the content came from an open buffer.
	buffer  bool
	version int32
}

func (s *Session) readState(path string) fileState {
	if b, ok := s.mgr.opts.Env.Workspace.Overlay.Get(path); ok {
		st := fileState{exists: true, data: []byte(b.Text), buffer: true, version: b.Version, perm: 0o644}
		if fi, err := os.Stat(path); err == nil {
			st.perm = uint32(fi.Mode().Perm())
		}
		return st
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return fileState{}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fileState{}
	}
	return fileState{exists: true, data: data, perm: uint32(fi.Mode().Perm())}
}

// beginCheckpoint notes what a call may change before it runs; nil when
// the call cannot change files.
func (s *Session) beginCheckpoint(ctx context.Context, callID string, t tools.Tool, params map[string]any) *pendingCheckpoint {
	owner := s.owner()
	switch t.Kind() {
	case tools.KindEdit, tools.KindDelete, tools.KindMove:
		cp := &pendingCheckpoint{owner: owner, before: map[string]fileState{}}
		for _, l := range t.Locations(params) {
			p, _, err := s.mgr.opts.Env.Workspace.Roots.Resolve(l.Path)
			if err != nil || slices.Contains(cp.paths, p) {
				continue
			}
			cp.paths = append(cp.paths, p)
			cp.before[p] = s.readState(p)
		}
		if len(cp.paths) == 0 {
			return nil
		}
		return cp
	case tools.KindExecute:
		if allowedInPlanMode(t, params) {
			// A read-only command changes no file.
			return nil
		}
		paths, err := trackedFiles(ctx, s.mgr.opts.Env.Workspace)
		if err != nil {
			s.mgr.logf("session %s: no snapshot before the command, so it cannot be undone: %v", owner.id, err)
			return nil
		}
		sn := owner.snapshotterOf()
		if sn.cold() && len(paths) >= 500 {
			// The first snapshot reads every tracked file: say why the
			// command has not started yet.
			s.host().Update(s.id, Update{Kind: UpdateToolCallUpd, ToolCallID: callID, Status: StatusInProgress,
				Content: []ToolContent{{Type: "content", Content: textBlock(fmt.Sprintf("Saving %d workspace files so that this command can be undone (once per session)…", len(paths)))}}})
		}
		snap, err := sn.snapshot(paths)
		if err != nil {
			s.mgr.logf("session %s: no snapshot before the command, so it cannot be undone: %v", owner.id, err)
			return nil
		}
		return &pendingCheckpoint{owner: owner, snap: snap}
	}
	return nil
}

// endCheckpoint records what the call changed.
func (s *Session) endCheckpoint(ctx context.Context, callID string, cp *pendingCheckpoint) {
	if cp == nil {
		return
	}
	owner := cp.owner
	objs := owner.objects()
	var files []fileChange
	if cp.snap == nil {
		for _, p := range cp.paths {
			before, after := cp.before[p], s.readState(p)
			if before.exists == after.exists && string(before.data) == string(after.data) {
				continue
			}
			fc := fileChange{Path: p, Perm: before.perm}
			var err error
			if before.exists {
				if fc.Before, err = objs.put(before.data); err != nil {
					s.mgr.logf("session %s: %v", owner.id, err)
					continue
				}
			}
			if after.exists {
				if fc.After, err = objs.put(after.data); err != nil {
					s.mgr.logf("session %s: %v", owner.id, err)
					continue
				}
			}
			files = append(files, fc)
		}
	} else {
		ws := s.mgr.opts.Env.Workspace
		// Without the index, the files of the snapshot before and those
		// found below still show what the command changed.
		paths, _ := trackedFiles(ctx, ws)
		for p := range cp.snap {
			paths = append(paths, p)
		}
		// The index learns of new files from the watcher, a moment
		// after the command made them (and later still in a directory
		// the command made): look for them too.
		paths = append(paths, createdFiles(ws, cp.snap)...)
		slices.Sort(paths)
		paths = slices.Compact(paths)
		post, err := owner.snapshotterOf().snapshot(paths)
		if err != nil {
			s.mgr.logf("session %s: no snapshot after the command, so it cannot be undone: %v", owner.id, err)
			return
		}
		for _, p := range paths {
			b, had := cp.snap[p]
			a, has := post[p]
			if had == has && b.hash == a.hash {
				continue
			}
			files = append(files, fileChange{Path: p, Before: b.hash, After: a.hash, Perm: b.perm})
		}
	}
	if len(files) == 0 {
		return
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	owner.mu.Lock()
	rec := checkpointRecord{Turn: owner.turns, CallID: callID, Files: files}
	owner.checkpoints = append(owner.checkpoints, rec)
	owner.mu.Unlock()
	owner.record(event{Type: "checkpoint", Turn: rec.Turn, CallID: callID, Files: files})
}

// changedFiles lists, relative to the roots, every file the agent changed
// in the session.
func (s *Session) changedFiles() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, c := range s.checkpoints {
		for _, f := range c.Files {
			out = append(out, s.mgr.opts.Env.Rel(f.Path))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// maxCreatedScan bounds the entries createdFiles looks at in directories
// that held no tracked file before the command.
const maxCreatedScan = 20000

// createdFiles finds files that are in no snapshot: in the roots and in
// every directory that held a tracked file, and below any directory among
// them that held none (such as one the command created). Ignored and
// default-excluded entries are skipped.
func createdFiles(ws *workspace.Workspace, before map[string]snapEntry) []string {
	known := map[string]bool{}
	var dirs []string
	addDir := func(d string) {
		if !known[d] {
			known[d] = true
			dirs = append(dirs, d)
		}
	}
	for _, r := range ws.Roots.List() {
		addDir(r)
	}
	for p := range before {
		addDir(filepath.Dir(p))
	}
	var out []string
	budget := maxCreatedScan
	var scan func(dir string, deep bool)
	scan = func(dir string, deep bool) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			switch {
			case e.Type().IsRegular():
				if _, ok := before[p]; !ok {
					if v := ws.Ignore.Check(p, false); !v.Git && !v.Qwen {
						out = append(out, p)
					}
				}
			case e.IsDir():
				if known[p] || workspace.IsDefaultExcludedDir(e.Name()) {
					continue
				}
				if v := ws.Ignore.Check(p, true); v.Git || v.Qwen {
					continue
				}
				if budget <= 0 {
					continue
				}
				budget--
				known[p] = true
				scan(p, true)
			}
			if deep {
				budget--
				if budget <= 0 {
					return
				}
			}
		}
	}
	for _, d := range dirs {
		scan(d, false)
	}
	return out
}
