package tools

import (
	"slices"
	"strings"

	"github.com/qwen-ls/qwen-ls/tools/shellsafe"
)

// ShellConfirmation returns the exec confirmation of tools.md §3.8 for
// command, listing subs (the sub-commands that still need approval):
// their texts, their unique roots joined with ", ", and one suggested rule
// per sub-command (§6.3), without repeats. The session's rule engine calls
// it again with only the sub-commands its allow rules do not cover. A
// sub-command that asks only because it reads under the home folder says
// so in the title.
func ShellConfirmation(command string, subs []shellsafe.SubCommand) *Confirmation {
	d := &ExecConfirmation{Command: command, Commands: []string{}, PermissionRules: []string{}}
	var roots, homeReads []string
	for _, s := range subs {
		d.Commands = append(d.Commands, s.Text)
		if s.HomeRead != "" && !slices.Contains(homeReads, s.HomeRead) {
			homeReads = append(homeReads, s.HomeRead)
		}
		if s.Root == "" {
			continue
		}
		if !slices.Contains(roots, s.Root) {
			roots = append(roots, s.Root)
		}
		if r := shellsafe.SuggestedRule(s); !slices.Contains(d.PermissionRules, r) {
			d.PermissionRules = append(d.PermissionRules, r)
		}
	}
	d.RootCommand = strings.Join(roots, ", ")
	title := "Confirm Shell Command"
	if len(homeReads) > 0 {
		title += " (reads " + strings.Join(homeReads, ", ") + " under your home folder, outside the workspace)"
	}
	return &Confirmation{Title: title, Details: d}
}
