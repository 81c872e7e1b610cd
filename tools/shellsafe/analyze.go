package shellsafe

import (
	"github.com/qwen-ls/qwen-ls/tools/lazy"

	"io"
	"os"
	"path/filepath"
	"strings"
)

// Context is what Analyze knows of the workspace a command runs in. It is
// plain values and functions, so that this package needs nothing else of
// qwen-ls.
type Context struct {
	// RepoConfigTrusted: the folder is trusted, so its repository
	// configuration may steer git.
	RepoConfigTrusted bool
	// Dir is the absolute directory the command starts in ("" when
	// there is none: then no git command is read-only).
	Dir string
	// Base is the absolute directory exact rules are written for (the
	// primary root): an exact rule covers its command only when the
	// command runs there ("" when there is none: then none does).
	Base string
	// Home is the user's home directory, for ~ and a bare cd.
	Home string
	// CDPath is the CDPATH bash starts with: when set, cd to a bare name
	// may go anywhere it lists, so such a cd leads somewhere unknown.
	CDPath string
	// Inside reports whether an absolute path is inside the workspace
	// roots, links resolved. Nil means nothing is.
	Inside func(abs string) bool

	realHome string // Home with its links resolved, worked out once by Analyze
}

// Analyze parses cmd as Parse does and judges it for a workspace:
//
//   - When the folder is not trusted, git commands are never read-only:
//     the repository's own configuration (core.fsmonitor, diff.external,
//     textconv and clean filters, core.pager) can make even `git status`
//     or `git diff` run a program it names, and a hostile repository may
//     ship that configuration. Trusting the folder trusts its
//     configuration, and git's read-only commands run unasked again.
//   - Even then, a git command is read-only only when the repository it
//     would use is known to be inside the roots: git -C, cd and the
//     command's directory are followed, and git's own search upward for a
//     .git (or a bare repository) is repeated. Another repository's
//     configuration and hooks are not the workspace's.
//   - A read-only sub-command that reads a path under the home folder,
//     outside the roots, is not read-only (HomeRead names the path): it
//     asks, as the file tools refuse that path.
//   - Each sub-command gets its directory (Dir), the paths it may write
//     (Targets) and why some could not be known (Unresolved), for the
//     protected-path check of the caller.
func Analyze(cmd string, ctx Context) (*Analysis, error) {
	a, err := Parse(cmd)
	if err != nil {
		return a, err
	}
	if home, _ := ctx.homeDirs(); home != "" {
		ctx.realHome = physicalPath(home)
	}
	dir := ctx.Dir
	for _, s := range a.SubCommands {
		if s.loop && (isCd(s) || changesDirUnseen(s)) {
			// A cd in a loop or function body also applies to commands
			// written before it: on the next pass, or at the call.
			dir = ""
		}
	}
	// A cd inside a subshell (a pipeline part, a substitution) ends with
	// it: leaving a subshell restores the directory it was entered with.
	saved := map[int]string{}
	var open []int
	for i := range a.SubCommands {
		s := &a.SubCommands[i]
		k := 0
		for k < len(open) && k < len(s.scopes) && open[k] == s.scopes[k] {
			k++
		}
		for j := len(open) - 1; j >= k; j-- {
			dir = saved[open[j]]
		}
		for _, id := range s.scopes[k:] {
			saved[id] = dir
		}
		open = s.scopes
		s.Dir = dir
		s.atBase = dir != "" && ctx.Base != "" && dir == filepath.Clean(ctx.Base)
		switch {
		case isCd(*s):
			dir = ctx.cdTarget(dir, s.Words[1:])
		case changesDirUnseen(*s):
			dir = ""
		}
		if s.Root == "git" && (!ctx.RepoConfigTrusted || !ctx.gitRepoInside(s.Dir, s.Words[1:])) {
			s.ReadOnly = false
			s.ForeignGit = true
		}
		if s.ReadOnly {
			if shown := ctx.homeRead(s); shown != "" {
				s.ReadOnly = false
				s.HomeRead = shown
			}
		}
		ctx.resolveTargets(s)
	}
	return a, nil
}

