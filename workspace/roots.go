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
	roots []string
}

// NewRoots returns a root set holding paths.
func NewRoots(paths ...string) *Roots {
	r := &Roots{}
	r.Set(paths)
	return r
}

// Set replaces every root. Paths that cannot be resolved are kept as given
// (cleaned), so a root that appears later still works.
func (r *Roots) Set(paths []string) {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		rp := realRoot(p)
		if rp != "" && !contains(out, rp) {
			out = append(out, rp)
		}
	}
	r.mu.Lock()
	r.roots = out
	r.mu.Unlock()
}

// Add adds a root; adding one already present does nothing.
func (r *Roots) Add(path string) {
	rp := realRoot(path)
	if rp == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !contains(r.roots, rp) {
		r.roots = append(r.roots, rp)
	}
}

// Remove drops a root, named by the path it was added with or its real path.
func (r *Roots) Remove(path string) {
	rp := realRoot(path)
	clean := filepath.Clean(path)
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.roots[:0:0]
	for _, x := range r.roots {
		if x != rp && x != clean {
			out = append(out, x)
		}
	}
	r.roots = out
}

// List returns the roots in order; the first is the primary root.
func (r *Roots) List() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]string(nil), r.roots...)
}

// Primary returns the first root, or "" when there is none.
func (r *Roots) Primary() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if len(r.roots) == 0 {
		return ""
	}
	return r.roots[0]
}

// ErrNotAbsolute and ErrOutside classify the errors of Resolve.
var (
	ErrNotAbsolute = errors.New("not an absolute path")
	ErrOutside     = errors.New("path is outside the workspace")
)

// PathError is returned by Resolve. Kind is ErrNotAbsolute or ErrOutside.
type PathError struct {
	Path  string
	Roots []string
	Kind  error
}

func (e *PathError) Error() string {
	return fmt.Sprintf("%s: %s (workspace roots: %s)", e.Kind, e.Path, strings.Join(e.Roots, ", "))
}

func (e *PathError) Unwrap() error { return e.Kind }

// Resolve checks that p is absolute and that its real path lies in a root.
// It returns the cleaned path (not the real path: callers keep the name the
// user knows) and the root that contains it.
func (r *Roots) Resolve(p string) (clean, root string, err error) {
	roots := r.List()
	if !filepath.IsAbs(p) {
		return "", "", &PathError{Path: p, Roots: roots, Kind: ErrNotAbsolute}
	}
	clean = filepath.Clean(p)
	real := RealPath(clean)
	for _, rt := range roots {
		if within(rt, real) {
			return clean, rt, nil
		}
	}
	return "", "", &PathError{Path: clean, Roots: roots, Kind: ErrOutside}
}

// RealPath resolves symlinks in p. For a path that does not exist, it
// resolves the deepest existing ancestor and appends the rest, so a new file
// under a symlinked directory is judged by where it would really land.
func RealPath(p string) string {
	p = filepath.Clean(p)
	rest := ""
	cur := p
	for {
		if rp, err := filepath.EvalSymlinks(cur); err == nil {
			if rest == "" {
				return rp
			}
			return filepath.Join(rp, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

func realRoot(p string) string {
	if p == "" {
		return ""
	}
	if !filepath.IsAbs(p) {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
	}
	if _, err := os.Stat(p); err != nil {
		return filepath.Clean(p)
	}
	return RealPath(p)
}

// within reports whether p equals root or lies below it.
func within(root, p string) bool {
	if p == root {
		return true
	}
	if root == string(filepath.Separator) {
		return strings.HasPrefix(p, root)
	}
	return strings.HasPrefix(p, root+string(filepath.Separator))
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
