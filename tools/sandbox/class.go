package sandbox

import (
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Kind names a protected class: files inside the workspace roots that
// configure or run code later, so that a command that runs unasked may
// not write them, whatever their name was when the list was made.
type Kind string

const (
	// KindGit is a git directory: read-only except what git's own
	// commands write for commits, branches, merges and stashes.
	KindGit Kind = "git"
	// KindQwen is a .qwen folder: settings, subagents, commands.
	KindQwen Kind = "qwen"
	// KindEditor is an editor or IDE folder (.vscode, .idea,
	// .devcontainer), whose tasks and launch files run programs.
	KindEditor Kind = "editor"
	// KindEnv is an .envrc, which direnv runs when it enters the folder.
	KindEnv Kind = "env"
	// KindGitMeta is a .gitattributes or .gitmodules: filters, drivers
	// and submodule sources git acts on.
	KindGitMeta Kind = "git-meta"
	// KindHooks is a hook folder outside the git directory (.husky,
	// .githooks, the repository's core.hooksPath).
	KindHooks Kind = "hooks"
	// KindMemory is a memory file (QWEN.md, AGENTS.md or
	// context.fileName), read into every future session.
	KindMemory Kind = "memory"
)

// Why says, in a sentence the person and the model read, why the class
// is protected.
func (k Kind) Why() string {
	switch k {
	case KindGit:
		return "git's own files are read-only to commands that run unasked, except what git writes for commits, branches, merges and stashes: config, hooks, info/, commondir, alternates and the like make git run programs or read other repositories"
	case KindQwen:
		return ".qwen holds settings, subagents and commands that steer every future session"
	case KindEditor:
		return "editor folders (.vscode, .idea, .devcontainer) hold tasks and launch files that run programs"
	case KindEnv:
		return ".envrc runs as a shell script when direnv enters the folder"
	case KindGitMeta:
		return ".gitattributes and .gitmodules name the filters, drivers and submodule sources git runs"
	case KindHooks:
		return "hook folders hold programs git runs on your next commit"
	case KindMemory:
		return "memory files are read into the instructions of every future session"
	}
	return ""
}

// protectedDirNames are folders protected wherever they are inside the
// roots, with everything below them.
var protectedDirNames = map[string]Kind{
	".git": KindGit, ".qwen": KindQwen, ".vscode": KindEditor, ".idea": KindEditor,
	".devcontainer": KindEditor, ".husky": KindHooks, ".githooks": KindHooks,
}

// protectedFileNames are files protected wherever they are inside the
// roots. Memory file names come from the Class.
var protectedFileNames = map[string]Kind{
	".envrc": KindEnv, ".gitattributes": KindGitMeta, ".gitmodules": KindGitMeta,
}

// DefaultMemoryNames are the memory files when context.fileName names none.
var DefaultMemoryNames = []string{"QWEN.md", "AGENTS.md"}

// gitTopWritable are the names at the top of a git directory that git's
// commands for commits, branches, merges and stashes write (each also with
// ".lock" after it, the lock git takes first). Everything else there
// (config, hooks, info, commondir, modules, worktrees, description and
// whatever git reads next year) is read-only: this is a list of what may
// be written, not of what may not.
var gitTopWritable = []string{
	"HEAD", "index", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "MERGE_MSG", "MERGE_MODE",
	"MERGE_RR", "MERGE_AUTOSTASH", "AUTO_MERGE", "COMMIT_EDITMSG", "TAG_EDITMSG", "SQUASH_MSG",
	"CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD", "packed-refs", "shallow", "gc.pid", "gc.log",
	"NOTES_MERGE_PARTIAL", "NOTES_MERGE_REF", "BISECT_LOG", "BISECT_START", "BISECT_TERMS",
	"BISECT_NAMES", "BISECT_EXPECTED_REV", "BISECT_ANCESTORS_OK", "BISECT_HEAD",
}

// gitTopWritablePrefixes are temporary files git makes beside the index:
// a split index's shared part, the index of a stash, the index of a
// commit of chosen paths.
var gitTopWritablePrefixes = []string{"sharedindex.", "index.stash.", "next-index-"}

// gitWritableDirs are the folders of a git directory git writes for the
// same commands: objects (but objects/info, where alternates live), refs,
// reflogs, rerere's records and Git LFS's object store.
var gitWritableDirs = []string{"objects", "refs", "logs", "rr-cache", "lfs"}

// gitWritable reports whether rel, a path inside a git directory (with
// slashes, not empty), may be written.
func gitWritable(rel string) bool {
	first, rest, nested := strings.Cut(rel, "/")
	if !nested {
		name := strings.TrimSuffix(first, ".lock")
		if slices.Contains(gitTopWritable, name) {
			return true
		}
		for _, p := range gitTopWritablePrefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		// A folder git may write in may be created when it is missing.
		return slices.Contains(gitWritableDirs, first)
	}
	if !slices.Contains(gitWritableDirs, first) {
		return false
	}
	if first == "objects" {
		// In any case: a case-insensitive file system (macOS's, a FAT
		// volume) opens objects/INFO/alternates as objects/info's.
		sub, _, _ := strings.Cut(rest, "/")
		return !strings.EqualFold(sub, "info")
	}
	return true
}

// GitTopWritable reports whether name, an entry at the top of a git
// directory, is one git's everyday commands write (the rest is kept
// read-only).
func GitTopWritable(name string) bool { return gitWritable(name) }

// Class is the protected class of one workspace: its roots, the git
// directories that live elsewhere (a worktree's or a submodule's, named
// by a .git file), and the names of memory files and hook folders.
type Class struct {
	// Roots are the workspace roots, clean absolute paths with links
	// resolved.
	Roots []string `json:"roots,omitempty"`
	// GitDirs are git directories found through .git files, or a
	// worktree's common directory, clean absolute real paths.
	GitDirs []string `json:"gitDirs,omitempty"`
	// MemoryNames are the memory file names (DefaultMemoryNames when
	// empty).
	MemoryNames []string `json:"memoryNames,omitempty"`
	// HookDirs are hook folders a repository's core.hooksPath names,
	// clean absolute paths.
	HookDirs []string `json:"hookDirs,omitempty"`
}

// Protected says whether writing p (creating, replacing, renaming it or
// its name, linking it, changing its mode) is refused to a command that
// runs unasked, and which class it belongs to. p is a clean absolute path
// as the kernel resolves it (links in its folders resolved; the last
// part as written). Outside the roots and the known git directories the
// class says nothing: the write allow-list decides there.
func (c Class) Protected(p string) (Kind, bool) {
	// Compared with slashes, so that Windows paths (where the file
	// tools use the class too) match the same way.
	p = filepath.ToSlash(filepath.Clean(p))
	if _, rel, ok := c.gitDir(p); ok {
		if rel == "" || !gitWritable(rel) {
			return KindGit, true
		}
		return "", false
	}
	for _, h := range c.HookDirs {
		if h = filepath.ToSlash(h); h != "" && within(p, h) {
			return KindHooks, true
		}
	}
	rel, ok := c.insideRoots(p)
	if !ok || rel == "" {
		return "", false
	}
	parts := strings.Split(rel, "/")
	for i, part := range parts {
		if k, hit := lookupFold(protectedDirNames, part); hit {
			return k, true
		}
		if i == len(parts)-1 {
			if k, hit := lookupFold(protectedFileNames, part); hit {
				return k, true
			}
			for _, m := range c.memoryNames() {
				if strings.EqualFold(part, m) {
					return KindMemory, true
				}
			}
		}
	}
	return "", false
}

// Within reports whether p is where the class is kept: inside a root, a
// known git directory or a hook folder. Below such a place, what a name
// means depends on where it is, not on how it got there.
func (c Class) Within(p string) bool {
	p = filepath.Clean(p)
	if _, ok := c.root(p); ok {
		return true
	}
	for _, d := range append(append([]string(nil), c.GitDirs...), c.HookDirs...) {
		if d != "" && within(p, d) {
			return true
		}
	}
	return false
}

// TreeMoveKeeps reports whether a folder or a symbolic link may be
// renamed from from to to without bringing protected names into the
// class. Protected only checks the moved name itself; what is below it
// comes along unchecked:
//
//   - from outside (the command's temporary folder, a cache), a folder may
//     hold anything: an .envrc, a .vscode folder, a whole git directory
//     with hooks; a link may lead to such a folder;
//   - a git directory's objects folder may be written, but not its info
//     folder (alternates): a folder built under refs and renamed to
//     objects would bring one.
//
// A file is judged by its new name alone. The caller answers a refusal
// with EXDEV, on which mv and its kin copy instead, name by name, through
// the guard.
func (c Class) TreeMoveKeeps(from, to string) bool {
	to = filepath.Clean(to)
	if !c.Within(to) {
		return true
	}
	if !c.Within(from) {
		return false
	}
	if _, rel, ok := c.gitDir(to); ok && strings.EqualFold(rel, "objects") {
		return false
	}
	return true
}

// gitDir finds the git directory p is in (or is): a known git directory,
// or, inside the roots, the nearest folder named .git above p. rel is p
// relative to it, with slashes.
func (c Class) gitDir(p string) (dir, rel string, ok bool) {
	for _, g := range c.GitDirs {
		if g = filepath.ToSlash(g); g != "" && within(p, g) {
			return g, relSlash(g, p), true
		}
	}
	root, inside := c.root(p)
	if !inside {
		return "", "", false
	}
	dir = root
	parts := strings.Split(relSlash(root, p), "/")
	for i, part := range parts {
		if part == "" {
			break
		}
		dir = path.Join(dir, part)
		if strings.EqualFold(part, ".git") {
			return dir, strings.Join(parts[i+1:], "/"), true
		}
	}
	return "", "", false
}

// root is the first root that holds p.
func (c Class) root(p string) (string, bool) {
	for _, r := range c.Roots {
		if r = filepath.ToSlash(r); r != "" && within(p, r) {
			return r, true
		}
	}
	return "", false
}

// insideRoots returns p relative to the first root that holds it.
func (c Class) insideRoots(p string) (string, bool) {
	r, ok := c.root(p)
	if !ok {
		return "", false
	}
	return relSlash(r, p), true
}

func (c Class) memoryNames() []string {
	if len(c.MemoryNames) > 0 {
		return c.MemoryNames
	}
	return DefaultMemoryNames
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// relSlash is p relative to dir (p within dir), "" for dir itself.
func relSlash(dir, p string) string {
	if p == dir {
		return ""
	}
	if dir == "/" {
		return strings.TrimPrefix(p, "/")
	}
	return strings.TrimPrefix(p, dir+"/")
}

// lookupFold finds name in m ignoring case: a case-insensitive file
// system (macOS, or a FAT or NTFS volume on Linux) opens .Git as .git.
func lookupFold(m map[string]Kind, name string) (Kind, bool) {
	if k, ok := m[name]; ok {
		return k, true
	}
	for n, k := range m {
		if strings.EqualFold(n, name) {
			return k, true
		}
	}
	return "", false
}
