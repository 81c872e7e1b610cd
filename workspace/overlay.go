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
type Overlay struct {
	mu   sync.RWMutex
	bufs map[string]*buffer
	// waiters are woken after every change so callers can wait for the
	// buffer to reach some state (an applied edit) without polling.
	waiters map[chan struct{}]struct{}
}

type buffer struct {
	version  int32
	text     string
	modified time.Time
	dirty    bool
}

// NewOverlay returns an empty overlay.
func NewOverlay() *Overlay {
	return &Overlay{bufs: map[string]*buffer{}, waiters: map[chan struct{}]struct{}{}}
}

// Open records a buffer the editor opened. Opening an open path replaces it.
func (o *Overlay) Open(path string, version int32, text string) {
	o.mu.Lock()
	o.bufs[path] = &buffer{version: version, text: text, modified: time.Now()}
	o.mu.Unlock()
	o.notify()
}

// Apply applies changes in order and sets the version. If any change has a
// range outside the text, nothing is applied and the error says which.
func (o *Overlay) Apply(path string, version int32, changes []Change, enc Encoding) error {
	o.mu.Lock()
	b, ok := o.bufs[path]
	if !ok {
		o.mu.Unlock()
		return fmt.Errorf("apply change to %s: the document is not open", path)
	}
	text := b.text
	for i, c := range changes {
		if c.Range == nil {
			text = c.Text
			continue
		}
		start, err := OffsetOf(text, c.Range.Start, enc)
		if err != nil {
			o.mu.Unlock()
			return fmt.Errorf("apply change %d to %s: start: %w", i, path, err)
		}
		end, err := OffsetOf(text, c.Range.End, enc)
		if err != nil {
			o.mu.Unlock()
			return fmt.Errorf("apply change %d to %s: end: %w", i, path, err)
		}
		if end < start {
			o.mu.Unlock()
			return fmt.Errorf("apply change %d to %s: %w", i, path, &RangeError{Pos: c.Range.End, Reason: "the range ends before it starts"})
		}
		text = text[:start] + c.Text + text[end:]
	}
	b.text = text
	b.version = version
	b.modified = time.Now()
	b.dirty = true
	o.mu.Unlock()
	o.notify()
	return nil
}

// Saved marks a buffer as saved: its text is now what the disk holds.
func (o *Overlay) Saved(path string) {
	o.mu.Lock()
	if b, ok := o.bufs[path]; ok {
		b.dirty = false
	}
	o.mu.Unlock()
	o.notify()
}

// Close forgets a buffer; reads of path go to the disk again.
func (o *Overlay) Close(path string) {
	o.mu.Lock()
	delete(o.bufs, path)
	o.mu.Unlock()
	o.notify()
}

// Get returns the open buffer for path.
func (o *Overlay) Get(path string) (Buffer, bool) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	b, ok := o.bufs[path]
	if !ok {
		return Buffer{}, false
	}
	return Buffer{Path: path, Version: b.version, Text: b.text, Modified: b.modified, Dirty: b.dirty}, true
}

// Paths lists the open buffers' paths, in no particular order.
func (o *Overlay) Paths() []string {
	o.mu.RLock()
	defer o.mu.RUnlock()
	out := make([]string, 0, len(o.bufs))
	for p := range o.bufs {
		out = append(out, p)
	}
	return out
}

// Changed returns a channel that is closed at the next change of any buffer.
// Callers that wait for a condition check it, then wait on a fresh channel.
func (o *Overlay) Changed() <-chan struct{} {
	ch := make(chan struct{})
	o.mu.Lock()
	o.waiters[ch] = struct{}{}
	o.mu.Unlock()
	return ch
}

func (o *Overlay) notify() {
	o.mu.Lock()
	ws := o.waiters
	o.waiters = map[chan struct{}]struct{}{}
	o.mu.Unlock()
	for ch := range ws {
		close(ch)
	}
}