func isCd(s SubCommand) bool {
	return len(s.Words) > 0 && !s.Words[0].Expanded && s.Words[0].Value == "cd"
}

// changesDirUnseen reports a sub-command after which the directory is not
// known: pushd and popd (the stack), and the builtins that run a command
// or code given to them (builtin cd, command cd, eval, source, .). A
// command word that is an expansion may be any of them.
func changesDirUnseen(s SubCommand) bool {
	if len(s.Words) == 0 {
		return false
	}
	if s.Words[0].Expanded {
		return true
	}
	switch s.Words[0].Value {
	case "pushd", "popd", "builtin", "command", "eval", "source", ".", "exec":
		return true
	case "set", "shopt":
		// set -P (set -o physical) changes what cd does with "..".
		for _, w := range s.Words[1:] {
			if w.Expanded || strings.Contains(w.Value, "physical") ||
				(strings.HasPrefix(w.Value, "-") || strings.HasPrefix(w.Value, "+")) && strings.Contains(w.Value, "P") {
				return true
			}
		}
	}
	return false
}

// cdTarget is where cd with args leads from dir ("" when unknown).
func (ctx Context) cdTarget(dir string, args []Word) string {
	physical := false
	for len(args) > 0 && strings.HasPrefix(args[0].Value, "-") && args[0].Value != "-" && !args[0].Expanded {
		if args[0].Value == "--" {
			args = args[1:]
			break
		}
		// cd -P resolves links before "..", as the kernel does; plain cd
		// (-L) works on the path as written, as Clean does.
		physical = physical || strings.Contains(args[0].Value, "P")
		args = args[1:]
	}
	if len(args) == 0 {
		return ctx.Home
	}
	a := args[0]
	if a.Expanded || a.Pattern || a.Value == "-" || a.Value == "" {
		return ""
	}
	v := a.Value
	if ctx.CDPath != "" && !filepath.IsAbs(v) && !strings.HasPrefix(v, "./") && !strings.HasPrefix(v, "../") && v != "." && v != ".." {
		return ""
	}
	if physical && !strings.HasPrefix(v, "~") {
		if !filepath.IsAbs(v) {
			if dir == "" {
				return ""
			}
			v = dir + string(filepath.Separator) + v
		}
		return physicalPath(v)
	}
	return ctx.absPath(dir, v)
}

// absPath makes v absolute against dir, resolving a leading ~ ("" when it
// cannot be known).
func (ctx Context) absPath(dir, v string) string {
	switch {
	case v == "~" || strings.HasPrefix(v, "~/"):
		if ctx.Home == "" {
			return ""
		}
		return filepath.Join(ctx.Home, v[1:])
	case strings.HasPrefix(v, "~"):
		return ""
	case filepath.IsAbs(v):
		return filepath.Clean(v)
	case dir == "":
		return ""
	}
	return filepath.Join(dir, v)
}

func (ctx Context) inside(p string) bool {
	return p != "" && ctx.Inside != nil && ctx.Inside(p)
}

// gitRepoInside reports whether the repository a git command with args
// would use, started in dir, is known to be inside the roots. The global
// options are those gitReadOnly lets through (-C among them).
func (ctx Context) gitRepoInside(dir string, args []Word) bool {
	for i := 0; i < len(args); i++ {
		v := args[i].Value
		if v == "--no-pager" || v == "-P" || v == "--no-optional-locks" {
			continue
		}
		if v != "-C" {
			break
		}
		if i+1 >= len(args) || args[i+1].Expanded || args[i+1].Pattern {
			return false
		}
		if v := args[i+1].Value; v != "" {
			// git -C "" changes nothing.
			dir = ctx.absPath(dir, v)
		}
		i++
	}
	if dir == "" || !ctx.inside(dir) {
		return false
	}
	repo, gitDirs := findRepository(dir)
	if repo == "" {
		// No repository: git refuses to run and reads no configuration
		// but the user's own.
		return true
	}
	for _, d := range gitDirs {
		if !ctx.inside(d) {
			return false
		}
	}
	return ctx.inside(repo)
}

