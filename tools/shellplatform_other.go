//go:build !windows

package tools

import "os/exec"

// setCmdLine: only Windows passes a command line as one string.
func setCmdLine(*exec.Cmd, string) {}

// consoleCodePage: output on Linux and macOS is taken as UTF-8.
func consoleCodePage() uint32 { return 65001 }
