package tools

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Where a subagent definition came from, lowest precedence first
// (tools.md §3.13: project over user over built-in).
const (
	agentBuiltin = "builtin"
	agentUser    = "user"
	agentProject = "project"
)

// defaultSubagent is the subagent a task call gets when it names none.
const defaultSubagent = "general-purpose"

// defaultMaxTurns bounds a subagent's model requests when its definition
// says nothing.
const defaultMaxTurns = 50

// agentDefinition is one subagent (tools.md §3.13).
type agentDefinition struct {
	Name        string
	Description string
	// Tools are the tool names or aliases the subagent may use; nil means
	// every tool the session has (task, todo_write and exit_plan_mode are
	// always left out by the session).
	Tools []string
	// Model is the model name to use; "" means the session's.
	Model    string
	MaxTurns int
	// SystemPrompt is the Markdown body of the definition file.
	SystemPrompt string
	// Source is agentBuiltin, agentUser or agentProject; Path is the file
	// ("" for the built-in).
	Source string
	Path   string
}

// builtinGeneralPurpose is the subagent that always exists, unless a user
// or project file of the same name replaces it.
var builtinGeneralPurpose = agentDefinition{
	Name:        defaultSubagent,
	Description: "A general agent for research and multi-step work: searching the code base, reading many files and answering questions about them, or carrying out a self-contained task. Use it when a search may need several attempts, or to keep a long investigation out of the main conversation.",
	MaxTurns:    defaultMaxTurns,
	Source:      agentBuiltin,
	SystemPrompt: `You are a subagent of Qwen Code. The main agent gave you one task; carry it out on your own with the tools you have, then report.

How to work:
- Search broadly first (grep_search, glob, list_directory), then read the files that matter. Try other names and places when a search finds nothing.
- Stay within the task. Do not make changes the task does not ask for.
- Paths in tool arguments are absolute and must lie inside the workspace roots listed below.

Your final reply, the one without tool calls, is the only thing the main agent sees of your work. Make it complete and self-contained: answer the task, name the relevant files with absolute paths (and line numbers where they help), quote the short snippets that matter, and say what you could not find or did not do.`,
}

// agentProblem is a definition file that was skipped.
type agentProblem struct {
	Path string
	Err  error
}

func (p agentProblem) Error() string {
	return fmt.Sprintf("subagent definition %s skipped: %v", p.Path, p.Err)
}

// Agents gives the current subagent definitions: the built-in one, then
// ~/.qwen/agents/*.md and <primary root>/.qwen/agents/*.md. Every access
// checks the directories' listings and the files' sizes and modification
// times, and reads them again when anything changed, so an edit reaches
// the next model request without a watcher.
type Agents struct {
	env *Env

	// mu guards the fields below.
	mu sync.Mutex
	// sig is the state of the directories the definitions were read from.
	sig      string
	loaded   bool
	defs     []agentDefinition
	problems []agentProblem
	warn     []func(agentProblem)
}

// newAgents returns the definitions of env's user and project directories.
func newAgents(env *Env) *Agents { return &Agents{env: env} }

// userDir is ~/.qwen/agents, or "" when the state folder is unknown.
func (a *Agents) userDir() string {
	if a.env.QwenHome == "" {
		return ""
	}
	return filepath.Join(a.env.QwenHome, "agents")
}

// projectDir is <primary root>/.qwen/agents, or "" without a root.
func (a *Agents) projectDir() string {
	if a.env.Workspace == nil {
		return ""
	}
	root := a.env.Workspace.Roots.Primary()
	if root == "" {
		return ""
	}
	return filepath.Join(root, ".qwen", "agents")
}

// skipped lists the definition files the last read left out, and why.
func (a *Agents) skipped() []agentProblem {
	a.refresh()
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.problems)
}

// list returns the definitions, sorted by name (case-insensitively).
func (a *Agents) list() []agentDefinition {
	a.refresh()
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.defs)
}

// agentFile is one *.md file of a definitions directory.
type agentFile struct {
	path, source string
}

