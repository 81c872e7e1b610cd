package tools

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/qwen-ls/qwen-ls/tools/shellsafe"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// Protected paths: files whose change can run code later, widen what the
// agent may do, or steer every future session. A write to one always asks
// the user, in every approval mode but yolo, whatever the allow rules say;
// the trusted folders list is never written by a tool at all.

// Protection says why a path is protected.
type Protection struct {
	// Reason is shown to the user with the question ("" when the path
	// is not protected).
	Reason string
	// Forbidden: no tool may write the path, whatever the mode.
	Forbidden bool
	// EvenInYolo: the question is asked in yolo mode too. It is set for
	// a file that can turn folder trust off (the user's settings) and for
	// a shell command whose targets cannot all be known before it runs:
	// it may write the trusted folders list.
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

// ProtectedWrite says whether a write to abs is protected, looking at the
// path as given and with symbolic links resolved.
func (e *Env) ProtectedWrite(abs string) Protection {
	if abs == "" {
		return Protection{}
	}
	clean, real := filepath.Clean(abs), workspace.RealPath(abs)
	if pr := e.userFileProtection(clean, real); pr.Reason != "" {
		return pr
	}
	if pr := e.protection(clean); pr.Reason != "" || real == clean {
		return pr
	}
	return e.protection(real)
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

// protection protects p by its folder names (.qwen/settings.json,
// .qwen/agents, .git/hooks, .git/config, .git/info, .vscode, .idea,
// .envrc) and memory file names.
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
		case strings.EqualFold(parts[i], ".vscode"):
			return Protection{Reason: vscodeReason}
		case strings.EqualFold(parts[i], ".idea"):
			return Protection{Reason: ideaReason}
		}
	}
	base := parts[n-1]
	if strings.EqualFold(base, ".envrc") {
		return Protection{Reason: envrcReason}
	}
	for _, name := range e.memoryFileNames() {
		if strings.EqualFold(base, name) {
			return Protection{Reason: memoryReason}
		}
	}
	return Protection{}
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
	gitHooksReason          = "files in .git/hooks run as programs on your next git command"
	gitConfigReason         = "git's config can make git run programs (hooks path, fsmonitor, aliases, filters) on your next git command"
	memoryReason            = "memory files are read into the instructions of every future session"
	gitInfoReason           = "files in .git/info (attributes, exclude) steer git, and attributes name the filters git runs"
	vscodeReason            = "files in .vscode run later: tasks.json can run a task when the folder opens, launch.json and settings.json name programs the editor starts"
	ideaReason              = "files in .idea hold run configurations the IDE runs"
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
		best = stronger(best, e.ProtectedWrite(p))
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
			pr := e.ProtectedWrite(filepath.Join(p, "x"))
			if pr.Reason == "" {
				pr = e.ProtectedWrite(p)
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
	case strings.Contains(low, ".vscode/"):
		return Protection{Reason: vscodeReason}
	case strings.Contains(low, ".idea/"):
		return Protection{Reason: ideaReason}
	case strings.Contains(low, ".envrc"):
		return Protection{Reason: envrcReason}
	}
	for _, name := range e.memoryFileNames() {
		if strings.Contains(low, strings.ToLower(name)) {
			return Protection{Reason: memoryReason}
		}
	}
	return Protection{}
}

// protectedPaths lists, as absolute paths, what ProtectedWrite protects
// for the current roots and the user's qwen folders, so that an OS
// sandbox can make exactly these read-only for the commands it runs. Per
// root: .qwen, .git/hooks, .git/config, .git/info, .vscode, .idea, .envrc
// and the memory files (QWEN.md, AGENTS.md or context.fileName); when
// .git is a file (a worktree or a submodule), the hooks, config and info
// of the git directories it names as well. Per user folder: settings.json,
// the trusted folders list and the memory files; and the system settings
// file. A path in the list need not exist. The list is built afresh on
// each call, from the roots and settings of that moment.
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
			for _, rel := range []string{".qwen", ".git/hooks", ".git/config", ".git/info", ".vscode", ".idea", ".envrc"} {
				add(filepath.Join(root, filepath.FromSlash(rel)))
			}
			for _, gd := range shellsafe.GitDirs(root) {
				for _, name := range []string{"hooks", "config", "config.worktree", "info"} {
					add(filepath.Join(gd, name))
				}
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
