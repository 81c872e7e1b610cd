package workspace

import (
	"os"
	"path/filepath"
	"time"
)

// settingsDebounce is how long the settings wait after the last change to a
// settings file before reloading (tools.md §7.3).
const settingsDebounce = 100 * time.Millisecond

// Watch reloads the settings, 100 ms after the last change, whenever a
// settings file changes on disk (events from w, including injected ones).
// It watches the directories of the three files, and the directory above
// each that is missing (and always the primary root), so that a .qwen
// directory created later is noticed and then watched. Call Watch once,
// before Load, so no change between the two is missed.
func (s *Settings) Watch(w *Watcher) {
	s.mu.Lock()
	if s.watcher != nil || w == nil {
		s.mu.Unlock()
		return
	}
	s.watcher = w
	s.mu.Unlock()
	w.Subscribe(s.handleEvent)
	s.ensureWatched()
}

// ensureWatched adds the settings directories that exist now to the
// watcher and recomputes which paths trigger a reload.
func (s *Settings) ensureWatched() {
	s.mu.RLock()
	w := s.watcher
	s.mu.RUnlock()
	if w == nil {
		return
	}
	set := map[string]bool{}
	mark := func(p string) {
		set[p] = true
		set[RealPath(p)] = true
	}
	for i, f := range s.files() {
		if f == "" {
			continue
		}
		dir := filepath.Dir(f)
		mark(f)
		mark(dir)
		dirExists := isDir(dir)
		if dirExists {
			_ = w.Add(dir)
		}
		if i == layerWorkspace || !dirExists {
			if parent := filepath.Dir(dir); isDir(parent) {
				_ = w.Add(parent)
			}
		}
	}
	// The trust list sits next to the user settings file, whose folder
	// is watched above.
	if tf := s.TrustFile(); tf != "" {
		mark(tf)
	}
	// So do ~/.qwen/.env and the project's .qwen/.env; the project's
	// .env is in the primary root, watched above (~/.env is not watched:
	// its change applies to the next request, and to the secrets at the
	// next reload).
	for _, f := range s.dotEnvPaths(true) {
		mark(f)
	}
	s.mu.Lock()
	s.watchSet = set
	s.mu.Unlock()
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// handleEvent runs on the watcher's goroutine for every event in the
// workspace, so it only looks the path up and (re)starts the timer.
func (s *Settings) handleEvent(ev Event) {
	p := filepath.Clean(ev.Path)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || !s.watchSet[p] {
		return
	}
	if s.timer == nil {
		s.timer = time.AfterFunc(settingsDebounce, s.fire)
	} else {
		s.timer.Reset(settingsDebounce)
	}
}

func (s *Settings) fire() {
	s.fireMu.Lock()
	defer s.fireMu.Unlock()
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return
	}
	s.Load()
}

// Close stops watching: later events are ignored, a pending reload is
// dropped, and a reload in progress is waited for. It must not be called
// from an OnChange or OnProblem callback.
func (s *Settings) Close() {
	s.mu.Lock()
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()
	// Taking fireMu waits for a reload that already started.
	s.fireMu.Lock()
	//lint:ignore SA2001 the empty critical section waits for a reload in progress
	s.fireMu.Unlock()

}
