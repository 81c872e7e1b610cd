package tools

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// ShellWord is one word of a parsed sub-command.
type ShellWord struct {
	// Value is the word after quote removal when it is literal; when
	// Expanded it is the word's source text.
	Value string
	// Expanded means the word holds a parameter, arithmetic or command
	// expansion (or an ANSI-C $'…' string), so its run-time value is not
	// known from the text.
	Expanded bool
	// Pattern means unquoted glob or brace characters, which bash may turn
	// into other words (-de{l,}ete is -delete -deete).
	Pattern bool
}

// ShellSubCommand is one simple command of a command line (tools.md §3.8,
// §6.3): the unit that rules match and that is judged read-only.
type ShellSubCommand struct {
	// Text is the sub-command as written, redirections included.
	Text string
	// Words are the command word and its arguments; leading VAR=value
	// assignments are left out. Empty for a statement that only assigns
	// variables or only redirects.
	Words []ShellWord
	// Root is the basename of the command word ("" when there is none);
	// for a command word with an expansion it is the word's text.
	Root string
	// WriteRedirect: the sub-command, or a group or subshell around it,
	// redirects output to a file (>, >>, &>, &>>, >|, <>, >&file).
	WriteRedirect bool
	// Substitution: its own words or redirections hold a command or
	// process substitution ($(…), `…`, <(…), >(…)).
	Substitution bool
	// ReadOnly is the verdict of tools.md §6.3.
	ReadOnly bool
}

// ShellAnalysis is a command line taken apart for approval (tools.md §3.8,
// §6.3).
type ShellAnalysis struct {
	Command string
	// SubCommands in source order; those inside a command substitution
	// follow the sub-command that holds it.
	SubCommands []ShellSubCommand
	// Substitution is true when a command or process substitution appears
	// anywhere.
	Substitution bool
	// TrailingBackground: the last top-level statement ends with a bare &.
	TrailingBackground bool
}

// ParseShellCommand parses cmd as bash and splits it into sub-commands on
// &&, ||, ;, |, |&, & and newlines, descending into subshells, { } groups,
// compound commands (if, while, for, case, functions) and command and
// process substitutions. The error is the parser's message.
func ParseShellCommand(cmd string) (*ShellAnalysis, error) {
	p := syntax.NewParser(syntax.Variant(syntax.LangBash))
	f, err := p.Parse(strings.NewReader(cmd), "")
	if err != nil {
		return nil, err
	}
	w := &shellWalker{src: cmd}
	w.stmts(f.Stmts, false)
	a := &ShellAnalysis{Command: cmd, SubCommands: w.subs, Substitution: w.substitution}
	if n := len(f.Stmts); n > 0 && f.Stmts[n-1].Background {
		a.TrailingBackground = true
	}
	return a, nil
}

// HasRoot reports whether any sub-command runs a program.
func (a *ShellAnalysis) HasRoot() bool {
	for _, s := range a.SubCommands {
		if s.Root != "" {
			return true
		}
	}
	return false
}

// ReadOnly reports whether the whole command may run without approval:
// every sub-command is read-only and there is no command substitution.
func (a *ShellAnalysis) ReadOnly() bool {
	if a.Substitution {
		return false
	}
	for _, s := range a.SubCommands {
		if !s.ReadOnly {
			return false
		}
	}
	return true
}

// NeedingApproval returns the sub-commands that are not read-only.
func (a *ShellAnalysis) NeedingApproval() []ShellSubCommand {
	var out []ShellSubCommand
	for _, s := range a.SubCommands {
		if !s.ReadOnly {
			out = append(out, s)
		}
	}
	return out
}

// shellWalker collects the sub-commands of a parsed command line.
type shellWalker struct {
	src          string
	subs         []ShellSubCommand
	substitution bool
}

func (w *shellWalker) text(from, to syntax.Pos) string {
	a, b := int(from.Offset()), int(to.Offset())
	if a < 0 || b > len(w.src) || a > b {
		return ""
	}
	return w.src[a:b]
}

func (w *shellWalker) stmts(list []*syntax.Stmt, write bool) {
	for _, s := range list {
		w.stmt(s, write)
	}
}

