package shellsafe

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Word is one word of a parsed sub-command.
type Word struct {
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

// SubCommand is one simple command of a command line (tools.md §3.8,
// §6.3): the unit that rules match and that is judged read-only.
type SubCommand struct {
	// Text is the sub-command as written, redirections included.
	Text string
	// Words are the command word and its arguments; leading VAR=value
	// assignments are left out. Empty for a statement that only assigns
	// variables or only redirects.
	Words []Word
	// Assigns are the names of the variables the statement assigns before
	// its command word (or on their own when Words is empty).
	Assigns []string
	// Root is the basename of the command word ("" when there is none);
	// for a command word with an expansion it is the word's text.
	Root string
	// WriteRedirect: the sub-command, or a group or subshell around it,
	// redirects output to a file (>, >>, &>, &>>, >|, <>, >&file).
	WriteRedirect bool
	// Substitution: its own words or redirections hold a command or
	// process substitution ($(…), `…`, <(…), >(…)).
	Substitution bool
	// UnsafeExpansion: the sub-command holds an expansion whose value bash
	// evaluates as code (arithmetic, a subscript, a substring offset,
	// indirection, a prompt or other @ transform, an assignment that
	// assigns), or an assignment to an array element: any of these runs
	// a $(…) hidden in a variable's value.
	UnsafeExpansion bool
	// ReadOnly is the verdict of tools.md §6.3.
	ReadOnly bool
	// ForeignGit: a git command that would read the configuration of a
	// repository that is not the trusted workspace's own (one outside the
	// roots, or any repository of a folder that is not trusted). That
	// configuration can run programs (core.fsmonitor, aliases, pagers),
	// so an allow rule for the command does not cover it; only a bare
	// Bash rule does.
	ForeignGit bool
	// Verbatim: the command is not POSIX shell (cmd.exe or PowerShell on
	// Windows) and was not analysed. It is one sub-command, never
	// read-only; an allow rule covers it only when its text is the whole
	// command (or it is a bare rule), and deny rules match its words as
	// split at blanks.
	Verbatim bool

	// Redirects are the targets of the file-writing redirections of the
	// sub-command and of the groups around it, after quote removal.
	Redirects []Word
	// Dir is the directory the sub-command runs in, as Analyze worked it
	// out from Context.Dir and the cd commands before it ("" when it
	// cannot be known: cd to a variable, cd -, a cd in a loop).
	Dir string
	// Targets are the absolute paths the sub-command may write, as
	// Analyze resolved them: its redirection targets, and for a
	// sub-command that is not read-only (and not only because of
	// HomeRead) every argument that names a path
	// (globs expanded against the file system, ~ resolved). Each is
	// given as written (made absolute), not with links resolved.
	Targets []string
	// Unresolved says why some target could not be known before the
	// command runs ("" when every one is known): a redirection to a
	// variable, a path argument of a file-writing program that holds an
	// expansion, a relative target in an unknown directory.
	Unresolved string

	// HomeRead names, as the person is shown it (~/.ssh/id_rsa), a path
	// under the home folder and outside the roots that the sub-command
	// reads; "" when it reads none. Such a sub-command would be
	// read-only otherwise: it writes nothing, but it asks, as the file
	// tools refuse the same path.
	HomeRead string

	// exact is the sub-command's form as an exact rule names it
	// (exactForm), "" when no rule can name it exactly.
	exact string
	// atBase: Analyze found that the sub-command runs in Context.Base,
	// the only place an exact rule covers it.
	atBase bool

	loop   bool       // inside a loop or function body
	scopes []int      // the subshells (pipeline parts, substitutions) it is in, outermost first
	paths  []pathWord // Words again, as paths: how bash expands a leading ~ or $HOME in each
	reads  []pathWord // the files its input redirections (<) and the groups around it read
}

// pathWord is a word as the path it may name. bash expands a tilde only
// when it starts the word unquoted (~"/x" stays as written), and a word
// built around $HOME names a path under the home folder although it
// holds an expansion.
type pathWord struct {
	Word
	// tilde: the word starts with a tilde-prefix bash expands (~, ~/…,
	// ~name/…).
	tilde bool
	// home: the word is literal text (before, after) around one plain
	// $HOME or ${HOME}, quoted or not; homePattern reports glob or brace
	// characters in its unquoted text.
	home          bool
	before, after string
	homePattern   bool
}

// Analysis is a command line taken apart for approval (tools.md §3.8,
// §6.3).
type Analysis struct {
	Command string
	// SubCommands in source order; those inside a command substitution
	// follow the sub-command that holds it.
	SubCommands []SubCommand
	// Substitution is true when a command or process substitution appears
	// anywhere.
	Substitution bool
	// TrailingBackground: the last top-level statement ends with a bare &.
	TrailingBackground bool
}

// Parse parses cmd as bash and splits it into sub-commands on
// &&, ||, ;, |, |&, & and newlines, descending into subshells, { } groups,
// compound commands (if, while, for, case, functions) and command and
// process substitutions. The error is the parser's message.
func Parse(cmd string) (*Analysis, error) {
	p := syntax.NewParser(syntax.Variant(syntax.LangBash))
	f, err := p.Parse(strings.NewReader(cmd), "")
	if err != nil {
		return nil, err
	}
	w := &shellWalker{src: cmd, lastScope: new(int)}
	w.stmts(f.Stmts, redirs{})
	a := &Analysis{Command: cmd, SubCommands: w.subs, Substitution: w.substitution}
	if n := len(f.Stmts); n > 0 && f.Stmts[n-1].Background {
		a.TrailingBackground = true
	}
	return a, nil
}

// Verbatim is the analysis of a command line for a shell whose syntax is
// not analysed (cmd.exe, PowerShell): the whole line is one sub-command
// that needs approval, whose words are its blank-separated fields.
func Verbatim(cmd string) *Analysis {
	text := strings.TrimSpace(cmd)
	sub := SubCommand{Text: text, Verbatim: true}
	for _, f := range strings.Fields(text) {
		sub.Words = append(sub.Words, Word{Value: f})
	}
	if len(sub.Words) > 0 {
		root := strings.Trim(sub.Words[0].Value, `"'`)
		if i := strings.LastIndexAny(root, `/\`); i >= 0 {
			root = root[i+1:]
		}
		sub.Root = root
	}
	return &Analysis{Command: cmd, SubCommands: []SubCommand{sub}}
}

// HasRoot reports whether any sub-command runs a program.
func (a *Analysis) HasRoot() bool {
	for _, s := range a.SubCommands {
		if s.Root != "" {
			return true
		}
	}
	return false
}

// ReadOnly reports whether the whole command may run without approval:
// every sub-command is read-only and there is no command substitution.
func (a *Analysis) ReadOnly() bool {
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
func (a *Analysis) NeedingApproval() []SubCommand {
	var out []SubCommand
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
	subs         []SubCommand
	substitution bool
	loop         int   // depth of loop bodies
	scopes       []int // the open subshells, outermost first
	lastScope    *int  // the last subshell number given, shared with inner walkers
}

// enter opens a subshell scope; leave closes it.
func (w *shellWalker) enter() {
	if w.lastScope == nil {
		w.lastScope = new(int)
	}
	*w.lastScope++
	w.scopes = append(w.scopes[:len(w.scopes):len(w.scopes)], *w.lastScope)
}

func (w *shellWalker) leave() { w.scopes = w.scopes[:len(w.scopes)-1] }

func (w *shellWalker) text(from, to syntax.Pos) string {
	a, b := int(from.Offset()), int(to.Offset())
	if a < 0 || b > len(w.src) || a > b {
		return ""
	}
	return w.src[a:b]
}

func (w *shellWalker) stmts(list []*syntax.Stmt, outer redirs) {
	for _, s := range list {
		w.stmt(s, outer)
	}
}

// redirs are the file-writing redirections of the groups around a
// statement, and the files their input redirections read.
type redirs struct {
	write   bool
	targets []Word
	reads   []pathWord
}

func (r redirs) with(list []*syntax.Redirect) redirs {
	if reads := readTargets(list); len(reads) > 0 {
		r.reads = append(append([]pathWord(nil), r.reads...), reads...)
	}
	if !hasWriteRedirect(list) {
		return r
	}
	return redirs{write: true, targets: append(append([]Word(nil), r.targets...), writeTargets(list)...), reads: r.reads}
}

// clause records the header of a compound command (a for list, a case
// word and patterns, a group's redirections) as a sub-command that is not
// read-only when it holds an expansion bash evaluates as code.
func (w *shellWalker) clause(root string, from, to syntax.Pos, nodes ...syntax.Node) {
	for _, n := range nodes {
		if n != nil && unsafeExpansion(n) {
			w.subs = append(w.subs, SubCommand{Text: w.text(from, to), Root: root, UnsafeExpansion: true, loop: w.loop > 0, scopes: w.scopes})
			return
		}
	}
}

func (w *shellWalker) redirClause(s *syntax.Stmt) {
	for _, r := range s.Redirs {
		w.clause("", r.Pos(), r.End(), r)
	}
}

// stmt handles one statement; outer are the redirections of groups around
// it that write to files.
func (w *shellWalker) stmt(s *syntax.Stmt, outer redirs) {
	if s == nil {
		return
	}
	write := outer.with(s.Redirs)
	if _, leaf := s.Cmd.(*syntax.CallExpr); !leaf && s.Cmd != nil {
		switch s.Cmd.(type) {
		case *syntax.DeclClause, *syntax.LetClause, *syntax.TestClause, *syntax.ArithmCmd:
		default:
			w.redirClause(s)
		}
	}
	switch c := s.Cmd.(type) {
	case nil, *syntax.CallExpr, *syntax.DeclClause, *syntax.LetClause, *syntax.TestClause, *syntax.ArithmCmd:
		w.leaf(s, write, outer.write || len(outer.reads) > 0)
	case *syntax.BinaryCmd:
		w.redirSubsts(s.Redirs)
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			// Each part of a pipeline runs in its own subshell.
			w.enter()
			w.stmt(c.X, write)
			w.leave()
			w.enter()
			w.stmt(c.Y, write)
			w.leave()
			break
		}
		w.stmt(c.X, write)
		w.stmt(c.Y, write)
	case *syntax.Subshell:
		w.redirSubsts(s.Redirs)
		w.enter()
		w.stmts(c.Stmts, write)
		w.leave()
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
		w.loop++
		w.stmts(c.Cond, write)
		w.stmts(c.Do, write)
		w.loop--
	case *syntax.ForClause:
		w.redirSubsts(s.Redirs)
		w.loop++
		w.clause("", c.Loop.Pos(), c.Loop.End(), c.Loop)
		w.substs(c.Loop)
		w.stmts(c.Do, write)
		w.loop--
	case *syntax.CaseClause:
		w.redirSubsts(s.Redirs)
		w.clause("", c.Word.Pos(), c.Word.End(), c.Word)
		for _, item := range c.Items {
			for _, p := range item.Patterns {
				w.clause("", p.Pos(), p.End(), p)
			}
		}
		w.substs(c.Word)
		for _, item := range c.Items {
			for _, p := range item.Patterns {
				w.substs(p)
			}
			w.stmts(item.Stmts, write)
		}
	case *syntax.FuncDecl:
		w.redirSubsts(s.Redirs)
		// A function body runs wherever the function is called, maybe
		// many times: for the directory it is like a loop body.
		w.loop++
		w.stmt(c.Body, write)
		w.loop--
	case *syntax.TimeClause:
		w.redirSubsts(s.Redirs)
		w.stmt(c.Stmt, write)
	case *syntax.CoprocClause:
		w.redirSubsts(s.Redirs)
		w.stmt(c.Stmt, write)
	default:
		// A construct of another dialect: judge it as one opaque command
		// that is never read-only.
		w.leaf(s, redirs{write: true}, true)
	}
}

// leaf records a simple command (or a builtin clause) as a sub-command,
// then the sub-commands of the substitutions inside it. enclosed: a group
// or subshell around it redirects to or from a file, which its text does
// not show.
func (w *shellWalker) leaf(s *syntax.Stmt, write redirs, enclosed bool) {
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
	sub := SubCommand{Text: w.text(s.Pos(), end), WriteRedirect: write.write, Redirects: write.targets, reads: write.reads, loop: w.loop > 0, scopes: w.scopes}
	switch c := s.Cmd.(type) {
	case *syntax.CallExpr:
		for _, a := range c.Assigns {
			if a.Name != nil {
				sub.Assigns = append(sub.Assigns, a.Name.Value)
			}
		}
		for _, a := range c.Args {
			pw := w.pathWord(a)
			sub.Words = append(sub.Words, pw.Word)
			sub.paths = append(sub.paths, pw)
		}
	case *syntax.DeclClause:
		sub.Words = append(sub.Words, Word{Value: c.Variant.Value})
		for _, a := range c.Args {
			sub.Words = append(sub.Words, Word{Value: w.text(a.Pos(), a.End()), Expanded: hasExpansion(a)})
		}
	case *syntax.LetClause:
		sub.Words = []Word{{Value: "let"}}
		if len(c.Exprs) > 0 {
			sub.Words = append(sub.Words, Word{Value: w.text(c.Exprs[0].Pos(), c.End()), Expanded: hasExpansion(c)})
		}
	case *syntax.TestClause:
		sub.Words = []Word{{Value: "[["}, {Value: w.text(c.X.Pos(), c.X.End()), Expanded: hasExpansion(c.X)}}
	case *syntax.ArithmCmd:
		sub.Words = []Word{{Value: "(("}, {Value: w.text(c.X.Pos(), c.X.End()), Expanded: hasExpansion(c.X)}}
	case nil:
	default:
		sub.Words = []Word{{Value: sub.Text, Expanded: true}}
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
	inner := &shellWalker{src: w.src, loop: w.loop, scopes: w.scopes, lastScope: w.lastScope}
	inner.enter()
	if s.Cmd != nil {
		sub.Substitution = inner.substs(s.Cmd)
	}
	if inner.redirSubsts(s.Redirs) {
		sub.Substitution = true
	}
	sub.UnsafeExpansion = unsafeExpansion(s)
	sub.ReadOnly = shellReadOnly(sub)
	if !enclosed && !sub.Substitution {
		sub.exact = w.exactForm(s)
	}
	w.subs = append(w.subs, sub)
	w.subs = append(w.subs, inner.subs...)
	w.substitution = w.substitution || inner.substitution
}

// exactForm is what an exact rule compares (tools.md §6.2 as qwen-ls
// extends it): a simple command's assignments, words and redirections as
// written, quotes included, so that only the blanks between them and where
// the redirections stand among the words may differ; the parser proves
// such spellings the same command. It is "" for a statement no rule can
// name exactly: not a simple command, a here-document (its body is not in
// the text), or a redirection whose target holds an expansion or a
// pattern (known only when it runs).
func (w *shellWalker) exactForm(s *syntax.Stmt) string {
	call, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || s.Coprocess {
		return ""
	}
	var parts []string
	if s.Negated {
		parts = append(parts, "!")
	}
	for _, a := range call.Assigns {
		parts = append(parts, w.text(a.Pos(), a.End()))
	}
	for _, a := range call.Args {
		parts = append(parts, w.text(a.Pos(), a.End()))
	}
	for _, r := range s.Redirs {
		if r.Word == nil || isHeredoc(r.Op) {
			return ""
		}
		if _, known := redirTarget(r.Word); !known {
			return ""
		}
		n := ""
		if r.N != nil {
			n = r.N.Value
		}
		parts = append(parts, n+r.Op.String()+" "+w.text(r.Word.Pos(), r.Word.End()))
	}
	return strings.Join(parts, "\x00")
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
			w.stmts(n.Stmts, redirs{})
			return false
		case *syntax.ProcSubst:
			found = true
			w.stmts(n.Stmts, redirs{})
			return false
		}
		return true
	})
	if found {
		w.substitution = true
	}
	return found
}

// unsafeExpansion reports whether node, outside the command and process
// substitutions in it (sub-commands of their own), holds an expansion or
// an assignment that makes bash evaluate a variable's value as code. The
// safe forms are an allow-list: $name, ${name}, ${#name}, and ${name}
// with a default (-, :-, +, :+), a prefix or suffix removed (#, ##, %,
// %%) or its case changed (^, ^^, ",", ",,"); and an assignment of one
// word to a plain name. Everything else (arithmetic, subscripts,
// substring offsets, ${!name}, ${name@P} and the other @ transforms,
// ${name/x/y}, ${name:=x}, array assignments) is not: bash evaluates the
// contents of the variables named there, and a value such as
// 'a[$(touch m)]' runs its substitution.
func unsafeExpansion(node syntax.Node) bool {
	found := false
	syntax.Walk(node, func(n syntax.Node) bool {
		if found {
			return false
		}
		switch n := n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			return false
		case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause, *syntax.TestClause, *syntax.CStyleLoop:
			found = true
		case *syntax.ParamExp:
			found = !safeParamExp(n)
		case *syntax.Assign:
			found = n.Index != nil || n.Array != nil || n.Name == nil || n.Naked
		case *syntax.DeclClause:
			found = true
		}
		return !found
	})
	return found
}

// safeParamExp is the allow-list of unsafeExpansion.
func safeParamExp(p *syntax.ParamExp) bool {
	if p.Param == nil || p.Flags != nil || p.Excl || p.Width || p.IsSet || p.NestedParam != nil ||
		p.Index != nil || len(p.Modifiers) > 0 || p.Slice != nil || p.Repl != nil || p.Names != 0 ||
		p.Split != syntax.OptUnset || p.GlobSubst != syntax.OptUnset || p.RcExpand != syntax.OptUnset {
		return false
	}
	if p.Exp == nil {
		return true
	}
	if p.Length {
		return false
	}
	switch p.Exp.Op {
	case syntax.AlternateUnset, syntax.AlternateUnsetOrNull, syntax.DefaultUnset, syntax.DefaultUnsetOrNull,
		syntax.RemSmallSuffix, syntax.RemLargeSuffix, syntax.RemSmallPrefix, syntax.RemLargePrefix,
		syntax.UpperFirst, syntax.UpperAll, syntax.LowerFirst, syntax.LowerAll:
		return true
	}
	return false
}

// String shows a sub-command for test failures and logs.
func (s SubCommand) String() string {
	return fmt.Sprintf("%q (root %q, read-only %v)", s.Text, s.Root, s.ReadOnly)
}
