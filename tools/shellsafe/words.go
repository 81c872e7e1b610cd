package shellsafe

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Words and redirection targets as the walker reads them: a word's
// literal value when the parser can know it, a path word's home prefix,
// and the files a redirection writes or reads.

// writeTargets are the targets of the redirections in list that write to
// a file (not /dev/null, not a descriptor).
func writeTargets(list []*syntax.Redirect) []Word {
	var out []Word
	w := &shellWalker{}
	for _, r := range list {
		if r.Word == nil || isHeredoc(r.Op) || r.Word.Lit() == "/dev/null" {
			continue
		}
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll,
			syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob, syntax.RdrInOut:
		case syntax.DplOut:
			if isFDWord(r.Word) {
				continue
			}
		default:
			continue
		}
		w.src = ""
		t := w.word(r.Word)
		if t.Expanded {
			t.Value = ""
		}
		out = append(out, t)
	}
	return out
}

// readTargets are the files the input redirections (<) in list read.
func readTargets(list []*syntax.Redirect) []pathWord {
	var out []pathWord
	w := &shellWalker{}
	for _, r := range list {
		if r.Word != nil && r.Op == syntax.RdrIn {
			out = append(out, w.pathWord(r.Word))
		}
	}
	return out
}

func isHeredoc(op syntax.RedirOperator) bool {
	return op == syntax.Hdoc || op == syntax.DashHdoc || op == syntax.WordHdoc
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
func (w *shellWalker) word(wd *syntax.Word) Word {
	var b strings.Builder
	out := Word{}
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
		return Word{Value: w.text(wd.Pos(), wd.End()), Expanded: true}
	}
	out.Value = b.String()
	return out
}

// pathWord is word with what bash does to a leading tilde or $HOME.
func (w *shellWalker) pathWord(wd *syntax.Word) pathWord {
	pw := pathWord{Word: w.word(wd)}
	if len(wd.Parts) > 0 {
		if l, ok := wd.Parts[0].(*syntax.Lit); ok && strings.HasPrefix(l.Value, "~") {
			// The tilde-prefix runs to the first unquoted slash and
			// must hold no quoted character.
			prefix, _, slash := strings.Cut(l.Value, "/")
			pw.tilde = !strings.Contains(prefix, "\\") && (slash || len(wd.Parts) == 1)
		}
	}
	if pw.Expanded {
		pw.before, pw.after, pw.homePattern, pw.home = homeParts(wd)
	}
	return pw
}

// homeParts reads a word that is literal text around one plain $HOME or
// ${HOME} (quoted or not): the text before and after it, and whether the
// unquoted text holds glob or brace characters. ok is false for any other
// word.
func homeParts(wd *syntax.Word) (before, after string, pattern, ok bool) {
	var b strings.Builder
	seen := false
	lit := func(v string, quoted bool) {
		if !quoted {
			u, p := unescapeUnquoted(v)
			pattern = pattern || p
			v = u
		} else {
			v = unescapeDouble(v)
		}
		b.WriteString(v)
	}
	param := func(p *syntax.ParamExp) bool {
		if seen || p.Param == nil || p.Param.Value != "HOME" || p.Exp != nil || !safeParamExp(p) {
			return false
		}
		seen = true
		before = b.String()
		b.Reset()
		return true
	}
	for _, part := range wd.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			lit(p.Value, false)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", "", false, false
			}
			b.WriteString(p.Value)
		case *syntax.ParamExp:
			if !param(p) {
				return "", "", false, false
			}
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", "", false, false
			}
			for _, q := range p.Parts {
				switch q := q.(type) {
				case *syntax.Lit:
					lit(q.Value, true)
				case *syntax.ParamExp:
					if !param(q) {
						return "", "", false, false
					}
				default:
					return "", "", false, false
				}
			}
		default:
			return "", "", false, false
		}
	}
	if !seen {
		return "", "", false, false
	}
	return before, b.String(), pattern, true
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

// hasWriteRedirect reports a redirection that writes to a file, or one
// that bash turns into a network connection (/dev/tcp/…, /dev/udp/…), or
// whose target is only known at run time (so it could be either). >&N and
// >&- only duplicate or close descriptors.
func hasWriteRedirect(redirs []*syntax.Redirect) bool {
	for _, r := range redirs {
		if r.Word != nil && r.Op != syntax.Hdoc && r.Op != syntax.DashHdoc && r.Op != syntax.WordHdoc {
			target, known := redirTarget(r.Word)
			if !known || strings.HasPrefix(target, "/dev/tcp/") || strings.HasPrefix(target, "/dev/udp/") {
				return true
			}
		}
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

// redirTarget is the file name of a redirection after quote removal;
// known is false when it holds an expansion or a pattern.
func redirTarget(wd *syntax.Word) (target string, known bool) {
	var b strings.Builder
	for _, part := range wd.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			v, pattern := unescapeUnquoted(p.Value)
			if pattern {
				return "", false
			}
			b.WriteString(v)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(unescapeDouble(l.Value))
			}
		default:
			return "", false
		}
	}
	return b.String(), true
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
