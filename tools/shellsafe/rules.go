package shellsafe

import (
	"github.com/qwen-ls/qwen-ls/tools/lazy"

	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// RuleMatches reports whether the command specifier spec of a shell
// rule (the text inside Bash(…), Shell(…) or run_shell_command(…)) matches
// one sub-command, per tools.md §6.2:
//
//   - ":*" reads as " *" (git:* is git *);
//   - "*" alone, or an empty specifier, matches every sub-command;
//   - otherwise the specifier's words must equal the sub-command's first
//     words (git matches git status, not gitk), leading VAR=value words
//     of both left out; a trailing " *" allows any further words, none
//     included;
//   - a "*" inside a word matches any run of characters within one word
//     (a lone "*" word matches any one word);
//   - a command word holding an expansion ($X, $(…)) matches only "*",
//     and so does any other word holding one.
//
// A sub-command that runs no program (assignments only) matches nothing
// but "*".
func RuleMatches(spec string, sub SubCommand) bool {
	words := shellSpecWords(spec)
	if len(words) == 0 {
		// Only a blank specifier has no words; one made of assignments
		// names no program.
		return strings.TrimSpace(spec) == ""
	}
	if len(words) == 1 && words[0] == "*" {
		return true
	}
	if len(words) > 1 && words[len(words)-1] == "*" {
		words = words[:len(words)-1]
	}
	if len(sub.Words) < len(words) || sub.Words[0].Expanded {
		return false
	}
	for i, w := range words {
		if !shellWordMatches(w, sub.Words[i]) {
			return false
		}
	}
	return true
}

// shellSpecWords splits a specifier into words the way bash would split
// it (quotes removed), with ":*" read as " *" and leading assignments
// dropped. A specifier bash cannot parse is split on white space.
func shellSpecWords(spec string) []string {
	spec = strings.TrimSpace(strings.ReplaceAll(spec, ":*", " *"))
	if spec == "" {
		return nil
	}
	var words []string
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(spec), "")
	if err == nil && len(f.Stmts) == 1 && len(f.Stmts[0].Redirs) == 0 && !f.Stmts[0].Background {
		if call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr); ok {
			w := &shellWalker{src: spec}
			for _, a := range call.Args {
				words = append(words, w.word(a).Value)
			}
			return words
		}
	}
	for _, w := range strings.Fields(spec) {
		if len(words) == 0 && isAssignmentWord(w) {
			continue
		}
		words = append(words, w)
	}
	return words
}

func isAssignmentWord(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	return ok && syntax.ValidName(name)
}

// shellWordMatches matches one specifier word against one word.
func shellWordMatches(pattern string, w Word) bool {
	if w.Expanded {
		return pattern == "*"
	}
	if !strings.Contains(pattern, "*") {
		return pattern == w.Value
	}
	return starMatch(pattern, w.Value)
}

// starMatch matches s against a pattern where only * is special.
func starMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, mid := range parts[1 : len(parts)-1] {
		k := strings.Index(s, mid)
		if k < 0 {
			return false
		}
		s = s[k+len(mid):]
	}
	return len(s) >= len(last) && strings.HasSuffix(s, last)
}

// Coverage is what a command's rules say about its sub-commands.
type Coverage struct {
	// Deny is the index in deny of the first specifier that matches a
	// sub-command, or -1; DeniedSubCommand is the index of that
	// sub-command.
	Deny             int
	DeniedSubCommand int
	// Uncovered are the sub-commands that are neither read-only nor
	// matched by an allow specifier, in order. The call may run without a
	// prompt only when Uncovered is empty and the command has no
	// substitution (tools.md §6.1 step 5); otherwise its prompt lists
	// these (ShellConfirmation).
	Uncovered []SubCommand
}

