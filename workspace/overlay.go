package workspace

import (
	"fmt"
	"sync"
	"time"
)

// Buffer is a snapshot of one open editor buffer.
type Buffer struct {
	Path    string
	Version int32
	Text    string
	// Modified is when the buffer last changed (open or change), used to
	// sort unsaved buffers among files by modification time.
	Modified time.Time
	// Dirty is true when the buffer has changes the editor has not saved.
	Dirty bool
}

// Overlay holds the editor's open buffers. Reads of a path with an open
// buffer see the buffer's text, never the disk.
//
// Edits arrive far more often than readers ask for whole texts (every
// keystroke is a didChange), so a buffer is kept as a rope (rope.go) that
// takes an edit in time logarithmic in the text's size; Get materialises
// the text as a string only when asked, and keeps it until the next change.
type Overlay struct {
	mu   sync.RWMutex
	bufs map[string]*buffer
	// changed is closed at the next change of any buffer, so callers can
	// wait for the buffer to reach some state (an applied edit) without
	// polling. It is nil while nobody waits.
	changed chan struct{}
	// cmp names the key of a path: on a case-insensitive file system
	// "C:\a.go" and "c:\A.GO" are one buffer, never two.
	cmp PathFlavor
}

type buffer struct {
	// path is the name the buffer was opened with.
	path    string
	version int32
	text    rope
	// snapshot is text as a string when fresh is true.
	snapshot string
	fresh    bool
	modified time.Time
	dirty    bool
	// ready, while not nil, is closed once text, snapshot and fresh hold
	// the buffer's text, which a goroutine is still producing
	// (OpenLater, ReplaceLater); ready is then set to nil.
	ready chan struct{}
}

// newOverlayFor returns an empty overlay whose paths are compared by the
// case rules of flavor, with the running system's syntax.
func newOverlayFor(flavor PathFlavor) *Overlay {
	return &Overlay{bufs: map[string]*buffer{}, cmp: flavor.OnNative()}
}

// key is the map key of path.
func (o *Overlay) key(path string) string {
	if o.cmp == (PathFlavor{}) {
		return path
	}
	return o.cmp.Key(path)
}

// Open records a buffer the editor opened. Opening an open path replaces it.
func (o *Overlay) Open(path string, version int32, text string) {
	r := newRope(text)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.bufs[o.key(path)] = &buffer{path: path, version: version, text: r, snapshot: text, fresh: true, modified: time.Now()}
	o.notifyLocked()
}

// OpenLater is Open with the text still to be produced by text, on a
// goroutine of its own, so that a big document costs the caller (the
// connection's read path) nothing. Every read or change of this buffer
// waits for its text; other buffers are served meanwhile, and so are its
// version, its dirty state and the list of open paths.
func (o *Overlay) OpenLater(path string, version int32, text func() string) {
	b := &buffer{path: path, version: version, modified: time.Now()}
	o.mu.Lock()
	o.bufs[o.key(path)] = b
	o.startLocked(b, text)
	o.notifyLocked()
	o.mu.Unlock()
}

// ReplaceLater is Apply of one change of the whole text, the text to be
// produced by text as in OpenLater.
func (o *Overlay) ReplaceLater(path string, version int32, text func() string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	old, ok := o.bufs[o.key(path)]
	if !ok {
		return fmt.Errorf("apply change to %s: the document is not open", path)
	}
	b := &buffer{path: old.path, version: version, modified: time.Now(), dirty: true}
	o.bufs[o.key(path)] = b
	o.startLocked(b, text)
	o.notifyLocked()
	return nil
}

// startLocked produces b's text on a goroutine.
func (o *Overlay) startLocked(b *buffer, text func() string) {
	ready := make(chan struct{})
	b.ready = ready
	go func() {
		var t string
		var r rope
		func() {
			// A panic here would take the whole server down; the
			// buffer is left empty instead.
			defer func() { _ = recover() }()
			t = text()
			text = nil // what it holds is garbage now
			r = newRope(t)
		}()
		o.mu.Lock()
		b.text, b.snapshot, b.fresh = r, t, true
		b.ready = nil
		o.notifyLocked()
		o.mu.Unlock()
		close(ready)
	}()
}

// lookup returns the buffer for path with its text in place, holding
// o.mu for reading (or for writing, with write set) when found; without
// it, the lock is not held.
func (o *Overlay) lookup(path string, write bool) (*buffer, bool) {
	lock, unlock := o.mu.RLock, o.mu.RUnlock
	if write {
		lock, unlock = o.mu.Lock, o.mu.Unlock
	}
	for {
		lock()
		b, ok := o.bufs[o.key(path)]
		if !ok {
			unlock()
			return nil, false
		}
		ready := b.ready
		if ready == nil {
			return b, true
		}
		unlock()
		<-ready
	}
}

