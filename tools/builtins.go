package tools

// Builtins returns the built-in tools in their declaration order
// (tools.md §1.5). Tools that later issues add join this list in place.
func Builtins(env *Env) []Tool {
	return []Tool{
		NewListDirectory(env),
		NewReadFile(env),
		NewWriteFile(env),
		NewGrepSearch(env),
		NewGlob(env),
		NewEdit(env),
		NewReadManyFiles(env),
		NewSaveMemory(env),
		NewTodoWrite(env),
		NewExitPlanMode(env),
	}
}
