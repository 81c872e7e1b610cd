package session

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// basePrompt is the system prompt's fixed part, written for qwen-ls's
// tool set and its editor review.
const basePrompt = `You are Qwen Code, a coding agent working inside the user's editor through qwen-ls. You help with software tasks in the user's workspace by reading, searching and changing files and running commands with the tools you are given.

How to work:
- Understand before you change. Use grep_search, glob, list_directory and read_file to learn how the code is laid out and what conventions it follows. Read a file before you edit or overwrite it; the edit tools refuse files you have not read in this session, or that changed since you read them.
- Paths in tool arguments are absolute and must lie inside the workspace roots listed below.
- What you read is what the user sees: files open in the editor are read with their unsaved changes.
- Make focused changes that fit the surrounding code. Prefer edit for changes to existing files; use write_file for new files or complete rewrites.
- Every change you propose is shown to the user as a preview in the editor. The user may accept it, reject it, accept only some of its hunks, or modify it before accepting. The tool result tells you exactly what was applied; believe it, and never describe a rejected or partly applied change as done.
- Commands run with run_shell_command in the workspace; explain what a command with side effects will do before you run it.
- If the user rejects a call, do not retry it unchanged: ask what they would prefer, or take a different approach.
- Keep answers short and concrete. Show code only when it helps. When you finish a task, say what you changed and what you did not do.`

// buildSystemPrompt assembles the system prompt: the fixed part, the
// environment, and the memory files found at session start.
func (m *Manager) buildSystemPrompt(cwd string) string {
	env := m.opts.Env
	var b strings.Builder
	b.WriteString(basePrompt)
	b.WriteString("\n\n# Environment\n")
	fmt.Fprintf(&b, "- Date: %s\n", m.opts.Now().Format("2006-01-02"))
	fmt.Fprintf(&b, "- Operating system: %s\n", runtime.GOOS)
	fmt.Fprintf(&b, "- Workspace roots: %s\n", strings.Join(env.Workspace.Roots.List(), ", "))
	if cwd != "" {
		fmt.Fprintf(&b, "- Working directory: %s\n", cwd)
	}
	if mem := loadMemory(env.Workspace, env.QwenHome); mem != "" {
		b.WriteString("\n# Memory\nThe user keeps these notes for you. Follow them.\n\n")
		b.WriteString(mem)
	}
	return b.String()
}

// systemPrompt is the session's system prompt; /memory refresh and /clear
// replace it while other requests may read it.
func (s *Session) systemPrompt() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.system
}

// memoryDirLimit bounds how many directories are searched per root for
// memory files (tools.md §3.11).
const memoryDirLimit = 200

// memoryFileLimit bounds one memory file: a larger one is left out, so a
// huge file (or a device) in a cloned folder cannot exhaust memory.
const memoryFileLimit = 1 << 20

// defaultMemoryNames is context.fileName when it is unset.
var defaultMemoryNames = []string{"QWEN.md", "AGENTS.md"}

