package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Roots is the set of workspace roots, held as real paths (symlinks
// resolved). Tools may touch only paths whose real path lies in a root.
type Roots struct {
	mu    sync.RWMutex
	roots []rootEntry
	// cmp compares paths: the workspace flavour's case rules with the
	// running system's syntax (PathFlavor.OnNative).
	cmp PathFlavor
}

// rootEntry remembers the path a root was given as next to its real path, so
// that it can be removed by either name and re-resolved if it did not exist
// when it was added.
type rootEntry struct {
	given string // absolute and cleaned
	real  string
	// missing is set while the root does not exist: its real path is only
	// a guess until it appears (it may turn out to be a symlink).
	missing bool
}

// newRootsFor returns a root set holding paths whose names are compared by
// the case rules of flavor (a case-only-different path is inside a root on
// Windows and macOS, outside on Linux).
func newRootsFor(flavor PathFlavor, paths ...string) *Roots {
	r := &Roots{cmp: flavor.OnNative()}
	r.Set(paths)
	return r
}

// Flavor is how the roots compare names.
func (r *Roots) Flavor() PathFlavor { return r.cmp }

// Set replaces every root. A root that does not exist yet is kept and
// resolved again on every check until it appears, so a folder created later
// still works.
func (r *Roots) Set(paths []string) {
	out := make([]rootEntry, 0, len(paths))
	for _, p := range paths {
		e, ok := newRootEntry(p)
		if ok && !r.hasRoot(out, e.real) {
			out = append(out, e)
		}
	}
	r.mu.Lock()
	r.roots = out
	r.mu.Unlock()
}

// Add adds a root; adding one already present does nothing.
func (r *Roots) Add(path string) {
	e, ok := newRootEntry(path)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.hasRoot(r.roots, e.real) {
		r.roots = append(r.roots, e)
	}
}

// Remove drops a root, named by the path it was added with or its real path.
func (r *Roots) Remove(path string) {
	given := absClean(path)
	real := RealPath(given)
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]rootEntry, 0, len(r.roots))
	for _, e := range r.roots {
		if !r.cmp.Same(e.given, given) && !r.cmp.Same(e.real, given) && !r.cmp.Same(e.real, real) {
			out = append(out, e)
		}
	}
	r.roots = out
}

// List returns the real paths of the roots in order; the first is the
// primary root.
func (r *Roots) List() []string {
	entries := r.snapshot()
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.real
	}
	return out
}

// Primary returns the first root, or "" when there is none.
func (r *Roots) Primary() string {
	entries := r.snapshot()
	if len(entries) == 0 {
		return ""
	}
	return entries[0].real
}

// snapshot returns the roots, first resolving again any that were missing
// so that a root created (or replaced by a symlink) after it was added is
// judged by where it really is.
func (r *Roots) snapshot() []rootEntry {
	r.mu.RLock()
	stale := false
	for _, e := range r.roots {
		if e.missing {
			stale = true
			break
		}
	}
	if !stale {
		out := append([]rootEntry(nil), r.roots...)
		r.mu.RUnlock()
		return out
	}
	r.mu.RUnlock()

	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.roots {
		e := &r.roots[i]
		if !e.missing {
			continue
		}
		if _, err := os.Stat(e.given); err == nil {
			e.real = RealPath(e.given)
			e.missing = false
		} else {
			e.real = RealPath(e.given)
		}
	}
	return append([]rootEntry(nil), r.roots...)
}

// errNotAbsolute and errOutside classify the errors of Resolve.
var (
	errNotAbsolute = errors.New("not an absolute path")
	errOutside     = errors.New("path is outside the workspace")
)

// pathError is returned by Resolve. Kind is errNotAbsolute or errOutside.
type pathError struct {
	Path  string
	Roots []string
	Kind  error
}

func (e *pathError) Error() string {
	return fmt.Sprintf("%s: %s (workspace roots: %s)", e.Kind, e.Path, strings.Join(e.Roots, ", "))
}

func (e *pathError) Unwrap() error { return e.Kind }

