package session

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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

func (s *Session) systemPrompt() string { return s.system }

// memoryDirLimit bounds how many directories are searched per root for
// memory files (tools.md §3.11).
const memoryDirLimit = 200

// loadMemory reads the memory files of tools.md §3.11: ~/.qwen/<name> for
// each name in context.fileName, then per root the files found walking
// down from it, then the include directories when the setting says so.
func loadMemory(ws *workspace.Workspace, qwenHome string) string {
	names := ws.Settings.Strings("context.fileName")
	if len(names) == 0 {
		names = []string{"QWEN.md", "AGENTS.md"}
	}
	var b strings.Builder
	add := func(path, display string) {
		data, err := os.ReadFile(path)
		if err != nil || len(strings.TrimSpace(string(data))) == 0 {
			return
		}
		fmt.Fprintf(&b, "--- Memory file %s ---\n%s\n--- End of memory file %s ---\n", display, strings.TrimRight(string(data), "\n"), display)
	}
	home, _ := os.UserHomeDir()
	tilde := func(p string) string {
		if home != "" && strings.HasPrefix(p, home+string(filepath.Separator)) {
			return "~" + p[len(home):]
		}
		return p
	}
	for _, n := range names {
		p := filepath.Join(qwenHome, n)
		add(p, tilde(p))
	}
	dirs := ws.Roots.List()
	if ws.Settings.Bool("context.loadMemoryFromIncludeDirectories", false) {
		dirs = append(dirs, ws.Settings.Strings("context.includeDirectories")...)
	}
	for _, root := range dirs {
		for _, dir := range memoryDirs(ws, root) {
			for _, n := range names {
				p := filepath.Join(dir, n)
				add(p, ws.Roots.Rel(p))
			}
		}
	}
	return b.String()
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