// findRepository repeats git's discovery from dir: the first folder
// upward that holds a .git (folder or gitdir file) or is itself a bare
// repository. It returns that folder and the git directories it points to
// (a gitdir file's target and its commondir), which must be inside the
// roots too.
func findRepository(dir string) (string, []string) {
	for d := filepath.Clean(dir); ; {
		dotGit := filepath.Join(d, ".git")
		if fi, err := os.Lstat(dotGit); err == nil {
			if !fi.IsDir() {
				return d, gitFileDirs(d, dotGit)
			}
			return d, []string{dotGit}
		} else if !os.IsNotExist(err) {
			// Unreadable: git may still find something there.
			return "/", nil
		}
		if isBareRepository(d) {
			return d, []string{d}
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", nil
		}
		d = parent
	}
}

// gitFileDirs reads a .git file ("gitdir: <path>") and the commondir of
// the folder it names. A file it cannot read names the file system root,
// which no workspace holds.
func gitFileDirs(d, dotGit string) []string {
	b, err := readSmallFile(dotGit)
	line, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if err != nil || !ok {
		if fi, serr := os.Stat(dotGit); serr == nil && fi.IsDir() {
			// A link to a folder.
			return []string{dotGit}
		}
		return []string{"/"}
	}
	gd := strings.TrimSpace(line)
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(d, gd)
	}
	dirs := []string{gd}
	if c, err := readSmallFile(filepath.Join(gd, "commondir")); err == nil {
		cd := strings.TrimSpace(string(c))
		if !filepath.IsAbs(cd) {
			cd = filepath.Join(gd, cd)
		}
		dirs = append(dirs, cd)
	}
	return dirs
}

// readSmallFile reads a regular file of at most 4 KiB: a .git that is a
// link to /dev/zero or a named pipe must not hang or exhaust the server.
func readSmallFile(p string) ([]byte, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return nil, os.ErrInvalid
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 4096))
}

// isBareRepository is git's test for a git directory: HEAD, objects and
// refs.
func isBareRepository(d string) bool {
	for _, name := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Lstat(filepath.Join(d, name)); err != nil {
			return false
		}
	}
	return true
}

// maxTargets bounds the paths one sub-command's globs may expand to;
// beyond it the targets count as unknown.
const maxTargets = 512

// fileWriters are programs whose arguments name files they write: when
// one of those arguments holds an expansion, what is written is unknown.
// (An argument of any program is still checked when it is literal.)
var fileWriters = lazy.Value[map[string]bool]{Build: func() map[string]bool {
	return map[string]bool{
		"cp": true, "mv": true, "install": true, "ln": true, "tee": true, "touch": true, "dd": true,
		"truncate": true, "rsync": true, "tar": true, "unzip": true, "mkdir": true, "rm": true, "chmod": true,
		"chown": true, "patch": true, "sed": true, "awk": true, "sort": true, "curl": true, "wget": true,
		"ed": true, "ex": true, "vi": true, "vim": true, "perl": true,
	}
}}

