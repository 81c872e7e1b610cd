package workspace

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"testing"
)

// FuzzParseJSONC: parsing a settings file never panics; stripping
// comments keeps every offset and newline (so error positions stay true);
// whatever strict JSON accepts as an object parses to the same value; and
// an error names a line and column inside the file.
func FuzzParseJSONC(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `{"a":1}`, "{\"a\": 1, // c\n\"b\": [1,2,],}", `/* x */ {"url":"http://h//x"}`,
		"\ufeff{\"a\":\"$HOME\"}", `{"a":"\"/*"}`, `{"a":"\\"}//`, `[1]`, `{"a":1}{`, `/*`, `{"a":/*1*/2}`,
		"{\"a\":1,\n}\n// end", `{"s":"a\u0000b"}`, `{"a":{"b":{"c":[{},[],null,true,1e400]}}}`, `,`, `{,}`,
		`{"a":1,,}`, `{"a":[1,,]}`, "{\"a\":\"x\"/\n/ comment\n}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			t.Skip()
		}
		clean, serr := stripJSONC(bytes.TrimPrefix(data, []byte(BOMUTF8)))
		if serr == nil {
			src := bytes.TrimPrefix(data, []byte(BOMUTF8))
			if len(clean) != len(src) {
				t.Fatalf("stripping changed the length %d -> %d", len(src), len(clean))
			}
			for i := range src {
				if (src[i] == '\n') != (clean[i] == '\n') {
					t.Fatalf("stripping moved a newline at %d", i)
				}
			}
		}
		m, err := parseJSONC(data)
		if (m == nil) == (err == nil) {
			t.Fatalf("map %v and error %v", m, err)
		}
		var strict map[string]any
		if json.Unmarshal(bytes.TrimPrefix(data, []byte(BOMUTF8)), &strict) == nil && strict != nil {
			if err != nil {
				t.Fatalf("strict JSON object refused: %v", err)
			}
			if !reflect.DeepEqual(m, strict) {
				t.Fatalf("parsed %v, strict JSON says %v", m, strict)
			}
		}
		if err != nil {
			if m := lineColRE.FindStringSubmatch(err.Error()); m != nil {
				line, col := atoiOr(m[1]), atoiOr(m[2])
				if line < 1 || line > bytes.Count(data, []byte("\n"))+1 || col < 1 {
					t.Fatalf("error %q points outside the file", err)
				}
			}
		}
	})
}

var lineColRE = regexp.MustCompile(`^line (\d+), column (\d+):`)

func atoiOr(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
		if n > 1<<30 {
			return 1 << 30
		}
	}
	return n
}

var envRefRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// FuzzExpandEnv holds $VAR expansion to a reference model: every $NAME and
// ${NAME} of a defined variable is replaced once (values are not expanded
// again), everything else stays as written.
func FuzzExpandEnv(f *testing.F) {
	for _, seed := range []string{"", "$HOME/x", "${HOME}", "$$HOME", "${", "${HOME", "${1BAD}", "$A_1-$A_1",
		"${ HOME }", "$", "a$b${c}d$", "${UNDEF}$UNDEF", "$HOME$HOME", "${HOME}}", "$é", "${A}{B}"} {
		f.Add(seed, "v")
		f.Add(seed, "$HOME")
	}
	f.Fuzz(func(t *testing.T, s, value string) {
		// Defined: names starting with an upper-case letter or '_'.
		defined := func(name string) bool { return name[0] == '_' || (name[0] >= 'A' && name[0] <= 'Z') }
		getenv := func(name string) (string, bool) {
			if name == "" || !defined(name) {
				return "", false
			}
			return value + name, true
		}
		got := expandEnv(s, getenv)
		want := envRefRE.ReplaceAllStringFunc(s, func(ref string) string {
			sm := envRefRE.FindStringSubmatch(ref)
			name := sm[1] + sm[2]
			if v, ok := getenv(name); ok {
				return v
			}
			return ref
		})
		if got != want {
			t.Fatalf("expandEnv(%q) = %q, want %q", s, got, want)
		}
		if undefined := expandEnv(s, func(string) (string, bool) { return "", false }); undefined != s {
			t.Fatalf("with nothing defined %q became %q", s, undefined)
		}
	})
}
