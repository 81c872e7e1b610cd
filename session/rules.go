package session

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/shellsafe"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// Permission rules (tools.md §6.2): "Tool" or "Tool(specifier)", from
// permissions.allow/ask/deny of every settings scope, the legacy
// tools.allowed, and the session's "always" answers. deny > ask > allow >
// the tool's own answer.

// rule is one parsed permission rule.
type rule struct {
	raw string
	// names are the tool names the rule covers (canonical API names, or
	// a discovered/MCP name as written).
	names []string
	spec  string
	// hasSpec distinguishes "Bash" (every call) from "Bash()" (none).
	hasSpec bool
}

// ruleAliases maps the names rules may use to the tools they cover.
var ruleAliases = map[string][]string{
	"bash": {"run_shell_command"}, "shell": {"run_shell_command"}, "shelltool": {"run_shell_command"}, "run_shell_command": {"run_shell_command"},
	"edit": {"edit", "write_file"}, "replace": {"edit"},
	"write": {"write_file"}, "writefile": {"write_file"}, "write_file": {"write_file"},
	"read": {"read_file", "grep_search", "glob", "list_directory", "read_many_files"}, "readfile": {"read_file"}, "read_file": {"read_file"},
	"grep": {"grep_search"}, "searchfiles": {"grep_search"}, "search_file_content": {"grep_search"}, "grep_search": {"grep_search"},
	"glob": {"glob"}, "findfiles": {"glob"},
	"listfiles": {"list_directory"}, "readfolder": {"list_directory"}, "list_directory": {"list_directory"},
	"task": {"task"}, "agent": {"task"},
	"readmanyfiles": {"read_many_files"}, "read_many_files": {"read_many_files"},
	"webfetch": {"web_fetch"}, "web_fetch": {"web_fetch"}, "websearch": {"web_search"}, "web_search": {"web_search"},
	"savememory": {"save_memory"}, "save_memory": {"save_memory"}, "todowrite": {"todo_write"}, "todo_write": {"todo_write"},
	"exitplanmode": {"exit_plan_mode"}, "exit_plan_mode": {"exit_plan_mode"},
	"lsp": {"lsp"},
}

// parseRule parses a rule; unbalanced parentheses make it invalid.
func parseRule(raw string) (rule, bool) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return rule{}, false
	}
	r := rule{raw: raw}
	name := s
	if i := strings.IndexByte(s, '('); i >= 0 {
		if !strings.HasSuffix(s, ")") || strings.Count(s, "(") != strings.Count(s, ")") {
			return rule{}, false
		}
		name = strings.TrimSpace(s[:i])
		r.spec = strings.ReplaceAll(strings.TrimSpace(s[i+1:len(s)-1]), ":*", " *")
		r.hasSpec = true
	} else if strings.ContainsRune(s, ')') {
		return rule{}, false
	}
	if names, ok := ruleAliases[strings.ToLower(name)]; ok {
		r.names = names
	} else {
		r.names = []string{name}
	}
	return r, true
}

func parseRules(raws []string) []rule {
	var out []rule
	for _, raw := range raws {
		if r, ok := parseRule(raw); ok {
			out = append(out, r)
		}
	}
	return out
}

// ruleSet is the rules in force for one call.
type ruleSet struct{ allow, ask, deny []rule }

func (s *Session) rules() ruleSet {
	st := s.mgr.opts.Env.Settings()
	rs := ruleSet{
		allow: parseRules(append(st.Strings("permissions.allow"), st.Strings("tools.allowed")...)),
		ask:   parseRules(st.Strings("permissions.ask")),
		deny:  parseRules(st.Strings("permissions.deny")),
	}
	s.mu.Lock()
	for raw := range s.allowed {
		if r, ok := parseRule(raw); ok {
			rs.allow = append(rs.allow, r)
		}
	}
	s.mu.Unlock()
	return rs
}

// names reports whether r names tool t.
func (r rule) covers(t tools.Tool, displayName string) bool {
	src := t.Source()
	for _, n := range r.names {
		if n == t.Name() || strings.EqualFold(n, displayName) {
			return true
		}
		if alias, ok := strings.CutPrefix(src, "mcp:"); ok {
			if n == "mcp__"+alias || strings.HasPrefix(n, "mcp__"+alias+"__") && mcpToolMatches(n, alias, t) {
				return true
			}
		}
	}
	return false
}

func mcpToolMatches(rule, alias string, t tools.Tool) bool {
	want := strings.TrimPrefix(rule, "mcp__"+alias+"__")
	return t.Name() == want || t.Name() == alias+"__"+want || strings.HasPrefix(t.DisplayName(), want+" (")
}

// ShellAnalyzer is implemented by run_shell_command so rules can judge
// each sub-command.
type shellCall struct {
	analysis *shellsafe.Analysis
}

func shellOf(env *tools.Env, t tools.Tool, params map[string]any) *shellCall {
	if t.Name() != "run_shell_command" {
		return nil
	}
	a, err := env.AnalyzeShellCall(params)
	if err != nil {
		return nil
	}
	return &shellCall{analysis: a}
}

