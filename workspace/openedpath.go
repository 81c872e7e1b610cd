package workspace

import (
	"errors"
	"os"
	"path/filepath"
)

// ContainsReal reports whether real, a path without symlinks (such as
// OpenedPath returns), is a root or lies below one. It reads nothing from
// the file system beyond what resolving a missing root needs.
func (r *Roots) ContainsReal(real string) bool {
	for _, e := range r.snapshot() {
		if r.cmp.Within(e.real, real) {
			return true
		}
	}
	return false
}

// ErrEscaped is returned when an opened file turns out to lie outside the
// places it was allowed to be: the path changed (a symlink was swapped
// in) after it was checked.
var ErrEscaped = errors.New("the path now leads outside the workspace (a symlink changed after it was checked)")

// CheckOpened applies allowed to the opened path of f and returns
// ErrEscaped when it refuses; a nil allowed allows all, and without /proc
// it allows (the path check before opening is all there is then).
func CheckOpened(f *os.File, allowed func(real string) bool) error {
	if allowed == nil {
		return nil
	}
	if p, ok := OpenedPath(f.Fd()); ok && !allowed(p) {
		return ErrEscaped
	}
	return nil
}

// LexicallyInside reports whether abs, cleaned, is a root or lies below
// one by name alone (the root's given or real path), without resolving
// symlinks: the test for "this path was meant to be in the workspace".
func (r *Roots) LexicallyInside(abs string) bool {
	clean := filepath.Clean(abs)
	for _, e := range r.snapshot() {
		if r.cmp.Within(e.given, clean) || r.cmp.Within(e.real, clean) {
			return true
		}
	}
	return false
}
