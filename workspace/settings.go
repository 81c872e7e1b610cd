package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// SettingsOptions says where the settings files are. The zero value reads
// the default locations from the process environment.
type SettingsOptions struct {
	// SystemPath is the system settings file. Default:
	// $QWEN_CODE_SYSTEM_SETTINGS_PATH, else /etc/qwen-code/settings.json
	// (on macOS /Library/Application Support/QwenCode/settings.json).
	SystemPath string
	// UserDir holds the user settings file. Default: $QWEN_HOME, else
	// ~/.qwen.
	UserDir string
	// PrimaryRoot returns the primary workspace root, whose
	// .qwen/settings.json is the workspace layer. Nil or "" means no
	// workspace layer. It is called on every Load, so a new primary root
	// takes effect on the next one.
	PrimaryRoot func() string
	// Getenv looks up environment variables, for the defaults above,
	// $VAR expansion and the model's environment fallback. Default:
	// os.LookupEnv.
	Getenv func(string) (string, bool)
}

// SettingsProblem is a settings file that could not be read or parsed. The
// layer keeps its last good content while the problem lasts.
type SettingsProblem struct {
	File string
	Err  error
}

func (p SettingsProblem) Error() string {
	return fmt.Sprintf("settings file %s is not valid and was not applied: %v", p.File, p.Err)
}

// ModelConfig is the model endpoint resolved per protocol.md §10 and
// "Model configuration".
type ModelConfig struct {
	Name, BaseURL, APIKey string
	// Source names where each set field came from, keyed by the settings
	// key ("name", "baseUrl", "apiKey"), for messages. It never holds the
	// key itself; do not log APIKey.
	Source map[string]string
	// FromProvider: the model is a modelProviders entry, of AuthType,
	// whose key is the variable EnvKey.
	FromProvider bool
	AuthType     string
	EnvKey       string
	// Generation is the entry's generationConfig, or
	// model.generationConfig for a model no entry describes.
	Generation GenerationConfig
}

// DashScopeBaseURL is the endpoint used when the API key comes from
// DASHSCOPE_API_KEY and nothing sets a base URL.
const DashScopeBaseURL = "https://dashscope.aliyuncs.com/compatible-mode/v1"

// The layers, lowest to highest in the general merge (tools.md §7.1).
const (
	layerUser = iota
	layerWorkspace
	layerEditor
	layerSystem
	numLayers
)

type settingsLayer struct {
	// file is the path the layer was last loaded from ("" for the editor
	// layer and for a file layer with no file).
	file string
	// values is the last good content, with $VAR expanded.
	values map[string]any
	// problem is set while file fails to read or parse.
	problem *SettingsProblem
}

// Settings holds the layered settings files and the editor's layer, merged
// as tools.md §7.1 says, and reloads them when they change. It is safe for
// concurrent use.
type Settings struct {
	systemPath  string
	userDir     string
	primaryRoot func() string
	getenv      func(string) (string, bool)

	// loadMu serialises Load, so two reloads never interleave their reads
	// with their updates of the layers.
	loadMu sync.Mutex
	// fireMu is held while a debounced reload runs, so that Close can wait
	// for one in progress.
	fireMu sync.Mutex

	mu     sync.RWMutex
	layers [numLayers]settingsLayer
	// effective is each layer as merged: the workspace layer without the
	// settings an untrusted folder may not use.
	effective [numLayers]map[string]any
	merged    map[string]any
	// trustRules is the last good content of the trust list, and
	// trustProblem is set while the file does not parse.
	trustRules   TrustRules
	trustProblem *SettingsProblem
	// editorTrust is initializationOptions.workspaceTrusted (nil: the
	// editor said nothing); granted holds the roots the user trusted
	// through the editor during this connection.
	editorTrust *bool
	granted     map[string]bool
	trust       Trust
	onChange    []func()
	onProblem   []func(SettingsProblem)
	watcher     *Watcher
	// watchSet holds the paths (settings files and their directories, as
	// given and as real paths) whose events trigger a reload.
	watchSet map[string]bool
	timer    *time.Timer
	closed   bool
	// dotEnvSig is the content of the environment files at the last
	// Load, so that a changed key counts as a settings change.
	dotEnvSig string
}

