package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// The file listing that glob and grep_search share: which files a search
// sees under a directory (§2.10 ignore rules, default excludes, open buffers
// not yet on disk), taken from the watched index when it can answer and from
// the disk otherwise.

// searchDir checks a search path argument (§2.2) and that it exists (and,
// with wantDir, that it is a directory). An open buffer that is not on disk
// yet counts as an existing file. A relative path is taken from the
// primary root, as Qwen Code does, and confined to the roots like any.
func (e *Env) searchDir(raw string, wantDir bool) (string, *ToolError) {
	p, terr := e.searchPathArg(raw)
	if terr != nil {
		return "", terr
	}
	if terr := e.checkInside(p, pathOptions{AllowTemp: true}); terr != nil {
		return "", terr
	}
	fi, err := os.Stat(p)
	if err != nil {
		if _, open := e.Workspace.Overlay.Get(p); open && !wantDir {
			return p, nil
		}
		if errors.Is(err, fs.ErrNotExist) {
			return "", Errorf(errorSearchPathNotFound, "%s does not exist.", p)
		}
		return "", Errorf(errorSearchPathNotFound, "%s cannot be read: %v", p, err)
	}
	if wantDir && !fi.IsDir() {
		return "", Errorf(errorSearchPathNotADirectory, "%s is not a directory.", p)
	}
	return p, nil
}

// searchPathArg is the path argument of glob and grep_search, cleaned and
// made absolute: a relative one is resolved against the primary root. It
// is not checked.
func (e *Env) searchPathArg(raw string) (string, *ToolError) {
	p := cleanPathArg(raw)
	if filepath.IsAbs(p) {
		return p, nil
	}
	primary := e.Workspace.Roots.Primary()
	if primary == "" {
		return "", InvalidParams(e.notAbsoluteMessage(p))
	}
	return filepath.Join(primary, p), nil
}

// describeSearch is the description of a glob or grep_search call:
// "'<pattern>'", then " in path '<path>'" when a path is given (its
// display path, tools.md §2.2).
func (e *Env) describeSearch(params map[string]any) string {
	pattern, _ := String(params, "pattern")
	out := "'" + pattern + "'"
	if p, ok := String(params, "path"); ok && strings.TrimSpace(p) != "" {
		if abs, terr := e.searchPathArg(p); terr == nil {
			p = abs
		}
		out += " in path '" + e.Rel(cleanPathArg(p)) + "'"
	}
	return out
}

// searchLocations is Locations for glob and grep_search's path argument.
func (e *Env) searchLocations(params map[string]any) []Location {
	raw, _ := String(params, "path")
	if strings.TrimSpace(raw) == "" {
		return nil
	}
	if p, terr := e.searchPathArg(raw); terr == nil {
		return []Location{{Path: p}}
	}
	return nil
}

// searchLocation is the <loc> of the search tools' messages.
func searchLocation(dirs []string, explicit bool) string {
	switch {
	case explicit && len(dirs) == 1:
		return "under " + dirs[0]
	case len(dirs) > 1:
		return fmt.Sprintf("in %d workspace roots", len(dirs))
	}
	return "in the workspace"
}

// plural picks the singular for exactly one.
func searchPlural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// sepAfter is the separator that follows dir in the paths below it (none
// after the file-system root).
func searchSep(dir string) string {
	if strings.HasSuffix(dir, string(filepath.Separator)) {
		return ""
	}
	return string(filepath.Separator)
}

// searchFilter says which ignore files a search respects (§2.10).
type searchFilter struct {
	RespectGit  bool
	RespectQwen bool
}

func (f searchFilter) drops(v workspace.IgnoreVerdict) bool {
	return (f.RespectGit && v.Git) || (f.RespectQwen && v.Qwen)
}

// searchFile is one file a search looks at.
type searchFile struct {
	// Path is absolute and clean.
	Path string
	// Size is the size on disk; -1 for a buffer not on disk.
	Size    int64
	ModTime time.Time
	// Unsaved marks an open buffer that has no file on disk yet.
	Unsaved bool
}