// stmt handles one statement; write says a group around it redirects
// output to a file.
func (w *shellWalker) stmt(s *syntax.Stmt, write bool) {
	if s == nil {
		return
	}
	write = write || hasWriteRedirect(s.Redirs)
	switch c := s.Cmd.(type) {
	case nil, *syntax.CallExpr, *syntax.DeclClause, *syntax.LetClause, *syntax.TestClause, *syntax.ArithmCmd:
		w.leaf(s, write)
	case *syntax.BinaryCmd:
		w.redirSubsts(s.Redirs)
		w.stmt(c.X, write)
		w.stmt(c.Y, write)
	case *syntax.Subshell:
		w.redirSubsts(s.Redirs)
		w.stmts(c.Stmts, write)
	case *syntax.Block:
		w.redirSubsts(s.Redirs)
		w.stmts(c.Stmts, write)
	case *syntax.IfClause:
		w.redirSubsts(s.Redirs)
		for ic := c; ic != nil; ic = ic.Else {
			w.stmts(ic.Cond, write)
			w.stmts(ic.Then, write)
		}
	case *syntax.WhileClause:
		w.redirSubsts(s.Redirs)
		w.stmts(c.Cond, write)
		w.stmts(c.Do, write)
	case *syntax.ForClause:
		w.redirSubsts(s.Redirs)
		w.substs(c.Loop)
		w.stmts(c.Do, write)
	case *syntax.CaseClause:
		w.redirSubsts(s.Redirs)
		w.substs(c.Word)
		for _, item := range c.Items {
			for _, p := range item.Patterns {
				w.substs(p)
			}
			w.stmts(item.Stmts, write)
		}
	case *syntax.FuncDecl:
		w.redirSubsts(s.Redirs)
		w.stmt(c.Body, write)
	case *syntax.TimeClause:
		w.redirSubsts(s.Redirs)
		w.stmt(c.Stmt, write)
	case *syntax.CoprocClause:
		w.redirSubsts(s.Redirs)
		w.stmt(c.Stmt, write)
	default:
		// A construct of another dialect: judge it as one opaque command
		// that is never read-only.
		w.leaf(s, true)
	}
}

// leaf records a simple command (or a builtin clause) as a sub-command,
// then the sub-commands of the substitutions inside it.
func (w *shellWalker) leaf(s *syntax.Stmt, write bool) {
	end := s.Pos()
	if s.Cmd != nil {
		end = s.Cmd.End()
	}
	for _, r := range s.Redirs {
		e := r.End()
		if r.Word != nil {
			e = r.Word.End()
		}
		if e.Offset() > end.Offset() {
			end = e
		}
	}
	sub := ShellSubCommand{Text: w.text(s.Pos(), end), WriteRedirect: write}
	switch c := s.Cmd.(type) {
	case *syntax.CallExpr:
		for _, a := range c.Args {
			sub.Words = append(sub.Words, w.word(a))
		}
	case *syntax.DeclClause:
		sub.Words = append(sub.Words, ShellWord{Value: c.Variant.Value})
		for _, a := range c.Args {
			sub.Words = append(sub.Words, ShellWord{Value: w.text(a.Pos(), a.End()), Expanded: hasExpansion(a)})
		}
	case *syntax.LetClause:
		sub.Words = []ShellWord{{Value: "let"}}
		if len(c.Exprs) > 0 {
			sub.Words = append(sub.Words, ShellWord{Value: w.text(c.Exprs[0].Pos(), c.End()), Expanded: hasExpansion(c)})
		}
	case *syntax.TestClause:
		sub.Words = []ShellWord{{Value: "[["}, {Value: w.text(c.X.Pos(), c.X.End()), Expanded: hasExpansion(c.X)}}
	case *syntax.ArithmCmd:
		sub.Words = []ShellWord{{Value: "(("}, {Value: w.text(c.X.Pos(), c.X.End()), Expanded: hasExpansion(c.X)}}
	case nil:
	default:
		sub.Words = []ShellWord{{Value: sub.Text, Expanded: true}}
	}
	if len(sub.Words) > 0 {
		if cw := sub.Words[0]; cw.Expanded {
			sub.Root = cw.Value
		} else {
			sub.Root = path.Base(cw.Value)
		}
	}
	// The substitutions are found before the sub-command is added, but
	// their own sub-commands are listed after it.
	inner := &shellWalker{src: w.src}
	if s.Cmd != nil {
		sub.Substitution = inner.substs(s.Cmd)
	}
	if inner.redirSubsts(s.Redirs) {
		sub.Substitution = true
	}
	sub.ReadOnly = shellReadOnly(sub)
	w.subs = append(w.subs, sub)
	w.subs = append(w.subs, inner.subs...)
	w.substitution = w.substitution || inner.substitution
}

