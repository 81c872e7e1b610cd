package workspace

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// FuzzParseJSONC: parsing a settings file never panics; making it
// standard JSON keeps every offset and newline (so error positions stay true);
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
		clean, serr := standardSettings(data)
		if serr == nil && clean != nil {
			src := bytes.TrimPrefix(data, []byte(BOMUTF8))
			if len(clean) != len(src) {
				t.Fatalf("standardizing changed the length %d -> %d", len(src), len(clean))
			}
			for i := range src {
				if (src[i] == '\n') != (clean[i] == '\n') {
					t.Fatalf("standardizing moved a newline at %d", i)
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

// FuzzCanonicalSettings: the normaliser never panics and agrees with the
// parser on what is valid; its tree holds no dotted key outside the name
// maps (mcpServers), so no reader can find a spelling the filter did not
// see; normalising again changes nothing; a file without duplicate keys
// gives the tree its decoded map gives (one rule for files and editor
// layers); every leaf is found by the reader at its path; and the
// untrusted view holds only allow-listed keys, each found where the tree
// has it.
func FuzzCanonicalSettings(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"a.b": 1, "a": {"b": 2}}`, `{"a": {"b": 2}, "a.b": 1}`, `{"a": {"b.c": 1}, "a.b": {"c": 2}}`,
		`{"tools": {"x": 1}, "tools": {"y": 2}}`, `{"tools": 5, "tools.x": 1}`, `{"tools.x": 1, "tools": 5}`,
		`{"mcpServers.a.b": {"command": "x"}, "mcpServers": {"a.b": {"env": {"K.V": "1"}}}}`,
		`{"permissions.allow": ["Bash"], "permissions": {"deny": ["x"]}}`, `{"": 1, ".": 2, "a..b": 3, "a.": 4, ".a": 5}`,
		`{"tools.approvalMode": "yolo", "tools": {"approvalMode": "plan"}}`, `{"context": {"fileName": ["A.md"]}, "context.fileName": "B.md"}`,
		`{"x": [{"a.b": 1}, {"a": 1, "a": 2}]}`, "{\"a.b\": 1, // c\n \"a\": {\"b\": 2,},}",
		`{"tools": {"webFetch.allowPrivateAddresses": false}}`, `{"security.folderTrust.enabled": false}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			t.Skip()
		}
		tree, err := parseSettingsJSONC(data)
		_, perr := parseJSONC(data)
		if (err == nil) != (perr == nil) || (tree == nil) == (err == nil) {
			t.Fatalf("canonical: %v, %v; parser: %v", tree, err, perr)
		}
		if err != nil {
			return
		}
		checkNoDots(t, tree, true)
		if again := canonicalMap(tree); !reflect.DeepEqual(again, tree) {
			t.Fatalf("normalising again changed %v into %v", tree, again)
		}
		var strict map[string]any
		if clean, _ := standardSettings(data); !hasDuplicateKeys(clean) && json.Unmarshal(clean, &strict) == nil && strict != nil {
			if fromMap := canonicalMap(strict); !reflect.DeepEqual(fromMap, tree) {
				t.Fatalf("the file gives %v, its decoded map %v", tree, fromMap)
			}
		}
		walkLeaves(tree, nil, func(path []string, v any) {
			got, ok := lookupCanonical(tree, strings.Join(path, "."))
			if !ok || !reflect.DeepEqual(got, v) {
				t.Fatalf("the reader finds %v (%v) at %q, the tree has %v", got, ok, path, v)
			}
		})
		kept, _ := untrustedView(tree)
		walkLeaves(kept, nil, func(path []string, v any) {
			allowed := false
			for i := 1; i <= len(path); i++ {
				if _, ok := untrustedAllowed[strings.Join(path[:i], ".")]; ok {
					allowed = true
				}
			}
			if !allowed {
				t.Fatalf("the untrusted view keeps %q = %v", path, v)
			}
		})
	})
}

// checkNoDots fails when a key outside mcpServers holds a dot.
func checkNoDots(t *testing.T, m map[string]any, top bool) {
	for k, v := range m {
		if strings.Contains(k, ".") {
			t.Fatalf("dotted key %q", k)
		}
		if sub, ok := v.(map[string]any); ok && !(top && opaquePoints[k]) {
			checkNoDots(t, sub, false)
		}
	}
}

// walkLeaves calls f for every non-object value of m (and every empty
// object), stopping at mcpServers.
func walkLeaves(m map[string]any, prefix []string, f func([]string, any)) {
	for k, v := range m {
		p := append(slices.Clone(prefix), k)
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 && !(len(p) == 1 && opaquePoints[k]) {
			walkLeaves(sub, p, f)
			continue
		}
		f(p, v)
	}
}

// The normaliser tracks no paths: it relies on every opaque point being a
// top-level key.
func TestOpaquePointsAreTopLevel(t *testing.T) {
	for p := range opaquePoints {
		if strings.Contains(p, ".") || p == "" {
			t.Errorf("opaque point %q is not a top-level key", p)
		}
	}
}

// hasDuplicateKeys reports whether a valid JSON text writes a key twice in
// one object.
func hasDuplicateKeys(clean []byte) bool {
	if len(bytes.TrimSpace(clean)) == 0 {
		return false
	}
	v, err := readOrdered(json.NewDecoder(bytes.NewReader(clean)), 0)
	if err != nil {
		return true
	}
	var dup func(any) bool
	dup = func(v any) bool {
		switch v := v.(type) {
		case *orderedObject:
			seen := map[string]bool{}
			for i, k := range v.keys {
				if seen[k] || dup(v.vals[i]) {
					return true
				}
				seen[k] = true
			}
		case []any:
			for _, x := range v {
				if dup(x) {
					return true
				}
			}
		}
		return false
	}
	return dup(v)
}