// scan lists the definition files and a signature of their state.
func (a *Agents) scan() ([]agentFile, string) {
	var files []agentFile
	var sig strings.Builder
	for _, d := range []struct{ dir, source string }{{a.userDir(), agentUser}, {a.projectDir(), agentProject}} {
		fmt.Fprintf(&sig, "%s\x00", d.dir)
		if d.dir == "" {
			continue
		}
		ents, err := os.ReadDir(d.dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".md") {
				continue
			}
			p := filepath.Join(d.dir, e.Name())
			fi, err := os.Stat(p)
			if err != nil || fi.IsDir() {
				continue
			}
			fmt.Fprintf(&sig, "%s\x00%d\x00%d\x00", e.Name(), fi.Size(), fi.ModTime().UnixNano())
			files = append(files, agentFile{p, d.source})
		}
	}
	return files, sig.String()
}

// refresh reads the definitions again when the files changed.
func (a *Agents) refresh() {
	files, sig := a.scan()
	a.mu.Lock()
	if a.loaded && sig == a.sig {
		a.mu.Unlock()
		return
	}
	old := map[string]string{}
	for _, p := range a.problems {
		old[p.Path] = p.Err.Error()
	}
	byName := map[string]agentDefinition{strings.ToLower(builtinGeneralPurpose.Name): builtinGeneralPurpose}
	var problems []agentProblem
	for _, source := range []string{agentUser, agentProject} {
		seen := map[string]string{}
		for _, f := range files {
			if f.source != source {
				continue
			}
			def, err := readAgentFile(f.path)
			if err == nil {
				if first, dup := seen[strings.ToLower(def.Name)]; dup {
					err = fmt.Errorf("the name %q is already used by %s", def.Name, first)
				}
			}
			if err != nil {
				problems = append(problems, agentProblem{Path: f.path, Err: err})
				continue
			}
			def.Source, def.Path = source, f.path
			seen[strings.ToLower(def.Name)] = f.path
			byName[strings.ToLower(def.Name)] = def
		}
	}
	defs := make([]agentDefinition, 0, len(byName))
	for _, d := range byName {
		defs = append(defs, d)
	}
	slices.SortFunc(defs, func(x, y agentDefinition) int {
		return strings.Compare(strings.ToLower(x.Name), strings.ToLower(y.Name))
	})
	a.defs, a.problems, a.sig, a.loaded = defs, problems, sig, true
	var fresh []agentProblem
	for _, p := range problems {
		if msg, ok := old[p.Path]; !ok || msg != p.Err.Error() {
			fresh = append(fresh, p)
		}
	}
	warn := slices.Clone(a.warn)
	a.mu.Unlock()
	for _, p := range fresh {
		for _, f := range warn {
			f(p)
		}
	}
}

func readAgentFile(path string) (agentDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return agentDefinition{}, err
	}
	return parseAgentDefinition(data)
}

// parseAgentDefinition reads a definition file: YAML front matter between
// "---" lines with name and description (required), tools (a list, or a
// comma-separated string, of names or aliases), model and max_turns, then
// the Markdown body, which is the system prompt. Other keys are ignored.
func parseAgentDefinition(data []byte) (agentDefinition, error) {
	text := strings.ReplaceAll(strings.TrimPrefix(string(data), "\ufeff"), "\r\n", "\n")
	lines := strings.Split(text, "\n")
	if len(lines) == 0 || strings.TrimRight(lines[0], " \t") != "---" {
		return agentDefinition{}, errors.New(`the file does not start with a "---" line opening the front matter`)
	}
	end := -1
	for i := 1; i < len(lines); i++ {
		if l := strings.TrimRight(lines[i], " \t"); l == "---" || l == "..." {
			end = i
			break
		}
	}
	if end < 0 {
		return agentDefinition{}, errors.New(`the front matter has no closing "---" line`)
	}
	fm, err := parseFrontMatter(lines[1:end])
	if err != nil {
		return agentDefinition{}, fmt.Errorf("front matter: %w", err)
	}
	def := agentDefinition{MaxTurns: defaultMaxTurns, SystemPrompt: strings.TrimSpace(strings.Join(lines[end+1:], "\n"))}
	scalar := func(key string) (string, error) {
		v, ok := fm[key]
		if !ok || v.null {
			return "", nil
		}
		if v.list != nil {
			return "", fmt.Errorf("%q must be a single value, not a list", key)
		}
		return strings.TrimSpace(v.scalar), nil
	}
	if def.Name, err = scalar("name"); err != nil {
		return def, err
	}
	if def.Name == "" {
		return def, errors.New(`"name" is required`)
	}
	if strings.ContainsAny(def.Name, "\n\t") {
		return def, errors.New(`"name" must be one line`)
	}
	if def.Description, err = scalar("description"); err != nil {
		return def, err
	}
	if def.Description == "" {
		return def, errors.New(`"description" is required`)
	}
	if def.Model, err = scalar("model"); err != nil {
		return def, err
	}
	if v, ok := fm["tools"]; ok && !v.null {
		names := v.list
		if names == nil {
			names = strings.Split(v.scalar, ",")
		}
		def.Tools = []string{}
		for _, n := range names {
			if n = strings.TrimSpace(n); n != "" {
				def.Tools = append(def.Tools, n)
			}
		}
	}
	mt, err := scalar("max_turns")
	if err != nil {
		return def, err
	}
	if mt != "" {
		n, err := strconv.Atoi(mt)
		if err != nil || n < 1 {
			return def, fmt.Errorf(`"max_turns" must be a whole number of at least 1, not %q`, mt)
		}
		def.MaxTurns = n
	}
	if def.SystemPrompt == "" {
		return def, errors.New("the body after the front matter (the system prompt) is empty")
	}
	return def, nil
}