// Cover judges subs against the specifiers of the allow
// and deny rules that name the shell tool (the session's rule engine
// strips Bash(…); a bare Bash rule is the specifier "*").
//
// Deny specifiers are matched more widely than allow ones, because a deny
// rule that a different spelling slips past protects nothing: a command
// word given as a path is also matched by its basename (/bin/rm as rm),
// and the command run by a wrapper is matched on its own (timeout 5 rm x,
// env X=1 rm x, xargs rm, sudo rm x, nice rm x all match rm *).
//
// A rule for a command never covers a redirection of its output to a
// file: Bash(git status) is not git status > ANY-FILE, and Bash(echo *)
// is not echo x > .git/config. Redirections are judged on their own, so
// such a sub-command asks; discarding output (2>/dev/null) and
// duplicating descriptors (2>&1) are not writes. Likewise an expansion
// that bash evaluates as code (UnsafeExpansion): Bash(echo *) allows echo,
// not the command hidden in x='a[$(rm -rf ~)]'; echo $((x)). Nor does it
// cover a read under the home folder, outside the roots (HomeRead):
// Bash(cat *) is cat of the workspace's files, not cat ~/.ssh/id_rsa,
// which the person is asked about each time. Only a bare Bash rule, which
// allows every command, covers them.
//
// The one exception is an exact rule (ExactRule): a specifier that is one
// simple command with a redirection, Bash(echo X >> log.txt), recorded when
// the person answers "always" for that command. It covers a sub-command
// whose assignments, words and redirections are written the same (only the
// blanks between them, and where the redirections stand, may differ), run
// in Context.Base, and nothing else: not echo Y >> log.txt, not
// echo X >> other, not the same text after a cd or in another directory,
// where log.txt is another file. The other limits above still apply to it.
func Cover(subs []SubCommand, allow, deny []string) Coverage {
	cov := Coverage{Deny: -1, DeniedSubCommand: -1}
	for di, spec := range deny {
		for si, sub := range subs {
			if shellDenyMatches(spec, sub) {
				cov.Deny, cov.DeniedSubCommand = di, si
				break
			}
		}
		if cov.Deny >= 0 {
			break
		}
	}
	for _, sub := range subs {
		if sub.ReadOnly {
			continue
		}
		allowed := false
		for _, spec := range allow {
			bare := strings.TrimSpace(spec) == "*" || strings.TrimSpace(spec) == ""
			if sub.Verbatim {
				if bare || strings.TrimSpace(spec) == sub.Text {
					allowed = true
					break
				}
				continue
			}
			if exact := exactSpec(spec); exact != "" {
				// An exact rule names one command, redirections included.
				if exact == sub.exact && sub.atBase && allowCoversAssigns(sub) && !sub.UnsafeExpansion && !sub.ForeignGit && sub.HomeRead == "" {
					allowed = true
					break
				}
				continue
			}
			if RuleMatches(spec, sub) && (bare || (allowCoversAssigns(sub) && !sub.WriteRedirect && !sub.UnsafeExpansion && !sub.ForeignGit && sub.HomeRead == "")) {
				allowed = true
				break
			}
		}
		if !allowed {
			cov.Uncovered = append(cov.Uncovered, sub)
		}
	}
	return cov
}

// allowCoversAssigns: an allow rule for a command covers it only when the
// variables set for it are locale or display settings. Matching leaves
// VAR=value words out (tools.md §6.2), but PATH=. git status runs a
// workspace program named git, not the git the rule allows; only a bare
// Bash rule (every command) covers that.
func allowCoversAssigns(sub SubCommand) bool {
	for _, name := range sub.Assigns {
		if !safeEnvAssign(name) {
			return false
		}
	}
	names, ok := builtinAssigns(sub)
	if !ok {
		return false
	}
	for _, name := range names {
		if !safeEnvAssign(name) {
			return false
		}
	}
	return true
}

// builtinAssigns lists the variables a builtin sets through its arguments
// (printf -v NAME, read NAME…, declare/export/local NAME=…): printf -v
// PATH … under Bash(printf *) would choose which program a later,
// allowed ls runs. ok is false when a name cannot be known (an expanded
// word).
func builtinAssigns(sub SubCommand) (names []string, ok bool) {
	if len(sub.Words) == 0 || sub.Words[0].Expanded {
		return nil, true
	}
	args := sub.Words[1:]
	switch sub.Words[0].Value {
	case "printf":
		for i := 0; i < len(args); i++ {
			v := args[i]
			if v.Expanded {
				return nil, false
			}
			switch {
			case v.Value == "--" || !strings.HasPrefix(v.Value, "-"):
				return names, true
			case v.Value == "-v":
				if i+1 >= len(args) || args[i+1].Expanded {
					return nil, false
				}
				names = append(names, args[i+1].Value)
				i++
			case strings.HasPrefix(v.Value, "-v"):
				names = append(names, v.Value[2:])
			}
		}
		return names, true
	case "read", "mapfile", "readarray", "declare", "typeset", "export", "local", "readonly", "getopts", "let", "unset":
		for _, v := range args {
			if v.Expanded {
				return nil, false
			}
			if strings.HasPrefix(v.Value, "-") {
				continue
			}
			name, _, _ := strings.Cut(v.Value, "=")
			names = append(names, name)
		}
		if len(names) == 0 && sub.Words[0].Value == "read" {
			names = append(names, "REPLY")
		}
		return names, true
	}
	return nil, true
}

