package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// shellEscapable are the characters before which a backslash in a path
// argument is dropped (tools.md §2.2): models often shell-escape paths.
const shellEscapable = " \t()[]{};|*?$`'\"#&<>!~"

// cleanPathArg trims p, drops a backslash that escapes one of
// shellEscapable, and cleans the result. An empty (or blank) p stays "".
// On Windows a backslash separates names, so none is dropped there, and
// "/" and "\\" both separate (C:/Users/me and C:\\Users\\me are one path).
func cleanPathArg(p string) string { return cleanPathArgFor(workspace.NativePaths(), p) }

// cleanPathArgFor is cleanPathArg by the rules of flavor, so that every
// system's rules are tested everywhere.
func cleanPathArgFor(flavor workspace.PathFlavor, p string) string {
	p = strings.TrimSpace(p)
	if p == "" {
		return ""
	}
	if flavor.Drives {
		return flavor.Clean(p)
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' && i+1 < len(p) && strings.IndexByte(shellEscapable, p[i+1]) >= 0 {
			continue
		}
		b.WriteByte(p[i])
	}
	return flavor.Clean(b.String())
}

// driveless reports whether p is rooted but names no drive (\x or /x on
// Windows): Windows reads it on the current drive, while a model that
// writes it means a POSIX root, so it is refused rather than resolved.
func driveless(flavor workspace.PathFlavor, p string) bool {
	return flavor.Drives && p != "" && (p[0] == '\\' || p[0] == '/') && flavor.Volume(p) == ""
}

// pathOptions say which exceptions of §2.2 a path may use.
type pathOptions struct {
	// AllowTemp lets read-only tools read the project temp dir, where
	// long tool outputs are saved.
	AllowTemp bool
}

// absPath resolves a path argument that must be absolute (§2.2): cleaned,
// absolute, and inside a root (real path, symlinks resolved). The errors
// are the model-facing messages of §2.2.
func (e *Env) absPath(raw string, opts pathOptions) (string, *ToolError) {
	p := cleanPathArg(raw)
	if !filepath.IsAbs(p) {
		return "", InvalidParams(e.notAbsoluteMessage(p))
	}
	return p, e.checkInside(p, opts)
}

// checkInside refuses an absolute path outside the workspace roots.
func (e *Env) checkInside(abs string, opts pathOptions) *ToolError {
	if _, _, err := e.Workspace.Roots.Resolve(abs); err == nil {
		return nil
	}
	if opts.AllowTemp {
		tmp := workspace.RealPath(e.ProjectTempDir())
		if e.Workspace.Roots.Flavor().Within(tmp, workspace.RealPath(abs)) {
			return nil
		}
	}
	return NewError(errorPathNotInWorkspace, fmt.Sprintf(
		"Path is outside the workspace: %s. Tools may only access files inside the workspace roots: %s.",
		abs, strings.Join(e.Workspace.Roots.List(), ", ")))
}

func (e *Env) notAbsoluteMessage(p string) string {
	roots := e.Workspace.Roots.List()
	start := "/"
	if e.Workspace.Paths.PathFlavor().Drives {
		start = `a drive, such as C:\`
	}
	msg := fmt.Sprintf("Not an absolute path: %s. Give the full path, starting with %s.", p, start)
	switch len(roots) {
	case 0:
		return msg + " No workspace folder is open."
	case 1:
		return msg + fmt.Sprintf(" The workspace root is %s, so the full path is probably %s.", roots[0], filepath.Join(roots[0], p))
	}
	return msg + fmt.Sprintf(" The workspace roots are %s.", strings.Join(roots, ", "))
}

// qwenIgnored returns the §2.10 error when abs is excluded by
// .qwenignore and the setting respects it.
func (e *Env) qwenIgnored(abs string) *ToolError {
	if !e.respectQwenIgnore() {
		return nil
	}
	isDir := false
	if fi, err := os.Stat(abs); err == nil {
		isDir = fi.IsDir()
	}
	if e.Workspace.Ignore.Check(abs, isDir).Qwen {
		return InvalidParams(fmt.Sprintf("%s is excluded by .qwenignore, so this tool cannot use it.", abs))
	}
	return nil
}

// filePathArg reads the file_path argument of the edit tools (edit,
// write_file): present, absolute and inside the workspace.
func (e *Env) filePathArg(params map[string]any) (string, *ToolError) {
	p, _ := String(params, "file_path")
	if strings.TrimSpace(p) == "" {
		return "", InvalidParams(`Argument "file_path" must not be empty.`)
	}
	return e.absPath(p, pathOptions{})
}

// openedInside is the check applied to a file once it is open (see
// workspace.OpenedPath): its real path lies in a root, or in the project
// temp dir when opts allow it.
//
// The check is made once and applied to many files (grep, a directory
// walk), so the temp dir's real path is resolved at the first file that
// needs it and kept; the check may be called from several goroutines.
func (e *Env) openedInside(opts pathOptions) func(real string) bool {
	var tmp func() string
	if opts.AllowTemp {
		tmp = sync.OnceValue(func() string { return workspace.RealPath(e.ProjectTempDir()) })
	}
	return func(real string) bool {
		if e.Workspace.Roots.ContainsReal(real) {
			return true
		}
		return tmp != nil && e.Workspace.Roots.Flavor().Within(tmp(), real)
	}
}

// inFolder reports whether p is dir or lies below it, by name (case
// included).
func inFolder(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// openedInsideFor is openedInside for a path named inside a root, and no
// check (nil) for qwen-ls's own files elsewhere (memory, todos, the
// project temp dir), which path arguments cannot name anyway. The test is
// by name only, so a symlink swapped in cannot turn the check off.
func (e *Env) openedInsideFor(abs string, opts pathOptions) func(real string) bool {
	if !e.Workspace.Roots.LexicallyInside(abs) {
		return nil
	}
	return e.openedInside(opts)
}
