package shellsafe

import (
	"github.com/qwen-ls/qwen-ls/tools/lazy"

	"os/user"
	"path/filepath"
	"strings"
)

// Reads under the home folder. A sub-command judged read-only runs
// unasked, but one that reads a file or folder under the home folder and
// outside the roots (~/.ssh/id_rsa, ~/.aws/credentials, ~/.netrc, a
// listing of ~) asks instead, as the file tools refuse those paths. The
// paths are those of the arguments each program reads (not grep's
// pattern, not what echo prints) and of its input redirections, resolved
// as bash and the kernel would: ~ and $HOME, cd, globs and braces, quotes,
// "..", links. What the analysis cannot see (a path in a variable, a
// relative path in an unknown directory, a script that reads files) is
// left to the OS sandbox, whose read allow-list leaves the home folder out.

// homeRead returns the first path under the home folder, outside the
// roots, that the read-only sub-command s reads, as the person is shown
// it; "" when there is none or the home folder is not known.
func (ctx Context) homeRead(s *SubCommand) string {
	home, realHome := ctx.homeDirs()
	if home == "" {
		return ""
	}
	var candidates []pathWord
	readsDir := false
	if len(s.Words) > 0 && len(s.paths) == len(s.Words) {
		words := make([]pathWord, len(s.paths)-1)
		for i, pw := range s.paths[1:] {
			words[i] = ctx.substituteHome(pw, home)
		}
		candidates, readsDir = readOperands(s.Root, words)
	}
	for _, r := range s.reads {
		candidates = append(candidates, ctx.substituteHome(r, home))
	}
	check := func(p string) string {
		ph := physicalPath(p)
		if !within(ph, home) && !within(ph, realHome) {
			return ""
		}
		if ctx.inside(ph) {
			return ""
		}
		return homeDisplay(p, ph, home, realHome)
	}
	if readsDir && s.Dir != "" {
		if shown := check(s.Dir); shown != "" {
			return shown
		}
	}
	for _, c := range candidates {
		for _, p := range ctx.readPaths(s.Dir, c) {
			if shown := check(p); shown != "" {
				return shown
			}
		}
	}
	return ""
}

// homeDirs is the home folder as given and with its links resolved, or ""
// when it is not known. A home folder of "/" would put the whole system
// under it, and is taken as not known.
func (ctx Context) homeDirs() (string, string) {
	if ctx.Home == "" || !filepath.IsAbs(ctx.Home) {
		return "", ""
	}
	home := filepath.Clean(ctx.Home)
	if home == string(filepath.Separator) {
		return "", ""
	}
	real := ctx.realHome
	if real == "" {
		real = physicalPath(home)
	}
	return home, real
}

// substituteHome turns a word built around $HOME into the literal word it
// expands to.
func (ctx Context) substituteHome(pw pathWord, home string) pathWord {
	if !pw.home {
		return pw
	}
	return pathWord{Word: Word{Value: pw.before + home + pw.after, Pattern: pw.homePattern}}
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	return dir != "" && (p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator)))
}

// homeDisplay shows a path under the home folder as ~/…: its real path ph
// (what is read, when the name p goes through a link), or else the name.
func homeDisplay(p, ph, home, realHome string) string {
	for _, c := range [][2]string{{ph, home}, {ph, realHome}, {p, home}} {
		if within(c[0], c[1]) {
			rel, err := filepath.Rel(c[1], c[0])
			if err != nil || rel == "." {
				return "~"
			}
			return "~" + string(filepath.Separator) + rel
		}
	}
	return ph
}

// readPaths are the absolute paths a path word may name, for a sub-command
// run in dir: its globs and braces expanded on disk (the pattern's fixed
// leading folder when it cannot be expanded), a tilde expanded only when
// bash would. It is empty when the word is not known before the command
// runs (an expansion, a relative path in an unknown directory).
func (ctx Context) readPaths(dir string, pw pathWord) []string {
	v := pw.Value
	if pw.Expanded || v == "" || v == "-" {
		return nil
	}
	if strings.HasPrefix(v, "~") {
		name, rest, _ := strings.Cut(v[1:], "/")
		switch {
		case !pw.tilde:
			// A quoted tilde is an ordinary name in dir.
			v = "." + string(filepath.Separator) + v
		case name == "":
		case name == "+":
			if dir == "" {
				return nil
			}
			v = filepath.Join(dir, rest)
		case name == "-":
			// $OLDPWD: not followed.
			return nil
		default:
			// ~name is that user's home folder; bash leaves the word as
			// written when there is no such user.
			if u, err := user.Lookup(name); err == nil && filepath.IsAbs(u.HomeDir) {
				v = filepath.Join(u.HomeDir, rest)
			} else {
				v = "." + string(filepath.Separator) + v
			}
		}
	}
	if !filepath.IsAbs(v) && !strings.HasPrefix(v, "~") && dir == "" {
		return nil
	}
	if paths, ok := ctx.expand(dir, v, pw.Pattern); ok {
		return paths
	}
	// A pattern too wide or too strange to expand here names something
	// below its fixed leading folder, or above it by as many levels as
	// the word has "..".
	fixed := "."
	if i := strings.IndexAny(v, "*?[{("); i >= 0 {
		if j := strings.LastIndexByte(v[:i], filepath.Separator); j >= 0 {
			fixed = v[:j+1]
		}
		for _, part := range strings.Split(v[i:], string(filepath.Separator)) {
			if part == ".." {
				fixed += string(filepath.Separator) + ".."
			}
		}
	}
	if p := ctx.absPath(dir, fixed); p != "" {
		return []string{p}
	}
	return nil
}