// NewSettings returns settings with every layer empty; call Load to read
// the files.
func NewSettings(opts SettingsOptions) *Settings {
	s := &Settings{
		systemPath:  opts.SystemPath,
		userDir:     opts.UserDir,
		primaryRoot: opts.PrimaryRoot,
		getenv:      opts.Getenv,
		merged:      map[string]any{},
		granted:     map[string]bool{},
		trustRules:  TrustRules{},
	}
	if s.getenv == nil {
		s.getenv = os.LookupEnv
	}
	if s.systemPath == "" {
		if v, ok := s.getenv("QWEN_CODE_SYSTEM_SETTINGS_PATH"); ok && v != "" {
			s.systemPath = v
		} else if runtime.GOOS == "darwin" {
			s.systemPath = "/Library/Application Support/QwenCode/settings.json"
		} else {
			s.systemPath = "/etc/qwen-code/settings.json"
		}
	}
	if s.userDir == "" {
		home, _ := s.getenv("HOME")
		if home == "" && opts.Getenv == nil {
			home, _ = os.UserHomeDir()
		}
		if v, ok := s.getenv("QWEN_HOME"); ok && v != "" {
			if v == "~" || strings.HasPrefix(v, "~/") {
				v = filepath.Join(home, v[1:])
			}
			s.userDir = v
		} else if home != "" {
			s.userDir = filepath.Join(home, ".qwen")
		}
	}
	return s
}

// UserFile returns the user settings file, or "" when there is no home
// directory to hold it.
func (s *Settings) UserFile() string {
	if s.userDir == "" {
		return ""
	}
	return filepath.Join(s.userDir, "settings.json")
}

// TrustFile returns the user's list of trusted folders
// (~/.qwen/trustedFolders.json), or "" when there is no home directory.
func (s *Settings) TrustFile() string {
	if s.userDir == "" {
		return ""
	}
	return filepath.Join(s.userDir, TrustFileName)
}

// WorkspaceFile returns the workspace settings file of the current primary
// root, or "" when there is no primary root or the file is the user file
// (a workspace opened on the home directory), which is read only once.
func (s *Settings) WorkspaceFile() string {
	if s.primaryRoot == nil {
		return ""
	}
	root := s.primaryRoot()
	if root == "" {
		return ""
	}
	f := filepath.Join(root, ".qwen", "settings.json")
	if f == s.UserFile() {
		return ""
	}
	return f
}

// SystemFile returns the system settings file.
func (s *Settings) SystemFile() string { return s.systemPath }

// files returns the file of each file layer, indexed by layer ("" for the
// editor layer).
func (s *Settings) files() [numLayers]string {
	var f [numLayers]string
	f[layerUser] = s.UserFile()
	f[layerWorkspace] = s.WorkspaceFile()
	f[layerSystem] = s.SystemFile()
	return f
}

// loadResult is what reading one settings file gave.
type loadResult struct {
	values map[string]any // nil when the file is missing or broken
	err    error
}

// Load reads every settings file again. A missing file empties its layer;
// a file that cannot be read or parsed keeps its layer's last good content
// and is recorded as a problem (see Problems), and the OnProblem callbacks
// run when the problem is new or different. The OnChange callbacks run when
// any layer's content changed.
func (s *Settings) Load() {
	s.loadMu.Lock()
	// Watch first, so that a file written after this point raises an
	// event, and one written before it is seen by the reads below.
	s.ensureWatched()
	files := s.files()
	var results [numLayers]loadResult
	for i, f := range files {
		if i == layerEditor || f == "" {
			continue
		}
		results[i] = s.readFile(f)
	}
	var trustRules TrustRules
	var trustErr error
	if tf := s.TrustFile(); tf != "" {
		trustRules, trustErr = ReadTrustFile(tf)
	}

	s.mu.Lock()
	changed := false
	var newProblems []SettingsProblem
	if trustErr != nil {
		p := SettingsProblem{File: s.TrustFile(), Err: trustErr}
		if s.trustProblem == nil || s.trustProblem.Err.Error() != p.Err.Error() {
			newProblems = append(newProblems, p)
		}
		s.trustProblem = &p
	} else {
		s.trustProblem = nil
		if !maps.Equal(s.trustRules, trustRules) {
			s.trustRules = trustRules
			changed = true
		}
	}
	for i, f := range files {
		if i == layerEditor {
			continue
		}
		l := &s.layers[i]
		if l.file != f {
			// Another file (a new primary root): the old file's
			// values and problems do not carry over.
			if len(l.values) > 0 {
				changed = true
			}
			*l = settingsLayer{file: f}
		}
		r := results[i]
		if r.err != nil {
			p := SettingsProblem{File: f, Err: r.err}
			if l.problem == nil || l.problem.Err.Error() != p.Err.Error() {
				newProblems = append(newProblems, p)
			}
			l.problem = &p
			continue
		}
		l.problem = nil
		if !sameValues(l.values, r.values) {
			l.values = r.values
			changed = true
		}
	}
	if s.remergeLocked() {
		changed = true
	}
	onChange := append([]func(){}, s.onChange...)
	onProblem := append([]func(SettingsProblem){}, s.onProblem...)
	s.mu.Unlock()
	// The environment files hold keys: a change reaches the secrets the
	// OnChange callbacks recompute (read after the trust decision above,
	// which says whether the project's files count).
	sig := dotEnvSignature(s.dotEnvFiles())
	s.mu.Lock()
	if sig != s.dotEnvSig {
		s.dotEnvSig = sig
		changed = true
	}
	s.mu.Unlock()
	s.loadMu.Unlock()

	for _, p := range newProblems {
		for _, f := range onProblem {
			f(p)
		}
	}
	if changed {
		for _, f := range onChange {
			f()
		}
	}
}

