package workspace

import (
	"fmt"
	"path/filepath"
	"strings"
)

// PathSystem is the flavour of the paths a workspace serves and, only when
// a test plays one system's file system on another, where the played
// system's volumes lie on the real one. The zero value is the running
// system, whose paths need no mapping.
type PathSystem struct {
	// Flavor is the played system's flavour; zero means NativePaths.
	Flavor PathFlavor
	// Volumes maps each volume of Flavor ("C:", `\\server\share`, or "/"
	// for a Unix flavour) to a native folder that plays it. Empty on the
	// real system.
	Volumes map[string]string
}

// PathFlavor returns the flavour of the served paths.
func (ps PathSystem) PathFlavor() PathFlavor {
	if ps.Flavor == (PathFlavor{}) {
		return NativePaths()
	}
	return ps.Flavor
}

// Mapped reports whether paths are played on another system.
func (ps PathSystem) Mapped() bool { return len(ps.Volumes) > 0 }

// ToNative turns a clean absolute path in the served flavour into the
// native path the file system knows it by.
func (ps PathSystem) ToNative(p string) (string, error) {
	if !ps.Mapped() {
		return p, nil
	}
	f := ps.PathFlavor()
	vol := f.Volume(p)
	if !f.Drives {
		vol = "/"
	}
	for v, dir := range ps.Volumes {
		if !f.Same(v, vol) {
			continue
		}
		rest := strings.TrimLeft(strings.ReplaceAll(f.Clean(p)[len(vol):], `\`, "/"), "/")
		return filepath.Join(dir, filepath.FromSlash(rest)), nil
	}
	return "", fmt.Errorf("%s is on no volume of this workspace", p)
}

// FromNative turns a native path into the served flavour's form; a path
// outside every played volume is returned as it is.
func (ps PathSystem) FromNative(p string) string {
	if !ps.Mapped() {
		return p
	}
	f := ps.PathFlavor()
	for v, dir := range ps.Volumes {
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		root := v
		if f.Drives && v[1] == ':' {
			root = v + `\`
		}
		return f.Join(root, f.FromSlash(filepath.ToSlash(rel)))
	}
	return p
}