// resolveTargets fills s.Targets and s.Unresolved.
func (ctx Context) resolveTargets(s *SubCommand) {
	seen := map[string]bool{}
	add := func(v string, pattern bool) {
		if s.Unresolved != "" {
			return
		}
		paths, ok := ctx.expand(s.Dir, v, pattern)
		if !ok {
			s.Unresolved = "it names a file by a pattern that cannot be worked out before it runs, or by a relative path in a directory that is not known"
			return
		}
		for _, p := range paths {
			if !seen[p] {
				seen[p] = true
				s.Targets = append(s.Targets, p)
			}
		}
		if len(s.Targets) > maxTargets {
			s.Unresolved = "its file names expand to too many files to check"
		}
	}
	for _, r := range s.Redirects {
		if r.Expanded || r.Value == "" {
			s.Unresolved = "it redirects output to a file whose name is known only when it runs"
			continue
		}
		add(r.Value, r.Pattern)
	}
	if s.ReadOnly || s.HomeRead != "" || len(s.Words) == 0 {
		// A sub-command that reads under the home folder is read-only
		// otherwise: its arguments name nothing it writes.
		return
	}
	writer := !s.Words[0].Expanded && fileWriters.Get()[s.Root]
	for _, w := range s.Words[1:] {
		if w.Expanded {
			if writer && s.Unresolved == "" {
				s.Unresolved = "it names a file through a variable or a command, known only when it runs"
			}
			continue
		}
		v := w.Value
		if v == "" || v == "-" || v == "--" {
			continue
		}
		if s.Dir == "" && !filepath.IsAbs(v) && !strings.HasPrefix(v, "~") && !writer {
			continue
		}
		add(v, w.Pattern)
		if _, val, ok := strings.Cut(v, "="); ok && val != "" {
			add(val, w.Pattern)
		}
		if len(v) > 2 && v[0] == '-' && v[1] != '-' {
			add(v[2:], w.Pattern)
		}
	}
}

// expand turns one word into the absolute paths it may name: braces and
// globs expanded against the file system, the literal word kept too (bash
// keeps a pattern that matches nothing). An entry "" means a relative
// path in an unknown directory; false means the word may name anything.
func (ctx Context) expand(dir, v string, pattern bool) ([]string, bool) {
	words, ok := []string{v}, true
	if pattern {
		// Only unquoted braces are expanded.
		words, ok = expandBraces(v, 0)
	}
	if !ok {
		return nil, false
	}
	var out []string
	for _, b := range words {
		p := ctx.absPath(dir, b)
		if b == "" || p == "" {
			return nil, false
		}
		out = append(out, p)
		if strings.Contains(b, "..") && !strings.HasPrefix(b, "~") {
			// The kernel resolves "link/.." from the link's target, not
			// by dropping both as Clean does: sub/../config reaches
			// .git/config when sub links to .git/hooks.
			raw := b
			if !filepath.IsAbs(raw) {
				raw = dir + string(filepath.Separator) + raw
			}
			if ph := physicalPath(raw); ph != p {
				out = append(out, ph)
			}
		}
		if pattern && (strings.Contains(b, "**") || strings.Contains(b, "(")) {
			// globstar and extglob patterns (@(…), !(…), …), which Go's
			// matcher does not read as bash does; shopt may turn them on.
			return nil, false
		}
		if !pattern || !strings.ContainsAny(b, "*?[") {
			continue
		}
		wild := 0
		for _, part := range strings.Split(p, string(filepath.Separator)) {
			if strings.ContainsAny(part, "*?[") {
				wild++
			}
		}
		if wild > 2 {
			// Expanding it could walk much of the file system.
			return nil, false
		}
		matches, err := filepath.Glob(strings.ReplaceAll(p, "[!", "[^"))
		if err != nil {
			// A pattern Go cannot read ([[:alpha:]] and the like) may
			// match anything.
			return nil, false
		}
		out = append(out, matches...)
	}
	return out, true
}

// physicalPath resolves an absolute path the way the kernel does: one
// component at a time, a link replaced by its target before the next
// component (so ".." after a link leaves the link's target). A missing
// component ends the walk, the rest appended as written.
func physicalPath(p string) string {
	todo := strings.Split(filepath.ToSlash(p), "/")
	cur := string(filepath.Separator)
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			if err != nil {
				return filepath.Join(append([]string{next}, todo...)...)
			}
			cur = next
			continue
		}
		links++
		target, err := os.Readlink(next)
		if err != nil || links > 40 {
			return filepath.Join(append([]string{next}, todo...)...)
		}
		if filepath.IsAbs(target) {
			cur = string(filepath.Separator)
		}
		todo = append(strings.Split(filepath.ToSlash(target), "/"), todo...)
	}
	return cur
}