// readFile reads and parses one settings file into its canonical tree. A
// missing file gives empty values and no error.
func (s *Settings) readFile(path string) loadResult {
	m, err := readJSONCFileWith(path, parseSettingsJSONC)
	if err != nil || m == nil {
		return loadResult{err: err}
	}
	expandEnvIn(m, s.getenv)
	return loadResult{values: m}
}

// readJSONCFile reads and parses a JSON-with-comments file (a settings
// file, the trust list). A missing file gives nil and no error; a file
// that is there always gives a non-nil object or an error.
func readJSONCFile(path string) (map[string]any, error) {
	return readJSONCFileWith(path, parseJSONC)
}

// readJSONCFileWith is readJSONCFile with the given parser.
func readJSONCFileWith(path string, parse func([]byte) (map[string]any, error)) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parse(data)
}

// SetEditorLayer replaces the editor's layer (initializationOptions.settings,
// or the settings of workspace/didChangeConfiguration), turned into its
// canonical tree like a file. String values have $VAR expanded like the
// files'. The OnChange callbacks run, on the calling goroutine, when the
// layer changed.
func (s *Settings) SetEditorLayer(m map[string]any) {
	v := canonicalMap(m)
	expandEnvIn(v, s.getenv)
	s.mu.Lock()
	l := &s.layers[layerEditor]
	changed := !sameValues(l.values, v)
	if changed {
		l.values = v
		s.remergeLocked()
	}
	onChange := append([]func(){}, s.onChange...)
	s.mu.Unlock()
	if changed {
		for _, f := range onChange {
			f()
		}
	}
}

// SetEditorLayerFromInit sets the editor's layer from initialize's
// initializationOptions: settings, with model (an alias of settings.model)
// merged into settings.model, model winning where both set a field
// (protocol.md §2).
func (s *Settings) SetEditorLayerFromInit(settings map[string]any, model map[string]any) {
	layer := canonicalMap(settings)
	if len(model) > 0 {
		insertCanonical(layer, []string{"model"}, canonicalMap(model))
	}
	s.SetEditorLayer(layer)
}

// Merged returns a copy of the merged settings.
func (s *Settings) Merged() map[string]any {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return deepCopy(s.merged).(map[string]any)
}

// Get returns the merged value at a dotted key ("tools.approvalMode") of
// the canonical tree, whatever spelling the files used. Below mcpServers
// the rest of the key is a server name, which may contain dots ("a.b"):
// the longest matching name is tried first. Objects and lists are
// returned as copies.
func (s *Settings) Get(dotted string) (any, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := lookupCanonical(s.merged, dotted)
	if !ok {
		return nil, false
	}
	return deepCopy(v), true
}

// String returns the string at key, or def when it is unset or not a
// string.
func (s *Settings) String(key, def string) string {
	if v, ok := s.Get(key); ok {
		if str, ok := v.(string); ok {
			return str
		}
	}
	return def
}

// Bool returns the boolean at key, or def. A string "true" or "false"
// counts too, since a value filled in from an environment variable is a
// string.
func (s *Settings) Bool(key string, def bool) bool {
	v, ok := s.Get(key)
	if !ok {
		return def
	}
	switch v := v.(type) {
	case bool:
		return v
	case string:
		if b, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil {
			return b
		}
	}
	return def
}

// Int returns the integer at key, or def when it is unset, not a whole
// number, or out of range. A string holding an integer counts too, as for
// Bool.
func (s *Settings) Int(key string, def int) int {
	v, ok := s.Get(key)
	if !ok {
		return def
	}
	switch v := v.(type) {
	case float64:
		if v >= math.MinInt && v <= math.MaxInt && v == math.Trunc(v) {
			return int(v)
		}
	case string:
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			return n
		}
	}
	return def
}

// Strings returns the list of strings at key; a single string is a list of
// one (context.fileName may be either). Non-string items are skipped.
func (s *Settings) Strings(key string) []string {
	v, ok := s.Get(key)
	if !ok {
		return nil
	}
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			if str, ok := x.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}

