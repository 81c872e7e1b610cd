package workspace

import (
	"context"
	"sync"
)

// Options configures a Workspace. The zero value is usable: no roots yet,
// settings from the default locations.
type Options struct {
	// Roots are the initial workspace folders.
	Roots []string
}

// Workspace ties together everything the server knows about the files it
// works on. It is safe for concurrent use.
type Workspace struct {
	Roots   *Roots
	Overlay *Overlay
	// Watcher is the process's single file-system watcher. It may be
	// inert (WatchErr set) when the OS refuses one.
	Watcher  *Watcher
	WatchErr error

	closeOnce sync.Once
}

// New builds a workspace. Nothing slow happens here: indexing starts with
// Start, after the editor has its initialize answer.
func New(opts Options) *Workspace {
	w, err := NewWatcher()
	return &Workspace{
		Roots:    NewRoots(opts.Roots...),
		Overlay:  NewOverlay(),
		Watcher:  w,
		WatchErr: err,
	}
}

// Start begins the background work: building the file index and watching
// the disk.
func (w *Workspace) Start(ctx context.Context) {}

// SetRoots replaces the roots and brings the caches up to date.
func (w *Workspace) SetRoots(paths []string) { w.Roots.Set(paths) }

// AddRoot adds a root at runtime.
func (w *Workspace) AddRoot(path string) { w.Roots.Add(path) }

// RemoveRoot drops a root at runtime.
func (w *Workspace) RemoveRoot(path string) { w.Roots.Remove(path) }

// Close stops the watcher and background work.
func (w *Workspace) Close() error {
	var err error
	w.closeOnce.Do(func() { err = w.Watcher.Close() })
	return err
}
