package registry

import (
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/toolstest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// builtin is a fake standing in for a built-in of tools.md §1.5.
func builtin(name, display string, kind tools.Kind, aliases ...string) *toolstest.Fake {
	f := toolstest.NewFake(name, `{"type":"object","properties":{"x":{"type":"string"}}}`)
	f.Spec.DisplayName = display
	f.Spec.Kind = kind
	f.Spec.Aliases = aliases
	return f
}

// builtins are fakes with the names, display names, kinds and aliases of the
// fourteen built-ins, in the order of tools.md §1.5.
func builtins() []tools.Tool {
	return []tools.Tool{
		builtin("list_directory", "ListFiles", tools.KindSearch),
		builtin("read_file", "ReadFile", tools.KindRead),
		builtin("write_file", "WriteFile", tools.KindEdit),
		builtin("grep_search", "Grep", tools.KindSearch, "search_file_content"),
		builtin("glob", "Glob", tools.KindSearch),
		builtin("edit", "Edit", tools.KindEdit, "replace"),
		builtin("read_many_files", "ReadManyFiles", tools.KindRead),
		builtin("run_shell_command", "Shell", tools.KindExecute),
		builtin("web_fetch", "WebFetch", tools.KindFetch),
		builtin("web_search", "WebSearch", tools.KindSearch),
		builtin("save_memory", "SaveMemory", tools.KindEdit),
		builtin("todo_write", "TodoWrite", tools.KindThink),
		builtin("task", "Task", tools.KindOther, "agent"),
		builtin("exit_plan_mode", "ExitPlanMode", tools.KindThink),
	}
}

var builtinNames = []string{
	"list_directory", "read_file", "write_file", "grep_search", "glob", "edit", "read_many_files",
	"run_shell_command", "web_fetch", "web_search", "save_memory", "todo_write", "task", "exit_plan_mode",
}

func fakes(names ...string) []tools.Tool {
	out := make([]tools.Tool, len(names))
	for i, n := range names {
		out[i] = toolstest.NewFake(n, "")
	}
	return out
}

func TestBuiltinsKeepTheirOrder(t *testing.T) {
	r := New(builtins(), Filter{})
	if got := r.Snapshot().Names(); !slices.Equal(got, builtinNames) {
		t.Errorf("names %v", got)
	}
	for _, e := range r.Snapshot().Entries() {
		if e.Source != tools.SourceBuiltin {
			t.Errorf("%s has source %q", e.Name, e.Source)
		}
	}
}

func TestOrderAndSources(t *testing.T) {
	r := New(fakes("b_builtin", "a_builtin"), Filter{})
	r.SetDiscovered(fakes("zeta", "alpha"))
	r.SetMCP("srv2", fakes("m_b", "m_a"))
	r.SetMCP("srv1", fakes("m_c"))
	want := []string{"b_builtin/builtin", "a_builtin/builtin", "alpha/discovered", "zeta/discovered",
		"m_a/mcp:srv2", "m_b/mcp:srv2", "m_c/mcp:srv1"}
	var got []string
	for _, e := range r.Snapshot().Entries() {
		got = append(got, e.Name+"/"+e.Source)
	}
	if !slices.Equal(got, want) {
		t.Errorf("entries\n got: %v\nwant: %v", got, want)
	}
}

func TestSetsAreReplacedWhole(t *testing.T) {
	r := New(fakes("b"), Filter{})
	r.SetDiscovered(fakes("d1", "d2"))
	r.SetDiscovered(fakes("d3"))
	r.SetMCP("s", fakes("m1"))
	r.SetMCP("t", fakes("m2"))
	r.SetMCP("s", nil)
	if got := r.Snapshot().Names(); !slices.Equal(got, []string{"b", "d3", "m2"}) {
		t.Errorf("names %v", got)
	}
	r.SetBuiltins(fakes("b2", "b1"))
	if got := r.Snapshot().Names(); !slices.Equal(got, []string{"b2", "b1", "d3", "m2"}) {
		t.Errorf("names after SetBuiltins %v", got)
	}
}

func TestSnapshotDoesNotChange(t *testing.T) {
	r := New(fakes("a"), Filter{})
	before := r.Snapshot()
	r.SetDiscovered(fakes("d"))
	r.SetFilter(Filter{Exclude: []string{"a"}})
	if got := before.Names(); !slices.Equal(got, []string{"a"}) {
		t.Errorf("old snapshot changed to %v", got)
	}
	if got := r.Snapshot().Names(); !slices.Equal(got, []string{"d"}) {
		t.Errorf("new snapshot %v", got)
	}
}

func TestClashingNamesRegisterOnce(t *testing.T) {
	r := New(builtins(), Filter{})
	shadow := toolstest.NewFake("read_file", "")
	r.SetDiscovered([]tools.Tool{shadow, toolstest.NewFake("replace", ""), toolstest.NewFake("ok", "")})
	r.SetMCP("b", fakes("ok", "same"))
	r.SetMCP("a", fakes("same"))
	s := r.Snapshot()
	e, terr := s.Lookup("read_file")
	if terr != nil || e.Source != tools.SourceBuiltin || e.Tool == shadow {
		t.Errorf("read_file resolved to %+v (%v), want the built-in", e, terr)
	}
	if e, _ := s.Lookup("replace"); e.Name != "edit" {
		t.Errorf("replace resolved to %q, want edit", e.Name)
	}
	if e, _ := s.Lookup("ok"); e.Source != tools.SourceDiscovered {
		t.Errorf("ok from %q, want the discovered tool", e.Source)
	}
	if e, _ := s.Lookup("same"); e.Source != "mcp:a" {
		t.Errorf("same from %q, want the first server by alias", e.Source)
	}
	if n := s.Len(); n != len(builtinNames)+2 {
		t.Errorf("%d entries: %v", n, s.Names())
	}
}

func TestFilter(t *testing.T) {
	tests := []struct {
		name   string
		filter Filter
		absent []string
		want   []string // nil: every built-in except absent
	}{
		{name: "exclude by name", filter: Filter{Exclude: []string{"web_fetch"}}, absent: []string{"web_fetch"}},
		{name: "disabled by name", filter: Filter{Disabled: []string{"glob", "task"}}, absent: []string{"glob", "task"}},
		{name: "exclude by alias", filter: Filter{Exclude: []string{"replace"}}, absent: []string{"edit"}},
		{name: "exclude by display name", filter: Filter{Exclude: []string{"Shell"}}, absent: []string{"run_shell_command"}},
		{name: "exclude with arguments is a rule, not a tool", filter: Filter{Exclude: []string{"run_shell_command(rm)"}}},
		{
			name:   "core by name, alias and display name, with arguments",
			filter: Filter{Core: []string{"read_file", "search_file_content", "Shell(ls)", "nope"}},
			want:   []string{"read_file", "grep_search", "run_shell_command", "disc", "mcp_t"},
		},
		{
			name:   "empty core registers no built-in",
			filter: Filter{Core: []string{}},
			want:   []string{"disc", "mcp_t"},
		},
		{
			name:   "exclude wins over core",
			filter: Filter{Core: []string{"read_file", "glob"}, Exclude: []string{"glob"}},
			want:   []string{"read_file", "disc", "mcp_t"},
		},
		{
			name:   "exclude reaches discovered and MCP tools",
			filter: Filter{Exclude: []string{"disc"}, Disabled: []string{"mcp_t"}},
			absent: []string{"disc", "mcp_t"},
		},
		{
			name: "deny hook",
			filter: Filter{Deny: func(t tools.Tool) bool {
				return t.Kind() == tools.KindEdit
			}},
			absent: []string{"write_file", "edit", "save_memory"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New(builtins(), tt.filter)
			r.SetDiscovered(fakes("disc"))
			r.SetMCP("m", fakes("mcp_t"))
			want := tt.want
			if want == nil {
				for _, n := range append(slices.Clone(builtinNames), "disc", "mcp_t") {
					if !slices.Contains(tt.absent, n) {
						want = append(want, n)
					}
				}
			}
			if got := r.Snapshot().Names(); !slices.Equal(got, want) {
				t.Errorf("names\n got: %v\nwant: %v", got, want)
			}
		})
	}
}

func TestSetFilterAppliesToTheNextSnapshot(t *testing.T) {
	r := New(builtins(), Filter{})
	r.SetFilter(Filter{Disabled: []string{"edit"}})
	if _, terr := r.Lookup("replace"); terr == nil {
		t.Error("the alias of a disabled tool still resolves")
	}
	r.SetFilter(Filter{})
	if e, terr := r.Lookup("replace"); terr != nil || e.Name != "edit" {
		t.Errorf("replace → %+v, %v", e, terr)
	}
}

func TestSelect(t *testing.T) {
	s := New(builtins(), Filter{}).Snapshot()
	sub := s.Select(func(e Entry) bool {
		return e.Name != "task" && e.Name != "todo_write" && e.Name != "exit_plan_mode"
	})
	if sub.Len() != s.Len()-3 {
		t.Errorf("%d tools, want %d", sub.Len(), s.Len()-3)
	}
	if _, terr := sub.Lookup("agent"); terr == nil {
		t.Error("agent still resolves in the subset")
	}
	if e, terr := sub.Lookup("search_file_content"); terr != nil || e.Name != "grep_search" {
		t.Errorf("alias lookup in the subset: %+v, %v", e, terr)
	}
}

func TestConcurrentUse(t *testing.T) {
	r := New(builtins(), Filter{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 50 {
				r.SetMCP(fmt.Sprintf("s%d", i), fakes(fmt.Sprintf("m%d_%d", i, j)))
				r.SetDiscovered(fakes(fmt.Sprintf("d%d", j)))
			}
		})
		wg.Go(func() {
			for range 50 {
				if _, terr := r.Lookup("read_file"); terr != nil {
					t.Errorf("lookup: %v", terr)
				}
				if _, err := json.Marshal(r.Declarations()); err != nil {
					t.Errorf("marshal: %v", err)
				}
			}
		})
	}
	wg.Wait()
	names := r.Snapshot().Names()
	for i := range 4 {
		if !slices.Contains(names, fmt.Sprintf("m%d_49", i)) {
			t.Errorf("server s%d lost its last set: %v", i, names)
		}
	}
	if !slices.Contains(names, "d49") || strings.Count(strings.Join(names, " "), " d") != 1 {
		t.Errorf("discovered set not replaced whole: %v", names)
	}
}