// Problems returns the settings files that currently fail to read or
// parse, lowest layer first.
func (s *Settings) Problems() []SettingsProblem {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []SettingsProblem
	for _, l := range s.layers {
		if l.problem != nil {
			out = append(out, *l.problem)
		}
	}
	if s.trustProblem != nil {
		out = append(out, *s.trustProblem)
	}
	return out
}

// rawModel resolves the model of model.name, model.baseUrl and
// model.apiKey (protocol.md §10): each field on its own, from the first of
// system settings, the editor's layer, workspace settings, user settings
// and the environment (l) that sets it to a non-empty string.
func (s *Settings) rawModel(l *envLookup) ModelConfig {
	s.mu.RLock()
	var layers [numLayers]settingsLayer
	copy(layers[:], s.layers[:])
	for i := range layers {
		layers[i].values = s.effective[i]
	}
	s.mu.RUnlock()

	mc := ModelConfig{Source: map[string]string{}}
	order := []int{layerSystem, layerEditor, layerWorkspace, layerUser}
	fields := []struct {
		key string
		dst *string
	}{
		{"name", &mc.Name},
		{"baseUrl", &mc.BaseURL},
		{"apiKey", &mc.APIKey},
	}
	for _, fd := range fields {
		for _, i := range order {
			m, _ := layers[i].values["model"].(map[string]any)
			if v, ok := m[fd.key].(string); ok && v != "" {
				*fd.dst = v
				mc.Source[fd.key] = layerName(i, layers[i].file)
				break
			}
		}
	}

	if mc.Name == "" {
		// QWEN_MODEL is Qwen Code's other name for it.
		if v, src, ok := l.lookup("OPENAI_MODEL"); ok {
			mc.Name, mc.Source["name"] = v, src
		} else if v, src, ok := l.lookup("QWEN_MODEL"); ok {
			mc.Name, mc.Source["name"] = v, src
		}
	}
	fromDashScope := false
	if mc.APIKey == "" {
		if v, src, ok := l.lookup("OPENAI_API_KEY"); ok {
			mc.APIKey, mc.Source["apiKey"] = v, src
		} else if v, src, ok := l.lookup("DASHSCOPE_API_KEY"); ok {
			mc.APIKey, mc.Source["apiKey"] = v, src
			fromDashScope = true
		}
	}
	if mc.BaseURL == "" {
		if v, src, ok := l.lookup("OPENAI_BASE_URL"); ok {
			mc.BaseURL, mc.Source["baseUrl"] = v, src
		} else if fromDashScope {
			mc.BaseURL, mc.Source["baseUrl"] = DashScopeBaseURL, "default for DASHSCOPE_API_KEY"
		}
	}
	// Qwen Code's deprecated security.auth.apiKey and baseUrl, which older
	// settings files still hold: below the environment, as there.
	if mc.APIKey == "" && !fromDashScope {
		if v, ok := layeredString(layers, "security", "auth", "apiKey"); ok {
			mc.APIKey, mc.Source["apiKey"] = v, "security.auth.apiKey in the settings"
		}
	}
	if mc.BaseURL == "" {
		if v, ok := layeredString(layers, "security", "auth", "baseUrl"); ok {
			mc.BaseURL, mc.Source["baseUrl"] = v, "security.auth.baseUrl in the settings"
		}
	}
	return mc
}

// layeredString is the string at path in the highest layer (system,
// editor, workspace, user) that sets it non-empty.
func layeredString(layers [numLayers]settingsLayer, path ...string) (string, bool) {
	for _, i := range []int{layerSystem, layerEditor, layerWorkspace, layerUser} {
		var v any = layers[i].values
		for _, p := range path {
			m, _ := v.(map[string]any)
			v = m[p]
		}
		if str, ok := v.(string); ok && str != "" {
			return str, true
		}
	}
	return "", false
}

func layerName(i int, file string) string {
	switch i {
	case layerUser:
		return "user settings " + file
	case layerWorkspace:
		return "workspace settings " + file
	case layerSystem:
		return "system settings " + file
	default:
		return "editor settings (initializationOptions or workspace/didChangeConfiguration)"
	}
}

// OnChange registers f to run after the settings changed: a reload that
// changed a layer, or a new editor layer. Callbacks must not block for long
// and must not call Close.
func (s *Settings) OnChange(f func()) {
	s.mu.Lock()
	s.onChange = append(s.onChange, f)
	s.mu.Unlock()
}

// OnProblem registers f to run when a settings file stops parsing (or
// fails differently than before), for a warning to the user.
func (s *Settings) OnProblem(f func(SettingsProblem)) {
	s.mu.Lock()
	s.onProblem = append(s.onProblem, f)
	s.mu.Unlock()
}
