package workspace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
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

// ModelConfig is the model endpoint resolved per protocol.md §10.
type ModelConfig struct {
	Name, BaseURL, APIKey string
	// Source names where each set field came from, keyed by the settings
	// key ("name", "baseUrl", "apiKey"), for messages. It never holds the
	// key itself; do not log APIKey.
	Source map[string]string
}

// DashScopeBaseURL is the endpoint used when the API key comes from
// DASHSCOPE_API_KEY and nothing sets a base URL.
const DashScopeBaseURL = "https://dashscope.aliyuncs.com/compatible-mode/v1"

// settingsDebounce is how long the settings wait after the last change to a
// settings file before reloading (tools.md §7.3).
const settingsDebounce = 100 * time.Millisecond

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

	mu        sync.RWMutex
	layers    [numLayers]settingsLayer
	merged    map[string]any
	onChange  []func()
	onProblem []func(SettingsProblem)
	watcher   *Watcher
	// watchSet holds the paths (settings files and their directories, as
	// given and as real paths) whose events trigger a reload.
	watchSet map[string]bool
	timer    *time.Timer
	closed   bool
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

	s.mu.Lock()
	changed := false
	var newProblems []SettingsProblem
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
	if changed {
		s.remergeLocked()
	}
	onChange := append([]func(){}, s.onChange...)
	onProblem := append([]func(SettingsProblem){}, s.onProblem...)
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

// readFile reads and parses one settings file. A missing file gives empty
// values and no error.
func (s *Settings) readFile(path string) loadResult {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return loadResult{}
	}
	if err != nil {
		return loadResult{err: err}
	}
	m, err := parseJSONC(data)
	if err != nil {
		return loadResult{err: err}
	}
	expandEnvIn(m, s.getenv)
	return loadResult{values: m}
}

// SetEditorLayer replaces the editor's layer (initializationOptions.settings,
// or the settings of workspace/didChangeConfiguration). String values have
// $VAR expanded like the files'. The OnChange callbacks run, on the calling
// goroutine, when the layer changed.
func (s *Settings) SetEditorLayer(m map[string]any) {
	v, _ := deepCopy(m).(map[string]any)
	if v == nil {
		v = map[string]any{}
	}
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
	layer, _ := deepCopy(settings).(map[string]any)
	if layer == nil {
		layer = map[string]any{}
	}
	if len(model) > 0 {
		base, ok := layer["model"].(map[string]any)
		if !ok {
			base = map[string]any{}
		}
		mergeObjects(base, model)
		layer["model"] = base
	}
	s.SetEditorLayer(layer)
}

// mergeObjects merges src into dst by key, recursively, src winning.
func mergeObjects(dst, src map[string]any) {
	for k, v := range src {
		dm, dok := dst[k].(map[string]any)
		sm, sok := v.(map[string]any)
		if dok && sok {
			mergeObjects(dm, sm)
			continue
		}
		dst[k] = deepCopy(v)
	}
}

