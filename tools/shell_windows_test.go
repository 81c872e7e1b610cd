package tools_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/windows"

	"github.com/qwen-ls/qwen-ls/tools"
)

// printCmdLineEnv makes the test binary, run as the shell, print the
// command line it was given and exit 3.
const printCmdLineEnv = "QWEN_LS_TEST_PRINT_CMDLINE"

func TestMain(m *testing.M) {
	if os.Getenv(printCmdLineEnv) == "1" {
		fmt.Print(windows.UTF16PtrToString(windows.GetCommandLine()))
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// On Windows a command asks first, and reaches the %ComSpec% shell as
// `"%ComSpec%" /d /s /c "<command>"` exactly, its quotes untouched (the
// shell here is this test binary, which prints the line it got).
func TestShellPassesTheCommandLineAsWrittenOnWindows(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("MSYSTEM", "")
	t.Setenv("TERM", "")
	t.Setenv("ComSpec", self)
	t.Setenv(printCmdLineEnv, "1")
	_, sh := shellTestEnv(t, nil)
	if conf, terr := tools.GuardConfirm(context.Background(), sh, &tools.Call{}, map[string]any{"command": "echo hi"}); conf == nil || terr != nil {
		t.Errorf("echo hi does not ask on Windows: %+v %v", conf, terr)
	}
	command := `echo "a b"& echo it's \"x\" & exit 3`
	res := shellRun(t, sh, map[string]any{"command": command})
	text := res.Text()
	if res.Error != nil || field(t, text, "Exit Code") != "3" {
		t.Fatalf("result %+v:\n%s", res.Error, text)
	}
	if got, want := field(t, text, "Stdout"), `"`+self+`" /d /s /c "`+command+`"`; got != want {
		t.Errorf("the shell got\n%s\nwant\n%s", got, want)
	}
}
