package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Retention and collection: the stored sessions of a root beyond
// general.sessionRetention are removed, then the checkpoint contents no
// remaining session refers to.

// Retention says which stored sessions to keep.
type Retention struct {
	// MaxCount keeps the most recent sessions of a root (<= 0: no limit).
	MaxCount int
	// MaxAge removes sessions not updated for longer (<= 0: no limit).
	MaxAge time.Duration
}

// prune makes room for one more session in root: it removes the root's
// stored sessions not written for ret.MaxAge, then the oldest others until,
// with the one about to be created, at most ret.MaxCount remain. Sessions
// in keep (those of this process) and those another process has open are
// never removed; they count toward the limit. It returns the ids removed.
//
// It runs at every creation, so the folder stays near the limit and each
// run reads one directory of about ret.MaxCount files: the work is bounded
// by the setting, not by how many sessions were ever made.
func (st *Store) prune(root string, ret Retention, now time.Time, keep func(id string) bool) []string {
	if ret.MaxCount <= 0 && ret.MaxAge <= 0 {
		return nil
	}
	dir := st.Dir(root)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	type item struct {
		id  string
		mod time.Time
	}
	var items []item // the stored sessions this process does not hold
	total := 0
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		total++
		id := strings.TrimSuffix(e.Name(), ".jsonl")
		if keep(id) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		items = append(items, item{id, fi.ModTime()})
	}
	// Oldest first; equal times by id, so the order never depends on the
	// directory's.
	sort.Slice(items, func(i, j int) bool {
		if !items[i].mod.Equal(items[j].mod) {
			return items[i].mod.Before(items[j].mod)
		}
		return items[i].id < items[j].id
	})
	excess := 0
	if ret.MaxCount > 0 {
		excess = total + 1 - ret.MaxCount
	}
	var removed []string
	for _, it := range items {
		old := ret.MaxAge > 0 && now.Sub(it.mod) > ret.MaxAge
		if !old && excess <= 0 {
			continue
		}
		if st.removeIfUnused(dir, it.id) {
			removed = append(removed, it.id)
			excess--
		}
	}
	return removed
}

// removeIfUnused deletes a session file unless some process holds it
// open.
func (st *Store) removeIfUnused(dir, id string) bool {
	path := filepath.Join(dir, id+".jsonl")
	f, err := os.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if tryLock(f) != nil {
		return false
	}
	if err := removeLocked(f, path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	return true
}

// checkpointDir is a root's content store, shared by its sessions so that
// a file's content is kept once: <root folder>/checkpoints, next to
// <root folder>/sessions (sessionsDir).
func checkpointDir(sessionsDir string) string {
	return filepath.Join(filepath.Dir(sessionsDir), "checkpoints")
}

// gcGrace protects recently stored or reused contents from a collection
// that runs while another process is taking a snapshot.
const gcGrace = time.Hour

// collect removes the contents of a root's store that no remaining session
// refers to. It runs only while no process has a session of the root
// open: a running session's snapshot refers to contents that no event
// names yet. It returns how many contents it removed.
func (st *Store) collect(root string, now time.Time) int {
	dir := st.Dir(root)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var locks []*os.File
	defer func() {
		for _, f := range locks {
			f.Close()
		}
	}()
	refs := map[string]bool{}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f, err := os.Open(path)
		if err != nil {
			return 0
		}
		locks = append(locks, f)
		if tryLock(f) != nil {
			return 0 // in use
		}
		if !collectRefs(f, refs) {
			return 0
		}
	}
	objects := filepath.Join(checkpointDir(dir), "objects")
	removed := 0
	_ = filepath.WalkDir(objects, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		h := filepath.Base(filepath.Dir(p)) + d.Name()
		if refs[h] {
			return nil
		}
		if fi, err := d.Info(); err != nil || now.Sub(fi.ModTime()) < gcGrace {
			return nil
		}
		if os.Remove(p) == nil {
			removed++
		}
		return nil
	})
	return removed
}

// collectRefs adds the contents a session file's checkpoints and shown
// calls name (a shown diff's texts, replay.go). It reports false when the
// file cannot be read whole.
func collectRefs(f *os.File, refs map[string]bool) bool {
	r := bufio.NewReaderSize(f, 64<<10)
	marker, callMarker := []byte(`"type":"checkpoint"`), []byte(`"type":"call"`)
	for {
		line, err := r.ReadBytes('\n')
		if bytes.Contains(line, marker) || bytes.Contains(line, callMarker) {
			var ev event
			if json.Unmarshal(line, &ev) == nil {
				for _, fc := range ev.Files {
					if fc.Before != "" {
						refs[fc.Before] = true
					}
					if fc.After != "" {
						refs[fc.After] = true
					}
				}
				if ev.Call != nil {
					for _, it := range ev.Call.Content {
						if it.Old != "" {
							refs[it.Old] = true
						}
						if it.New != "" {
							refs[it.New] = true
						}
					}
				}
			}
		}
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
	}
}
