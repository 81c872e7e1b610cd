package langserver

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Spec describes a language server: how to start it and which files it
// covers.
type Spec struct {
	// Name names the server in messages and in Check Setup ("gopls").
	Name string
	// Command is the argv that starts it speaking LSP on stdio.
	Command []string
	// Extensions maps a file extension, lower case with its dot (".go"),
	// to the languageId the server gets in didOpen.
	Extensions map[string]string
	// RootMarkers name files or folders that mark a project's root, in
	// order of preference: the server's root is the folder nearest the
	// file that holds the first marker found, within the root it is
	// asked for (that root when none is found).
	RootMarkers []string
	// InitializationOptions is sent in initialize (a JSON object, or nil).
	InitializationOptions json.RawMessage
	// Settings answers workspace/configuration (a section is looked up
	// by its dotted path) and is sent once in
	// workspace/didChangeConfiguration (a JSON object, or nil).
	Settings json.RawMessage
	// Env is added to the server's environment, as KEY=VALUE.
	Env []string
}

// Covers reports whether the server covers path, and with which
// languageId.
func (s Spec) Covers(path string) (languageID string, ok bool) {
	ext := strings.ToLower(filepath.Ext(path))
	if ext == "" {
		return "", false
	}
	id, ok := s.Extensions[ext]
	return id, ok
}

// LookPath finds the server's command as exec would (on PATH unless it
// is a path), for Check Setup and for choosing among servers.
func (s Spec) LookPath() (string, error) {
	if len(s.Command) == 0 || s.Command[0] == "" {
		return "", fmt.Errorf("language server %s: no command", s.Name)
	}
	return exec.LookPath(s.Command[0])
}

var (
	goExts = map[string]string{".go": "go"}
	tsExts = map[string]string{
		".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "typescriptreact",
		".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascriptreact",
	}
	pyExts   = map[string]string{".py": "python", ".pyi": "python"}
	rustExts = map[string]string{".rs": "rust"}
	cExts    = map[string]string{
		".c": "c", ".h": "c",
		".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".c++": "cpp", ".hh": "cpp", ".hpp": "cpp", ".hxx": "cpp",
		".m": "objective-c", ".mm": "objective-cpp",
	}
	pyMarkers = []string{"pyrightconfig.json", "pyproject.toml", "setup.py", "setup.cfg", "requirements.txt"}
)

// Builtin is the servers qwen-ls knows without settings, in order of
// preference (pyright before pylsp: a file goes to the first that is
// installed).
func Builtin() []Spec {
	return []Spec{
		{Name: "gopls", Command: []string{"gopls"}, Extensions: goExts, RootMarkers: []string{"go.work", "go.mod"}},
		{Name: "typescript-language-server", Command: []string{"typescript-language-server", "--stdio"}, Extensions: tsExts,
			RootMarkers: []string{"tsconfig.json", "jsconfig.json", "package.json"}},
		{Name: "pyright", Command: []string{"pyright-langserver", "--stdio"}, Extensions: pyExts, RootMarkers: pyMarkers},
		{Name: "pylsp", Command: []string{"pylsp"}, Extensions: pyExts, RootMarkers: pyMarkers},
		{Name: "rust-analyzer", Command: []string{"rust-analyzer"}, Extensions: rustExts, RootMarkers: []string{"Cargo.toml"}},
		{Name: "clangd", Command: []string{"clangd"}, Extensions: cExts,
			RootMarkers: []string{"compile_commands.json", "compile_flags.txt", ".clangd"}},
	}
}

// Specs puts the servers of the settings (ParseSettings) before the
// built-in ones, which they replace when they have the same name.
func Specs(extra []Spec) []Spec {
	out := slices.Clone(extra)
	for _, b := range Builtin() {
		if !slices.ContainsFunc(extra, func(e Spec) bool { return e.Name == b.Name }) {
			out = append(out, b)
		}
	}
	return out
}

// Found is a server that covers a file, and where its command is.
type Found struct {
	Spec Spec
	// Path is the command found on PATH; "" when it was not (Err says
	// why).
	Path string
	Err  error
}

// Lookup lists the servers of specs that cover path, in order of
// preference, each with where its command was found: what Check Setup
// shows for the open file. The first with a Path is the one used.
func Lookup(specs []Spec, path string) []Found {
	var out []Found
	for _, s := range specs {
		if _, ok := s.Covers(path); ok {
			p, err := s.LookPath()
			out = append(out, Found{Spec: s, Path: p, Err: err})
		}
	}
	return out
}

// qwenSwitches are the keys of Qwen Code's settings.json "lsp" object
// that switch the feature rather than describe a server.
var qwenSwitches = []string{"enabled", "autoDetect", "serverTimeout", "allowed", "excluded"}

// serverEntry is one server of the lsp settings, in the language-keyed
// shape Qwen Code 0.24 reads from .lsp.json and extensions.
type serverEntry struct {
	Command               *string           `json:"command"`
	Args                  []string          `json:"args"`
	Transport             string            `json:"transport"`
	Env                   map[string]any    `json:"env"`
	InitializationOptions json.RawMessage   `json:"initializationOptions"`
	Settings              json.RawMessage   `json:"settings"`
	ExtensionToLanguage   map[string]string `json:"extensionToLanguage"`
	RootMarkers           []string          `json:"rootMarkers"`
}