// redirSubsts walks the words of redirections for substitutions.
func (w *shellWalker) redirSubsts(redirs []*syntax.Redirect) bool {
	found := false
	for _, r := range redirs {
		if r.Word != nil && w.substs(r.Word) {
			found = true
		}
		if r.Hdoc != nil && w.substs(r.Hdoc) {
			found = true
		}
	}
	return found
}

// substs finds the command and process substitutions inside node (not
// descending into statements, which the caller handles), records their
// sub-commands, and reports whether there was any.
func (w *shellWalker) substs(node syntax.Node) bool {
	if node == nil {
		return false
	}
	found := false
	syntax.Walk(node, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			found = true
			w.stmts(n.Stmts, false)
			return false
		case *syntax.ProcSubst:
			found = true
			w.stmts(n.Stmts, false)
			return false
		}
		return true
	})
	if found {
		w.substitution = true
	}
	return found
}

// hasExpansion reports whether node holds any expansion.
func hasExpansion(node syntax.Node) bool {
	found := false
	syntax.Walk(node, func(n syntax.Node) bool {
		switch n.(type) {
		case *syntax.ParamExp, *syntax.CmdSubst, *syntax.ProcSubst, *syntax.ArithmExp:
			found = true
		}
		return !found
	})
	return found
}

// word computes a word's literal value, or marks it expanded.
func (w *shellWalker) word(wd *syntax.Word) ShellWord {
	var b strings.Builder
	out := ShellWord{}
	for _, part := range wd.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			v, pattern := unescapeUnquoted(p.Value)
			out.Pattern = out.Pattern || pattern
			b.WriteString(v)
		case *syntax.SglQuoted:
			if p.Dollar {
				out.Expanded = true
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				out.Expanded = true
			}
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					b.WriteString(unescapeDouble(l.Value))
				} else {
					out.Expanded = true
				}
			}
		case *syntax.ExtGlob:
			out.Pattern = true
			b.WriteString(w.text(p.Pos(), p.End()))
		default:
			out.Expanded = true
		}
	}
	if out.Expanded {
		return ShellWord{Value: w.text(wd.Pos(), wd.End()), Expanded: true}
	}
	out.Value = b.String()
	return out
}

// unescapeUnquoted removes the backslashes of an unquoted literal, and
// reports unescaped glob or brace characters.
func unescapeUnquoted(s string) (string, bool) {
	if !strings.ContainsAny(s, "\\*?[{") {
		return s, false
	}
	var b strings.Builder
	pattern := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			i++
			if s[i] != '\n' {
				b.WriteByte(s[i])
			}
			continue
		}
		if strings.IndexByte("*?[{", c) >= 0 {
			pattern = true
		}
		b.WriteByte(c)
	}
	return b.String(), pattern
}