func shellDenyMatches(spec string, sub SubCommand) bool {
	for _, form := range shellDenyForms(sub, 0) {
		if RuleMatches(spec, form) {
			return true
		}
	}
	return false
}

// shellDenyForms lists sub and the other spellings a deny rule must see.
func shellDenyForms(sub SubCommand, depth int) []SubCommand {
	forms := []SubCommand{sub}
	if len(sub.Words) == 0 || sub.Words[0].Expanded || depth > 4 {
		return forms
	}
	cw := sub.Words[0].Value
	if base := path.Base(cw); base != cw {
		alt := sub
		alt.Words = append([]Word{{Value: base}}, sub.Words[1:]...)
		forms = append(forms, alt)
	}
	if inner, ok := unwrapShellCommand(sub); ok {
		forms = append(forms, shellDenyForms(inner, depth+1)...)
	}
	return forms
}

// shellWrappers are commands that run another command given in their
// arguments: the options that take a separate value, and how many operands
// come before the command.
var shellWrappers = lazy.Value[map[string]shellWrapper]{Build: func() map[string]shellWrapper {
	return map[string]shellWrapper{
		"timeout": {valueOpts: "-s --signal -k --kill-after", operands: 1},
		"nice":    {valueOpts: "-n --adjustment"},
		"nohup":   {},
		"env":     {valueOpts: "-u --unset -C --chdir -S --split-string", assignments: true},
		"command": {},
		"exec":    {valueOpts: "-a"},
		"sudo":    {valueOpts: "-u --user -g --group -C --close-from -D --chdir -h --host -p --prompt -r --role -t --type -U --other-user -T --command-timeout"},
		"doas":    {valueOpts: "-u -C"},
		"xargs":   {valueOpts: "-a --arg-file -d --delimiter -E -I -L --max-lines -n --max-args -P --max-procs -s --max-chars --process-slot-var"},
		"stdbuf":  {valueOpts: "-i --input -o --output -e --error"},
		"setsid":  {},
		"ionice":  {valueOpts: "-c --class -n --classdata -p --pid -P --pgid -u --uid"},
		"time":    {valueOpts: "-f --format -o --output"},
		"watch":   {valueOpts: "-n --interval -d --differences"},
	}
}}

// shellWrapper is how one wrapper takes its arguments.
type shellWrapper struct {
	valueOpts   string // space-separated
	operands    int
	assignments bool
}

