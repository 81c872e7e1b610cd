package shellsafe

import (
	"strings"

	"github.com/qwen-ls/qwen-ls/tools/lazy"
)

// readOnlyRoots are the commands of tools.md §6.3 that may run without
// approval, each with the check its arguments must pass (nil: any).
//
// Beyond §6.3's limits a few more are refused, each because the command
// then writes or runs something: sort -o and --compress-program, uniq with
// an output file, tree -o, rg --pre, git --output, git grep -O, git branch
// creating, copying or re-pointing a branch, git remote prune/update/set-*.
// Commands whose arguments are checked are not read-only when an argument
// holds an expansion, since it could hide a refused option, nor when an
// unquoted glob or brace pattern could expand to an option (one that
// starts with "-" or with a pattern character: "{-exec,rm,x,;}" is
// "-exec rm x ;", and "*" matches a file named "-delete").
//
// Also beyond §6.3: git options are matched by the unique prefixes git
// accepts ("--open" is --open-files-in-pager, "--edit" is
// --edit-description), git remote show asks (it contacts the remote
// unless given -n), tree -R writes 00Tree.html files, rg --hostname-bin
// and --search-zip start other programs, printf -v assigns a shell
// variable (PATH among them), and a redirection to /dev/tcp or /dev/udp
// (a network connection) or to a name only known at run time asks.
//
// Variables: a statement that sets environment variables for its command
// (PATH=. ls, LESSOPEN=… less, GIT_EXTERNAL_DIFF=… git diff) is read-only
// only when every one is a locale or display setting (safeEnvAssign); a
// statement that only assigns is read-only unless it sets a variable whose
// name has an upper-case letter (PATH, IFS, BASH_ENV, GIT_…), which the
// shell or the programs it starts may read.
var readOnlyRoots = lazy.Value[map[string]func(args []Word) bool]{Build: func() map[string]func(args []Word) bool {
	return map[string]func(args []Word) bool{
		"awk": awkReadOnly, "basename": nil, "cat": nil, "cd": nil, "column": nil, "cut": nil,
		"df": nil, "dirname": nil, "du": nil, "echo": nil, "env": noArgs, "find": findReadOnly,
		"git": gitReadOnly, "go": goReadOnly, "grep": nil, "head": nil, "less": lessReadOnly, "ls": nil, "more": moreReadOnly,
		"printenv": noArgs, "printf": printfReadOnly, "ps": nil, "pwd": nil, "rg": rgReadOnly, "sed": sedReadOnly,
		"sort": sortReadOnly, "stat": nil, "tail": nil, "tree": treeReadOnly, "uniq": uniqReadOnly,
		"wc": nil, "which": nil, "whoami": nil,
	}
}}

// shellReadOnly is the verdict of tools.md §6.3 for one sub-command. A
// statement without a program (assignments only) is read-only unless it
// redirects or substitutes. The command word must be a plain name: ./ls
// runs a file of the workspace, not ls.
func shellReadOnly(s SubCommand) bool {
	if s.WriteRedirect || s.Substitution || s.UnsafeExpansion {
		return false
	}
	if len(s.Words) == 0 {
		for _, name := range s.Assigns {
			if strings.ToLower(name) != name && !safeEnvAssign(name) {
				return false
			}
		}
		return true
	}
	for _, name := range s.Assigns {
		if !safeEnvAssign(name) {
			return false
		}
	}
	cw := s.Words[0]
	if cw.Expanded || cw.Pattern || strings.Contains(cw.Value, "/") {
		return false
	}
	check, ok := readOnlyRoots.Get()[cw.Value]
	if !ok {
		return false
	}
	if check == nil {
		return true
	}
	args := s.Words[1:]
	if cw.Value == "printf" {
		// Its arguments may hold expansions; only the first can be -v.
		return printfReadOnly(args)
	}
	for _, a := range args {
		if a.Expanded || (a.Pattern && patternMayBeOption(a.Value)) {
			return false
		}
	}
	return check(args)
}

