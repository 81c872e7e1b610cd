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

// Apply applies changes in order and sets the version. Each change's range
// is counted in enc against the text the changes before it produced. The
// batch is atomic: if any change has a range outside its text (see OffsetOf
// for the rules), nothing is applied, the version stays, and the error, which
// wraps a *rangeError, says which change is wrong and why.
func (o *Overlay) Apply(path string, version int32, changes []Change, enc Encoding) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	b, ok := o.bufs[o.key(path)]
	if !ok {
		return fmt.Errorf("apply change to %s: the document is not open", path)
	}
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
	o.mu.RLock()
	b, ok := o.bufs[o.key(path)]
	if !ok {
		o.mu.RUnlock()
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
	o.mu.RLock()
	defer o.mu.RUnlock()
	b, ok := o.bufs[o.key(path)]
	if !ok {
		return 0, false
	}
	return b.text.len(), true
}

// Offset converts pos, counted in enc, to a byte offset in the open buffer
// for path, by the rules of OffsetOf but without materialising the text.
func (o *Overlay) Offset(path string, pos Position, enc Encoding) (int, error) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	b, ok := o.bufs[o.key(path)]
	if !ok {
		return 0, fmt.Errorf("convert position in %s: the document is not open", path)
	}
	off, err := b.text.offsetOf(pos, enc)
	if err != nil {
		return 0, fmt.Errorf("convert position in %s: %w", path, err)
	}
	return off, nil
}

// Position converts a byte offset in the open buffer for path to a position
// counted in enc, by the rules of PositionOf.
func (o *Overlay) Position(path string, off int, enc Encoding) (Position, bool) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	b, ok := o.bufs[o.key(path)]
	if !ok {
		return Position{}, false
	}
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