// remergeLocked rebuilds the merged view from the layers; s.mu is held.
func (s *Settings) remergeLocked() {
	merged := map[string]any{}
	for i := range s.layers {
		mergeLayer(merged, s.layers[i].values, "")
	}
	s.merged = merged
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

// Merged returns a copy of the merged settings.
func (s *Settings) Merged() map[string]any {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return deepCopy(s.merged).(map[string]any)
}

// Get returns the merged value at a dotted key ("tools.approvalMode"). A
// key that itself contains dots (an MCP server named "a.b") is found too:
// at each level the longest matching key is tried first. Objects and lists
// are returned as copies.
func (s *Settings) Get(dotted string) (any, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := lookupDotted(s.merged, dotted)
	if !ok {
		return nil, false
	}
	return deepCopy(v), true
}

func lookupDotted(m map[string]any, key string) (any, bool) {
	if v, ok := m[key]; ok {
		return v, true
	}
	for i := len(key) - 1; i > 0; i-- {
		if key[i] != '.' {
			continue
		}
		sub, ok := m[key[:i]].(map[string]any)
		if !ok {
			continue
		}
		if v, ok := lookupDotted(sub, key[i+1:]); ok {
			return v, true
		}
	}
	return nil, false
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
	return out
}

// Model resolves the model endpoint (protocol.md §10): each field on its
// own, from the first of system settings, the editor's layer, workspace
// settings, user settings and the environment that sets it to a non-empty
// string.
func (s *Settings) Model() ModelConfig {
	s.mu.RLock()
	var layers [numLayers]settingsLayer
	copy(layers[:], s.layers[:])
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

	env := func(name string) string {
		v, _ := s.getenv(name)
		return v
	}
	if mc.Name == "" {
		if v := env("OPENAI_MODEL"); v != "" {
			mc.Name, mc.Source["name"] = v, "environment variable OPENAI_MODEL"
		}
	}
	fromDashScope := false
	if mc.APIKey == "" {
		if v := env("OPENAI_API_KEY"); v != "" {
			mc.APIKey, mc.Source["apiKey"] = v, "environment variable OPENAI_API_KEY"
		} else if v := env("DASHSCOPE_API_KEY"); v != "" {
			mc.APIKey, mc.Source["apiKey"] = v, "environment variable DASHSCOPE_API_KEY"
			fromDashScope = true
		}
	}
	if mc.BaseURL == "" {
		if v := env("OPENAI_BASE_URL"); v != "" {
			mc.BaseURL, mc.Source["baseUrl"] = v, "environment variable OPENAI_BASE_URL"
		} else if fromDashScope {
			mc.BaseURL, mc.Source["baseUrl"] = DashScopeBaseURL, "default for DASHSCOPE_API_KEY"
		}
	}
	return mc
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

// Watch reloads the settings, 100 ms after the last change, whenever a
// settings file changes on disk (events from w, including injected ones).
// It watches the directories of the three files, and the directory above
// each that is missing (and always the primary root), so that a .qwen
// directory created later is noticed and then watched. Call Watch once,
// before Load, so no change between the two is missed.
func (s *Settings) Watch(w *Watcher) {
	s.mu.Lock()
	if s.watcher != nil || w == nil {
		s.mu.Unlock()
		return
	}
	s.watcher = w
	s.mu.Unlock()
	w.Subscribe(s.handleEvent)
	s.ensureWatched()
}

// ensureWatched adds the settings directories that exist now to the
// watcher and recomputes which paths trigger a reload.
func (s *Settings) ensureWatched() {
	s.mu.RLock()
	w := s.watcher
	s.mu.RUnlock()
	if w == nil {
		return
	}
	set := map[string]bool{}
	mark := func(p string) {
		set[p] = true
		set[RealPath(p)] = true
	}
	for i, f := range s.files() {
		if f == "" {
			continue
		}
		dir := filepath.Dir(f)
		mark(f)
		mark(dir)
		dirExists := isDir(dir)
		if dirExists {
			_ = w.Add(dir)
		}
		if i == layerWorkspace || !dirExists {
			if parent := filepath.Dir(dir); isDir(parent) {
				_ = w.Add(parent)
			}
		}
	}
	s.mu.Lock()
	s.watchSet = set
	s.mu.Unlock()
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// handleEvent runs on the watcher's goroutine for every event in the
// workspace, so it only looks the path up and (re)starts the timer.
func (s *Settings) handleEvent(ev Event) {
	p := filepath.Clean(ev.Path)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || !s.watchSet[p] {
		return
	}
	if s.timer == nil {
		s.timer = time.AfterFunc(settingsDebounce, s.fire)
	} else {
		s.timer.Reset(settingsDebounce)
	}
}

func (s *Settings) fire() {
	s.fireMu.Lock()
	defer s.fireMu.Unlock()
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return
	}
	s.Load()
}

// Close stops watching: later events are ignored, a pending reload is
// dropped, and a reload in progress is waited for. It must not be called
// from an OnChange or OnProblem callback.
func (s *Settings) Close() {
	s.mu.Lock()
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()
	// Taking fireMu waits for a reload that already started.
	s.fireMu.Lock()
	s.fireMu.Unlock() //nolint:staticcheck // empty critical section on purpose

}

// parseJSONC parses a settings file: JSON with // and /* */ comments and
// trailing commas. An empty file (or one with only comments) is an empty
// object; any other top level than an object is an error.
func parseJSONC(data []byte) (map[string]any, error) {
	data = bytes.TrimPrefix(data, []byte(BOMUTF8))
	clean, err := stripJSONC(data)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(clean)) == 0 {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(clean))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, jsonError(clean, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		line, col := lineCol(clean, int(dec.InputOffset()))
		return nil, fmt.Errorf("line %d, column %d: unexpected content after the settings object", line, col)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("the settings must be a JSON object")
	}
	return m, nil
}

func jsonError(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := lineCol(data, int(se.Offset))
		return fmt.Errorf("line %d, column %d: %w", line, col, err)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("unexpected end of file")
	}
	return err
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = off - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// stripJSONC blanks out comments and trailing commas with spaces, keeping
// every newline and offset, so JSON errors point at the right place. Text
// inside strings is left alone ("http://host" is not a comment).
func stripJSONC(data []byte) ([]byte, error) {
	out := append([]byte(nil), data...)
	inStr := false
	for i := 0; i < len(out); i++ {
		c := out[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch {
		case c == '"':
			inStr = true
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			if end < 0 {
				line, col := lineCol(out, i)
				return nil, fmt.Errorf("line %d, column %d: unterminated /* comment", line, col)
			}
			stop := i + 2 + end + 2
			for j := i; j < stop; j++ {
				if out[j] != '\n' {
					out[j] = ' '
				}
			}
			i = stop - 1
		}
	}
	// Comments are gone, so a trailing comma is one followed by only
	// white space and then a closing bracket.
	inStr = false
	for i := 0; i < len(out); i++ {
		c := out[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case ',':
			j := i + 1
			for j < len(out) && isJSONSpace(out[j]) {
				j++
			}
			if j < len(out) && (out[j] == '}' || out[j] == ']') {
				out[i] = ' '
			}
		}
	}
	return out, nil
}

func isJSONSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
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