// specs returns the specifiers of rules that cover t ("*" for a bare
// rule), and the rules in the same order.
func specsFor(rules []rule, t tools.Tool) ([]string, []rule) {
	var specs []string
	var rs []rule
	for _, r := range rules {
		if !r.covers(t, t.DisplayName()) {
			continue
		}
		spec := r.spec
		if !r.hasSpec {
			spec = "*"
		}
		specs = append(specs, spec)
		rs = append(rs, r)
	}
	return specs, rs
}

// matchOne reports whether a (non-shell) call matches rule r.
func (s *Session) matchOne(r rule, t tools.Tool, params map[string]any) bool {
	if !r.covers(t, t.DisplayName()) {
		return false
	}
	if !r.hasSpec || r.spec == "*" {
		return true
	}
	switch t.Name() {
	case "web_fetch":
		u, _ := tools.String(params, "url")
		pu, err := url.Parse(u)
		if err != nil {
			return false
		}
		host := strings.ToLower(pu.Hostname())
		d := strings.ToLower(strings.TrimPrefix(r.spec, "domain:"))
		return host == d || strings.HasSuffix(host, "."+d)
	case "task":
		typ, _ := tools.String(params, "subagent_type")
		if typ == "" {
			typ = "general-purpose"
		}
		return strings.EqualFold(typ, r.spec)
	}
	locs := t.Locations(params)
	if len(locs) == 0 {
		return false
	}
	pattern := s.pathPattern(r.spec)
	for _, l := range locs {
		if ok, _ := doublestar.Match(pattern, filepath.ToSlash(l.Path)); ok {
			return true
		}
	}
	return false
}

// pathPattern turns a path specifier into an absolute doublestar pattern:
// "//x" is /x, "~/x" the home directory, and "/x", "./x" and "x" are
// relative to the primary root (tools.md §6.2).
func (s *Session) pathPattern(spec string) string {
	root := s.mgr.opts.Env.Workspace.Roots.Primary()
	var p string
	switch {
	case strings.HasPrefix(spec, "//"):
		p = spec[1:]
	case strings.HasPrefix(spec, "~/"):
		home, _ := os.UserHomeDir()
		p = filepath.Join(home, spec[2:])
	default:
		p = filepath.Join(root, strings.TrimPrefix(strings.TrimPrefix(spec, "./"), "/"))
	}
	// Like gitignore, a pattern naming a directory covers what is in it,
	// and a bare name matches at any depth below the root.
	if strings.HasSuffix(spec, "/") {
		p += "/**"
	} else if !strings.Contains(strings.TrimSuffix(spec, "/"), "/") && !strings.HasPrefix(spec, "~") {
		p = filepath.Join(root, "**", spec)
	}
	return filepath.ToSlash(p)
}

// ruleDecision is what the rules say about one call.
type ruleDecision struct {
	deniedBy string // the deny rule, when one matches
	ask      bool   // an ask rule forces a prompt
	allowed  bool   // allow rules approve the call
	// narrowed is the shell confirmation reduced to the sub-commands no
	// allow rule covers.
	narrowed *tools.Confirmation
}

func (s *Session) decide(t tools.Tool, params map[string]any) ruleDecision {
	return s.decideWith(s.rules(), t, params)
}

// decideWith is decide under the rules rs.
func (s *Session) decideWith(rs ruleSet, t tools.Tool, params map[string]any) ruleDecision {
	var d ruleDecision
	if sh := shellOf(s.mgr.opts.Env, t, params); sh != nil {
		allow, _ := specsFor(rs.allow, t)
		deny, denyRules := specsFor(rs.deny, t)
		ask, _ := specsFor(rs.ask, t)
		cov := shellsafe.Cover(sh.analysis.SubCommands, allow, deny)
		if cov.Deny >= 0 {
			d.deniedBy = denyRules[cov.Deny].raw
			return d
		}
		if len(ask) > 0 {
			askCov := shellsafe.Cover(sh.analysis.SubCommands, nil, ask)
			d.ask = askCov.Deny >= 0
		}
		d.allowed = len(cov.Uncovered) == 0 && !sh.analysis.Substitution
		if !d.allowed && len(cov.Uncovered) > 0 {
			d.narrowed = tools.ShellConfirmation(sh.analysis.Command, cov.Uncovered)
		}
		return d
	}
	for _, r := range rs.deny {
		if s.matchOne(r, t, params) {
			d.deniedBy = r.raw
			return d
		}
	}
	for _, r := range rs.ask {
		if s.matchOne(r, t, params) {
			d.ask = true
		}
	}
	for _, r := range rs.allow {
		if s.matchOne(r, t, params) {
			d.allowed = true
		}
	}
	return d
}

func deniedError(rule, name string) *tools.ToolError {
	return tools.NewError(tools.ErrorExecutionDenied, fmt.Sprintf("The permission rule %q denies %s, so this call was not run.", rule, name))
}

// WholeToolDenied reports whether a deny rule without a specifier names
// t: such tools are left out of the registry (tools.md §4.1).
func WholeToolDenied(st *workspace.Settings, t tools.Tool) bool {
	for _, r := range parseRules(st.Strings("permissions.deny")) {
		if !r.hasSpec && r.covers(t, t.DisplayName()) {
			return true
		}
	}
	return false
}
