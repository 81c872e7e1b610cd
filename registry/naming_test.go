package registry

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
)

func TestSanitizeName(t *testing.T) {
	long := strings.Repeat("a", 30) + strings.Repeat("b", 10) + strings.Repeat("c", 32)
	for _, tc := range []struct{ in, want string }{
		{"search", "search"},
		{"do/it", "do_it"},
		{"a b:c", "a_b_c"},
		{"v1.2-x_y", "v1.2-x_y"},
		{"héllo", "h_llo"},
		{strings.Repeat("x", 63), strings.Repeat("x", 63)},
		{long, strings.Repeat("a", 28) + "___" + strings.Repeat("c", 32)},
	} {
		got := sanitizeName(tc.in)
		if got != tc.want {
			t.Errorf("sanitizeName(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if !validToolName(got) {
			t.Errorf("sanitizeName(%q) = %q is not a valid tool name", tc.in, got)
		}
	}
}

func TestValidToolName(t *testing.T) {
	for name, want := range map[string]bool{
		"t1": true, "a.b-c_d": true, "": false, "a b": false, "a/b": false,
		strings.Repeat("x", 63): true, strings.Repeat("x", 64): false,
	} {
		if got := validToolName(name); got != want {
			t.Errorf("validToolName(%q) = %v", name, got)
		}
	}
}

func builtinReserved(name string) bool {
	for _, t := range builtins() {
		if t.Name() == name || slices.Contains(t.Aliases(), name) {
			return true
		}
	}
	return false
}

// TestAssignMCPNamesIsOrderIndependent checks tools.md §4.4 on the set of
// conformance case 49, in every order the tools can come in.
func TestAssignMCPNamesIsOrderIndependent(t *testing.T) {
	keys := []mcpToolKey{{"a", "search"}, {"a", "read_file"}, {"a", "do/it"}, {"b", "search"}}
	want := map[mcpToolKey]string{
		{"a", "search"}:    "a__search",
		{"b", "search"}:    "b__search",
		{"a", "read_file"}: "a__read_file",
		{"a", "do/it"}:     "do_it",
	}
	for _, perm := range permutations(keys) {
		got, warnings := assignMCPNames(perm, builtinReserved)
		if !maps.Equal(got, want) || len(warnings) != 0 {
			t.Errorf("order %v: got %v, warnings %v", perm, got, warnings)
		}
	}
}

func permutations(keys []mcpToolKey) [][]mcpToolKey {
	if len(keys) <= 1 {
		return [][]mcpToolKey{slices.Clone(keys)}
	}
	var out [][]mcpToolKey
	for i := range keys {
		rest := slices.Concat(keys[:i], keys[i+1:])
		for _, p := range permutations(rest) {
			out = append(out, append([]mcpToolKey{keys[i]}, p...))
		}
	}
	return out
}

func TestAssignMCPNamesClashes(t *testing.T) {
	long := "tool_" + strings.Repeat("m", 40) + "_end_" + strings.Repeat("z", 30)
	long2 := "tool_" + strings.Repeat("m", 23) + "X" + strings.Repeat("m", 16) + "_end_" + strings.Repeat("z", 30)
	keys := []mcpToolKey{
		// Two tools of one server that sanitise alike: the first by
		// tool name keeps the name.
		{"s", "x y"}, {"s", "x/y"},
		// A discovered tool's name pushes the MCP tool to alias__name.
		{"s", "disc"},
		// Shortened names that collide.
		{"s", long}, {"s", long2},
		// alias__name taken by a discovered tool: dropped.
		{"q", "grep_search"},
	}
	reserved := func(n string) bool { return builtinReserved(n) || n == "disc" || n == "q__grep_search" }
	got, warnings := assignMCPNames(keys, reserved)
	want := map[mcpToolKey]string{
		{"s", "x y"}:  "x_y",
		{"s", "disc"}: "s__disc",
		// "X" sorts before "m", so long2 comes first.
		{"s", long2}: sanitizeName(long2),
	}
	if !maps.Equal(got, want) {
		t.Errorf("names %v\nwant %v", got, want)
	}
	if sanitizeName(long) != sanitizeName(long2) {
		t.Fatal("the test's long names should shorten alike")
	}
	if len(warnings) != 3 {
		t.Fatalf("warnings %q", warnings)
	}
	for _, w := range warnings {
		if !strings.HasPrefix(w, "MCP tool ") || !strings.Contains(w, "is not registered") {
			t.Errorf("warning %q", w)
		}
	}
}

// fakeServer is an MCP server that never runs, for naming tests.
func fakeServer(alias string) *mcpServer {
	return &mcpServer{cfg: serverConfig{Alias: alias}, host: &Sources{}}
}

func mcpTools(s *mcpServer, names ...string) []tools.Tool {
	var out []tools.Tool
	for _, n := range names {
		out = append(out, newMCPTool(s, toolDef{Name: n}))
	}
	return out
}

// TestRegistryNamesMCPTools checks that the registry renames MCP tools
// whenever the set changes, whatever order the servers register in, and
// reports clashes once.
func TestRegistryNamesMCPTools(t *testing.T) {
	build := func(order []string) (*Registry, *[]string) {
		r := New(builtins(), Filter{})
		var warnings []string
		r.OnWarning(func(w string) { warnings = append(warnings, w) })
		a, b := fakeServer("a"), fakeServer("b")
		sets := map[string][]tools.Tool{
			"a": mcpTools(a, "search", "read_file", "do/it", "x y", "x/y"),
			"b": mcpTools(b, "search"),
		}
		for _, alias := range order {
			r.SetMCP(alias, sets[alias])
		}
		return r, &warnings
	}
	want := []string{"a__read_file", "a__search", "b__search", "do_it", "x_y"}
	for _, order := range [][]string{{"a", "b"}, {"b", "a"}} {
		r, warnings := build(order)
		var names []string
		for _, e := range r.Snapshot().Entries() {
			if strings.HasPrefix(e.Source, "mcp:") {
				names = append(names, e.Name)
			}
		}
		if !slices.Equal(names, want) {
			t.Errorf("order %v: names %v, want %v", order, names, want)
		}
		if len(*warnings) != 1 || !strings.Contains((*warnings)[0], `"x/y"`) {
			t.Errorf("order %v: warnings %q", order, *warnings)
		}
		e, terr := r.Lookup("do_it")
		if terr != nil {
			t.Fatal(terr.Message)
		}
		if e.Source != "mcp:a" || e.Tool.DisplayName() != "do/it (a MCP Server)" {
			t.Errorf("do_it: source %q, display name %q", e.Source, e.Tool.DisplayName())
		}
	}

	// When b leaves, a's search is no longer contested and takes the bare
	// name; the old snapshot keeps the old names.
	r, warnings := build([]string{"a", "b"})
	before := r.Snapshot()
	r.SetMCP("b", nil)
	if _, terr := r.Lookup("search"); terr != nil {
		t.Errorf("search after b left: %s", terr.Message)
	}
	if _, terr := before.Lookup("a__search"); terr != nil {
		t.Errorf("old snapshot lost a__search")
	}
	// A discovered tool named like an MCP tool pushes it aside.
	r.SetDiscovered(fakes("search"))
	if e, _ := r.Lookup("search"); e.Source != tools.SourceDiscovered {
		t.Errorf("search is from %q", e.Source)
	}
	if e, terr := r.Lookup("a__search"); terr != nil || e.Source != "mcp:a" {
		t.Errorf("a__search: %+v %v", e, terr)
	}
	if len(*warnings) != 1 {
		t.Errorf("the clash was reported again: %q", *warnings)
	}
}