// readOperands picks, from the arguments of a read-only program (root),
// the words that name files or folders it reads, and reports whether it
// reads the directory it runs in when it is given none (ls, find, grep
// -r). Arguments that are not paths are left out: what echo and printf
// print, the pattern of grep and rg, the script of sed and awk. A word an
// option takes is counted as a path unless the program's options are
// known here; that errs towards asking.
func readOperands(root string, args []pathWord) ([]pathWord, bool) {
	switch root {
	case "echo", "printf", "pwd", "whoami", "ps", "env", "printenv", "which", "basename", "dirname", "cd":
		return nil, false
	case "grep":
		o := patternOptions.Get()
		return patternOperands(args, "efmABCdD", o.grepValued, o.grepFileOptions, false)
	case "rg":
		o := patternOptions.Get()
		return patternOperands(args, "ABCefgmMtTjErd", o.rgValued, o.rgFileOptions, true)
	case "sed":
		return scriptOperands(args, sedOptionValue), false
	case "awk":
		return awkOperands(args), false
	case "find":
		return findOperands(args)
	}
	ops := plainOperands(args, root == "less" || root == "more")
	return ops, len(ops) == 0 && (root == "ls" || root == "du" || root == "tree")
}

// plainOperands are the arguments that are not options, and the values
// given to long options with "=" (wc --files0-from=F). With plus, words
// that start with "+" are options too (less +G, more +/x).
func plainOperands(args []pathWord, plus bool) []pathWord {
	var out []pathWord
	for i, a := range args {
		v := a.Value
		switch {
		case a.Expanded:
		case v == "--":
			return append(out, args[i+1:]...)
		case plus && strings.HasPrefix(v, "+"):
		case strings.HasPrefix(v, "-") && len(v) > 1:
			if pw, ok := optionValue(a); ok {
				out = append(out, pw)
			}
		default:
			out = append(out, a)
		}
	}
	return out
}

// optionValue is the value of an option given as --name=value, as a path
// word: bash does not expand a tilde there.
func optionValue(a pathWord) (pathWord, bool) {
	if !strings.HasPrefix(a.Value, "--") {
		return pathWord{}, false
	}
	_, val, ok := strings.Cut(a.Value, "=")
	if !ok || val == "" {
		return pathWord{}, false
	}
	return pathWord{Word: Word{Value: val, Pattern: a.Pattern}}, true
}

// patternOptionSets are the long options of grep and rg that take a
// value, and those whose value is a file the program reads.
type patternOptionSets struct {
	grepValued, grepFileOptions, rgValued, rgFileOptions map[string]bool
}

var patternOptions = lazy.Value[patternOptionSets]{Build: func() (o patternOptionSets) {
	o.grepValued = map[string]bool{
		"regexp": true, "file": true, "max-count": true, "after-context": true, "before-context": true,
		"context": true, "directories": true, "devices": true, "include": true, "exclude": true,
		"exclude-from": true, "exclude-dir": true, "label": true, "binary-files": true, "group-separator": true,
	}
	o.grepFileOptions = map[string]bool{"f": true, "file": true, "exclude-from": true}
	o.rgValued = map[string]bool{
		"after-context": true, "before-context": true, "context": true, "regexp": true, "file": true,
		"glob": true, "iglob": true, "max-count": true, "max-columns": true, "type": true, "type-not": true,
		"threads": true, "encoding": true, "replace": true, "max-depth": true, "type-add": true,
		"type-clear": true, "max-filesize": true, "engine": true, "colors": true, "color": true,
		"context-separator": true, "field-context-separator": true, "field-match-separator": true,
		"path-separator": true, "sort": true, "sortr": true, "ignore-file": true, "pre-glob": true,
		"dfa-size-limit": true, "regex-size-limit": true, "hyperlink-format": true, "generate": true,
	}
	o.rgFileOptions = map[string]bool{"f": true, "file": true, "ignore-file": true}
	return o
}}