// patternMayBeOption reports whether an unquoted glob or brace pattern
// may expand to a word that starts with "-": it does unless it starts
// with a literal character that is not "-".
func patternMayBeOption(v string) bool {
	return v == "" || strings.IndexByte("-*?[{@!+\\", v[0]) >= 0
}

// safeEnvAssign lists the variables a read-only command may be given:
// locale and display settings, which change no program's behaviour beyond
// its output.
func safeEnvAssign(name string) bool {
	switch name {
	case "LANG", "LANGUAGE", "TZ", "NO_COLOR", "COLUMNS", "LINES":
		return true
	}
	return strings.HasPrefix(name, "LC_")
}

// longOpt reports whether v is a long option ("--name" or "--name=value")
// that abbreviates, or is, one of names: git and other parse-options
// programs accept any unique prefix of a long option.
func longOpt(v string, names ...string) bool {
	if !strings.HasPrefix(v, "--") {
		return false
	}
	name, _, _ := strings.Cut(v[2:], "=")
	if name == "" {
		return false
	}
	for _, n := range names {
		if strings.HasPrefix(n, name) || strings.HasPrefix(name, n) {
			return true
		}
	}
	return false
}

// printfReadOnly refuses printf -v (it assigns a shell variable, PATH
// included) and a first argument that could turn into -v.
func printfReadOnly(args []Word) bool {
	if len(args) == 0 {
		return true
	}
	a := args[0]
	if a.Expanded || (a.Pattern && patternMayBeOption(a.Value)) {
		return false
	}
	return !strings.HasPrefix(a.Value, "-v")
}

func noArgs(args []Word) bool { return len(args) == 0 }

var findRefused = lazy.Value[map[string]bool]{Build: func() map[string]bool {
	return map[string]bool{
		"-delete": true, "-exec": true, "-execdir": true, "-ok": true, "-okdir": true,
		"-fprint": true, "-fprint0": true, "-fprintf": true, "-fls": true,
	}
}}

func findReadOnly(args []Word) bool {
	for _, a := range args {
		if findRefused.Get()[a.Value] {
			return false
		}
	}
	return true
}

var gitReadOnlySubs = lazy.Value[map[string]bool]{Build: func() map[string]bool {
	return map[string]bool{
		"blame": true, "branch": true, "cat-file": true, "describe": true, "diff": true, "grep": true,
		"log": true, "ls-files": true, "remote": true, "rev-parse": true, "show": true, "status": true,
	}
}}

func gitReadOnly(args []Word) bool {
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
	if i >= len(args) || !gitReadOnlySubs.Get()[args[i].Value] {
		return false
	}
	sub, rest := args[i].Value, args[i+1:]
	for _, a := range rest {
		if longOpt(a.Value, "output") {
			return false
		}
	}
	switch sub {
	case "grep":
		for _, a := range rest {
			v := a.Value
			if v == "-O" || longOpt(v, "open-files-in-pager") ||
				(len(v) > 1 && v[0] == '-' && v[1] != '-' && strings.Contains(v, "O")) {
				return false
			}
		}
	case "remote":
		show, noQuery := false, false
		for _, a := range rest {
			switch a.Value {
			case "add", "remove", "rm", "rename", "set-url", "set-head", "set-branches", "prune", "update":
				return false
			case "show":
				show = true
			case "-n":
				noQuery = true
			}
		}
		// git remote show asks the remote (ssh or https) unless -n.
		if show && !noQuery {
			return false
		}
	case "branch":
		return gitBranchReadOnly(rest)
	}
	return true
}