// ParseSettings reads the lsp settings value: an object keyed by language
// id whose values describe servers as Qwen Code's .lsp.json does
// ({"command", "args", "env", "initializationOptions", "settings",
// "extensionToLanguage"}, plus "rootMarkers"). A server is named after
// its command's base name, so an entry for gopls replaces the built-in
// one. Without extensionToLanguage an entry covers the extensions the
// built-in servers know for its language. Qwen Code's switches (enabled,
// allowed, …) are skipped; Qwen Code's timeouts, restart and trust fields
// are accepted and ignored (qwen-ls has its own, and always requires a
// trusted folder); a transport other than stdio is an error. Entries come
// out in key order.
func ParseSettings(raw []byte) ([]Spec, error) {
	if len(strings.TrimSpace(string(raw))) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("lsp settings: not an object of language servers: %w", err)
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []Spec
	for _, key := range keys {
		v := top[key]
		if slices.Contains(qwenSwitches, key) && !isObject(v) {
			continue
		}
		s, err := parseEntry(key, v)
		if err != nil {
			return nil, fmt.Errorf("lsp settings: %q: %w", key, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func parseEntry(lang string, raw json.RawMessage) (Spec, error) {
	if !isObject(raw) {
		return Spec{}, fmt.Errorf("must be an object with a command")
	}
	var e serverEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return Spec{}, err
	}
	if e.Transport != "" && !strings.EqualFold(e.Transport, "stdio") {
		return Spec{}, fmt.Errorf("transport %q is not supported: qwen-ls starts language servers on stdio", e.Transport)
	}
	if e.Command == nil || strings.TrimSpace(*e.Command) == "" {
		return Spec{}, fmt.Errorf("command is missing")
	}
	for _, f := range []struct {
		name string
		v    json.RawMessage
	}{{"initializationOptions", e.InitializationOptions}, {"settings", e.Settings}} {
		if len(f.v) > 0 && string(f.v) != "null" && !isObject(f.v) {
			return Spec{}, fmt.Errorf("%s must be an object", f.name)
		}
	}
	cmd := *e.Command
	s := Spec{
		Name:                  strings.TrimSuffix(filepath.Base(cmd), filepath.Ext(cmd)),
		Command:               append([]string{cmd}, e.Args...),
		RootMarkers:           e.RootMarkers,
		InitializationOptions: nullToNil(e.InitializationOptions),
		Settings:              nullToNil(e.Settings),
	}
	envKeys := make([]string, 0, len(e.Env))
	for k := range e.Env {
		envKeys = append(envKeys, k)
	}
	slices.Sort(envKeys)
	for _, k := range envKeys {
		switch v := e.Env[k].(type) {
		case string, float64, bool:
			s.Env = append(s.Env, fmt.Sprintf("%s=%v", k, v))
		default:
			return Spec{}, fmt.Errorf("env %s must be a string, number or boolean", k)
		}
	}
	if len(e.ExtensionToLanguage) > 0 {
		s.Extensions = map[string]string{}
		for ext, id := range e.ExtensionToLanguage {
			ext = strings.ToLower(strings.TrimPrefix(ext, "."))
			if ext == "" || id == "" {
				return Spec{}, fmt.Errorf("extensionToLanguage has an empty extension or language")
			}
			s.Extensions["."+ext] = id
		}
		return s, nil
	}
	s.Extensions = builtinExtensions(lang)
	if len(s.Extensions) == 0 {
		return Spec{}, fmt.Errorf("extensionToLanguage is missing, and no file extensions are known for language %q", lang)
	}
	return s, nil
}

// builtinExtensions are the extensions the built-in servers map to the
// language lang ("go", "typescript", "cpp"), or to any language when lang
// names a built-in server ("gopls", "clangd").
func builtinExtensions(lang string) map[string]string {
	out := map[string]string{}
	for _, b := range Builtin() {
		for ext, id := range b.Extensions {
			if strings.EqualFold(id, lang) || strings.EqualFold(b.Name, lang) {
				out[ext] = id
			}
		}
	}
	// "typescript" also covers the React flavour, and "c" and "cpp" each
	// other's files: one server serves both.
	switch strings.ToLower(lang) {
	case "typescript", "javascript":
		for ext, id := range tsExts {
			if strings.HasPrefix(id, strings.ToLower(lang)) {
				out[ext] = id
			}
		}
	case "c", "cpp", "c++":
		for ext, id := range cExts {
			out[ext] = id
		}
	}
	return out
}

func isObject(v json.RawMessage) bool {
	t := strings.TrimSpace(string(v))
	return strings.HasPrefix(t, "{")
}

func nullToNil(v json.RawMessage) json.RawMessage {
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	return v
}

// rootFor is the folder the server of s runs in for path: the nearest
// folder, from path's up to root, that holds s's first marker found
// there; root when none does.
func rootFor(s Spec, root, path string) string {
	for _, marker := range s.RootMarkers {
		dir := filepath.Dir(path)
		for {
			if _, err := os.Stat(filepath.Join(dir, marker)); err == nil {
				return dir
			}
			if dir == root || !within(root, dir) {
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return root
}

// within reports whether path is root or inside it (both clean and
// absolute).
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
