package shellsafe

import "strings"

// sedReadOnly refuses in-place editing, script files it cannot inspect,
// options it does not know, and scripts with e or w commands (or the e
// and w flags of s).
func sedReadOnly(args []Word) bool {
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
	return scriptsSafe(args, explicit, scripts, operands, sedScriptSafe)
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
			// y/source/dest/: two parts, neither a regular expression;
			// each call reads one and moves i past its delimiter.
			if !delimited(d, false) {
				return false
			}
			if !delimited(d, false) {
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
