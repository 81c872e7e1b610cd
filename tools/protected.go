package tools

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/qwen-ls/qwen-ls/tools/sandbox"
	"github.com/qwen-ls/qwen-ls/tools/shellsafe"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// Protected paths: files whose change can run code later, widen what the
// agent may do, or steer every future session. Inside the workspace roots
// they are the protected class the OS sandbox keeps read-only
// (sandbox.Class: the git directory but what git writes for commits,
// branches, merges and stashes, .qwen, .vscode, .idea, .devcontainer,
// .husky, .githooks, .envrc, .gitattributes, .gitmodules, memory files),
// so that a file tool and a command that runs unasked meet one
// definition. A write to one by a file tool always asks, in every approval
// mode, yolo included, whatever the allow rules say; a shell command that
// names one asks in every mode but yolo, where the sandbox refuses the
// write itself. The user's settings ask in yolo too, and the trusted
// folders list is never written by a tool at all.

// Protection says why a path is protected.
type Protection struct {
	// Reason is shown to the user with the question ("" when the path
	// is not protected).
	Reason string
	// Forbidden: no tool may write the path, whatever the mode.
	Forbidden bool
	// EvenInYolo: the question is asked in yolo mode too. It is set for
	// a file that can turn folder trust off (the user's settings), for a
	// file tool's write to the protected class (no sandbox stands behind
	// a file tool), and for a shell command whose targets cannot all be
	// known before it runs: it may write the trusted folders list.
	EvenInYolo bool
}

