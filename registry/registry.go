// Package registry decides which tools exist for a session (tools.md §4.1):
// the built-ins, the command-discovered tools and the tools of each MCP
// server, minus what the settings filter out, each under one unique name.
//
// The entry point is New. A Registry is changed by whole sets (SetBuiltins,
// SetDiscovered, SetMCP, SetFilter) and read through immutable snapshots: a
// session takes a Snapshot per model request, so the tools and declarations
// it sends stay fixed for that request while discovery goes on.
//
// Sources (NewSources) feeds a Registry with the tools found by command
// discovery (discovery.go) and offered by MCP servers (mcp.go), named by
// tools.md §4.4 (naming.go).
//
// This package must not import session or rpc.
package registry

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/qwen-ls/qwen-ls/tools"
)

// Filter is what the settings say about the registered set (tools.md §7.2).
// The zero Filter removes nothing.
type Filter struct {
	// Exclude and Disabled (tools.exclude, tools.disabled) remove tools. An
	// entry matches a tool's name, one of its aliases or its display name.
	Exclude  []string
	Disabled []string
	// Core (tools.core), when not nil, lists the only built-ins registered,
	// by name, alias or display name; "name(...)" counts as name. An empty
	// non-nil list registers no built-in. Core does not affect discovered or
	// MCP tools.
	Core []string
	// Deny, when set, reports whether a whole-tool deny rule (tools.md
	// §6.2) removes the tool. The permissions package supplies it.
	Deny func(tools.Tool) bool
}

// Registry holds the tool sources and the current snapshot. It is safe for
// concurrent use.
type Registry struct {
	// mu guards every field below; snapshot is rebuilt on each change.
	mu         sync.Mutex
	builtins   []tools.Tool
	discovered []tools.Tool
	mcp        map[string][]tools.Tool
	filter     Filter
	snapshot   *Snapshot
	// warn receives naming warnings (tools.md §4.4); warned holds the
	// warnings of the current set, so that a rebuild repeats none while
	// the clash lasts, and pending the ones to give once mu is released.
	warn    func(string)
	warned  map[string]bool
	pending []string
}

// New returns a registry of the given built-ins, in the order they are
// declared (tools.md §1.5), filtered by f.
func New(builtins []tools.Tool, f Filter) *Registry {
	r := &Registry{
		builtins: slices.Clone(builtins),
		mcp:      map[string][]tools.Tool{},
		filter:   f,
	}
	r.rebuild()
	return r
}

// SetBuiltins replaces the built-ins (web_search comes and goes with its
// provider, tools.md §3.10), keeping their order.
func (r *Registry) SetBuiltins(ts []tools.Tool) {
	r.update(func() { r.builtins = slices.Clone(ts) })
}

// SetDiscovered replaces every command-discovered tool (tools.md §4.2).
func (r *Registry) SetDiscovered(ts []tools.Tool) {
	r.update(func() { r.discovered = slices.Clone(ts) })
}

// SetMCP replaces the tools of the MCP server alias; an empty set removes the
// server. The tools this package makes for MCP servers (see Sources) are
// named by tools.md §4.4 against the whole set on every change; any other
// tool is registered under its own name.
func (r *Registry) SetMCP(alias string, ts []tools.Tool) {
	r.update(func() {
		if len(ts) == 0 {
			delete(r.mcp, alias)
		} else {
			r.mcp[alias] = slices.Clone(ts)
		}
	})
}

// SetFilter replaces the filter, as when the settings change.
func (r *Registry) SetFilter(f Filter) {
	r.update(func() { r.filter = f })
}

// OnWarning sets the function that receives the registry's warnings: MCP
// tools left out because their names clash (tools.md §4.4). Each warning is
// given once, outside the registry's lock.
func (r *Registry) OnWarning(f func(string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warn = f
}

// BuiltinNames returns the names and aliases of the built-ins, whether or
// not the filter registers them: the names command discovery must not take
// (tools.md §4.2).
func (r *Registry) BuiltinNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var names []string
	for _, t := range r.builtins {
		names = append(names, t.Name())
		names = append(names, t.Aliases()...)
	}
	return names
}

