package workspace

import (
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Event is one file-system change seen by the Watcher, or reported by the
// editor (workspace/didChangeWatchedFiles).
type Event struct {
	Path string
	Op   Op
}

// Op says what happened to a path.
type Op int

const (
	Created Op = iota + 1
	Changed
	Deleted
)

// Watcher shares one fsnotify instance among everything in the workspace
// that watches the disk: the file index, ignore files and settings files.
// Every qwen-ls process takes exactly one inotify instance, and the machine
// allows few of them (128 per user on ours), so nothing may open its own.
type Watcher struct {
	fs *fsnotify.Watcher

	mu sync.Mutex
	// subs are called in registration order for every event, on the
	// watcher's own goroutine; they must not block.
	subs    []func(Event)
	watched map[string]bool
	done    chan struct{}
}

// newWatcher starts a watcher. If the OS refuses one (no inotify instances
// left), it returns a Watcher that only relays Inject calls, and the error,
// so the server still runs with editor-reported changes only.
func newWatcher() (*Watcher, error) {
	w := &Watcher{watched: map[string]bool{}, done: make(chan struct{})}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		close(w.done)
		return w, err
	}
	w.fs = fw
	go w.loop()
	return w, nil
}

// Subscribe registers f for every later event.
func (w *Watcher) Subscribe(f func(Event)) {
	w.mu.Lock()
	w.subs = append(w.subs, f)
	w.mu.Unlock()
}

// Add watches one directory (not recursively). Adding it twice is harmless.
func (w *Watcher) Add(dir string) error {
	dir = filepath.Clean(dir)
	w.mu.Lock()
	if w.watched[dir] || w.fs == nil {
		w.mu.Unlock()
		return nil
	}
	w.watched[dir] = true
	w.mu.Unlock()
	if err := w.fs.Add(dir); err != nil {
		w.mu.Lock()
		delete(w.watched, dir)
		w.mu.Unlock()
		return err
	}
	return nil
}

// Remove stops watching dir.
func (w *Watcher) Remove(dir string) {
	dir = filepath.Clean(dir)
	w.mu.Lock()
	was := w.watched[dir]
	delete(w.watched, dir)
	w.mu.Unlock()
	if was && w.fs != nil {
		w.removeWatch(dir)
	}
}

// removeWatch asks fsnotify to drop dir's watch. fsnotify (v1.10.1) keeps
// one watch per inode but a name per path: once one folder was watched
// under two names (a folder and a symlink to it, or a folder replaced by a
// symlink to a watched one), removing both names dereferences a watch
// that is gone and panics. Losing that watch is harmless (it is already
// gone); losing the server is not.
func (w *Watcher) removeWatch(dir string) {
	defer func() { _ = recover() }()
	_ = w.fs.Remove(dir)
}

// Inject delivers an event that did not come from fsnotify, such as a
// workspace/didChangeWatchedFiles notification from the editor.
func (w *Watcher) Inject(ev Event) { w.dispatch(ev) }

// closeWait bounds how long Close waits for the OS watcher to stop.
const closeWait = 5 * time.Second

// Close stops the watcher and waits for its goroutine, but not forever:
// fsnotify's Windows backend wakes its reader with a completion packet
// and waits for the answer, and under Wine that packet was seen to be
// lost, leaving Close blocked for good. A server that is shutting down
// must still exit, so after closeWait the watcher is left behind and
// Close says so.
func (w *Watcher) Close() error {
	if w.fs == nil {
		return nil
	}
	return closeWithin(closeWait, func() error {
		err := w.fs.Close()
		<-w.done
		return err
	})
}

// closeWithin runs stop and returns its error, or an error of its own
// when stop has not returned within d (stop then finishes, or not, on its
// own goroutine).
func closeWithin(d time.Duration, stop func() error) error {
	errc := make(chan error, 1)
	go func() { errc <- stop() }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-errc:
		return err
	case <-t.C:
		return fmt.Errorf("the file watcher did not stop within %s; it is left behind", d)
	}
}

func (w *Watcher) loop() {
	defer close(w.done)
	for {
		select {
		case ev, ok := <-w.fs.Events:
			if !ok {
				return
			}
			var op Op
			switch {
			case ev.Has(fsnotify.Create):
				op = Created
			case ev.Has(fsnotify.Remove), ev.Has(fsnotify.Rename):
				op = Deleted
			case ev.Has(fsnotify.Write), ev.Has(fsnotify.Chmod):
				op = Changed
			default:
				continue
			}
			if op == Deleted {
				w.mu.Lock()
				delete(w.watched, filepath.Clean(ev.Name))
				w.mu.Unlock()
			}
			w.dispatch(Event{Path: filepath.Clean(ev.Name), Op: op})
		case _, ok := <-w.fs.Errors:
			if !ok {
				return
			}
		}
	}
}

func (w *Watcher) dispatch(ev Event) {
	w.mu.Lock()
	subs := append([]func(Event){}, w.subs...)
	w.mu.Unlock()
	for _, f := range subs {
		f(ev)
	}
}