// searchFiles calls fn for every file below dir that a search sees: regular
// files and symlinks to them, dot files included, directory symlinks not
// followed, minus ignored files (per f) and default-excluded directories
// below dir (§2.10), plus open buffers below dir that are not on disk. The
// order is unspecified. It reads the watched index when that can answer
// for dir, and walks the disk otherwise; only an unreadable dir itself
// (or cancellation) is an error.
func (e *Env) searchFiles(ctx context.Context, dir string, f searchFilter, fn func(searchFile)) error {
	ws := e.Workspace
	if ws.Index.Covers(dir, f.RespectGit) {
		ws.Index.WalkUnder(dir, func(fe workspace.FileEntry) bool {
			if (f.RespectGit && fe.Git) || (f.RespectQwen && fe.Qwen) {
				return true
			}
			fn(searchFile{Path: fe.Path, Size: fe.Size, ModTime: fe.ModTime})
			return true
		})
		if err := ctx.Err(); err != nil {
			return err
		}
	} else if err := e.walkSearchDir(ctx, dir, f, fn); err != nil {
		return err
	}
	e.unsavedBuffers(dir, f, fn)
	return nil
}

// walkSearchDir is searchFiles' disk walk.
func (e *Env) walkSearchDir(ctx context.Context, dir string, f searchFilter, fn func(searchFile)) error {
	ig := e.Workspace.Ignore
	allowed := e.openedInsideFor(dir, pathOptions{AllowTemp: true})
	var walk func(d string) error
	walk = func(d string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		ents, err := readDirChecked(d, allowed)
		if err != nil {
			if d == dir {
				return err
			}
			return nil // an unreadable subdirectory is left out
		}
		for _, de := range ents {
			name := de.Name()
			p := d + searchSep(d) + name
			t := de.Type()
			if t.IsDir() {
				if workspace.IsDefaultExcludedDir(name) || f.drops(ig.Check(p, true)) {
					continue
				}
				if err := walk(p); err != nil {
					return err
				}
				continue
			}
			var info fs.FileInfo
			switch {
			case t.IsRegular():
				info, err = de.Info()
			case t&fs.ModeSymlink != 0:
				info, err = os.Stat(p)
			default:
				continue
			}
			if err != nil || !info.Mode().IsRegular() || f.drops(ig.Check(p, false)) {
				continue
			}
			fn(searchFile{Path: p, Size: info.Size(), ModTime: info.ModTime()})
		}
		return nil
	}
	return walk(dir)
}

// unsavedBuffers calls fn for the open buffers below dir that have no file
// on disk, filtered like the files on disk.
func (e *Env) unsavedBuffers(dir string, f searchFilter, fn func(searchFile)) {
	ws := e.Workspace
	for _, p := range ws.Overlay.Paths() {
		rel, ok := searchRel(dir, p)
		if !ok || searchUnderExcluded(rel) {
			continue
		}
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		b, open := ws.Overlay.Get(p)
		if !open || f.drops(ws.Ignore.Check(p, false)) {
			continue
		}
		fn(searchFile{Path: p, Size: -1, ModTime: b.Modified, Unsaved: true})
	}
}

// searchRel returns p relative to dir when p lies strictly below dir.
func searchRel(dir, p string) (string, bool) {
	prefix := dir + searchSep(dir)
	if len(p) <= len(prefix) || !strings.HasPrefix(p, prefix) {
		return "", false
	}
	return p[len(prefix):], true
}

// searchUnderExcluded reports whether a relative file path passes through
// a default-excluded directory.
func searchUnderExcluded(rel string) bool {
	dirs := strings.Split(filepath.Dir(rel), string(filepath.Separator))
	return slices.ContainsFunc(dirs, workspace.IsDefaultExcludedDir)
}