// update applies change and rebuilds the snapshot, then gives the new
// warnings with the lock released.
func (r *Registry) update(change func()) {
	r.mu.Lock()
	change()
	r.rebuild()
	warn, pending := r.warn, r.pending
	r.pending = nil
	r.mu.Unlock()
	if warn != nil {
		for _, w := range pending {
			warn(w)
		}
	}
}

// Snapshot returns the registered set as it is now. It never changes
// afterwards.
func (r *Registry) Snapshot() *Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.snapshot
}

// Lookup finds a tool of the current set by name or alias; see
// Snapshot.Lookup.
func (r *Registry) Lookup(name string) (Entry, *tools.ToolError) {
	return r.Snapshot().Lookup(name)
}

// Declarations returns the function declarations of the current set; see
// Snapshot.Declarations.
func (r *Registry) Declarations() []Declaration {
	return r.Snapshot().Declarations()
}

// Entry is one registered tool.
type Entry struct {
	// Name is the registered name, tool.Name() when the entry was made.
	Name string
	// Source is builtin, discovered or mcp:<alias>: the set the tool came
	// from, whatever the tool's own Source says.
	Source string
	Tool   tools.Tool
}

// Snapshot is an immutable registered set, in declaration order.
type Snapshot struct {
	entries []Entry
	// index maps registered names and then aliases to entries.
	index map[string]int

	// paramsOnce computes params, the compacted schemas, once per
	// snapshot: schemas do not change, and compacting them on every
	// model request was a measurable part of a round trip.
	paramsOnce sync.Once
	params     []json.RawMessage
}

// rebuild recomputes the snapshot from the sources; r.mu must be held.
//
// Order: built-ins as given, discovered tools by name, MCP tools by
// registered name (byte order). A name is registered once: a later tool whose
// name is taken, or is an alias of a registered tool, is dropped (discovery
// and MCP naming avoid such clashes before they get here), and so is a tool
// whose name is empty.
func (r *Registry) rebuild() {
	s := &Snapshot{index: map[string]int{}}
	add := func(t tools.Tool, source string) {
		name := t.Name()
		if name == "" || r.filtered(t) {
			return
		}
		if _, taken := s.index[name]; taken {
			return
		}
		if slices.ContainsFunc(s.entries, func(e Entry) bool { return slices.Contains(e.Tool.Aliases(), name) }) {
			return
		}
		s.index[name] = len(s.entries)
		s.entries = append(s.entries, Entry{Name: name, Source: source, Tool: t})
	}
	for _, t := range r.builtins {
		if r.filter.Core != nil && !matchesAny(t, r.filter.Core, true) {
			continue
		}
		add(t, tools.SourceBuiltin)
	}
	discovered := slices.Clone(r.discovered)
	slices.SortStableFunc(discovered, byName)
	for _, t := range discovered {
		add(t, tools.SourceDiscovered)
	}
	type mcpTool struct {
		alias string
		tool  tools.Tool
	}
	var mcp []mcpTool
	for alias, ts := range r.namedMCP() {
		for _, t := range ts {
			mcp = append(mcp, mcpTool{alias, t})
		}
	}
	// Equal names (which MCP naming avoids) fall back to the alias, so the
	// result never depends on map order.
	slices.SortStableFunc(mcp, func(a, b mcpTool) int {
		if c := byName(a.tool, b.tool); c != 0 {
			return c
		}
		return strings.Compare(a.alias, b.alias)
	})
	for _, m := range mcp {
		add(m.tool, tools.MCPSource(m.alias))
	}
	// Aliases resolve only where they name no registered tool.
	for i, e := range s.entries {
		for _, a := range e.Tool.Aliases() {
			if _, taken := s.index[a]; !taken && a != "" {
				s.index[a] = i
			}
		}
	}
	r.snapshot = s
}

func byName(a, b tools.Tool) int { return strings.Compare(a.Name(), b.Name()) }