// expandBraces expands bash's brace alternatives ({a,b}), keeping the word
// as written as well. ok is false when the word may name anything: a
// sequence ({a..z}), or more alternatives than are worth checking.
// Nesting is followed to a small depth.
func expandBraces(v string, depth int) (words []string, ok bool) {
	open := strings.IndexByte(v, '{')
	if open < 0 || depth > 4 {
		return []string{v}, true
	}
	level, close := 0, -1
	var commas []int
	for i := open; i < len(v) && close < 0; i++ {
		switch v[i] {
		case '{':
			level++
		case '}':
			level--
			if level == 0 {
				close = i
			}
		case ',':
			if level == 1 {
				commas = append(commas, i)
			}
		}
	}
	if close < 0 {
		return []string{v}, true
	}
	if len(commas) == 0 {
		if strings.Contains(v[open:close], "..") {
			return nil, false
		}
		rest, ok := expandBraces(v[close+1:], depth+1)
		if !ok {
			return nil, false
		}
		out := make([]string, 0, len(rest))
		for _, r := range rest {
			out = append(out, v[:close+1]+r)
		}
		return out, true
	}
	out := []string{v}
	start := open + 1
	for _, end := range append(commas, close) {
		more, ok := expandBraces(v[:open]+v[start:end]+v[close+1:], depth+1)
		if !ok {
			return nil, false
		}
		out = append(out, more...)
		if len(out) > maxTargets {
			return nil, false
		}
		start = end + 1
	}
	return out, true
}

// MovesFolders reports whether a program of that name moves, copies or
// links whole folders, so that naming a folder that holds a protected
// file (mv .git g, ln -s .git g, cp -r x .git) reaches the file.
func MovesFolders(root string) bool {
	switch root {
	case "mv", "cp", "ln", "rsync", "tar", "unzip", "install", "rm", "mkdir":
		return true
	}
	return false
}

// WritesComputedPaths reports a sub-command that writes files whose names
// come from data rather than its arguments: an archive being unpacked
// (tar x…, unzip, cpio -i, 7z x) or a patch being applied. They land below
// the directory it runs in (and elsewhere, for a hostile archive: the OS
// sandbox is the guard there).
func WritesComputedPaths(s SubCommand) bool {
	if len(s.Words) == 0 || s.Words[0].Expanded {
		return false
	}
	switch s.Root {
	case "unzip", "cpio", "patch", "7z", "7za", "bsdtar", "unrar":
		return true
	case "tar":
		for i, w := range s.Words[1:] {
			v := w.Value
			switch {
			case v == "--extract" || v == "--get":
				return true
			case strings.HasPrefix(v, "--"):
			case strings.HasPrefix(v, "-") && strings.ContainsRune(v, 'x'):
				return true
			case i == 0 && !strings.HasPrefix(v, "-") && strings.ContainsRune(v, 'x'):
				// Old-style: tar xzf a.tgz.
				return true
			}
		}
	}
	return false
}

// GitDirs are the git directories of the repository whose worktree is
// root when root/.git is a file (a worktree or a submodule): the folder
// it names and that folder's commondir. They are empty when .git is a
// folder or missing.
func GitDirs(root string) []string {
	dotGit := filepath.Join(root, ".git")
	if fi, err := os.Lstat(dotGit); err != nil || fi.IsDir() {
		return nil
	}
	dirs := gitFileDirs(root, dotGit)
	if len(dirs) == 1 && dirs[0] == "/" {
		return nil
	}
	return dirs
}
