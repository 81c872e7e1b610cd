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
	// Settings says where the settings files are; the zero value uses
	// the standard locations ($QWEN_HOME or ~/.qwen, /etc/qwen-code).
	Settings SettingsOptions
	// Paths is the flavour of the served paths; the zero value is the
	// running system's. Tests set it to play Windows or macOS paths here.
	Paths PathSystem
}

// Workspace ties together everything the server knows about the files it
// works on. It is safe for concurrent use.
type Workspace struct {
	// Paths is the flavour of the paths served (Options.Paths).
	Paths   PathSystem
	Roots   *Roots
	Overlay *Overlay
	// Watcher is the process's single file-system watcher. It may be
	// inert (WatchErr set) when the OS refuses one.
	Watcher  *Watcher
	WatchErr error
	// Settings are the merged settings files plus the editor's layer.
	Settings *Settings
	// Ignore answers .gitignore and .qwenignore questions.
	Ignore *Ignorer
	// Index is the watched list of files under the roots.
	Index *Index

	closeOnce sync.Once
}

// New builds a workspace. Nothing slow happens here: indexing starts with
// Start, after the editor has its initialize answer.
func New(opts Options) *Workspace {
	w, err := newWatcher()
	ws := &Workspace{
		Paths:    opts.Paths,
		Roots:    newRootsFor(opts.Paths.PathFlavor(), opts.Roots...),
		Overlay:  newOverlayFor(opts.Paths.PathFlavor()),
		Watcher:  w,
		WatchErr: err,
	}
	so := opts.Settings
	if so.PrimaryRoot == nil {
		so.PrimaryRoot = ws.Roots.Primary
	}
	ws.Settings = NewSettings(so)
	ws.Settings.Watch(w)
	ws.Settings.Load()
	ws.Ignore = newIgnorer(ws.Roots)
	ws.Ignore.Watch(w)
	ws.Index = newIndex(ws.Roots, ws.Ignore, w)
	return ws
}

// Start begins the background work: building the file index and watching
// the disk.
func (w *Workspace) Start(ctx context.Context) { w.Index.Start(ctx) }

// SetRoots replaces the roots and brings the caches up to date.
func (w *Workspace) SetRoots(paths []string) {
	w.rootsChanged(func() { w.Roots.Set(paths) })
}

// AddRoot adds a root at runtime.
func (w *Workspace) AddRoot(path string) {
	w.rootsChanged(func() { w.Roots.Add(path) })
}

// RemoveRoot drops a root at runtime.
func (w *Workspace) RemoveRoot(path string) {
	w.rootsChanged(func() { w.Roots.Remove(path) })
}

// rootsChanged applies a change to the roots, then reloads what depends on
// the primary root (the workspace settings file).
func (w *Workspace) rootsChanged(change func()) {
	before := w.Roots.Primary()
	change()
	if w.Roots.Primary() != before {
		w.Settings.Load()
	}
	w.Index.RootsChanged()
}

// Close stops the watcher and background work.
func (w *Workspace) Close() error {
	var err error
	w.closeOnce.Do(func() {
		w.Index.Close()
		w.Settings.Close()
		err = w.Watcher.Close()
	})
	return err
}