// Apply applies changes in order and sets the version. Each change's range
// is counted in enc against the text the changes before it produced. The
// batch is atomic: if any change has a range outside its text (see OffsetOf
// for the rules), nothing is applied, the version stays, and the error, which
// wraps a *rangeError, says which change is wrong and why.
func (o *Overlay) Apply(path string, version int32, changes []Change, enc Encoding) error {
	b, ok := o.lookup(path, true)
	if !ok {
		return fmt.Errorf("apply change to %s: the document is not open", path)
	}
	defer o.mu.Unlock()
	text, i, err := b.text.apply(changes, enc)
	if err != nil {
		return fmt.Errorf("apply change %d to %s: %w", i, path, err)
	}
	snapshot, fresh := b.snapshot, b.fresh
	if n := len(changes); n > 0 {
		// A batch that ends with a full-text change hands us the string.
		snapshot, fresh = "", false
		if last := changes[n-1]; last.Range == nil {
			snapshot, fresh = last.Text, true
		}
	}
	b.text, b.snapshot, b.fresh = text, snapshot, fresh
	b.version = version
	b.modified = time.Now()
	b.dirty = true
	o.notifyLocked()
	return nil
}

// Saved marks a buffer as saved: its text is now what the disk holds.
func (o *Overlay) Saved(path string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if b, ok := o.bufs[o.key(path)]; ok {
		b.dirty = false
	}
	o.notifyLocked()
}

// Close forgets a buffer; reads of path go to the disk again.
func (o *Overlay) Close(path string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.bufs, o.key(path))
	o.notifyLocked()
}

// Get returns the open buffer for path.
func (o *Overlay) Get(path string) (Buffer, bool) {
	b, ok := o.lookup(path, false)
	if !ok {
		return Buffer{}, false
	}
	out := Buffer{Path: path, Version: b.version, Modified: b.modified, Dirty: b.dirty}
	text, snapshot, fresh := b.text, b.snapshot, b.fresh
	o.mu.RUnlock()
	if fresh {
		out.Text = snapshot
		return out, true
	}
	// The rope is immutable, so the string is built without the lock and
	// kept only if no change came in meanwhile.
	out.Text = text.String()
	o.mu.Lock()
	if o.bufs[o.key(path)] == b && b.text == text && !b.fresh {
		b.snapshot, b.fresh = out.Text, true
	}
	o.mu.Unlock()
	return out, true
}

// Version returns the version of the open buffer for path, without
// materialising its text.
func (o *Overlay) Version(path string) (int32, bool) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	b, ok := o.bufs[o.key(path)]
	if !ok {
		return 0, false
	}
	return b.version, true
}

// Len returns the length in bytes of the open buffer for path.
func (o *Overlay) Len(path string) (int, bool) {
	b, ok := o.lookup(path, false)
	if !ok {
		return 0, false
	}
	defer o.mu.RUnlock()
	return b.text.len(), true
}

// Offset converts pos, counted in enc, to a byte offset in the open buffer
// for path, by the rules of OffsetOf but without materialising the text.
func (o *Overlay) Offset(path string, pos Position, enc Encoding) (int, error) {
	b, ok := o.lookup(path, false)
	if !ok {
		return 0, fmt.Errorf("convert position in %s: the document is not open", path)
	}
	defer o.mu.RUnlock()
	off, err := b.text.offsetOf(pos, enc)
	if err != nil {
		return 0, fmt.Errorf("convert position in %s: %w", path, err)
	}
	return off, nil
}

// Position converts a byte offset in the open buffer for path to a position
// counted in enc, by the rules of PositionOf.
func (o *Overlay) Position(path string, off int, enc Encoding) (Position, bool) {
	b, ok := o.lookup(path, false)
	if !ok {
		return Position{}, false
	}
	defer o.mu.RUnlock()
	return b.text.positionOf(off, enc), true
}

// Paths lists the open buffers' paths, in no particular order.
func (o *Overlay) Paths() []string {
	o.mu.RLock()
	defer o.mu.RUnlock()
	out := make([]string, 0, len(o.bufs))
	for _, b := range o.bufs {
		out = append(out, b.path)
	}
	return out
}

// Changed returns a channel that is closed at the next change of any buffer.
// Callers that wait for a condition check it, then wait on a fresh channel.
// To miss no change, get the channel before checking the condition.
func (o *Overlay) Changed() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.changed == nil {
		o.changed = make(chan struct{})
	}
	return o.changed
}

func (o *Overlay) notifyLocked() {
	if o.changed != nil {
		close(o.changed)
		o.changed = nil
	}
}