// stronger returns the protection that weighs more: forbidden, then asked
// even in yolo, then asked.
func stronger(a, b Protection) Protection {
	rank := func(p Protection) int {
		switch {
		case p.Forbidden:
			return 3
		case p.EvenInYolo:
			return 2
		case p.Reason != "":
			return 1
		}
		return 0
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// ProtectedWrite says whether a file tool's write to abs (write_file,
// edit, save_memory) is protected, looking at the path as given and with
// symbolic links resolved. A write to the protected class asks even in
// yolo: the tool writes with the server's own rights, so the question is
// the only guard.
func (e *Env) ProtectedWrite(abs string) Protection { return e.protectedWrite(abs, true) }

// protectedWrite is ProtectedWrite; byFileTool false judges a path a shell
// command names, whose write to the protected class the sandbox refuses
// in yolo (and which, as before, asks in every other mode).
func (e *Env) protectedWrite(abs string, byFileTool bool) Protection {
	if abs == "" {
		return Protection{}
	}
	clean, real := filepath.Clean(abs), workspace.RealPath(abs)
	if pr := e.userFileProtection(clean, real); pr.Reason != "" {
		return pr
	}
	if pr := e.classProtection(clean, real); pr.Reason != "" {
		pr.EvenInYolo = byFileTool
		return pr
	}
	// Outside the roots (only a shell command writes there) and where
	// the class reads no paths (Windows), the names decide.
	if pr := e.protection(clean); pr.Reason != "" || real == clean {
		return pr
	}
	return e.protection(real)
}

// classProtection protects what the workspace's protected class holds
// (Env.protectedClass, the sandbox's own): the path as written, with its
// folder's links resolved (as the kernel opens it), and fully resolved
// (where a link at the end leads).
func (e *Env) classProtection(clean, real string) Protection {
	c := e.protectedClass()
	if len(c.Roots) == 0 {
		return Protection{}
	}
	viaDir := filepath.Join(workspace.RealPath(filepath.Dir(clean)), filepath.Base(clean))
	for _, p := range []string{clean, viaDir, real} {
		if k, ok := c.Protected(p); ok {
			return Protection{Reason: e.classReason(k, p)}
		}
	}
	return Protection{}
}

// classReason says why p, of class k, is protected: the reason its names
// give where they name it (.git/hooks, .vscode, ...), else the class's.
func (e *Env) classReason(k sandbox.Kind, p string) string {
	if r := e.protection(p).Reason; r != "" {
		return r
	}
	switch k {
	case sandbox.KindGit:
		return gitDirReason
	case sandbox.KindQwen:
		return qwenReason
	}
	return k.Why()
}

// userFileProtection protects the user's own settings and trust list,
// named by clean or by its real path real. Each file's real path is
// resolved once.
func (e *Env) userFileProtection(clean, real string) Protection {
	same := func(file string) bool { return clean == file || real == workspace.RealPath(file) }
	for _, dir := range e.userDirs() {
		if same(filepath.Join(dir, workspace.TrustFileName)) {
			return Protection{Forbidden: true, Reason: trustListReason}
		}
		if same(filepath.Join(dir, "settings.json")) {
			return Protection{Reason: userSettingsReason, EvenInYolo: true}
		}
	}
	if f := e.Settings().SystemFile(); f != "" && same(f) {
		return Protection{Reason: userSettingsReason, EvenInYolo: true}
	}
	return Protection{}
}

// protection protects p by its names, wherever it is: .qwen/settings.json,
// .qwen/agents, what a .git folder holds but the entries git writes for
// commits, branches, merges and stashes, .vscode, .idea, .devcontainer,
// .husky, .githooks, .envrc, .gitattributes, .gitmodules and memory file
// names. Inside the roots the class says the same and more; the names
// judge what a shell command writes outside them, and give the reasons.
func (e *Env) protection(p string) Protection {
	parts := strings.Split(filepath.ToSlash(p), "/")
	n := len(parts)
	for i := 0; i < n-1; i++ {
		switch {
		case strings.EqualFold(parts[i], ".qwen") && i == n-2 && strings.EqualFold(parts[i+1], "settings.json"):
			return Protection{Reason: workspaceSettingsReason}
		case strings.EqualFold(parts[i], ".qwen") && strings.EqualFold(parts[i+1], "agents"):
			return Protection{Reason: agentsReason}
		case strings.EqualFold(parts[i], ".git") && strings.EqualFold(parts[i+1], "hooks"):
			return Protection{Reason: gitHooksReason}
		case strings.EqualFold(parts[i], ".git") && i == n-2 && strings.EqualFold(parts[i+1], "config"):
			return Protection{Reason: gitConfigReason}
		case strings.EqualFold(parts[i], ".git") && strings.EqualFold(parts[i+1], "info"):
			return Protection{Reason: gitInfoReason}
		case strings.EqualFold(parts[i], ".git") && !gitWritesFor(parts[i+1:]):
			return Protection{Reason: gitDirReason}
		case strings.EqualFold(parts[i], ".vscode"):
			return Protection{Reason: vscodeReason}
		case strings.EqualFold(parts[i], ".idea"):
			return Protection{Reason: ideaReason}
		case strings.EqualFold(parts[i], ".devcontainer"):
			return Protection{Reason: devcontainerReason}
		case strings.EqualFold(parts[i], ".husky") || strings.EqualFold(parts[i], ".githooks"):
			return Protection{Reason: hookFolderReason}
		}
	}
	base := parts[n-1]
	switch {
	case strings.EqualFold(base, ".envrc"):
		return Protection{Reason: envrcReason}
	case strings.EqualFold(base, ".gitattributes"):
		return Protection{Reason: gitattributesReason}
	case strings.EqualFold(base, ".gitmodules"):
		return Protection{Reason: gitmodulesReason}
	}
	for _, name := range e.memoryFileNames() {
		if strings.EqualFold(base, name) {
			return Protection{Reason: memoryReason}
		}
	}
	return Protection{}
}

// gitWritesFor reports whether rel, the parts of a path below a .git
// folder, is one git writes for commits, branches, merges and stashes
// (sandbox.GitTopWritable for the entry at the top; objects/info, where
// alternates live, is not among them).
func gitWritesFor(rel []string) bool {
	if len(rel) == 0 || !sandbox.GitTopWritable(rel[0]) {
		return false
	}
	return len(rel) < 2 || !strings.EqualFold(rel[0], "objects") || !strings.EqualFold(rel[1], "info")
}

// Why each protected path is protected, as the user is told. A path
// named in a shell command gets the same reason as the path itself.
const (
	// trustOffReason is why no tool may turn folder trust off.
	trustOffReason          = "turning folder trust off (security.folderTrust.enabled) is the user's own decision, made by hand"
	trustListReason         = "the trusted folders list is changed only by the user, with `qwen-ls trust` or the editor's \"Trust this folder\""
	userSettingsReason      = "your user settings can start processes (MCP servers, discovery commands), add allow rules, raise the approval mode and change the model endpoint"
	workspaceSettingsReason = "workspace settings can start processes (MCP servers, discovery commands), add allow rules, raise the approval mode and change the model endpoint"
	settingsFileReason      = "settings files can start processes (MCP servers, discovery commands), add allow rules, raise the approval mode and change the model endpoint"
	agentsReason            = "subagent definitions in .qwen/agents give instructions and tools to future subagents"
	qwenReason              = "files in .qwen (settings, subagents, commands) steer every future session"
	gitHooksReason          = "files in .git/hooks run as programs on your next git command"
	gitConfigReason         = "git's config can make git run programs (hooks path, fsmonitor, aliases, filters) on your next git command"
	gitDirReason            = "files in .git/ other than what git writes for commits, branches, merges and stashes (commondir, objects/info/alternates, the configs of worktrees and submodules) make git read another repository's config and run the programs it names"
	memoryReason            = "memory files are read into the instructions of every future session"
	gitInfoReason           = "files in .git/info (attributes, exclude) steer git, and attributes name the filters git runs"
	gitattributesReason     = ".gitattributes names the filters and diff drivers git runs on your files"
	gitmodulesReason        = ".gitmodules says where git fetches submodules from and where it puts them"
	vscodeReason            = "files in .vscode run later: tasks.json can run a task when the folder opens, launch.json and settings.json name programs the editor starts"
	ideaReason              = "files in .idea hold run configurations the IDE runs"
	devcontainerReason      = "files in .devcontainer say which container the editor builds and which commands it runs there"
	hookFolderReason        = "hook folders (.husky, .githooks) hold programs git runs on your next commit"
	envrcReason             = ".envrc runs as a shell script when direnv enters the folder"
	unresolvedReason        = "the command may write a protected file, such as the trusted folders list: "
)

// EditProtection is ProtectedWrite for a proposed change of abs from
// oldText to newText: a change of a settings file that turns folder trust
// off is refused like the trust list.
func (e *Env) EditProtection(abs, oldText, newText string) Protection {
	if strings.EqualFold(filepath.Base(abs), "settings.json") && workspace.DisablesFolderTrust(newText) && !workspace.DisablesFolderTrust(oldText) {
		return Protection{Forbidden: true, Reason: trustOffReason}
	}
	return e.ProtectedWrite(abs)
}

// userDirs are where the user's own qwen files live: the settings' user
// folder and qwen-ls's state folder (the same folder unless overridden,
// and then listed once).
func (e *Env) userDirs() []string {
	var dirs []string
	if f := e.Settings().UserFile(); f != "" {
		dirs = append(dirs, filepath.Dir(f))
	}
	if e.QwenHome != "" {
		if home := filepath.Clean(e.QwenHome); !slices.Contains(dirs, home) {
			dirs = append(dirs, home)
		}
	}
	return dirs
}

// memoryFileNames are the names of context.fileName, or the defaults.
func (e *Env) memoryFileNames() []string {
	var names []string
	for _, n := range e.Settings().Strings("context.fileName") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, filepath.Base(n))
		}
	}
	if len(names) == 0 {
		names = []string{defaultMemoryFileName, "AGENTS.md"}
	}
	return names
}