// yamlValue is a front-matter value: a scalar, a list of scalars, or null.
type yamlValue struct {
	scalar string
	list   []string
	null   bool
}

// parseFrontMatter reads the small part of YAML that definition files use:
// a mapping of keys to plain or quoted scalars, folded continuation lines,
// block scalars (| and >), and flow ([a, b]) or block (- a) lists of
// scalars. A key whose value is a nested block is kept only when it is
// unknown to us (its content is skipped); anything else is an error.
func parseFrontMatter(lines []string) (map[string]yamlValue, error) {
	out := map[string]yamlValue{}
	known := map[string]bool{"name": true, "description": true, "tools": true, "model": true, "max_turns": true}
	indented := func(l string) bool { return l != "" && (l[0] == ' ' || l[0] == '\t') }
	// A list may sit at its key's own indentation ("tools:\n- a").
	listItem := func(l string) bool { return l == "-" || strings.HasPrefix(l, "- ") }
	blank := func(l string) bool { t := strings.TrimSpace(l); return t == "" || strings.HasPrefix(t, "#") }
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if blank(line) {
			continue
		}
		if indented(line) {
			return nil, fmt.Errorf("line %d: unexpected indentation", i+2)
		}
		key, rest, ok := strings.Cut(line, ":")
		key = strings.TrimSpace(key)
		if !ok || key == "" || strings.ContainsAny(key, " \t\"'") {
			return nil, fmt.Errorf("line %d: want \"key: value\", got %q", i+2, line)
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("line %d: %q appears twice", i+2, key)
		}
		// The lines indented under this key.
		j := i + 1
		for j < len(lines) && (indented(lines[j]) || strings.TrimSpace(lines[j]) == "" || listItem(lines[j])) {
			j++
		}
		block := lines[i+1 : j]
		for len(block) > 0 && strings.TrimSpace(block[len(block)-1]) == "" {
			block = block[:len(block)-1]
			j--
		}
		i = j - 1
		rest = strings.TrimSpace(rest)
		v, err := parseYAMLValue(rest, block)
		if err != nil {
			if !known[key] {
				continue
			}
			return nil, fmt.Errorf("%q: %w", key, err)
		}
		out[key] = v
	}
	return out, nil
}

