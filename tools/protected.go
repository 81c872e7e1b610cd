package tools

import (
	"path/filepath"
	"slices"
	"strings"

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
			return Protection{Reason: userSettingsReason}
		}
	}
	return Protection{}
}

// protection protects p by its folder names (.qwen/settings.json,
// .qwen/agents, .git/hooks, .git/config) and memory file names.
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
		}
	}
	base := parts[n-1]
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

// ShellProtection looks for protected files named in a shell sub-command
// that is not read-only (tools.md §6.3). A shell command is not confined
// by path, so this is a best effort that catches the plain cases
// (`echo x > .git/hooks/pre-commit`, `cp f .qwen/settings.json`) under a
// broad allow rule; the exec confirmation remains the real guard.
func (e *Env) ShellProtection(text string) Protection {
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
	}
	for _, name := range e.memoryFileNames() {
		if strings.Contains(low, strings.ToLower(name)) {
			return Protection{Reason: memoryReason}
		}
	}
	return Protection{}
}
