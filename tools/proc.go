package tools

import "github.com/qwen-ls/qwen-ls/tools/procgroup"

// processGroups keeps the process groups that may outlive a tool call:
// background commands and whatever a foreground command left running
// (tools.md §3.8). The server calls KillAll when it exits and KillSession
// when a session ends. The zero value is ready to use.
type processGroups = procgroup.Registry