// gitBranchReadOnly allows listing branches only: no option that deletes,
// moves, copies or re-points one, and a branch name only in list mode.
func gitBranchReadOnly(args []Word) bool {
	listMode, named := false, false
	for _, a := range args {
		v := a.Value
		name, _, _ := strings.Cut(v, "=")
		if longOpt(v, "delete", "move", "copy", "force", "set-upstream-to", "unset-upstream",
			"edit-description", "track", "no-track", "set-upstream", "create-reflog", "recurse-submodules") {
			return false
		}
		switch name {
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

func sortReadOnly(args []Word) bool {
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
func uniqReadOnly(args []Word) bool {
	operands := 0
	for _, a := range args {
		if a.Pattern {
			// One glob can name two files, and uniq writes the second.
			return false
		}
	}
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

// treeReadOnly allows the listing options of tree. -o (output file) and
// -R (with -H it writes 00Tree.html in every directory) ask, and so does
// any option this list does not know.
func treeReadOnly(args []Word) bool {
	for i := 0; i < len(args); i++ {
		v := args[i].Value
		switch {
		case v == "--":
			return true
		case strings.HasPrefix(v, "--"):
			name, _, hasVal := strings.Cut(v[2:], "=")
			switch name {
			case "noreport", "dirsfirst", "filesfirst", "du", "prune", "gitignore", "matchdirs", "ignore-case",
				"help", "version", "metafirst", "inodes", "device", "si", "info":
			case "charset", "filelimit", "timefmt", "sort", "fromfile":
				if !hasVal && name != "fromfile" {
					i++
				}
			default:
				return false
			}
		case strings.HasPrefix(v, "-") && len(v) > 1:
			// tree takes the value of -L, -P, -I and -H from the next
			// argument and reads on in the cluster (-HR x is -H x -R).
			for _, c := range v[1:] {
				switch {
				case strings.ContainsRune("LPIH", c):
					i++
				case !strings.ContainsRune("adlfxpshugDFqNQrtvUcCAJSnXi", c):
					return false
				}
			}
		}
	}
	return true
}

// rgReadOnly refuses the options that start other programs: --pre,
// --hostname-bin and -z/--search-zip (decompressors).
func rgReadOnly(args []Word) bool {
	for _, a := range args {
		v := a.Value
		if v == "--" {
			break
		}
		switch {
		case v == "--pre" || strings.HasPrefix(v, "--pre="),
			v == "--hostname-bin" || strings.HasPrefix(v, "--hostname-bin="),
			v == "--search-zip":
			return false
		case len(v) > 1 && v[0] == '-' && v[1] != '-' && strings.Contains(v, "z"):
			return false
		}
	}
	return true
}

// scriptsSafe ends the checks of awk and sed: given no script by option
// (explicit), the first operand is the script, which must be a plain
// word; and every script must pass safe.
func scriptsSafe(args []Word, explicit bool, scripts, operands []string, safe func(string) bool) bool {
	if !explicit {
		if len(operands) == 0 || firstOperandIsPattern(args) {
			return false
		}
		scripts = append(scripts, operands[0])
	}
	for _, s := range scripts {
		if !safe(s) {
			return false
		}
	}
	return true
}

// firstOperandIsPattern reports whether the first argument that is not an
// option is an unquoted pattern: as the script of sed or the program of
// awk, its expansion is not the text that was checked. (Option values
// counted as operands make this stricter, never looser.)
func firstOperandIsPattern(args []Word) bool {
	for _, a := range args {
		if a.Value == "--" {
			continue
		}
		if len(a.Value) > 1 && a.Value[0] == '-' {
			continue
		}
		return a.Pattern
	}
	return false
}

// lessReadOnly allows only the options of less that change how text is
// shown. Everything else asks: -k and --lesskey-file/--lesskey-src load a
// key-binding file whose #env section can set LESSOPEN (a command less
// runs on every file), -o/-O/--log-file write a file, +cmd and
// --init-commands... run less commands (which include "!" for a shell
// command and "|" for a pipe), -t/-T use a tags file, and an option this
// list does not know may do any of those.
func lessReadOnly(args []Word) bool {
	for _, a := range args {
		v := a.Value
		switch {
		case v == "--":
			return true
		case strings.HasPrefix(v, "--"):
			name, _, _ := strings.Cut(v[2:], "=")
			if !lessLongSafe.Get()[name] {
				return false
			}
		case strings.HasPrefix(v, "+"):
			return false
		case strings.HasPrefix(v, "-") && len(v) > 1:
			if !shortCluster(v[1:], "aABcCdeEfFgGiIJKLmMnNqQrRsSuUVwWX~", "bhjxyz#") {
				return false
			}
		}
	}
	return true
}

// lessLongSafe are the long options of less that only change the display.
var lessLongSafe = lazy.Value[map[string]bool]{Build: func() map[string]bool {
	return map[string]bool{
		"quit-at-eof": true, "QUIT-AT-EOF": true, "quit-if-one-screen": true, "ignore-case": true, "IGNORE-CASE": true,
		"long-prompt": true, "LONG-PROMPT": true, "line-numbers": true, "LINE-NUMBERS": true, "quiet": true,
		"silent": true, "QUIET": true, "SILENT": true, "raw-control-chars": true, "RAW-CONTROL-CHARS": true,
		"squeeze-blank-lines": true, "chop-long-lines": true, "no-init": true, "tabs": true, "status-column": true,
		"no-lessopen": true, "hilite-unread": true, "HILITE-UNREAD": true, "no-keypad": true, "tilde": true,
		"shift": true, "window": true, "max-back-scroll": true, "jump-target": true, "buffers": true,
		"auto-buffers": true, "force": true, "dumb": true, "clear-screen": true, "CLEAR-SCREEN": true,
		"hilite-search": true, "HILITE-SEARCH": true, "search-skip-screen": true, "underline-special": true,
		"UNDERLINE-SPECIAL": true, "follow-name": true, "mouse": true, "wheel-lines": true, "use-color": true,
		"incsearch": true, "header": true, "wordwrap": true, "version": true, "help": true, "color": true,
	}
}}

// moreReadOnly allows the display options of more, its -n/-NUMBER line
// counts, and +NUMBER or +/pattern to start at a line; anything else asks.
func moreReadOnly(args []Word) bool {
	for i := 0; i < len(args); i++ {
		v := args[i].Value
		switch {
		case v == "--":
			return true
		case v == "-n" || v == "--lines":
			i++
		case strings.HasPrefix(v, "--"):
			switch name, _, _ := strings.Cut(v[2:], "="); name {
			case "silent", "logical", "no-pause", "print-over", "clean-print", "squeeze", "plain", "lines", "help", "version":
			default:
				return false
			}
		case strings.HasPrefix(v, "+"):
			if !allDigits(v[1:]) && !strings.HasPrefix(v, "+/") {
				return false
			}
		case strings.HasPrefix(v, "-") && len(v) > 1:
			if !allDigits(v[1:]) && !shortCluster(v[1:], "dlfpcsuhV", "n") {
				return false
			}
		}
	}
	return true
}

// shortCluster reports whether a cluster of short options (without its
// "-") holds only flags from flags and at most one option from valued,
// which takes the rest of the cluster as its value.
func shortCluster(c, flags, valued string) bool {
	for i := 0; i < len(c); i++ {
		switch {
		case strings.IndexByte(valued, c[i]) >= 0:
			return true
		case strings.IndexByte(flags, c[i]) < 0:
			return false
		}
	}
	return true
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// goReadOnly allows go list with options that only choose what is listed
// and how. Refused: -export and -compiled (they build, and cgo runs the
// compiler with flags the sources choose), -toolexec, -exec, -overlay,
// -modfile, -mod other than readonly or vendor (-mod=mod rewrites go.mod),
// -u and -versions (they ask the network), -o, -pgo, and any option this
// list does not know. Other go commands ask.
func goReadOnly(args []Word) bool {
	if len(args) == 0 || args[0].Value != "list" {
		return false
	}
	for i := 1; i < len(args); i++ {
		v := args[i].Value
		if v == "--" {
			return true
		}
		if !strings.HasPrefix(v, "-") {
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(v, "-"), "-"), "=")
		switch name {
		case "m", "deps", "e", "find", "test", "json", "a", "n", "x", "v", "race", "msan", "asan", "trimpath", "linkshared":
		case "f", "tags":
			if !hasVal {
				i++
			}
		case "mod":
			if !hasVal {
				if i+1 >= len(args) {
					return false
				}
				i++
				val = args[i].Value
			}
			if val != "readonly" && val != "vendor" {
				return false
			}
		default:
			return false
		}
	}
	return true
}