// ShellCommandProtection is the weightiest shellProtection of the
// sub-commands of a that are not read-only. One that asks only because it
// reads under the home folder writes nothing, and is left out: reading
// ~/.qwen/settings.json is not changing it.
func (e *Env) ShellCommandProtection(a *shellsafe.Analysis) Protection {
	var best Protection
	for _, sub := range a.SubCommands {
		if sub.ReadOnly || sub.HomeRead != "" {
			continue
		}
		if best = stronger(best, e.shellProtection(sub)); best.Forbidden {
			break
		}
	}
	return best
}

// shellProtection says whether a shell sub-command that is not read-only
// may write a protected file (tools.md §6.3). It judges the paths the
// analysis resolved (shellsafe.SubCommand.Targets: redirection targets
// and path arguments, with cd, globs, quotes and ~ worked out; links are
// resolved here), then the text as written, for names that only a program
// reads (python -c "open('.git/config','w')"). A command that moves,
// copies or links folders is protected also when a target holds a
// protected path (mv .git g, ln -s .git g). When some target cannot be
// known before the command runs it may be any file, the trusted folders
// list included, and it asks even in yolo mode. The OS sandbox, where
// there is one, is the guard for what the analysis cannot see.
func (e *Env) shellProtection(sub shellsafe.SubCommand) Protection {
	best := e.shellTextProtection(sub.Text)
	if gitConfigWrite(sub) {
		best = stronger(best, Protection{Reason: gitConfigReason})
	}
	for _, p := range sub.Targets {
		if best.Forbidden {
			return best
		}
		best = stronger(best, e.protectedWrite(p, false))
		if shellsafe.MovesFolders(sub.Root) {
			best = stronger(best, e.holdsProtected(p))
		}
	}
	if shellsafe.WritesComputedPaths(sub) {
		// An archive or a patch names the files it writes, below the
		// directory it runs in.
		if sub.Dir == "" {
			best = stronger(best, Protection{Reason: unresolvedReason + "it unpacks files in a directory that is not known", EvenInYolo: true})
		} else {
			best = stronger(best, e.holdsProtected(sub.Dir))
		}
	}
	if sub.Unresolved != "" && !best.Forbidden {
		best = stronger(best, Protection{Reason: unresolvedReason + sub.Unresolved, EvenInYolo: true})
	}
	return best
}

