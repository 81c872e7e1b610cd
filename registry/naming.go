package registry

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// maxToolName is the longest tool name a model API accepts (tools.md §1.1).
const maxToolName = 63

// validToolName reports whether name is a registrable tool name:
// [A-Za-z0-9_.-], 1 to 63 characters.
func validToolName(name string) bool {
	if name == "" || len(name) > maxToolName {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !nameByte(name[i]) {
			return false
		}
	}
	return true
}

func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
}

// sanitizeName is tools.md §4.4's sanitize: every character outside
// [A-Za-z0-9_.-] becomes "_", and a result longer than 63 characters keeps
// its first 28 and last 32 characters around "___", so that two long names
// that differ only in the middle still tend to differ.
func sanitizeName(s string) string {
	out := replaceUnsafe(s)
	if len(out) > maxToolName {
		out = out[:28] + "___" + out[len(out)-32:]
	}
	return out
}

// replaceUnsafe replaces every character outside [A-Za-z0-9_.-] with "_".
func replaceUnsafe(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r < 0x80 && nameByte(byte(r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// mcpToolKey names one tool of one MCP server, unsanitised.
type mcpToolKey struct {
	Server string
	Tool   string
}

// assignMCPNames gives every MCP tool its registered name (tools.md §4.4).
// It is a pure function of the whole set: the order of keys, and so the
// order in which servers came up, never changes the result. reserved
// reports the names MCP tools must not take (built-in names and aliases,
// discovered tools' names).
//
// A tool whose name cannot be registered is left out of the map, and a
// warning says why.
func assignMCPNames(keys []mcpToolKey, reserved func(string) bool) (map[mcpToolKey]string, []string) {
	keys = slices.Clone(keys)
	slices.SortFunc(keys, func(a, b mcpToolKey) int {
		return cmp.Or(strings.Compare(a.Server, b.Server), strings.Compare(a.Tool, b.Tool))
	})
	keys = slices.Compact(keys)

	// Step 1 and the "other server" half of step 2: which servers offer
	// each base name.
	servers := map[string]map[string]bool{}
	for _, k := range keys {
		base := sanitizeName(k.Tool)
		if servers[base] == nil {
			servers[base] = map[string]bool{}
		}
		servers[base][k.Server] = true
	}

	// Step 3 walks the candidates in (server, tool) byte order, which is
	// the order keys are sorted in: the first one keeps a contested name.
	names := make(map[mcpToolKey]string, len(keys))
	owner := map[string]mcpToolKey{}
	var warnings []string
	for _, k := range keys {
		base := sanitizeName(k.Tool)
		name := base
		if reserved(base) || len(servers[base]) > 1 {
			name = sanitizeName(k.Server + "__" + k.Tool)
		}
		switch prev, taken := owner[name]; {
		case reserved(name):
			warnings = append(warnings, fmt.Sprintf(
				"MCP tool %q of server '%s' is not registered: its name %q is already used by a built-in or discovered tool.",
				k.Tool, k.Server, name))
		case taken:
			warnings = append(warnings, fmt.Sprintf(
				"MCP tool %q of server '%s' is not registered: its name %q is already taken by tool %q of server '%s'.",
				k.Tool, k.Server, name, prev.Tool, prev.Server))
		default:
			owner[name] = k
			names[k] = name
		}
	}
	return names, warnings
}
