package toolset

import (
	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/web"
)

// Builtins returns the built-in tools in their declaration order
// (tools.md §1.5), then lsp (§3.15). web_search is always in the list; Unavailable names it
// while no search provider is configured, so a provider added to the
// settings takes effect from the next model request without rebuilding the
// tools.
func Builtins(env *tools.Env) []tools.Tool {
	return []tools.Tool{
		tools.NewListDirectory(env),
		tools.NewReadFile(env),
		tools.NewWriteFile(env),
		tools.NewGrepSearch(env),
		tools.NewGlob(env),
		tools.NewEdit(env),
		tools.NewReadManyFiles(env),
		tools.NewShell(env),
		web.NewFetch(env),
		web.NewSearch(env),
		tools.NewSaveMemory(env),
		tools.NewTodoWrite(env),
		tools.NewTask(env),
		tools.NewExitPlanMode(env),
		tools.NewLSP(env),
	}
}

// Unavailable names the built-ins that the settings leave without what they
// need, so the registry does not declare them now: web_search while it has
// no provider (tools.md §3.10). Settings changes can change the answer, so
// the registry asks again when the settings change.
func Unavailable(env *tools.Env) []string {
	if !web.SearchAvailable(env) {
		return []string{"web_search"}
	}
	return nil
}