// memoryFileNames returns the usable names of context.fileName (default
// QWEN.md and AGENTS.md, also when no entry is usable). They are file
// names, not paths: an entry that is empty, absolute, or holds a separator
// ("/" or "\") or "..", is left out. The setting may come from a
// folder's own settings, trusted or not.
func memoryFileNames(ws *workspace.Workspace) []string {
	var out []string
	for _, n := range ws.Settings.Strings("context.fileName") {
		if n = strings.TrimSpace(n); isMemoryFileName(n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return defaultMemoryNames
	}
	return out
}

// isMemoryFileName reports whether n is a plain file name.
func isMemoryFileName(n string) bool {
	return n != "" && filepath.IsLocal(n) && !filepath.IsAbs(n) && !strings.ContainsAny(n, "/\\\x00") && !strings.Contains(n, "..")
}

// isGlobalMemoryName reports whether the user's qwen folder is searched for
// n: Markdown names only, since that folder also holds the settings, the
// trust list and credentials, whose names a folder's settings could
// otherwise put in the prompt.
func isGlobalMemoryName(n string) bool {
	ext := strings.ToLower(filepath.Ext(n))
	return ext == ".md" || ext == ".markdown"
}

// loadMemory reads the memory files of tools.md §3.11: ~/.qwen/<name> for
// each Markdown name in context.fileName, then per root the files found
// walking down from it, then the include directories when the setting
// says so. A file is read only when it is a regular file no larger than
// memoryFileLimit and, symlinks resolved, lies inside the roots or the
// include directories (the global one: is that folder's own entry).
func loadMemory(ws *workspace.Workspace, qwenHome string) string {
	names := memoryFileNames(ws)
	var b strings.Builder
	add := func(path, display string, allowed func(real string) bool) {
		text, ok := readMemoryFile(path, allowed)
		if !ok || len(strings.TrimSpace(text)) == 0 {
			return
		}
		fmt.Fprintf(&b, "--- Memory file %s ---\n%s\n--- End of memory file %s ---\n", display, strings.TrimRight(text, "\n"), display)
	}
	home, _ := os.UserHomeDir()
	tilde := func(p string) string {
		if home != "" && strings.HasPrefix(p, home+string(filepath.Separator)) {
			return "~" + p[len(home):]
		}
		return p
	}
	if qwenHome != "" {
		for _, n := range names {
			if isGlobalMemoryName(n) {
				p := filepath.Join(qwenHome, n)
				add(p, tilde(p), nil)
			}
		}
	}
	dirs := ws.Roots.List()
	var extra []string
	if ws.Settings.Bool("context.loadMemoryFromIncludeDirectories", false) {
		for _, d := range ws.Settings.Strings("context.includeDirectories") {
			if d = includeDir(d, home, ws.Roots.Primary()); d != "" {
				extra = append(extra, workspace.RealPath(d))
			}
		}
		dirs = append(dirs, extra...)
	}
	inside := func(real string) bool {
		if ws.Roots.ContainsReal(real) {
			return true
		}
		for _, d := range extra {
			if real == d || strings.HasPrefix(real, d+string(filepath.Separator)) {
				return true
			}
		}
		return false
	}
	for _, root := range dirs {
		for _, dir := range memoryDirs(ws, root) {
			for _, n := range names {
				p := filepath.Join(dir, n)
				add(p, ws.Roots.Rel(p), inside)
			}
		}
	}
	return b.String()
}

// includeDir resolves an entry of context.includeDirectories: absolute,
// "~" or "~/…", or relative to the primary root ("" when there is none).
func includeDir(d, home, primary string) string {
	d = strings.TrimSpace(d)
	switch {
	case d == "":
		return ""
	case d == "~" || strings.HasPrefix(d, "~/"):
		if home == "" {
			return ""
		}
		return filepath.Join(home, d[1:])
	case filepath.IsAbs(d):
		return filepath.Clean(d)
	case primary != "":
		return filepath.Join(primary, d)
	}
	return ""
}

// readMemoryFile reads a memory file when it is a regular file of at most
// memoryFileLimit bytes whose real path allowed accepts (nil: any). The
// path is checked before opening, so that a FIFO or device is never
// opened, and the opened file is checked again, so that a symlink swapped
// in between is seen.
func readMemoryFile(path string, allowed func(real string) bool) (string, bool) {
	if allowed != nil && !allowed(workspace.RealPath(path)) {
		return "", false
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > memoryFileLimit {
		return "", false
	}
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	if workspace.CheckOpened(f, allowed) != nil {
		return "", false
	}
	data, err := io.ReadAll(io.LimitReader(f, memoryFileLimit+1))
	if err != nil || len(data) > memoryFileLimit {
		return "", false
	}
	return string(data), true
}

// memoryDirs lists root and its subdirectories in path order, skipping
// ignored and default-excluded ones, at most memoryDirLimit.
func memoryDirs(ws *workspace.Workspace, root string) []string {
	out := []string{root}
	queue := []string{root}
	for len(queue) > 0 && len(out) < memoryDirLimit {
		dir := queue[0]
		queue = queue[1:]
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		var subs []string
		for _, e := range ents {
			if !e.IsDir() || workspace.IsDefaultExcludedDir(e.Name()) {
				continue
			}
			p := filepath.Join(dir, e.Name())
			if v := ws.Ignore.Check(p, true); v.Git || v.Qwen {
				continue
			}
			subs = append(subs, p)
		}
		sort.Strings(subs)
		for _, p := range subs {
			if len(out) >= memoryDirLimit {
				break
			}
			out = append(out, p)
			queue = append(queue, p)
		}
	}
	sort.Strings(out[1:])
	return out
}
