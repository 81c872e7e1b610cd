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
	if !explicit {
		if len(operands) == 0 || firstOperandIsPattern(args) {
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
