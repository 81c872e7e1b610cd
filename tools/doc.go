// Package tools is the contract every tool of qwen-ls implements and the
// machinery shared by all of them (tools.md §1 and §2.1).
//
// The entry point is the Tool interface: a tool embeds Base for its static
// description (Spec) and the default operations, and implements Describe and
// Execute. A caller (the session's scheduler) drives one call as
//
//	params, terr := tools.PrepareArgs(tool, rawArguments) // §2.1, ends in tool.Validate
//	conf, terr := tools.GuardConfirm(ctx, tool, call, params)
//	result, err := tools.Guard(ctx, tool, call, params, onOutput)
//
// where a *ToolError is a failure the model reads and a Go error only means
// that the turn was cancelled or the editor was lost. Result, Display and
// Confirmation carry the JSON shapes of tools.md §1.2 and §1.3; the diffs
// they hold come from tools/diff.
//
// The file tools live here, one file and one .md description per tool.
// The leaves that other layers use on their own are subpackages: diff
// (unified diffs and review hunks), shellsafe (the shell analysis),
// procgroup (process groups) and sandbox (the OS sandbox). The network
// tools are in web, and toolset lists all built-ins.
//
// Per-call data travels in a *Call, never in context values, and nothing here
// keeps package-level mutable state. This package must not import session,
// registry or rpc.
package tools