func parseYAMLValue(rest string, block []string) (yamlValue, error) {
	nonBlank := 0
	for _, l := range block {
		if strings.TrimSpace(l) != "" {
			nonBlank++
		}
	}
	switch {
	case slices.Contains([]string{"|", "|-", "|+", ">", ">-", ">+"}, rest):
		return yamlValue{scalar: blockScalar(rest, block)}, nil
	case rest == "" && nonBlank == 0:
		return yamlValue{null: true}, nil
	case rest == "":
		var list []string
		for _, l := range block {
			t := strings.TrimSpace(l)
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			if t != "-" && !strings.HasPrefix(t, "- ") {
				return yamlValue{}, errors.New("nested mappings are not supported")
			}
			s, err := yamlScalar(strings.TrimSpace(strings.TrimPrefix(t, "-")))
			if err != nil {
				return yamlValue{}, err
			}
			list = append(list, s)
		}
		return yamlValue{list: list}, nil
	case nonBlank > 0:
		// A plain scalar folded over indented continuation lines.
		if rest[0] == '"' || rest[0] == '\'' || rest[0] == '[' {
			return yamlValue{}, errors.New("a quoted or flow value must fit on one line")
		}
		parts := []string{rest}
		for _, l := range block {
			if t := strings.TrimSpace(l); t != "" {
				parts = append(parts, t)
			}
		}
		return yamlValue{scalar: stripComment(strings.Join(parts, " "))}, nil
	case rest == "~" || rest == "null":
		return yamlValue{null: true}, nil
	case rest[0] == '[':
		body, ok := strings.CutSuffix(stripComment(rest), "]")
		if !ok {
			return yamlValue{}, errors.New("a flow list must end with ]")
		}
		list := []string{}
		for _, item := range splitFlow(body[1:]) {
			if item = strings.TrimSpace(item); item == "" {
				continue
			}
			s, err := yamlScalar(item)
			if err != nil {
				return yamlValue{}, err
			}
			list = append(list, s)
		}
		return yamlValue{list: list}, nil
	case rest[0] == '{':
		return yamlValue{}, errors.New("nested mappings are not supported")
	}
	s, err := yamlScalar(rest)
	return yamlValue{scalar: s}, err
}

// yamlScalar reads a one-line scalar: double-quoted (with escapes),
// single-quoted (a doubled quote stands for one) or plain (a " #" starts a comment).
func yamlScalar(s string) (string, error) {
	switch {
	case strings.HasPrefix(s, `"`):
		end := closingQuote(s)
		if end < 0 {
			return "", errors.New("unterminated double-quoted value")
		}
		if rest := strings.TrimSpace(s[end+1:]); rest != "" && !strings.HasPrefix(rest, "#") {
			return "", fmt.Errorf("unexpected text after a quoted value: %q", rest)
		}
		v, err := strconv.Unquote(s[:end+1])
		if err != nil {
			return "", fmt.Errorf("bad escape in %s", s[:end+1])
		}
		return v, nil
	case strings.HasPrefix(s, "'"):
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			if s[i] != '\'' {
				b.WriteByte(s[i])
				continue
			}
			if i+1 < len(s) && s[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			if rest := strings.TrimSpace(s[i+1:]); rest != "" && !strings.HasPrefix(rest, "#") {
				return "", fmt.Errorf("unexpected text after a quoted value: %q", rest)
			}
			return b.String(), nil
		}
		return "", errors.New("unterminated single-quoted value")
	}
	return stripComment(s), nil
}

// closingQuote finds the quote that ends a double-quoted scalar.
func closingQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

func stripComment(s string) string {
	if i := strings.Index(s, " #"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// splitFlow splits a flow list's items at commas outside quotes.
func splitFlow(s string) []string {
	var out []string
	start, quote := 0, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '"' && c == '\\':
			i++
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		case quote == 0 && c == ',':
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// blockScalar reads a literal (|) or folded (>) block scalar with the
// default (clip) or strip (-) chomping; keep (+) is taken as clip.
func blockScalar(header string, block []string) string {
	indent := -1
	for _, l := range block {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if indent < 0 || n < indent {
			indent = n
		}
	}
	var lines []string
	for _, l := range block {
		if len(l) >= indent && indent >= 0 {
			l = l[indent:]
		} else {
			l = strings.TrimLeft(l, " \t")
		}
		lines = append(lines, l)
	}
	var text string
	if header[0] == '|' {
		text = strings.Join(lines, "\n")
	} else {
		var b strings.Builder
		sc := bufio.NewScanner(strings.NewReader(strings.Join(lines, "\n")))
		prevBlank := true
		for sc.Scan() {
			l := sc.Text()
			switch {
			case l == "":
				b.WriteString("\n")
				prevBlank = true
			case prevBlank:
				b.WriteString(l)
				prevBlank = false
			default:
				b.WriteString(" " + l)
			}
		}
		text = b.String()
	}
	text = strings.TrimRight(text, "\n")
	if !strings.HasSuffix(header, "-") {
		text += "\n"
	}
	return text
}
