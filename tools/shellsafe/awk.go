package shellsafe

import "strings"

// awkReadOnly refuses program files and programs that run commands or
// write files: system(, getline, pipes, and > in a print statement.
func awkReadOnly(args []Word) bool {
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
	return scriptsSafe(args, explicit, programs, operands, awkProgramSafe)
}

// awkRefusedWords are the awk names that run a command, read one's
// output, or act on a stream another program opened. Any of them,
// anywhere in the program (strings and regexps included, after line
// continuations are joined), makes it ask: a false alarm costs a
// question, a miss runs code.
var awkRefusedWords = []string{"system", "getline", "close", "fflush"}

// awkProgramSafe judges an awk program. Line continuations (a backslash
// before a newline) are joined first, since awk reads "sys\<newline>tem("
// and "print \<newline> > f" as one line; carriage returns count as
// white space. Then the refused words are looked for as whole words
// anywhere, and outside string and regexp literals there must be no
// pipe, no "@" (gawk's indirect calls and directives), and no ">" in a
// print statement.
func awkProgramSafe(p string) bool {
	p = strings.ReplaceAll(p, "\\\r\n", "")
	p = strings.ReplaceAll(p, "\\\n", "")
	p = strings.ReplaceAll(p, "\r", " ")
	for _, word := range awkRefusedWords {
		for i := 0; ; {
			k := strings.Index(p[i:], word)
			if k < 0 {
				break
			}
			k += i
			end := k + len(word)
			if (k == 0 || !isAwkIdent(p[k-1])) && (end >= len(p) || !isAwkIdent(p[end])) {
				return false
			}
			i = end
		}
	}
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
