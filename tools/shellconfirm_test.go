package tools_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/shellsafe"
)

func mustParse(t *testing.T, cmd string) *shellsafe.Analysis {
	t.Helper()
	a, err := shellsafe.Parse(cmd)
	if err != nil {
		t.Fatalf("parse %q: %v", cmd, err)
	}
	return a
}

func TestShellConfirmationLists(t *testing.T) {
	cmd := "npm run a && rm -f x; npm run b | tee log; rm y"
	a := mustParse(t, cmd)
	conf := tools.ShellConfirmation(cmd, a.NeedingApproval())
	if conf.Title != "Confirm Shell Command" {
		t.Errorf("title %q", conf.Title)
	}
	d := conf.Details.(*tools.ExecConfirmation)
	if d.Command != cmd || d.RootCommand != "npm, rm, tee" ||
		!slices.Equal(d.Commands, []string{"npm run a", "rm -f x", "npm run b", "tee log", "rm y"}) ||
		!slices.Equal(d.PermissionRules, []string{"Bash(npm run *)", "Bash(rm *)", "Bash(tee *)"}) {
		t.Errorf("details = %+v", d)
	}
	if !strings.Contains(a.SubCommands[0].String(), `"npm run a"`) {
		t.Errorf("String() = %s", a.SubCommands[0])
	}
}