// unwrapShellCommand returns the command a wrapper runs.
func unwrapShellCommand(sub SubCommand) (SubCommand, bool) {
	wr, ok := shellWrappers.Get()[path.Base(sub.Words[0].Value)]
	if !ok {
		return sub, false
	}
	valueOpts := strings.Fields(wr.valueOpts)
	words := sub.Words[1:]
	operands := wr.operands
	i := 0
	for i < len(words) {
		// An expanded word is taken by its text: as an operand or an
		// option's value it is skipped like any other.
		v := words[i].Value
		switch {
		case v == "--":
			i++
		case len(v) > 1 && v[0] == '-':
			i++
			if containsString(valueOpts, v) {
				i++
			}
			continue
		case wr.assignments && isAssignmentWord(v):
			i++
			continue
		case operands > 0:
			operands--
			i++
			continue
		}
		break
	}
	if i >= len(words) {
		return sub, false
	}
	inner := sub
	inner.Words = words[i:]
	inner.Root = inner.Words[0].Value
	if !inner.Words[0].Expanded {
		inner.Root = path.Base(inner.Root)
	}
	return inner, true
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// knownSubCommands are the tools whose second word makes a narrower
// suggested rule (tools.md §6.3). make's targets are open-ended, so any
// plain word counts for it.
var knownSubCommands = lazy.Value[map[string][]string]{Build: func() map[string][]string {
	return map[string][]string{
		"git": {"add", "am", "apply", "archive", "bisect", "blame", "branch", "bundle", "cat-file", "checkout",
			"cherry-pick", "clean", "clone", "commit", "config", "describe", "diff", "fetch", "format-patch",
			"fsck", "gc", "grep", "init", "log", "ls-files", "ls-remote", "merge", "mv", "notes", "pull", "push",
			"rebase", "reflog", "remote", "reset", "restore", "rev-list", "rev-parse", "revert", "rm", "shortlog",
			"show", "sparse-checkout", "stash", "status", "submodule", "switch", "tag", "worktree"},
		"npm": {"access", "add", "audit", "cache", "ci", "config", "dedupe", "doctor", "exec", "explain", "fund",
			"help", "i", "init", "install", "link", "login", "logout", "ls", "outdated", "pack", "ping", "pkg",
			"prefix", "prune", "publish", "rebuild", "remove", "restart", "rm", "root", "run", "run-script",
			"start", "stop", "test", "t", "uninstall", "unpublish", "update", "version", "view", "whoami", "x"},
		"pnpm": {"add", "audit", "bin", "config", "create", "dlx", "env", "exec", "fetch", "i", "import",
			"init", "install", "link", "list", "ls", "outdated", "pack", "patch", "prune", "publish", "rebuild",
			"remove", "rm", "root", "run", "start", "store", "t", "test", "unlink", "up", "update", "why"},
		"yarn": {"add", "audit", "bin", "build", "cache", "config", "create", "dlx", "exec", "global", "info",
			"init", "install", "link", "list", "node", "outdated", "pack", "publish", "remove", "run", "start",
			"test", "unlink", "upgrade", "upgrade-interactive", "why", "workspace", "workspaces"},
		"go": {"build", "clean", "doc", "env", "fix", "fmt", "generate", "get", "install", "list", "mod",
			"run", "telemetry", "test", "tool", "version", "vet", "work"},
		"cargo": {"add", "bench", "build", "check", "clean", "clippy", "doc", "fetch", "fix", "fmt",
			"generate-lockfile", "init", "install", "locate-project", "login", "metadata", "new", "owner",
			"package", "pkgid", "publish", "remove", "run", "rustc", "rustdoc", "search", "test", "tree",
			"uninstall", "update", "vendor", "version", "yank"},
		"docker": {"attach", "build", "builder", "buildx", "commit", "compose", "container", "context", "cp",
			"create", "diff", "events", "exec", "export", "history", "image", "images", "import", "info",
			"inspect", "kill", "load", "login", "logout", "logs", "manifest", "network", "node", "pause",
			"plugin", "port", "ps", "pull", "push", "rename", "restart", "rm", "rmi", "run", "save", "search",
			"secret", "service", "stack", "start", "stats", "stop", "swarm", "system", "tag", "top", "trust",
			"unpause", "update", "version", "volume", "wait"},
		"kubectl": {"annotate", "api-resources", "api-versions", "apply", "attach", "auth", "autoscale",
			"certificate", "cluster-info", "config", "cordon", "cp", "create", "debug", "delete", "describe",
			"diff", "drain", "edit", "events", "exec", "explain", "expose", "get", "kustomize", "label", "logs",
			"patch", "port-forward", "proxy", "replace", "rollout", "run", "scale", "set", "taint", "top",
			"uncordon", "version", "wait"},
		"pip": {"cache", "check", "config", "debug", "download", "freeze", "hash", "help", "index", "inspect",
			"install", "list", "search", "show", "uninstall", "wheel"},
	}
}}

// SuggestedRule is the rule of tools.md §6.3 that would allow sub:
// Bash(<root>) without arguments, Bash(<root> <sub> *) for a known
// sub-command, else Bash(<root> *). A sub-command that writes to a file
// through a redirection, which no such rule covers, gets the exact rule
// Bash(<its text>) when one can name it (Cover). It is "" when sub runs no
// program.
func SuggestedRule(sub SubCommand) string {
	if sub.Root == "" {
		return ""
	}
	if sub.Verbatim || sub.WriteRedirect && sub.exact != "" {
		return "Bash(" + sub.Text + ")"
	}
	if len(sub.Words) < 2 {
		return "Bash(" + sub.Root + ")"
	}
	second := sub.Words[1]
	if !second.Expanded && !second.Pattern {
		if sub.Root == "make" && isPlainTarget(second.Value) {
			return "Bash(make " + second.Value + " *)"
		}
		if containsString(knownSubCommands.Get()[sub.Root], second.Value) {
			return "Bash(" + sub.Root + " " + second.Value + " *)"
		}
	}
	return "Bash(" + sub.Root + " *)"
}

func isPlainTarget(s string) bool {
	return s != "" && !strings.HasPrefix(s, "-") && !strings.ContainsAny(s, "= \t")
}

// exactSpec is the exactForm of a specifier that is an exact rule: one
// simple command with at least one redirection. It is "" for any other
// specifier.
func exactSpec(spec string) string {
	if !strings.ContainsAny(spec, "<>") {
		return ""
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(spec), "")
	if err != nil || len(f.Stmts) != 1 {
		return ""
	}
	st := f.Stmts[0]
	if st.Background || len(st.Redirs) == 0 {
		return ""
	}
	w := &shellWalker{src: spec}
	if w.substs(st) {
		return ""
	}
	return w.exactForm(st)
}

// ExactRule reports whether the specifier of a shell rule is an exact
// rule, which names one command, redirections included (Cover).
func ExactRule(spec string) bool { return exactSpec(spec) != "" }
