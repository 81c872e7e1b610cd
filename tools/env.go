package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// Env is what the built-in tools share for the life of a connection: the
// workspace (roots, buffers, ignore rules, index, settings) and where
// qwen-ls keeps its own state. Per-call data travels in Call instead.
type Env struct {
	Workspace *workspace.Workspace
	// QwenHome is qwen-ls's state folder: $QWEN_HOME, else ~/.qwen.
	QwenHome string
	// Processes keeps the process groups that outlive a shell call
	// (background commands, leftovers); the server kills them with
	// KillAll when it exits. NewShell sets it when it is nil.
	Processes *processGroups
}

// DefaultQwenHome returns $QWEN_HOME, else ~/.qwen.
func DefaultQwenHome() string {
	if h := os.Getenv("QWEN_HOME"); h != "" {
		return h
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), ".qwen")
	}
	return filepath.Join(home, ".qwen")
}

// Settings returns the workspace's merged settings.
func (e *Env) Settings() *workspace.Settings { return e.Workspace.Settings }

// threshold is tools.truncateToolOutputThreshold (characters; <= 0 means
// unlimited).
func (e *Env) threshold() int {
	return e.Settings().Int("tools.truncateToolOutputThreshold", 25000)
}

// lineLimit is tools.truncateToolOutputLines (<= 0 means unlimited).
func (e *Env) lineLimit() int {
	return e.Settings().Int("tools.truncateToolOutputLines", 1000)
}

// ProjectTempDir is ~/.qwen/tmp/<hex sha256 of the primary root path>.
func (e *Env) ProjectTempDir() string {
	sum := sha256.Sum256([]byte(e.Workspace.Roots.Primary()))
	return filepath.Join(e.QwenHome, "tmp", hex.EncodeToString(sum[:]))
}

// Rel is the display path of tools.md §2.2: relative to the containing
// root ("." for the root), else absolute.
func (e *Env) Rel(abs string) string { return e.Workspace.Roots.Rel(abs) }

// respectGitIgnore and respectQwenIgnore are the
// context.fileFiltering settings (both default true).
func (e *Env) respectGitIgnore() bool {
	return e.Settings().Bool("context.fileFiltering.respectGitIgnore", true)
}

// respectQwenIgnore: see respectGitIgnore.
func (e *Env) respectQwenIgnore() bool {
	return e.Settings().Bool("context.fileFiltering.respectQwenIgnore", true)
}