// unescapeDouble removes the backslashes that are special inside double
// quotes.
func unescapeDouble(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
			i++
			if s[i] != '\n' {
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// hasWriteRedirect reports a redirection that writes to a file. >&N and
// >&- only duplicate or close descriptors.
func hasWriteRedirect(redirs []*syntax.Redirect) bool {
	for _, r := range redirs {
		// Discarding output (2>/dev/null) writes nothing a user would
		// want to approve; read-only commands use it all the time.
		if r.Word != nil && r.Word.Lit() == "/dev/null" {
			continue
		}
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll,
			syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob, syntax.RdrInOut:
			return true
		case syntax.DplOut:
			if r.Word == nil || !isFDWord(r.Word) {
				return true
			}
		}
	}
	return false
}

func isFDWord(wd *syntax.Word) bool {
	lit := wd.Lit()
	if lit == "-" {
		return true
	}
	if lit == "" {
		return false
	}
	lit = strings.TrimSuffix(lit, "-")
	for _, c := range lit {
		if c < '0' || c > '9' {
			return false
		}
	}
	return lit != ""
}

// String shows a sub-command for test failures and logs.
func (s ShellSubCommand) String() string {
	return fmt.Sprintf("%q (root %q, read-only %v)", s.Text, s.Root, s.ReadOnly)
}

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

// sedReadOnly refuses in-place editing, script files it cannot inspect,
// options it does not know, and scripts with e or w commands (or the e
// and w flags of s).
func sedReadOnly(args []ShellWord) bool {
	var scripts, operands []string
	explicit := false
	for i := 0; i < len(args); i++ {
		v := args[i].Value
		if v == "--" {
			for _, a := range args[i+1:] {
				operands = append(operands, a.Value)
			}
			break
		}
		if strings.HasPrefix(v, "--") {
			name, val, hasVal := strings.Cut(v[2:], "=")
			switch name {
			case "expression":
				explicit = true
				if !hasVal {
					if i+1 >= len(args) {
						return false
					}
					i++
					val = args[i].Value
				}
				scripts = append(scripts, val)
			case "line-length":
				if !hasVal {
					i++
				}
			case "quiet", "silent", "regexp-extended", "separate", "null-data", "zero-terminated",
				"posix", "debug", "unbuffered", "sandbox", "follow-symlinks":
			default:
				// --in-place, --file, and abbreviations we do not expand.
				return false
			}
			continue
		}
		if len(v) > 1 && v[0] == '-' {
		cluster:
			for j := 1; j < len(v); j++ {
				switch v[j] {
				case 'n', 's', 'E', 'r', 'z', 'u':
				case 'e', 'l':
					val := v[j+1:]
					if val == "" {
						if i+1 >= len(args) {
							return false
						}
						i++
						val = args[i].Value
					}
					if v[j] == 'e' {
						explicit = true
						scripts = append(scripts, val)
					}
					break cluster
				default:
					// -i (in place), -f (script file), unknown options.
					return false
				}
			}
			continue
		}
		operands = append(operands, v)
	}
	if !explicit {
		if len(operands) == 0 {
			return false
		}
		scripts = append(scripts, operands[0])
	}
	for _, s := range scripts {
		if !sedScriptSafe(s) {
			return false
		}
	}
	return true
}

// sedScriptSafe scans a sed script for commands that write files or run
// programs: w, W, e, and s with the w or e flag. Anything it cannot parse
// counts as unsafe.
func sedScriptSafe(s string) bool {
	i, n := 0, len(s)
	skipSpace := func() {
		for i < n && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	toEOL := func() {
		for i < n && s[i] != '\n' {
			if s[i] == '\\' && i+1 < n {
				i++
			}
			i++
		}
	}
	// delimited reads a delimited part (after the delimiter) up to the
	// closing delimiter; regexps honour bracket expressions.
	delimited := func(delim byte, regexp bool) bool {
		for i < n {
			c := s[i]
			switch {
			case c == '\\':
				i += 2
				continue
			case c == '\n' && !regexp:
				i++
				continue
			case c == '\n':
				return false
			case c == delim:
				i++
				return true
			case c == '[' && regexp:
				if !sedBracket(s, &i) {
					return false
				}
				continue
			}
			i++
		}
		return false
	}
	address := func() bool {
		switch {
		case i < n && s[i] >= '0' && s[i] <= '9':
			for i < n && (s[i] >= '0' && s[i] <= '9' || s[i] == '~') {
				i++
			}
		case i < n && s[i] == '$':
			i++
		case i < n && s[i] == '/':
			i++
			if !delimited('/', true) {
				return false
			}
			for i < n && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		case i+1 < n && s[i] == '\\':
			d := s[i+1]
			i += 2
			if !delimited(d, true) {
				return false
			}
			for i < n && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		}
		return true
	}
	for {
		for i < n && strings.IndexByte(" \t\n;", s[i]) >= 0 {
			i++
		}
		if i >= n {
			return true
		}
		if !address() {
			return false
		}
		skipSpace()
		if i < n && s[i] == ',' {
			i++
			skipSpace()
			if i < n && (s[i] == '+' || s[i] == '~') {
				i++
			}
			if !address() {
				return false
			}
		}
		skipSpace()
		for i < n && s[i] == '!' {
			i++
			skipSpace()
		}
		if i >= n {
			return false
		}
		cmd := s[i]
		i++
		switch cmd {
		case '{', '}', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case 'l', 'L', 'q', 'Q':
			skipSpace()
			for i < n && s[i] >= '0' && s[i] <= '9' {
				i++
			}
		case '#', 'a', 'i', 'c', 'r', 'R':
			toEOL()
		case ':', 'b', 't', 'T', 'v':
			for i < n && s[i] != '\n' && s[i] != ';' {
				i++
			}
		case 's':
			if i >= n || s[i] == '\\' || s[i] == '\n' {
				return false
			}
			d := s[i]
			i++
			if !delimited(d, true) || !delimited(d, false) {
				return false
			}
			for i < n && strings.IndexByte("gpiImM0123456789", s[i]) >= 0 {
				i++
			}
			if i < n && strings.IndexByte(" \t\n;}#", s[i]) < 0 {
				// e, w, or a flag we do not know.
				return false
			}
		case 'y':
			if i >= n || s[i] == '\\' || s[i] == '\n' {
				return false
			}
			d := s[i]
			i++
			if !delimited(d, false) || !delimited(d, false) {
				return false
			}
		default:
			// w, W, e, and anything unknown.
			return false
		}
	}
}

// sedBracket skips a bracket expression starting at s[*i] == '['.
func sedBracket(s string, i *int) bool {
	j := *i + 1
	if j < len(s) && s[j] == '^' {
		j++
	}
	if j < len(s) && s[j] == ']' {
		j++
	}
	for j < len(s) {
		switch {
		case s[j] == '[' && j+1 < len(s) && strings.IndexByte(":.=", s[j+1]) >= 0:
			end := strings.Index(s[j+2:], string(s[j+1])+"]")
			if end < 0 {
				return false
			}
			j += 2 + end + 2
		case s[j] == ']':
			*i = j + 1
			return true
		case s[j] == '\n':
			return false
		default:
			j++
		}
	}
	return false
}

// awkReadOnly refuses program files and programs that run commands or
// write files: system(, getline, pipes, and > in a print statement.
func awkReadOnly(args []ShellWord) bool {
	var programs, operands []string
	explicit := false
	for i := 0; i < len(args); i++ {
		v := args[i].Value
		if v == "--" {
			for _, a := range args[i+1:] {
				operands = append(operands, a.Value)
			}
			break
		}
		if len(v) > 1 && v[0] == '-' {
			switch {
			case v == "-F" || v == "-v" || v == "--field-separator" || v == "--assign":
				i++
			case strings.HasPrefix(v, "-F") || strings.HasPrefix(v, "-v") ||
				strings.HasPrefix(v, "--field-separator=") || strings.HasPrefix(v, "--assign="):
			case v == "-e" || v == "--source":
				if i+1 >= len(args) {
					return false
				}
				i++
				explicit = true
				programs = append(programs, args[i].Value)
			case strings.HasPrefix(v, "--source="):
				explicit = true
				programs = append(programs, strings.TrimPrefix(v, "--source="))
			case v == "-b" || v == "-c" || v == "-P" || v == "--posix" || v == "--traditional" ||
				v == "--characters-as-bytes" || v == "--re-interval":
			default:
				// -f, -E, -i, -l and unknown options.
				return false
			}
			continue
		}
		operands = append(operands, v)
	}
	if !explicit {
		if len(operands) == 0 {
			return false
		}
		programs = append(programs, operands[0])
	}
	for _, p := range programs {
		if !awkProgramSafe(p) {
			return false
		}
	}
	return true
}

// awkProgramSafe scans an awk program outside string and regexp literals.
func awkProgramSafe(p string) bool {
	inPrint := false
	prev := byte('\n') // the last significant character
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '"':
			i++
			for i < len(p) && p[i] != '"' {
				if p[i] == '\\' {
					i++
				}
				i++
			}
			prev = '"'
			continue
		case c == '/' && strings.IndexByte("\n(,{};!~&|?:=", prev) >= 0:
			i++
			for i < len(p) && p[i] != '/' {
				if p[i] == '\\' {
					i++
				} else if p[i] == '\n' {
					return false
				}
				i++
			}
			prev = '/'
			continue
		case c == '#':
			for i < len(p) && p[i] != '\n' {
				i++
			}
			prev = '\n'
			inPrint = false
			continue
		case c == '@':
			return false
		case c == '|':
			if i+1 < len(p) && p[i+1] == '|' {
				i++
			} else {
				return false
			}
		case c == '>' && inPrint:
			return false
		case c == ';' || c == '\n' || c == '{' || c == '}':
			inPrint = false
		case isAwkIdentStart(c):
			j := i
			for j < len(p) && isAwkIdent(p[j]) {
				j++
			}
			word := p[i:j]
			switch word {
			case "getline":
				return false
			case "system":
				k := j
				for k < len(p) && (p[k] == ' ' || p[k] == '\t') {
					k++
				}
				if k < len(p) && p[k] == '(' {
					return false
				}
			case "print", "printf":
				inPrint = true
			}
			i = j - 1
			prev = 'a'
			continue
		}
		if c != ' ' && c != '\t' {
			prev = c
		}
	}
	return true
}

func isAwkIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isAwkIdent(c byte) bool { return isAwkIdentStart(c) || (c >= '0' && c <= '9') }
