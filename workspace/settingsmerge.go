package workspace

import (
	"encoding/json"
	"maps"
	"reflect"
	"strings"
)

// remergeLocked decides folder trust again and rebuilds the merged view
// from the layers; s.mu is held. It reports whether the trust decision
// changed.
func (s *Settings) remergeLocked() bool {
	before := s.trust
	s.trust = s.decideTrustLocked()
	for i := range s.layers {
		s.effective[i] = s.layers[i].values
	}
	// Every layer is a canonical tree (settingscanon.go), so the filters
	// below see each setting under its one name. First what no workspace
	// may widen, trusted or not (tools.sandbox's full access): the user's,
	// editor's or system's value holds.
	ws, refused := narrowOnlyView(s.layers[layerWorkspace].values)
	s.effective[layerWorkspace] = ws
	s.trust.Refused = refused
	if len(refused) > 0 {
		s.trust.File = s.layers[layerWorkspace].file
	}
	if !s.trust.Trusted {
		s.effective[layerWorkspace], s.trust.Ignored = untrustedView(ws)
		if len(s.trust.Ignored) > 0 {
			s.trust.File = s.layers[layerWorkspace].file
		}
	} else if sec, ok := ws["security"].(map[string]any); ok {
		// Folder trust is never switched by a workspace, trusted or not;
		// the rest of security (auth.selectedType) applies when trusted.
		// Merging copies what it takes, so shallow copies are enough.
		v := maps.Clone(ws)
		sec = maps.Clone(sec)
		delete(sec, "folderTrust")
		if len(sec) > 0 {
			v["security"] = sec
		} else {
			delete(v, "security")
		}
		s.effective[layerWorkspace] = v
	} else if _, ok := ws["security"]; ok {
		v := maps.Clone(ws)
		delete(v, "security")
		s.effective[layerWorkspace] = v
	}
	merged := map[string]any{}
	for i := range s.layers {
		mergeLayer(merged, s.effective[i], "")
	}
	s.merged = merged
	return !sameTrust(before, s.trust)
}

// isUnionKey reports the list settings that every layer adds to, instead of
// the highest one replacing (tools.md §7.1).
func isUnionKey(path string) bool {
	switch path {
	case "permissions.allow", "permissions.ask", "permissions.deny", "tools.disabled", "tools.exclude":
		return true
	}
	return false
}

// mergeLayer merges a higher layer src into dst, the merge of the layers
// below it. dst holds only copies, so it may be changed in place.
func mergeLayer(dst, src map[string]any, prefix string) {
	for k, v := range src {
		path := k
		if prefix != "" {
			path = prefix + "." + k
		}
		dm, dok := dst[k].(map[string]any)
		sm, sok := v.(map[string]any)
		switch {
		case path == "mcpServers" && dok && sok:
			// Per server: a higher scope replaces a whole entry, so
			// a server's fields never mix across files.
			for name, entry := range sm {
				dm[name] = deepCopy(entry)
			}
		case isUnionKey(path):
			dst[k] = unionLists(dst[k], v)
		case dok && sok:
			mergeLayer(dm, sm, path)
		default:
			dst[k] = deepCopy(v)
		}
	}
}

// unionLists joins two list values, lower first, without duplicates. A
// single string counts as a list of one.
func unionLists(lower, higher any) any {
	a, b := asList(lower), asList(higher)
	if a == nil && b == nil {
		return deepCopy(higher)
	}
	out := make([]any, 0, len(a)+len(b))
	seen := map[string]bool{}
	for _, x := range append(a, b...) {
		k := listKey(x)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, deepCopy(x))
	}
	return out
}

func asList(v any) []any {
	switch v := v.(type) {
	case nil:
		return nil
	case []any:
		return v
	default:
		return []any{v}
	}
}

func listKey(v any) string {
	if s, ok := v.(string); ok {
		return "s" + s
	}
	b, _ := json.Marshal(v)
	return "j" + string(b)
}

// deepCopy copies the maps and slices of a decoded JSON value.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return v
		}
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = deepCopy(x)
		}
		return out
	case []any:
		if v == nil {
			return v
		}
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = deepCopy(x)
		}
		return out
	default:
		return v
	}
}

func sameValues(a, b map[string]any) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// expandEnvIn replaces $VAR and ${VAR} in every string value of m (not in
// keys), in place.
func expandEnvIn(m map[string]any, getenv func(string) (string, bool)) {
	for k, v := range m {
		m[k] = expandEnvValue(v, getenv)
	}
}

func expandEnvValue(v any, getenv func(string) (string, bool)) any {
	switch v := v.(type) {
	case string:
		return expandEnv(v, getenv)
	case map[string]any:
		expandEnvIn(v, getenv)
		return v
	case []any:
		for i, x := range v {
			v[i] = expandEnvValue(x, getenv)
		}
		return v
	default:
		return v
	}
}

// expandEnv replaces $NAME and ${NAME} (NAME: a letter or underscore, then
// letters, digits or underscores) with the variable's value. A variable
// that is not defined, and a "$" that starts no name, stay as written; a
// variable defined as empty is replaced by "".
func expandEnv(s string, getenv func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if s[i] != '$' {
			b.WriteByte(s[i])
			i++
			continue
		}
		if i+1 < len(s) && s[i+1] == '{' {
			if end := strings.IndexByte(s[i+2:], '}'); end >= 0 {
				name := s[i+2 : i+2+end]
				if isEnvName(name) {
					if v, ok := getenv(name); ok {
						b.WriteString(v)
						i += 2 + end + 1
						continue
					}
				}
			}
			b.WriteByte('$')
			i++
			continue
		}
		j := i + 1
		for j < len(s) && isEnvNameByte(s[j], j == i+1) {
			j++
		}
		if j == i+1 {
			b.WriteByte('$')
			i++
			continue
		}
		if v, ok := getenv(s[i+1 : j]); ok {
			b.WriteString(v)
		} else {
			b.WriteString(s[i:j])
		}
		i = j
	}
	return b.String()
}

func isEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isEnvNameByte(s[i], i == 0) {
			return false
		}
	}
	return true
}

func isEnvNameByte(c byte, first bool) bool {
	switch {
	case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		return true
	case c >= '0' && c <= '9':
		return !first
	}
	return false
}
