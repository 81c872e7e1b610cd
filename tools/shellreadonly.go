package tools

import "strings"

// readOnlyRoots are the commands of tools.md §6.3 that may run without
// approval, each with the check its arguments must pass (nil: any).
//
// Beyond §6.3's limits a few more are refused, each because the command
// then writes or runs something: sort -o and --compress-program, uniq with
// an output file, tree -o, rg --pre, git --output, git grep -O, git branch
// creating, copying or re-pointing a branch, git remote prune/update/set-*.
// Commands whose arguments are checked are not read-only when an argument
// holds an expansion, since it could hide a refused option.
var readOnlyRoots = map[string]func(args []ShellWord) bool{
	"awk": awkReadOnly, "basename": nil, "cat": nil, "cd": nil, "column": nil, "cut": nil,
	"df": nil, "dirname": nil, "du": nil, "echo": nil, "env": noArgs, "find": findReadOnly,
	"git": gitReadOnly, "grep": nil, "head": nil, "less": nil, "ls": nil, "more": nil,
	"printenv": noArgs, "printf": nil, "ps": nil, "pwd": nil, "rg": rgReadOnly, "sed": sedReadOnly,
	"sort": sortReadOnly, "stat": nil, "tail": nil, "tree": treeReadOnly, "uniq": uniqReadOnly,
	"wc": nil, "which": nil, "whoami": nil,
}

// shellReadOnly is the verdict of tools.md §6.3 for one sub-command. A
// statement without a program (assignments only) is read-only unless it
// redirects or substitutes. The command word must be a plain name: ./ls
// runs a file of the workspace, not ls.
func shellReadOnly(s ShellSubCommand) bool {
	if s.WriteRedirect || s.Substitution {
		return false
	}
	if len(s.Words) == 0 {
		return true
	}
	cw := s.Words[0]
	if cw.Expanded || cw.Pattern || strings.Contains(cw.Value, "/") {
		return false
	}
	check, ok := readOnlyRoots[cw.Value]
	if !ok {
		return false
	}
	if check == nil {
		return true
	}
	args := s.Words[1:]
	for _, a := range args {
		if a.Expanded || (a.Pattern && strings.HasPrefix(a.Value, "-")) {
			return false
		}
	}
	return check(args)
}

func noArgs(args []ShellWord) bool { return len(args) == 0 }

var findRefused = map[string]bool{
	"-delete": true, "-exec": true, "-execdir": true, "-ok": true, "-okdir": true,
	"-fprint": true, "-fprint0": true, "-fprintf": true, "-fls": true,
}

func findReadOnly(args []ShellWord) bool {
	for _, a := range args {
		if findRefused[a.Value] {
			return false
		}
	}
	return true
}

var gitReadOnlySubs = map[string]bool{
	"blame": true, "branch": true, "cat-file": true, "describe": true, "diff": true, "grep": true,
	"log": true, "ls-files": true, "remote": true, "rev-parse": true, "show": true, "status": true,
}

func gitReadOnly(args []ShellWord) bool {
	// Global options that change nothing may come before the sub-command.
	i := 0
	for i < len(args) {
		switch args[i].Value {
		case "--no-pager", "-P", "--no-optional-locks":
			i++
			continue
		case "-C":
			i += 2
			continue
		}
		break
	}
	if i >= len(args) || !gitReadOnlySubs[args[i].Value] {
		return false
	}
	sub, rest := args[i].Value, args[i+1:]
	for _, a := range rest {
		if strings.HasPrefix(a.Value, "--output") {
			return false
		}
	}
	switch sub {
	case "grep":
		for _, a := range rest {
			v := a.Value
			if v == "-O" || strings.HasPrefix(v, "--open-files-in-pager") ||
				(len(v) > 1 && v[0] == '-' && v[1] != '-' && strings.Contains(v, "O")) {
				return false
			}
		}
	case "remote":
		for _, a := range rest {
			switch a.Value {
			case "add", "remove", "rm", "rename", "set-url", "set-head", "set-branches", "prune", "update":
				return false
			}
		}
	case "branch":
		return gitBranchReadOnly(rest)
	}
	return true
}

// gitBranchReadOnly allows listing branches only: no option that deletes,
// moves, copies or re-points one, and a branch name only in list mode.
func gitBranchReadOnly(args []ShellWord) bool {
	listMode, named := false, false
	for _, a := range args {
		v := a.Value
		name, _, _ := strings.Cut(v, "=")
		switch name {
		case "--delete", "--move", "--copy", "--force", "--set-upstream-to", "--unset-upstream",
			"--edit-description", "--track", "--no-track", "--set-upstream":
			return false
		case "--list", "--all", "--remotes", "--contains", "--no-contains", "--merged", "--no-merged",
			"--points-at", "--show-current":
			listMode = true
			continue
		}
		switch {
		case strings.HasPrefix(v, "--"):
		case strings.HasPrefix(v, "-") && len(v) > 1:
			if strings.ContainsAny(v[1:], "dDmMcCfut") {
				return false
			}
			if strings.ContainsAny(v[1:], "lar") {
				listMode = true
			}
		default:
			named = true
		}
	}
	return !named || listMode
}

func sortReadOnly(args []ShellWord) bool {
	for _, a := range args {
		v := a.Value
		if strings.HasPrefix(v, "--") {
			name, _, _ := strings.Cut(v[2:], "=")
			if name == "" {
				break
			}
			if strings.HasPrefix("output", name) || strings.HasPrefix("compress-program", name) {
				return false
			}
			continue
		}
		if len(v) > 1 && v[0] == '-' {
			// Short options; -k, -t, -S and -T take a value that ends
			// the cluster.
			for _, c := range v[1:] {
				if c == 'o' {
					return false
				}
				if strings.ContainsRune("ktST", c) {
					break
				}
			}
		}
	}
	return true
}

// uniqReadOnly refuses a second file operand, which uniq writes to.
func uniqReadOnly(args []ShellWord) bool {
	operands := 0
	for i := 0; i < len(args); i++ {
		v := args[i].Value
		switch {
		case v == "--":
			operands += len(args) - i - 1
			i = len(args)
		case v == "-f" || v == "-s" || v == "-w":
			i++
		case strings.HasPrefix(v, "-") && len(v) > 1:
		default:
			operands++
		}
	}
	return operands < 2
}

func treeReadOnly(args []ShellWord) bool {
	for _, a := range args {
		if a.Value == "-o" || (strings.HasPrefix(a.Value, "-o") && !strings.HasPrefix(a.Value, "--")) {
			return false
		}
	}
	return true
}

func rgReadOnly(args []ShellWord) bool {
	for _, a := range args {
		if a.Value == "--pre" || strings.HasPrefix(a.Value, "--pre=") {
			return false
		}
	}
	return true
}