// patternOperands reads the arguments of grep or rg: the first operand is
// the pattern unless -e or -f gave one, the rest are files, and the
// values of -f (and of the options in files) are files too. grep reads
// its directory when recursive and given no file; rg (searchCwd) always
// does when given no file, and takes no pattern with --files.
func patternOperands(args []pathWord, shortValued string, longValued, files map[string]bool, searchCwd bool) ([]pathWord, bool) {
	var positional, out []pathWord
	explicit, recursive := false, false
	option := func(name, val string) {
		switch name {
		case "e", "regexp", "f", "file":
			explicit = true
		case "files", "type-list":
			explicit = true
		case "r", "R", "recursive", "dereference-recursive":
			recursive = true
		case "d", "directories":
			recursive = recursive || val == "recurse"
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.Value
		switch {
		case a.Expanded:
			positional = append(positional, a)
		case v == "--":
			positional = append(positional, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(v, "--"):
			name, val, hasVal := strings.Cut(v[2:], "=")
			if longValued[name] && !hasVal && i+1 < len(args) {
				i++
				val = args[i].Value
				if files[name] {
					out = append(out, args[i])
				}
			} else if files[name] && hasVal {
				out = append(out, pathWord{Word: Word{Value: val, Pattern: a.Pattern}})
			}
			option(name, val)
		case strings.HasPrefix(v, "-") && len(v) > 1:
			for j := 1; j < len(v); j++ {
				c := v[j : j+1]
				if !strings.Contains(shortValued, c) {
					option(c, "")
					continue
				}
				val := v[j+1:]
				if val == "" && i+1 < len(args) {
					i++
					val = args[i].Value
					if files[c] {
						out = append(out, args[i])
					}
				} else if files[c] && val != "" {
					out = append(out, pathWord{Word: Word{Value: val, Pattern: a.Pattern}})
				}
				option(c, val)
				break
			}
		default:
			positional = append(positional, a)
		}
	}
	if !explicit && len(positional) > 0 {
		positional = positional[1:]
	}
	out = append(out, positional...)
	return out, len(positional) == 0 && (recursive || searchCwd)
}

// sedOptionValue reports whether a short option of sed takes a value
// (the rest of the cluster or the next word) and whether it gives the
// script.
func sedOptionValue(c byte) (valued, script bool) {
	return c == 'e' || c == 'l', c == 'e'
}

// scriptOperands reads the arguments of sed: the first operand is the
// script unless -e or --expression gave one; the rest are files.
func scriptOperands(args []pathWord, short func(byte) (bool, bool)) []pathWord {
	var positional []pathWord
	explicit := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.Value
		switch {
		case a.Expanded:
			positional = append(positional, a)
		case v == "--":
			positional = append(positional, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(v, "--"):
			name, _, hasVal := strings.Cut(v[2:], "=")
			if name == "expression" {
				explicit = true
			}
			if (name == "expression" || name == "line-length") && !hasVal {
				i++
			}
		case strings.HasPrefix(v, "-") && len(v) > 1:
			for j := 1; j < len(v); j++ {
				valued, script := short(v[j])
				explicit = explicit || script
				if valued {
					if j == len(v)-1 {
						i++
					}
					break
				}
			}
		default:
			positional = append(positional, a)
		}
	}
	if !explicit && len(positional) > 0 {
		positional = positional[1:]
	}
	return positional
}

// awkOperands reads the arguments of awk: the first operand is the
// program unless -e or --source gave one; the rest are files, except
// assignments (name=value), which awk performs instead of reading.
func awkOperands(args []pathWord) []pathWord {
	var positional []pathWord
	explicit := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.Value
		switch {
		case a.Expanded:
			positional = append(positional, a)
		case v == "--":
			positional = append(positional, args[i+1:]...)
			i = len(args)
		case v == "-F" || v == "-v" || v == "--field-separator" || v == "--assign":
			i++
		case v == "-e" || v == "--source":
			explicit = true
			i++
		case strings.HasPrefix(v, "--source="):
			explicit = true
		case strings.HasPrefix(v, "-") && len(v) > 1:
		default:
			positional = append(positional, a)
		}
	}
	if !explicit && len(positional) > 0 {
		positional = positional[1:]
	}
	var out []pathWord
	for _, a := range positional {
		if name, _, ok := strings.Cut(a.Value, "="); ok && !a.Expanded && isName(name) {
			continue
		}
		out = append(out, a)
	}
	return out
}

func isName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// findOperands reads the arguments of find: its starting points (after
// -H, -L, -P, -D and -O), or its directory when there is none, and the
// files its tests compare with (-newer, -samefile, -files0-from).
func findOperands(args []pathWord) ([]pathWord, bool) {
	i := 0
	for i < len(args) {
		v := args[i].Value
		if args[i].Expanded {
			break
		}
		switch {
		case v == "-H" || v == "-L" || v == "-P" || strings.HasPrefix(v, "-O"):
			i++
			continue
		case v == "-D":
			i += 2
			continue
		}
		break
	}
	var out []pathWord
	for ; i < len(args); i++ {
		v := args[i].Value
		if !args[i].Expanded && v != "" && strings.ContainsAny(v[:1], "-(!),") {
			break
		}
		out = append(out, args[i])
	}
	readsDir := len(out) == 0
	for ; i < len(args); i++ {
		switch args[i].Value {
		case "-newer", "-anewer", "-cnewer", "-samefile", "-files0-from":
			if i+1 < len(args) {
				out = append(out, args[i+1])
				i++
			}
		}
	}
	return out, readsDir
}
