package tools

import (
	"os/exec"
	"syscall"

	winapi "golang.org/x/sys/windows"
)

// setCmdLine gives cmd the command line line as written, when it is not
// "" (cmd.exe's, see shellSpec.cmdLine).
func setCmdLine(cmd *exec.Cmd, line string) {
	if line == "" {
		return
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CmdLine = line
}

// consoleCodePage is the code page console programs write in: the
// console's when qwen-ls has one, else the system's OEM code page, which
// a child without a console gets.
func consoleCodePage() uint32 {
	if cp, err := winapi.GetConsoleOutputCP(); err == nil && cp != 0 {
		return cp
	}
	r, _, _ := procGetOEMCP.Call()
	return uint32(r)
}

var procGetOEMCP = winapi.NewLazySystemDLL("kernel32.dll").NewProc("GetOEMCP")
