package tools

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// readDirInside lists a directory that must lie inside the workspace: it
// opens the directory, checks the real path the kernel opened (a parent
// swapped for a symlink after the path was checked is seen there), and
// only then reads the names. The entries come sorted by name.
func (e *Env) readDirInside(dir string, opts pathOptions) ([]fs.DirEntry, error) {
	return readDirChecked(dir, e.openedInsideFor(dir, opts))
}

// readDirChecked is readDirInside with the check made by the caller, once
// for a whole walk (nil: no check).
func readDirChecked(dir string, allowed func(real string) bool) ([]fs.DirEntry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := workspace.CheckOpened(f, allowed); err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	ents, err := f.ReadDir(-1)
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, err
}

// walkDirInside is filepath.WalkDir with every directory read through
// readDirInside. Like WalkDir it does not follow symlinks, calls fn for
// root first, honours fs.SkipDir and fs.SkipAll, and reports a directory
// it cannot read by a second call with the error.
func (e *Env) walkDirInside(root string, opts pathOptions, fn fs.WalkDirFunc) error {
	info, err := os.Lstat(root)
	if err != nil {
		err = fn(root, nil, err)
	} else {
		err = walkInside(root, fs.FileInfoToDirEntry(info), e.openedInsideFor(root, opts), fn)
	}
	if err == filepath.SkipDir || err == filepath.SkipAll {
		return nil
	}
	return err
}

func walkInside(p string, d fs.DirEntry, allowed func(real string) bool, fn fs.WalkDirFunc) error {
	if err := fn(p, d, nil); err != nil || !d.IsDir() {
		if err == filepath.SkipDir && d.IsDir() {
			err = nil
		}
		return err
	}
	ents, err := readDirChecked(p, allowed)
	if err != nil {
		if err = fn(p, d, err); err != nil {
			if err == filepath.SkipDir && d.IsDir() {
				err = nil
			}
			return err
		}
	}
	for _, d1 := range ents {
		if err := walkInside(filepath.Join(p, d1.Name()), d1, allowed, fn); err != nil {
			if err == filepath.SkipDir {
				break
			}
			return err
		}
	}
	return nil
}