// Resolve checks that p is absolute and that its real path lies in a root.
// It returns the cleaned path (not the real path: callers keep the name the
// user knows) and the real path of the root that contains it; with nested
// roots that is the first one in order.
//
// The path is cleaned before it is resolved, so "/w/link/../x" means "/w/x"
// as tools.md §2.2 says, whatever link points at.
func (r *Roots) Resolve(p string) (clean, root string, err error) {
	entries := r.snapshot()
	if !filepath.IsAbs(p) {
		return "", "", &pathError{Path: p, Roots: realPaths(entries), Kind: errNotAbsolute}
	}
	clean = filepath.Clean(p)
	real := RealPath(clean)
	for _, e := range entries {
		if r.cmp.Within(e.real, real) {
			return clean, e.real, nil
		}
	}
	return "", "", &pathError{Path: clean, Roots: realPaths(entries), Kind: errOutside}
}

// Rel returns the display path of abs (tools.md §2.2): relative to the root
// that contains it, "." for a root itself, and otherwise abs cleaned. A path
// that reaches a root through a symlink is shown relative to that root as
// long as the name the user gave lies lexically below a root's given or real
// path, or its real path lies below a root.
func (r *Roots) Rel(abs string) string {
	if !filepath.IsAbs(abs) {
		return filepath.Clean(abs)
	}
	clean := filepath.Clean(abs)
	entries := r.snapshot()
	// The name as given first: it is what the user typed, and needs no
	// file-system access.
	for _, e := range entries {
		for _, base := range []string{e.given, e.real} {
			if rel, ok := r.cmp.Rel(base, clean); ok {
				return rel
			}
		}
	}
	real := RealPath(clean)
	for _, e := range entries {
		if rel, ok := r.cmp.Rel(e.real, real); ok {
			return rel
		}
	}
	return clean
}

// maxSymlinks bounds how many symlinks RealPath follows, like the kernel's
// limit, so a loop cannot spin forever.
const maxSymlinks = 255

// RealPath resolves symlinks in p. For a path that does not exist, it
// resolves the deepest existing ancestor and appends the rest, so a new file
// under a symlinked directory is judged by where it would really land. A
// dangling symlink is followed to where its target would be, because writing
// through it would create the file there.
func RealPath(p string) string {
	p = filepath.Clean(p)
	if rp, err := filepath.EvalSymlinks(p); err == nil {
		return rp
	}
	if !filepath.IsAbs(p) {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		} else {
			return p
		}
	}
	return walkReal(p)
}

// walkReal resolves p one component at a time. It is the slow path of
// RealPath, for paths where some component is missing or unreadable.
func walkReal(p string) string {
	sep := string(filepath.Separator)
	// On Windows the walk starts at the path's volume ("C:\", a UNC
	// share), as an absolute link's target does.
	vol := filepath.VolumeName(p)
	todo := splitPath(p[len(vol):])
	cur := vol + sep
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			// cur holds only resolved components, so its parent is real.
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil {
			// Missing (or unreadable): the rest cannot be resolved, so
			// it is appended as written.
			return filepath.Join(append([]string{next}, todo...)...)
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		links++
		target, err := os.Readlink(next)
		if err != nil || links > maxSymlinks {
			return filepath.Join(append([]string{next}, todo...)...)
		}
		if filepath.IsAbs(target) {
			tv := filepath.VolumeName(target)
			cur, target = tv+sep, target[len(tv):]
		}
		todo = append(splitPath(target), todo...)
	}
	return cur
}

func splitPath(p string) []string {
	return strings.Split(filepath.ToSlash(p), "/")
}

// newRootEntry resolves a root. A relative path is taken relative to the
// working directory; "" is refused.
func newRootEntry(p string) (rootEntry, bool) {
	if p == "" {
		return rootEntry{}, false
	}
	given := absClean(p)
	e := rootEntry{given: given, real: RealPath(given)}
	if _, err := os.Stat(given); err != nil {
		e.missing = true
	}
	return e, true
}

func absClean(p string) string {
	if !filepath.IsAbs(p) {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	return filepath.Clean(p)
}

func realPaths(entries []rootEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.real
	}
	return out
}

func (r *Roots) hasRoot(xs []rootEntry, real string) bool {
	for _, e := range xs {
		if r.cmp.Same(e.real, real) {
			return true
		}
	}
	return false
}