// mcpNamed is an MCP tool that takes its registered name from tools.md
// §4.4 rather than carrying one.
type mcpNamed interface {
	tools.Tool
	// remoteName is the server-side tool name.
	remoteName() string
	// withName returns the tool registered as name.
	withName(name string) tools.Tool
}

// namedMCP returns the MCP tools per server with the §4.4 names applied,
// computed from the whole set, and queues the warnings not given before;
// r.mu must be held.
func (r *Registry) namedMCP() map[string][]tools.Tool {
	reserved := map[string]bool{}
	for _, t := range r.builtins {
		reserved[t.Name()] = true
		for _, a := range t.Aliases() {
			reserved[a] = true
		}
	}
	for _, t := range r.discovered {
		reserved[t.Name()] = true
	}
	var keys []mcpToolKey
	for alias, ts := range r.mcp {
		for _, t := range ts {
			if n, ok := t.(mcpNamed); ok {
				keys = append(keys, mcpToolKey{alias, n.remoteName()})
			}
		}
	}
	names, warnings := assignMCPNames(keys, func(s string) bool { return reserved[s] })
	current := make(map[string]bool, len(warnings))
	for _, w := range warnings {
		current[w] = true
		if !r.warned[w] {
			r.pending = append(r.pending, w)
		}
	}
	r.warned = current
	out := make(map[string][]tools.Tool, len(r.mcp))
	for alias, ts := range r.mcp {
		for _, t := range ts {
			n, ok := t.(mcpNamed)
			if !ok {
				out[alias] = append(out[alias], t)
				continue
			}
			if name, ok := names[mcpToolKey{alias, n.remoteName()}]; ok {
				out[alias] = append(out[alias], n.withName(name))
			}
		}
	}
	return out
}

// filtered reports whether the filter's exclude, disabled or deny parts
// remove t; r.mu must be held.
func (r *Registry) filtered(t tools.Tool) bool {
	if matchesAny(t, r.filter.Exclude, false) || matchesAny(t, r.filter.Disabled, false) {
		return true
	}
	return r.filter.Deny != nil && r.filter.Deny(t)
}

// matchesAny reports whether one of names designates t. With stripArgs, a
// "name(...)" entry counts as name (tools.core may restrict a tool's
// arguments, which only the permission rules read).
func matchesAny(t tools.Tool, names []string, stripArgs bool) bool {
	for _, n := range names {
		n = strings.TrimSpace(n)
		if stripArgs {
			if i := strings.IndexByte(n, '('); i > 0 && strings.HasSuffix(n, ")") {
				n = n[:i]
			}
		}
		if n == "" {
			continue
		}
		if n == t.Name() || n == t.DisplayName() || slices.Contains(t.Aliases(), n) {
			return true
		}
	}
	return false
}

// Entries returns the registered tools in declaration order.
func (s *Snapshot) Entries() []Entry { return slices.Clone(s.entries) }

// Len is the number of registered tools.
func (s *Snapshot) Len() int { return len(s.entries) }

// Names returns the registered names in declaration order.
func (s *Snapshot) Names() []string {
	names := make([]string, len(s.entries))
	for i, e := range s.entries {
		names[i] = e.Name
	}
	return names
}

// Select returns the snapshot of the entries keep accepts, in the same
// order; a subagent's tool set is made this way (tools.md §3.13).
func (s *Snapshot) Select(keep func(Entry) bool) *Snapshot {
	out := &Snapshot{index: map[string]int{}}
	for _, e := range s.entries {
		if keep(e) {
			out.index[e.Name] = len(out.entries)
			out.entries = append(out.entries, e)
		}
	}
	for i, e := range out.entries {
		for _, a := range e.Tool.Aliases() {
			if _, taken := out.index[a]; !taken && a != "" {
				out.index[a] = i
			}
		}
	}
	return out
}

// defaultParameters is the schema declared for a tool without a usable one.
const defaultParameters = `{"type":"object","properties":{}}`