// gitConfigWrite reports a git config command that sets, adds, removes or
// edits a value: it writes .git/config (or the user's ~/.gitconfig, which
// steers every repository) without naming the file.
func gitConfigWrite(sub shellsafe.SubCommand) bool {
	if sub.Root != "git" || len(sub.Words) < 2 {
		return false
	}
	words := sub.Words[1:]
	for len(words) > 0 && strings.HasPrefix(words[0].Value, "-") {
		if v := words[0].Value; v == "-C" || v == "-c" {
			if len(words) < 2 {
				return false
			}
			words = words[1:]
		}
		words = words[1:]
	}
	if len(words) == 0 || words[0].Value != "config" {
		return false
	}
	operands := 0
	for _, w := range words[1:] {
		v := w.Value
		switch {
		case w.Expanded:
			return true
		case slices.Contains([]string{"--add", "--unset", "--unset-all", "--replace-all", "-e", "--edit",
			"--rename-section", "--remove-section"}, v):
			return true
		case strings.HasPrefix(v, "-"):
		default:
			if operands == 0 && slices.Contains([]string{"set", "unset", "edit", "rename-section", "remove-section"}, v) {
				return true
			}
			operands++
		}
	}
	return operands >= 2
}

// holdsProtected protects a folder that holds a protected path, with the
// weightiest reason among those it holds.
func (e *Env) holdsProtected(dir string) Protection {
	dir = filepath.Clean(dir)
	real := workspace.RealPath(dir)
	var best, generic Protection
	for _, p := range e.protectedPaths() {
		for _, d := range []string{dir, real} {
			if p != d && !strings.HasPrefix(p, d+string(filepath.Separator)) && d != string(filepath.Separator) {
				continue
			}
			pr := e.protectedWrite(filepath.Join(p, "x"), false)
			if pr.Reason == "" {
				pr = e.protectedWrite(p, false)
			}
			if pr.Reason == "" && generic.Reason == "" {
				generic = Protection{Reason: "it writes into a folder that holds " + p}
			}
			best = stronger(best, pr)
			break
		}
	}
	if best.Reason == "" {
		return generic
	}
	return best
}

