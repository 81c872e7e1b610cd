package workspace

import (
	"encoding/json"
	"fmt"
	"go/constant"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// keyCase is one known key as a test reads it.
type keyCase struct {
	key, how string
	// sent and decoy are JSON values; read reads the key back as the
	// code does; sentRead, decoyRead and unset are what read gives for
	// the sentinel, the decoy and no value.
	sent, decoy                string
	read                       func(s *Settings) any
	sentRead, decoyRead, unset any
	// untrustedOK, decoyOK: the sentinel, the decoy is expected to apply
	// from an untrusted folder (the key is allow-listed and the value
	// allowed).
	untrustedOK, decoyOK bool
}

// keyCases builds a case for every (key, accessor) the scan found, plus
// the keys this package reads itself.
func keyCases(t *testing.T) []keyCase {
	reads, errs := scanSettingsReads(t)
	if len(errs) > 0 {
		t.Fatalf("scanning the sources: %q", errs)
	}
	allowed := map[string]bool{}
	for _, k := range wantUntrustedAllowed {
		allowed[k] = true
	}
	// The generic sentinel is a value these allow-listed keys refuse
	// from an untrusted folder (a raise of the approval mode, private
	// addresses allowed).
	refusesSentinel := map[string]bool{"tools.approvalMode": true, "tools.webFetch.allowPrivateAddresses": true}
	seen := map[string]bool{}
	var out []keyCase
	for _, r := range reads {
		key := r.Key
		if r.Prefix {
			key += ".image"
		}
		if seen[key+" "+r.Method] {
			continue
		}
		seen[key+" "+r.Method] = true
		c := keyCase{key: key, how: r.Method, untrustedOK: allowed[r.Key] && !refusesSentinel[r.Key]}
		c.decoyOK = c.untrustedOK
		switch r.Method {
		case "String":
			def := ""
			if r.Def != nil {
				def = constant.StringVal(r.Def)
			}
			c.sent, c.decoy = `"sentinel-value"`, `"decoy-value"`
			c.read = func(s *Settings) any { return s.String(key, def) }
			c.sentRead, c.decoyRead, c.unset = "sentinel-value", "decoy-value", def
		case "Bool":
			def := r.Def != nil && constant.BoolVal(r.Def)
			c.sent, c.decoy = fmt.Sprint(!def), fmt.Sprint(def)
			c.read = func(s *Settings) any { return s.Bool(key, def) }
			c.sentRead, c.decoyRead, c.unset = !def, def, def
		case "Int":
			def := 0
			if r.Def != nil {
				v, _ := constant.Int64Val(r.Def)
				def = int(v)
			}
			c.sent, c.decoy = fmt.Sprint(def+7), fmt.Sprint(def+3)
			c.read = func(s *Settings) any { return s.Int(key, def) }
			c.sentRead, c.decoyRead, c.unset = def+7, def+3, def
		case "Strings":
			c.sent, c.decoy = `["sentinel-value"]`, `["decoy-value"]`
			c.read = func(s *Settings) any { return s.Strings(key) }
			c.sentRead, c.decoyRead, c.unset = []string{"sentinel-value"}, []string{"decoy-value"}, []string(nil)
		case "Get":
			// A whole object (mcpServers, webSearch) or a probe for
			// presence (tools.core): scalars, as two objects at one
			// place would merge.
			c.sent, c.decoy = `"sentinel-value"`, `"decoy-value"`
			c.read = func(s *Settings) any { v, _ := s.Get(key); return v }
			c.sentRead, c.decoyRead = "sentinel-value", "decoy-value"
			c.unset = nil
		default:
			t.Fatalf("unknown accessor %s", r.Method)
		}
		out = append(out, c)
	}
	model := func(field string, get func(ModelConfig) string) keyCase {
		return keyCase{key: "model." + field, how: "Model",
			sent: `"http://sentinel.invalid/v1"`, decoy: `"http://decoy.invalid/v1"`,
			read:     func(s *Settings) any { return get(s.Model()) },
			sentRead: "http://sentinel.invalid/v1", decoyRead: "http://decoy.invalid/v1", unset: ""}
	}
	out = append(out,
		model("name", func(m ModelConfig) string { return m.Name }),
		model("baseUrl", func(m ModelConfig) string { return m.BaseURL }),
		model("apiKey", func(m ModelConfig) string { return m.APIKey }),
		// A value the allow-list takes for a key it restricts.
		keyCase{key: "tools.approvalMode", how: "String", sent: `"plan"`, decoy: `"yolo"`,
			read:     func(s *Settings) any { return s.String("tools.approvalMode", "default") },
			sentRead: "plan", decoyRead: "yolo", unset: "default", untrustedOK: true},
	)
	return out
}

// spelling is one way to write a key in a file, and which value wins.
type spelling struct {
	name      string
	text      string
	decoyWins bool
}

// nestJSON writes value at the path written as the given groups of
// segments: groups [["a"], ["b", "c"]] is {"a": {"b.c": value}}.
func nestJSON(groups [][]string, value string) string {
	out := value
	for i := len(groups) - 1; i >= 0; i-- {
		k, _ := json.Marshal(strings.Join(groups[i], "."))
		out = "{" + string(k) + ": " + out + "}"
	}
	return out
}

// groupings returns every way to cut segs into consecutive groups.
func groupings(segs []string) [][][]string {
	if len(segs) == 1 {
		return [][][]string{{segs}}
	}
	var out [][][]string
	for _, rest := range groupings(segs[1:]) {
		// segs[0] as its own group, or joined to the next group.
		own := append([][]string{{segs[0]}}, rest...)
		joined := append([][]string{append([]string{segs[0]}, rest[0]...)}, rest[1:]...)
		out = append(out, own, joined)
	}
	return out
}

// inner returns the object text of a one-key object without its braces.
func inner(obj string) string { return obj[1 : len(obj)-1] }

// spellings writes key (sentinel sent, decoy decoy) in every spelling:
// each grouping; the same key twice; a dotted and a nested spelling in
// both orders; a half-nested spelling against a more flattened one.
func spellings(key, sent, decoy string) []spelling {
	segs := strings.Split(key, ".")
	var out []spelling
	all := groupings(segs)
	for _, g := range all {
		out = append(out, spelling{name: "as " + nestJSON(g, "V"), text: nestJSON(g, sent)})
	}
	nested := all[0] // every segment its own group
	for _, g := range all {
		if len(g) == len(segs) {
			nested = g
		}
	}
	dotted := [][]string{segs}
	out = append(out,
		spelling{name: "nested twice, later wins", text: "{" + inner(nestJSON(nested, decoy)) + ", " + inner(nestJSON(nested, sent)) + "}"},
		spelling{name: "dotted twice, later wins", text: "{" + inner(nestJSON(dotted, decoy)) + ", " + inner(nestJSON(dotted, sent)) + "}"},
		spelling{name: "nested then dotted", text: "{" + inner(nestJSON(nested, decoy)) + ", " + inner(nestJSON(dotted, sent)) + "}"},
	)
	if len(segs) > 1 {
		out = append(out,
			spelling{name: "dotted then nested: the dotted spelling still wins", text: "{" + inner(nestJSON(dotted, sent)) + ", " + inner(nestJSON(nested, decoy)) + "}"},
			// {"a": {"b.c": S}, "a.b": {"c": D}}: "a.b" has more
			// dots, so it is applied later and wins.
			spelling{name: "half nested against more flattened", decoyWins: true,
				text: "{" + inner(nestJSON([][]string{segs[:1], segs[1:]}, sent)) + ", " + inner(nestJSON([][]string{segs[:len(segs)-1], segs[len(segs)-1:]}, decoy)) + "}"},
		)
		if len(segs) == 2 {
			// Both halves have one group of one dot or none: the
			// nested one goes first whatever the order.
			out[len(out)-1].text = "{" + inner(nestJSON(dotted, decoy)) + ", " + inner(nestJSON(nested, sent)) + "}"
			out[len(out)-1].name = "dotted decoy first, nested sentinel later: dotted wins"
		}
	}
	return out
}

// Acceptance: every key the settings reader knows (found by scanning the
// sources), in every spelling, from an untrusted folder: only the
// allow-listed keys take effect, and the others are named in the notice.
// From a trusted folder the same files take effect, which shows each
// spelling reaches the reader.
func TestUntrustedSettingsEveryKeyEverySpelling(t *testing.T) {
	needProgram(t, "go")
	cases := keyCases(t)
	if len(cases) < 35 {
		t.Fatalf("only %d key cases", len(cases))
	}
	base := rtTempDir(t)
	root := filepath.Join(base, "clone")
	file := filepath.Join(root, ".qwen", "settings.json")
	newSettings := func(trusted bool) *Settings {
		s := NewSettings(SettingsOptions{UserDir: filepath.Join(base, "home"), SystemPath: filepath.Join(base, "none.json"),
			PrimaryRoot: func() string { return root }, Getenv: func(string) (string, bool) { return "", false }})
		t.Cleanup(s.Close)
		if trusted {
			yes := true
			s.SetEditorTrust(&yes)
		}
		return s
	}
	untrusted, trusted := newSettings(false), newSettings(true)
	ks := 0
	for _, c := range cases {
		known, _ := knownSettingAt(c.key)
		for _, sp := range spellings(c.key, c.sent, c.decoy) {
			ks++
			rtWriteFile(t, file, sp.text)
			untrusted.Load()
			trusted.Load()
			if untrusted.Trust().Trusted || !trusted.Trust().Trusted {
				t.Fatalf("trust: %+v / %+v", untrusted.Trust(), trusted.Trust())
			}
			want := c.sentRead
			if sp.decoyWins {
				want = c.decoyRead
			}
			got := c.read(untrusted)
			applies, winner := c.untrustedOK, c.sent
			if sp.decoyWins {
				applies, winner = c.decoyOK, c.decoy
			}
			if !applies {
				if !reflect.DeepEqual(got, c.unset) {
					t.Errorf("untrusted %s (%s) %s: read %#v, want the default %#v: %s", c.key, c.how, sp.name, got, c.unset, sp.text)
				}
				ign := untrusted.Trust().Ignored
				named := slices.ContainsFunc(ign, func(n string) bool { return n == known.Path || strings.HasPrefix(n, known.Path+" (") })
				// A false that wins has no effect and is not named.
				if wantNamed := !known.WorkspaceNever && (winner != "false" || known.Subtree); named != wantNamed {
					t.Errorf("untrusted %s %s: ignored = %q, named: %v", c.key, sp.name, ign, named)
				}
			} else if !reflect.DeepEqual(got, want) {
				t.Errorf("untrusted, allow-listed %s (%s) %s: read %#v, want %#v: %s", c.key, c.how, sp.name, got, want, sp.text)
			}
			if known.WorkspaceNever {
				continue
			}
			if got := c.read(trusted); !reflect.DeepEqual(got, want) {
				t.Errorf("trusted %s (%s) %s: read %#v, want %#v: %s", c.key, c.how, sp.name, got, want, sp.text)
			}
		}
	}
	t.Logf("%d keys, %d files", len(cases), ks)

	// Folder trust itself is never switched by a workspace, whatever the
	// spelling.
	for _, sp := range spellings("security.folderTrust.enabled", "false", "true") {
		rtWriteFile(t, file, sp.text)
		untrusted.Load()
		if untrusted.Trust().Trusted {
			t.Errorf("the workspace turned folder trust off with %s", sp.text)
		}
	}
}

// A key written many times (JSONC allows it) costs in proportion to the
// file: a quadratic merge of the copies made a 600 KB file take minutes.
// Measured in bytes allocated, not time.
func TestManyDuplicateKeysStayLinear(t *testing.T) {
	text := []byte("{" + strings.Repeat(`"a": {"b": 1}, "a.c": 2, `, 5000) + `"z": 1}`)
	var got map[string]any
	var err error
	allocated := allocatedBy(func() { got, err = parseSettingsJSONC(text) })
	if err != nil || lookupPath(got, "a.b") != 1.0 || lookupPath(got, "a.c") != 2.0 {
		t.Fatalf("got %v, %v", got, err)
	}
	if limit := uint64(len(text)) * 400; allocated > limit {
		t.Errorf("parsing %d bytes allocated %d bytes (limit %d)", len(text), allocated, limit)
	}
	t.Logf("%d bytes allocated for %d bytes of settings", allocated, len(text))
}

func lookupPath(m map[string]any, key string) any {
	v, _ := lookupCanonical(m, key)
	return v
}

func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
