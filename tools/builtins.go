package tools

// Builtins returns the built-in tools in their declaration order
// (tools.md §1.5). web_search is always in the list; the registry leaves it
// out while no search provider is configured (see WebSearchAvailable), so a
// provider added to the settings takes effect from the next model request
// without rebuilding the tools.
func Builtins(env *Env) []Tool {
	return []Tool{
		NewListDirectory(env),
		NewReadFile(env),
		NewWriteFile(env),
		NewGrepSearch(env),
		NewGlob(env),
		NewEdit(env),
		NewReadManyFiles(env),
		NewShell(env),
		NewWebFetch(env),
		NewWebSearch(env),
		NewSaveMemory(env),
		NewTodoWrite(env),
		NewTask(env),
		NewExitPlanMode(env),
	}
}