// shellTextProtection looks for protected names in the text of a shell
// sub-command as written.
func (e *Env) shellTextProtection(text string) Protection {
	low := strings.ToLower(text)
	switch {
	case strings.Contains(low, "foldertrust"):
		return Protection{Forbidden: true, Reason: trustOffReason}
	case strings.Contains(low, strings.ToLower(workspace.TrustFileName)):
		return Protection{Forbidden: true, Reason: trustListReason}
	case strings.Contains(low, ".qwen/settings.json"):
		return Protection{Reason: settingsFileReason}
	case strings.Contains(low, ".qwen/agents"):
		return Protection{Reason: agentsReason}
	case strings.Contains(low, ".git/hooks"):
		return Protection{Reason: gitHooksReason}
	case strings.Contains(low, ".git/config"):
		return Protection{Reason: gitConfigReason}
	case strings.Contains(low, ".git/info"):
		return Protection{Reason: gitInfoReason}
	case strings.Contains(low, ".git/commondir"), strings.Contains(low, ".git/objects/info"),
		strings.Contains(low, ".git/modules"), strings.Contains(low, ".git/worktrees"):
		return Protection{Reason: gitDirReason}
	case strings.Contains(low, ".vscode/"):
		return Protection{Reason: vscodeReason}
	case strings.Contains(low, ".idea/"):
		return Protection{Reason: ideaReason}
	case strings.Contains(low, ".devcontainer/"):
		return Protection{Reason: devcontainerReason}
	case strings.Contains(low, ".husky/"), strings.Contains(low, ".githooks/"):
		return Protection{Reason: hookFolderReason}
	case strings.Contains(low, ".envrc"):
		return Protection{Reason: envrcReason}
	case strings.Contains(low, ".gitattributes"):
		return Protection{Reason: gitattributesReason}
	case strings.Contains(low, ".gitmodules"):
		return Protection{Reason: gitmodulesReason}
	}
	for _, name := range e.memoryFileNames() {
		if strings.Contains(low, strings.ToLower(name)) {
			return Protection{Reason: memoryReason}
		}
	}
	return Protection{}
}

// protectedPaths lists, as absolute paths, what ProtectedWrite protects
// for the current roots and the user's qwen folders, so that a shell
// command that moves, copies or unpacks folders is judged by what its
// targets hold. Per root: .git, .qwen, .vscode, .idea, .devcontainer, .husky,
// .githooks, .envrc, .gitattributes, .gitmodules and the memory files
// (QWEN.md, AGENTS.md or context.fileName); per git directory (the root's
// .git folder, and when .git is a file, a worktree's or a submodule's, the
// git directories it names) what git does not write for commits,
// branches, merges and stashes: hooks, config, config.worktree, info,
// commondir, modules, worktrees and objects/info whether they exist or
// not, and every other entry that is there. Per user folder:
// settings.json, the trusted folders list and the memory files; and the
// system settings file. A path in the list need not exist. The list is
// built afresh on each call, from the roots and settings of that moment.
func (e *Env) protectedPaths() []string {
	var out []string
	add := func(p string) {
		if p != "" && !slices.Contains(out, p) {
			out = append(out, filepath.Clean(p))
		}
	}
	memory := e.memoryFileNames()
	if e.Workspace != nil && e.Workspace.Roots != nil {
		for _, root := range e.Workspace.Roots.List() {
			// .git itself, folder or file: replacing it points git at
			// another directory.
			dotGit := filepath.Join(root, ".git")
			add(dotGit)
			gitDirs := []string{dotGit}
			if fi, err := os.Lstat(dotGit); err == nil && !fi.IsDir() {
				gitDirs = shellsafe.GitDirs(root)
			}
			for _, gd := range gitDirs {
				for _, p := range gitReadOnlyEntries(gd) {
					add(p)
				}
			}
			for _, rel := range []string{".qwen", ".vscode", ".idea", ".devcontainer", ".husky", ".githooks",
				".envrc", ".gitattributes", ".gitmodules"} {
				add(filepath.Join(root, rel))
			}
			for _, m := range memory {
				add(filepath.Join(root, m))
			}
		}
	}
	for _, dir := range e.userDirs() {
		add(filepath.Join(dir, "settings.json"))
		add(filepath.Join(dir, workspace.TrustFileName))
		for _, m := range memory {
			add(filepath.Join(dir, m))
		}
	}
	if e.Workspace != nil {
		add(e.Settings().SystemFile())
	}
	return out
}

// gitReadOnlyEntries are the paths of git directory gd that git does not
// write for commits, branches, merges and stashes: the ones that steer
// git, listed whether they exist or not, and whatever else is at its top
// (sandbox.GitTopWritable says which entries git writes).
func gitReadOnlyEntries(gd string) []string {
	var out []string
	for _, rel := range []string{"hooks", "config", "config.worktree", "info", "commondir", "modules", "worktrees", "objects/info"} {
		out = append(out, filepath.Join(gd, filepath.FromSlash(rel)))
	}
	entries, _ := os.ReadDir(gd)
	for _, en := range entries {
		if p := filepath.Join(gd, en.Name()); !sandbox.GitTopWritable(en.Name()) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}
