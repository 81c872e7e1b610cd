package workspace

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// stEnv is a fake environment for Settings.
type stEnv struct {
	mu sync.Mutex
	m  map[string]string
}

func (e *stEnv) get(k string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.m[k]
	return v, ok
}

func (e *stEnv) set(k, v string) {
	e.mu.Lock()
	e.m[k] = v
	e.mu.Unlock()
}

// stFixture is a private home, a primary root and a system settings file,
// all in temp dirs.
type stFixture struct {
	home, root, system string
	env                *stEnv
	s                  *Settings
}

func (f *stFixture) userFile() string      { return filepath.Join(f.home, ".qwen", "settings.json") }
func (f *stFixture) workspaceFile() string { return filepath.Join(f.root, ".qwen", "settings.json") }

func newStFixture(t *testing.T) *stFixture {
	t.Helper()
	base := rtTempDir(t)
	f := &stFixture{
		home:   filepath.Join(base, "home"),
		root:   filepath.Join(base, "project"),
		system: filepath.Join(base, "etc", "qwen-code", "settings.json"),
		env:    &stEnv{m: map[string]string{}},
	}
	rtMkdirAll(t, f.home)
	rtMkdirAll(t, f.root)
	f.env.set("HOME", f.home)
	f.env.set("QWEN_CODE_SYSTEM_SETTINGS_PATH", f.system)
	f.s = NewSettings(SettingsOptions{
		PrimaryRoot: func() string { return f.root },
		Getenv:      f.env.get,
	})
	t.Cleanup(f.s.Close)
	// The folder these tests open is trusted: they are about the merge.
	// Folder trust has its own tests (trust_test.go).
	f.s.GrantTrust(f.root)
	return f
}

func stJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSettingsDefaultPaths(t *testing.T) {
	needUnixPaths(t)
	f := newStFixture(t)
	if got := f.s.UserFile(); got != f.userFile() {
		t.Errorf("UserFile = %q, want %q", got, f.userFile())
	}
	if got := f.s.WorkspaceFile(); got != f.workspaceFile() {
		t.Errorf("WorkspaceFile = %q, want %q", got, f.workspaceFile())
	}
	if got := f.s.SystemFile(); got != f.system {
		t.Errorf("SystemFile = %q, want %q", got, f.system)
	}

	env := &stEnv{m: map[string]string{"HOME": "/h", "QWEN_HOME": "/q"}}
	s := NewSettings(SettingsOptions{Getenv: env.get})
	if got := s.UserFile(); got != "/q/settings.json" {
		t.Errorf("UserFile with QWEN_HOME = %q", got)
	}
	if got := s.WorkspaceFile(); got != "" {
		t.Errorf("WorkspaceFile without a root = %q", got)
	}
	if got := s.SystemFile(); got != "/etc/qwen-code/settings.json" && got != "/Library/Application Support/QwenCode/settings.json" {
		t.Errorf("default SystemFile = %q", got)
	}
	env = &stEnv{m: map[string]string{"HOME": "/h", "QWEN_HOME": "~/alt"}}
	if got := NewSettings(SettingsOptions{Getenv: env.get}).UserFile(); got != "/h/alt/settings.json" {
		t.Errorf("UserFile with QWEN_HOME=~/alt = %q", got)
	}
	// Explicit options win over the environment.
	s = NewSettings(SettingsOptions{Getenv: env.get, UserDir: "/u", SystemPath: "/s.json"})
	if s.UserFile() != "/u/settings.json" || s.SystemFile() != "/s.json" {
		t.Errorf("explicit paths ignored: %q %q", s.UserFile(), s.SystemFile())
	}
	// A workspace opened on the home directory has no separate
	// workspace layer: it would be the user file read twice.
	s = NewSettings(SettingsOptions{Getenv: f.env.get, PrimaryRoot: func() string { return f.home }})
	if got := s.WorkspaceFile(); got != "" {
		t.Errorf("WorkspaceFile for the home directory = %q, want \"\"", got)
	}
}

func TestSettingsPrecedence(t *testing.T) {
	f := newStFixture(t)
	rtWriteFile(t, f.userFile(), `{
		"only": {"user": "u"},
		"scalar": "user",
		"shadowed": "user",
		"nested": {"a": "user", "b": "user", "deep": {"x": 1, "y": 1}},
		"permissions": {"allow": ["Read", "Shell(ls)"], "deny": "Shell(rm)"},
		"tools": {"disabled": ["web_fetch"], "exclude": ["glob"], "core": ["read_file"]},
		"mcpServers": {
			"shared": {"command": "user-cmd", "args": ["--user"], "env": {"A": "1"}},
			"userOnly": {"command": "u"}
		}
	}`)
	rtWriteFile(t, f.workspaceFile(), `{
		"only": {"workspace": "w"},
		"scalar": "workspace",
		"nested": {"b": "workspace", "c": "workspace", "deep": {"y": 2}},
		"permissions": {"allow": ["Shell(ls)", "Edit"], "ask": ["Shell(git push)"]},
		"tools": {"disabled": ["web_search", "web_fetch"], "core": ["glob"]},
		"mcpServers": {"shared": {"url": "http://localhost:1/mcp"}, "wsOnly": {"command": "w"}}
	}`)
	f.s.SetEditorLayer(map[string]any{
		"scalar":      "editor",
		"nested":      map[string]any{"c": "editor"},
		"permissions": map[string]any{"deny": []any{"Shell(curl)"}},
		"tools":       map[string]any{"exclude": []any{"shell", "glob"}},
	})
	rtWriteFile(t, f.system, `{
		"scalar": "system",
		"nested": {"deep": {"z": 3}},
		"permissions": {"deny": ["Shell(rm)", "Shell(sudo)"]},
		"mcpServers": {"shared": {"command": "system-cmd"}}
	}`)
	f.s.Load()
	if p := f.s.Problems(); len(p) != 0 {
		t.Fatalf("problems: %v", p)
	}

	checks := []struct {
		key  string
		want any
	}{
		{"scalar", "system"},
		{"shadowed", "user"},
		{"only", map[string]any{"user": "u", "workspace": "w"}},
		{"nested.a", "user"},
		{"nested.b", "workspace"},
		{"nested.c", "editor"},
		{"nested.deep", map[string]any{"x": 1.0, "y": 2.0, "z": 3.0}},
		{"permissions.allow", []any{"Read", "Shell(ls)", "Edit"}},
		{"permissions.ask", []any{"Shell(git push)"}},
		{"permissions.deny", []any{"Shell(rm)", "Shell(curl)", "Shell(sudo)"}},
		{"tools.disabled", []any{"web_fetch", "web_search"}},
		{"tools.exclude", []any{"glob", "shell"}},
		// tools.core is not a union list: the higher scope replaces it.
		{"tools.core", []any{"glob"}},
		// The system entry replaces the whole "shared" server: no
		// args, env or url from the lower scopes.
		{"mcpServers.shared", map[string]any{"command": "system-cmd"}},
		{"mcpServers.userOnly", map[string]any{"command": "u"}},
		{"mcpServers.wsOnly", map[string]any{"command": "w"}},
	}
	for _, c := range checks {
		got, ok := f.s.Get(c.key)
		if !ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Get(%q) = %s (%v), want %s", c.key, stJSON(t, got), ok, stJSON(t, c.want))
		}
	}
	if _, ok := f.s.Get("nested.missing"); ok {
		t.Error("Get of a missing key reported ok")
	}
	if got := f.s.Strings("permissions.deny"); !reflect.DeepEqual(got, []string{"Shell(rm)", "Shell(curl)", "Shell(sudo)"}) {
		t.Errorf("Strings(permissions.deny) = %q", got)
	}
}

func TestSettingsAccessors(t *testing.T) {
	f := newStFixture(t)
	f.env.set("LIMIT", "42")
	f.env.set("ON", "true")
	rtWriteFile(t, f.userFile(), `{
		"tools": {"truncateToolOutputLines": 500, "truncateToolOutputThreshold": "${LIMIT}", "frac": 1.5,
		          "webFetch": {"allowPrivateAddresses": true}},
		"context": {"fileName": "ONLY.md", "fileFiltering": {"respectGitIgnore": "$ON"}, "includeDirectories": ["a", 3, "b"]},
		"mcpServers": {"my.server": {"command": "x"}},
		"general": {"defaultFileEncoding": "utf-8-bom"}
	}`)
	f.s.Load()
	s := f.s
	if got := s.Int("tools.truncateToolOutputLines", 1000); got != 500 {
		t.Errorf("Int = %d", got)
	}
	if got := s.Int("tools.truncateToolOutputThreshold", 25000); got != 42 {
		t.Errorf("Int from an expanded string = %d", got)
	}
	if got := s.Int("tools.frac", 7); got != 7 {
		t.Errorf("Int of 1.5 = %d, want the default", got)
	}
	if got := s.Int("tools.missing", 9); got != 9 {
		t.Errorf("Int default = %d", got)
	}
	if !s.Bool("tools.webFetch.allowPrivateAddresses", false) {
		t.Error("Bool = false")
	}
	if !s.Bool("context.fileFiltering.respectGitIgnore", false) {
		t.Error("Bool from an expanded string = false")
	}
	if !s.Bool("context.fileFiltering.respectQwenIgnore", true) {
		t.Error("Bool default lost")
	}
	if got := s.String("general.defaultFileEncoding", "utf-8"); got != "utf-8-bom" {
		t.Errorf("String = %q", got)
	}
	if got := s.String("tools.truncateToolOutputLines", "def"); got != "def" {
		t.Errorf("String of a number = %q, want the default", got)
	}
	if got := s.String("tools.approvalMode", "default"); got != "default" {
		t.Errorf("String default = %q", got)
	}
	if got := s.Strings("context.fileName"); !reflect.DeepEqual(got, []string{"ONLY.md"}) {
		t.Errorf("Strings of a single string = %q", got)
	}
	if got := s.Strings("context.includeDirectories"); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("Strings skipping non-strings = %q", got)
	}
	if got := s.Strings("context.nothing"); got != nil {
		t.Errorf("Strings of a missing key = %q", got)
	}
	if got := s.String("mcpServers.my.server.command", ""); got != "x" {
		t.Errorf("Get through a key with a dot = %q", got)
	}

	// Merged and Get hand out copies.
	m := s.Merged()
	m["tools"].(map[string]any)["truncateToolOutputLines"] = 1.0
	v, _ := s.Get("context")
	v.(map[string]any)["fileName"] = "CHANGED.md"
	if got := s.Int("tools.truncateToolOutputLines", 0); got != 500 {
		t.Errorf("changing Merged's result changed the settings: %d", got)
	}
	if got := s.Strings("context.fileName"); !reflect.DeepEqual(got, []string{"ONLY.md"}) {
		t.Errorf("changing Get's result changed the settings: %q", got)
	}
}

func TestParseJSONC(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want map[string]any
	}{
		{"plain", `{"a": 1}`, map[string]any{"a": 1.0}},
		{"empty file", "", map[string]any{}},
		{"only comments", "// nothing\n/* here */\n", map[string]any{}},
		{"line comments", "{\n// a comment\n\"a\": 1 // trailing\n}", map[string]any{"a": 1.0}},
		{"block comments", "{/* x */\"a\": /* y\n z */ 2}", map[string]any{"a": 2.0}},
		{"url in string", `{"url": "http://localhost:8080/v1", "b": "a /* not */ comment"}`,
			map[string]any{"url": "http://localhost:8080/v1", "b": "a /* not */ comment"}},
		{"escaped quote before slashes", `{"s": "say \"hi\" // still string", "t": "back\\"}`,
			map[string]any{"s": `say "hi" // still string`, "t": `back\`}},
		{"trailing commas", "{\"a\": [1, 2, ],\n \"b\": {\"c\": 3,},\n}", map[string]any{"a": []any{1.0, 2.0}, "b": map[string]any{"c": 3.0}}},
		{"trailing comma before a comment", "{\"a\": 1, // last\n}", map[string]any{"a": 1.0}},
		{"comma inside a string kept", `{"a": ",]", "b": ", }"}`, map[string]any{"a": ",]", "b": ", }"}},
		{"utf-8 bom", "\xEF\xBB\xBF{\"a\": true}", map[string]any{"a": true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseJSONC([]byte(c.in))
			if err != nil {
				t.Fatalf("parseJSONC: %v", err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %s, want %s", stJSON(t, got), stJSON(t, c.want))
			}
		})
	}

	bad := []struct{ name, in, msg string }{
		{"missing brace", "{\n  \"a\": 1\n", "unexpected end"},
		{"syntax error has a line", "{\n  \"a\": 1,\n  b: 2\n}", "line 3"},
		{"unterminated comment", "{\"a\": 1 /* oops\n}", "unterminated"},
		{"not an object", "[1, 2]", "object"},
		{"null", "null", "object"},
		{"two values", "{} {}", "after the settings object"},
		{"double comma", `{"a": 1,, }`, "line 1"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseJSONC([]byte(c.in))
			if err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want one mentioning %q", err, c.msg)
			}
		})
	}
}

func TestSettingsCommentsThroughLoad(t *testing.T) {
	f := newStFixture(t)
	rtWriteFile(t, f.workspaceFile(), `// workspace settings
{
  /* the endpoint */
  "model": {"baseUrl": "http://127.0.0.1:11434/v1", }, // local
  "tools": {"exclude": ["a", "b",],},
}`)
	f.s.Load()
	if p := f.s.Problems(); len(p) != 0 {
		t.Fatalf("problems: %v", p)
	}
	if got := f.s.String("model.baseUrl", ""); got != "http://127.0.0.1:11434/v1" {
		t.Errorf("model.baseUrl = %q", got)
	}
	if got := f.s.Strings("tools.exclude"); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("tools.exclude = %q", got)
	}
}

func TestExpandEnv(t *testing.T) {
	env := &stEnv{m: map[string]string{"HOME": "/home/u", "EMPTY": "", "A_1": "x", "PORT": "8080"}}
	cases := map[string]string{
		"$HOME/bin":                 "/home/u/bin",
		"${HOME}/bin":               "/home/u/bin",
		"pre${HOME}post":            "pre/home/upost",
		"$HOMEx":                    "$HOMEx", // the name is HOMEx, undefined
		"${HOME}x":                  "/home/ux",
		"$UNDEFINED/x":              "$UNDEFINED/x",
		"${UNDEFINED}/x":            "${UNDEFINED}/x",
		"[$EMPTY]":                  "[]",
		"[${EMPTY}]":                "[]",
		"$A_1-$A_1":                 "x-x",
		"http://localhost:$PORT/v1": "http://localhost:8080/v1",
		"cost: $5":                  "cost: $5",
		"$":                         "$",
		"a$":                        "a$",
		"$$HOME":                    "$/home/u",
		"${":                        "${",
		"${HOME":                    "${HOME",
		"${1BAD}":                   "${1BAD}",
		"${ HOME }":                 "${ HOME }",
		"no dollar":                 "no dollar",
	}
	for in, want := range cases {
		if got := expandEnv(in, env.get); got != want {
			t.Errorf("expandEnv(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSettingsEnvExpansionInLayers(t *testing.T) {
	f := newStFixture(t)
	f.env.set("MY_TOKEN", "tok")
	f.env.set("SRV", "/opt/srv")
	rtWriteFile(t, f.userFile(), `{
		"mcpServers": {"s": {"command": "${SRV}/bin/server", "args": ["--token", "$MY_TOKEN", "$NOT_SET"],
		                     "env": {"KEY": "${MY_TOKEN}"}}},
		"$MY_TOKEN": "keys are not expanded",
		"n": 5
	}`)
	f.s.SetEditorLayer(map[string]any{"editor": "${SRV}"})
	f.s.Load()
	want := map[string]any{
		"command": "/opt/srv/bin/server",
		"args":    []any{"--token", "tok", "$NOT_SET"},
		"env":     map[string]any{"KEY": "tok"},
	}
	if got, _ := f.s.Get("mcpServers.s"); !reflect.DeepEqual(got, want) {
		t.Errorf("mcpServers.s = %s, want %s", stJSON(t, got), stJSON(t, want))
	}
	if got := f.s.String("$MY_TOKEN", ""); got != "keys are not expanded" {
		t.Errorf("key expanded: %q", got)
	}
	if got := f.s.Int("n", 0); got != 5 {
		t.Errorf("number changed: %d", got)
	}
	if got := f.s.String("editor", ""); got != "/opt/srv" {
		t.Errorf("editor layer not expanded: %q", got)
	}
}

func TestSettingsModelResolution(t *testing.T) {
	type layers struct {
		system, editor, workspace, user map[string]any
		initModel                       map[string]any
		env                             map[string]string
	}
	cases := []struct {
		name   string
		in     layers
		want   ModelConfig
		source map[string]string // substrings of Source
	}{
		{
			name: "nothing set",
			want: ModelConfig{},
		},
		{
			name: "environment only",
			in:   layers{env: map[string]string{"OPENAI_API_KEY": "k-env", "OPENAI_BASE_URL": "http://env", "OPENAI_MODEL": "m-env"}},
			want: ModelConfig{Name: "m-env", BaseURL: "http://env", APIKey: "k-env"},
			source: map[string]string{
				"name": "OPENAI_MODEL", "baseUrl": "OPENAI_BASE_URL", "apiKey": "OPENAI_API_KEY",
			},
		},
		{
			name: "each field from its own first source",
			in: layers{
				system:    map[string]any{"model": map[string]any{"name": "m-sys"}},
				editor:    map[string]any{"model": map[string]any{"name": "m-ed", "baseUrl": "http://ed"}},
				workspace: map[string]any{"model": map[string]any{"baseUrl": "http://ws", "apiKey": "k-ws"}},
				user:      map[string]any{"model": map[string]any{"name": "m-user", "apiKey": "k-user"}},
				env:       map[string]string{"OPENAI_API_KEY": "k-env", "OPENAI_MODEL": "m-env", "OPENAI_BASE_URL": "http://env"},
			},
			want:   ModelConfig{Name: "m-sys", BaseURL: "http://ed", APIKey: "k-ws"},
			source: map[string]string{"name": "system settings", "baseUrl": "editor settings", "apiKey": "workspace settings"},
		},
		{
			name: "user beats environment",
			in: layers{
				user: map[string]any{"model": map[string]any{"apiKey": "k-user"}},
				env:  map[string]string{"OPENAI_API_KEY": "k-env", "OPENAI_MODEL": "m-env"},
			},
			want:   ModelConfig{Name: "m-env", APIKey: "k-user"},
			source: map[string]string{"name": "OPENAI_MODEL", "apiKey": "user settings"},
		},
		{
			name: "empty string counts as unset",
			in: layers{
				system: map[string]any{"model": map[string]any{"name": ""}},
				user:   map[string]any{"model": map[string]any{"name": "m-user"}},
			},
			want:   ModelConfig{Name: "m-user"},
			source: map[string]string{"name": "user settings"},
		},
		{
			name: "initializationOptions.model wins over settings.model",
			in: layers{
				editor:    map[string]any{"model": map[string]any{"name": "m-settings", "baseUrl": "http://settings"}},
				initModel: map[string]any{"name": "m-init"},
				workspace: map[string]any{"model": map[string]any{"name": "m-ws"}},
			},
			want:   ModelConfig{Name: "m-init", BaseURL: "http://settings"},
			source: map[string]string{"name": "editor settings", "baseUrl": "editor settings"},
		},
		{
			name: "dashscope key with its default endpoint",
			in:   layers{env: map[string]string{"DASHSCOPE_API_KEY": "k-ds"}},
			want: ModelConfig{BaseURL: DashScopeBaseURL, APIKey: "k-ds"},
			source: map[string]string{
				"apiKey": "DASHSCOPE_API_KEY", "baseUrl": "DASHSCOPE_API_KEY",
			},
		},
		{
			name: "openai key beats dashscope key, no dashscope endpoint",
			in:   layers{env: map[string]string{"DASHSCOPE_API_KEY": "k-ds", "OPENAI_API_KEY": "k-oa"}},
			want: ModelConfig{APIKey: "k-oa"},
		},
		{
			name: "empty openai key falls back to dashscope",
			in:   layers{env: map[string]string{"DASHSCOPE_API_KEY": "k-ds", "OPENAI_API_KEY": ""}},
			want: ModelConfig{BaseURL: DashScopeBaseURL, APIKey: "k-ds"},
		},
		{
			name: "dashscope key with OPENAI_BASE_URL",
			in:   layers{env: map[string]string{"DASHSCOPE_API_KEY": "k-ds", "OPENAI_BASE_URL": "http://other"}},
			want: ModelConfig{BaseURL: "http://other", APIKey: "k-ds"},
		},
		{
			name: "dashscope key with a base URL in settings",
			in: layers{
				user: map[string]any{"model": map[string]any{"baseUrl": "http://user"}},
				env:  map[string]string{"DASHSCOPE_API_KEY": "k-ds"},
			},
			want: ModelConfig{BaseURL: "http://user", APIKey: "k-ds"},
		},
		{
			name: "key from settings: no dashscope endpoint even if DASHSCOPE_API_KEY is set",
			in: layers{
				workspace: map[string]any{"model": map[string]any{"apiKey": "k-ws"}},
				env:       map[string]string{"DASHSCOPE_API_KEY": "k-ds"},
			},
			want: ModelConfig{APIKey: "k-ws"},
		},
		{
			name: "key expanded from the environment in settings",
			in: layers{
				user: map[string]any{"model": map[string]any{"apiKey": "${MY_KEY}"}},
				env:  map[string]string{"MY_KEY": "k-var"},
			},
			want:   ModelConfig{APIKey: "k-var"},
			source: map[string]string{"apiKey": "user settings"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newStFixture(t)
			for k, v := range c.in.env {
				f.env.set(k, v)
			}
			for _, l := range []struct {
				m    map[string]any
				file string
			}{{c.in.system, f.system}, {c.in.workspace, f.workspaceFile()}, {c.in.user, f.userFile()}} {
				if l.m != nil {
					rtWriteFile(t, l.file, stJSON(t, l.m))
				}
			}
			f.s.SetEditorLayerFromInit(c.in.editor, c.in.initModel)
			f.s.Load()
			got := f.s.Model()
			if got.Name != c.want.Name || got.BaseURL != c.want.BaseURL || got.APIKey != c.want.APIKey {
				t.Fatalf("Model = {%q %q %q}, want {%q %q %q}", got.Name, got.BaseURL, got.APIKey,
					c.want.Name, c.want.BaseURL, c.want.APIKey)
			}
			for field, sub := range c.source {
				if !strings.Contains(got.Source[field], sub) {
					t.Errorf("Source[%s] = %q, want it to mention %q", field, got.Source[field], sub)
				}
			}
			for field, src := range got.Source {
				if got.APIKey != "" && strings.Contains(src, got.APIKey) {
					t.Errorf("Source[%s] leaks the key: %q", field, src)
				}
			}
			// A field that is unset has no source.
			for field, val := range map[string]string{"name": got.Name, "baseUrl": got.BaseURL, "apiKey": got.APIKey} {
				if _, ok := got.Source[field]; ok != (val != "") {
					t.Errorf("Source[%s] present = %v, value %q", field, ok, val)
				}
			}
		})
	}
}

func TestSetEditorLayerFromInitMerges(t *testing.T) {
	f := newStFixture(t)
	settings := map[string]any{
		"model": map[string]any{"name": "a", "baseUrl": "http://a", "modalities": map[string]any{"image": true}},
		"tools": map[string]any{"approvalMode": "plan"},
	}
	f.s.SetEditorLayerFromInit(settings, map[string]any{"name": "b", "modalities": map[string]any{"pdf": true}})
	want := map[string]any{
		"model": map[string]any{"name": "b", "baseUrl": "http://a", "modalities": map[string]any{"image": true, "pdf": true}},
		"tools": map[string]any{"approvalMode": "plan"},
	}
	if got := f.s.Merged(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Merged = %s, want %s", stJSON(t, got), stJSON(t, want))
	}
	// The caller's maps are not changed.
	if settings["model"].(map[string]any)["name"] != "a" {
		t.Fatal("SetEditorLayerFromInit changed its argument")
	}
	// Only model, no settings.
	f.s.SetEditorLayerFromInit(nil, map[string]any{"name": "c"})
	if got := f.s.String("model.name", ""); got != "c" {
		t.Fatalf("model.name = %q", got)
	}
	if _, ok := f.s.Get("tools"); ok {
		t.Fatal("the editor layer was not replaced")
	}
}

func TestSettingsBrokenFileKeepsLastGood(t *testing.T) {
	f := newStFixture(t)
	var mu sync.Mutex
	var problems []SettingsProblem
	changes := 0
	f.s.OnProblem(func(p SettingsProblem) {
		mu.Lock()
		problems = append(problems, p)
		mu.Unlock()
	})
	f.s.OnChange(func() {
		mu.Lock()
		changes++
		mu.Unlock()
	})
	counts := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return len(problems), changes
	}

	rtWriteFile(t, f.workspaceFile(), `{"tools": {"approvalMode": "plan"}, "permissions": {"allow": ["Edit"]}}`)
	rtWriteFile(t, f.userFile(), `{"permissions": {"allow": ["Read"]}}`)
	f.s.Load()
	if np, nc := counts(); np != 0 || nc != 1 {
		t.Fatalf("after first load: %d problems, %d changes", np, nc)
	}

	rtWriteFile(t, f.workspaceFile(), `{"tools": {"approvalMode": "yolo",}, "permissions": `)
	f.s.Load()
	if got := f.s.String("tools.approvalMode", ""); got != "plan" {
		t.Errorf("approvalMode after the file broke = %q, want the last good %q", got, "plan")
	}
	if got := f.s.Strings("permissions.allow"); !reflect.DeepEqual(got, []string{"Read", "Edit"}) {
		t.Errorf("permissions.allow = %q", got)
	}
	ps := f.s.Problems()
	if len(ps) != 1 || ps[0].File != f.workspaceFile() || ps[0].Err == nil {
		t.Fatalf("Problems = %v", ps)
	}
	if !strings.Contains(ps[0].Error(), f.workspaceFile()) {
		t.Errorf("problem message does not name the file: %q", ps[0].Error())
	}
	if np, nc := counts(); np != 1 || nc != 1 {
		t.Fatalf("after the break: %d problem callbacks, %d changes; want 1, 1", np, nc)
	}
	// Loading the same broken file again reports nothing new, and other
	// layers still reload.
	rtWriteFile(t, f.userFile(), `{"permissions": {"allow": ["Grep"]}}`)
	f.s.Load()
	if np, _ := counts(); np != 1 {
		t.Errorf("the same problem was reported %d times", np)
	}
	if got := f.s.Strings("permissions.allow"); !reflect.DeepEqual(got, []string{"Grep", "Edit"}) {
		t.Errorf("permissions.allow = %q", got)
	}

	// Fixed: the problem goes away and the new values apply.
	rtWriteFile(t, f.workspaceFile(), `{"tools": {"approvalMode": "yolo",},}`)
	f.s.Load()
	if p := f.s.Problems(); len(p) != 0 {
		t.Fatalf("problems after the fix: %v", p)
	}
	if got := f.s.String("tools.approvalMode", ""); got != "yolo" {
		t.Errorf("approvalMode after the fix = %q", got)
	}

	// A file broken from the start leaves its layer empty.
	rtWriteFile(t, f.system, `{"scalar": `)
	f.s.Load()
	if _, ok := f.s.Get("scalar"); ok {
		t.Error("a never-valid file contributed values")
	}
	if ps := f.s.Problems(); len(ps) != 1 || ps[0].File != f.system {
		t.Errorf("Problems = %v", ps)
	}

	// An unreadable settings path (a directory) is a problem too.
	if err := os.Remove(f.system); err != nil {
		t.Fatal(err)
	}
	rtMkdirAll(t, f.system)
	f.s.Load()
	if ps := f.s.Problems(); len(ps) != 1 || ps[0].File != f.system {
		t.Errorf("Problems for a directory = %v", ps)
	}
}

func TestSettingsMissingFileEmptiesLayer(t *testing.T) {
	f := newStFixture(t)
	rtWriteFile(t, f.workspaceFile(), `{"a": 1}`)
	f.s.Load()
	if got := f.s.Int("a", 0); got != 1 {
		t.Fatalf("a = %d", got)
	}
	if err := os.Remove(f.workspaceFile()); err != nil {
		t.Fatal(err)
	}
	f.s.Load()
	if _, ok := f.s.Get("a"); ok {
		t.Fatal("a deleted file's values remain")
	}
	if p := f.s.Problems(); len(p) != 0 {
		t.Fatalf("a missing file is a problem: %v", p)
	}
}

func TestSettingsPrimaryRootChange(t *testing.T) {
	f := newStFixture(t)
	other := filepath.Join(filepath.Dir(f.root), "other")
	rtWriteFile(t, f.workspaceFile(), `{"general": {"defaultFileEncoding": "first"}, "tools.truncateToolOutputLines": 3}`)
	rtWriteFile(t, filepath.Join(other, ".qwen", "settings.json"), `{"general.defaultFileEncoding": "second"}`)
	var mu sync.Mutex
	root := f.root
	s := NewSettings(SettingsOptions{
		PrimaryRoot: func() string { mu.Lock(); defer mu.Unlock(); return root },
		Getenv:      f.env.get,
	})
	s.Load()
	if got := s.String("general.defaultFileEncoding", ""); got != "first" {
		t.Fatalf("which = %q", got)
	}
	mu.Lock()
	root = other
	mu.Unlock()
	s.Load()
	if got := s.String("general.defaultFileEncoding", ""); got != "second" {
		t.Fatalf("which after the root changed = %q", got)
	}
	if _, ok := s.Get("tools.truncateToolOutputLines"); ok {
		t.Fatal("the old root's settings remain")
	}
}

// stWait waits for cond, re-checking after every OnChange signal.
func stWait(t *testing.T, ch <-chan struct{}, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for !cond() {
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func stChangeSignal(s *Settings) <-chan struct{} {
	ch := make(chan struct{}, 1)
	s.OnChange(func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	})
	return ch
}

func stNewWatcher(t *testing.T) *Watcher {
	t.Helper()
	w, err := newWatcher()
	if err != nil {
		t.Skipf("no fsnotify watcher available: %v", err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

func TestSettingsWatchReloadsOnChange(t *testing.T) {
	f := newStFixture(t)
	w := stNewWatcher(t)
	rtWriteFile(t, f.workspaceFile(), `{"tools": {"approvalMode": "plan"}}`)
	changed := stChangeSignal(f.s)
	f.s.Watch(w)
	f.s.Load()
	if got := f.s.String("tools.approvalMode", ""); got != "plan" {
		t.Fatalf("approvalMode = %q", got)
	}

	// An atomic write (rename over the file), as editors do.
	if err := WriteFileAtomic(f.workspaceFile(), []byte(`{"tools": {"approvalMode": "auto-edit"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	stWait(t, changed, "the rewritten workspace file", func() bool {
		return f.s.String("tools.approvalMode", "") == "auto-edit"
	})

	// An in-place write.
	if err := os.WriteFile(f.workspaceFile(), []byte(`{"tools": {"approvalMode": "yolo"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	stWait(t, changed, "the overwritten workspace file", func() bool {
		return f.s.String("tools.approvalMode", "") == "yolo"
	})

	// The user file, whose directory did not exist when Watch ran.
	rtWriteFile(t, f.userFile(), `{"context": {"fileName": "USER.md"}}`)
	stWait(t, changed, "the new user file", func() bool {
		return reflect.DeepEqual(f.s.Strings("context.fileName"), []string{"USER.md"})
	})
}

func TestSettingsWatchNoticesNewQwenDir(t *testing.T) {
	f := newStFixture(t)
	w := stNewWatcher(t)
	changed := stChangeSignal(f.s)
	var mu sync.Mutex
	var problems []SettingsProblem
	problemCh := make(chan struct{}, 1)
	f.s.OnProblem(func(p SettingsProblem) {
		mu.Lock()
		problems = append(problems, p)
		mu.Unlock()
		select {
		case problemCh <- struct{}{}:
		default:
		}
	})
	f.s.Watch(w)
	f.s.Load()
	if _, err := os.Stat(filepath.Join(f.root, ".qwen")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("fixture already has .qwen: %v", err)
	}

	rtWriteFile(t, f.workspaceFile(), `{"permissions": {"deny": ["Shell(rm)"]}}`)
	stWait(t, changed, "the settings in a new .qwen directory", func() bool {
		return reflect.DeepEqual(f.s.Strings("permissions.deny"), []string{"Shell(rm)"})
	})

	// Now .qwen is watched itself: a later edit is seen too, and a
	// broken one is reported while the last good values stay.
	if err := os.WriteFile(f.workspaceFile(), []byte(`{"permissions": {"deny": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	stWait(t, problemCh, "the problem report", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(problems) > 0
	})
	mu.Lock()
	if problems[0].File != f.workspaceFile() {
		t.Errorf("problem for %q, want %q", problems[0].File, f.workspaceFile())
	}
	mu.Unlock()
	if got := f.s.Strings("permissions.deny"); !reflect.DeepEqual(got, []string{"Shell(rm)"}) {
		t.Errorf("permissions.deny after the break = %q", got)
	}

	// Deleting .qwen and creating it again is noticed as well.
	if err := os.RemoveAll(filepath.Join(f.root, ".qwen")); err != nil {
		t.Fatal(err)
	}
	stWait(t, changed, "the removal of .qwen", func() bool {
		_, ok := f.s.Get("permissions.deny")
		return !ok
	})
	rtWriteFile(t, f.workspaceFile(), `{"permissions": {"deny": ["Shell(sudo)"]}}`)
	stWait(t, changed, "the recreated .qwen", func() bool {
		return reflect.DeepEqual(f.s.Strings("permissions.deny"), []string{"Shell(sudo)"})
	})
}

func TestSettingsWatchInjectedEvent(t *testing.T) {
	// A watcher that only relays Inject, as when the OS has no inotify
	// instance left: the editor's didChangeWatchedFiles still works.
	f := newStFixture(t)
	w := &Watcher{watched: map[string]bool{}, done: make(chan struct{})}
	changed := stChangeSignal(f.s)
	f.s.Watch(w)
	f.s.Load()
	rtWriteFile(t, f.system, `{"tools": {"core": ["read_file"]}}`)
	// An event for an unrelated file does nothing: Inject runs the
	// handler before it returns, and the handler scheduled no reload.
	// One for the system file reloads.
	w.Inject(Event{Path: filepath.Join(f.root, "main.go"), Op: Changed})
	f.s.mu.RLock()
	timer := f.s.timer
	f.s.mu.RUnlock()
	if timer != nil {
		t.Fatal("an event for an unrelated file scheduled a reload")
	}
	w.Inject(Event{Path: f.system, Op: Created})
	stWait(t, changed, "the injected change", func() bool {
		return reflect.DeepEqual(f.s.Strings("tools.core"), []string{"read_file"})
	})
}

func TestSettingsCloseStopsReloads(t *testing.T) {
	f := newStFixture(t)
	w := &Watcher{watched: map[string]bool{}, done: make(chan struct{})}
	f.s.Watch(w)
	f.s.Load()
	f.s.Close()
	w.Inject(Event{Path: f.workspaceFile(), Op: Changed})
	f.s.mu.RLock()
	timer := f.s.timer
	f.s.mu.RUnlock()
	if timer != nil {
		t.Fatal("an event after Close scheduled a reload")
	}
	f.s.Close() // twice is harmless
}

func TestAppendAllowRulesKeepsOtherKeysAndNeverDuplicates(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "W")
	os.MkdirAll(filepath.Join(root, ".qwen"), 0o755)
	os.WriteFile(filepath.Join(root, ".qwen", "settings.json"), []byte(`{
  // a comment
  "tools": {"approvalMode": "plan"},
  "permissions": {"allow": ["Bash(git *)"], "deny": ["Bash(rm *)"]}
}`), 0o644)
	if err := SetTrustLevel(filepath.Join(dir, "home", TrustFileName), root, TrustFolder); err != nil {
		t.Fatal(err)
	}
	s := NewSettings(SettingsOptions{UserDir: filepath.Join(dir, "home"), SystemPath: filepath.Join(dir, "none.json"),
		PrimaryRoot: func() string { return root }, Getenv: func(string) (string, bool) { return "", false }})
	s.Load()
	if err := s.AppendAllowRules(ScopeProject, []string{"Bash(touch *)", "Bash(git *)"}); err != nil {
		t.Fatal(err)
	}
	if got := s.Strings("permissions.allow"); !slices.Equal(got, []string{"Bash(git *)", "Bash(touch *)"}) {
		t.Fatalf("allow = %v", got)
	}
	if s.String("tools.approvalMode", "") != "plan" || !slices.Equal(s.Strings("permissions.deny"), []string{"Bash(rm *)"}) {
		t.Fatalf("other keys lost: %v", s.Merged())
	}
	if err := s.AppendAllowRules(ScopeUser, []string{"WebFetch(example.com)"}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "home", "settings.json"))
	if err != nil || !strings.Contains(string(data), `"WebFetch(example.com)"`) {
		t.Fatalf("user file = %s, %v", data, err)
	}
}

// A hostile settings file nested far deeper than any real one is a
// problem reported with the file, not a crash: below the bound on
// openers hujson's recursion stays small and encoding/json refuses the
// depth; above it the file is refused before parsing.
func TestDeeplyNestedSettingsAreAnError(t *testing.T) {
	for _, n := range []int{maxSettingsOpeners, 5 * maxSettingsOpeners} {
		data := []byte(`{"a":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + "}")
		_, err := parseSettingsJSONC(data)
		if err == nil || (n > maxSettingsOpeners) != strings.Contains(err.Error(), "allowed") {
			t.Errorf("%d nested values: %v", n, err)
		}
		t.Logf("%d nested values: %.120v", n, err)
	}
}

// A settings file saved in another encoding than UTF-8 reads as before:
// bytes that are not UTF-8 are allowed in comments (hujson alone refuses
// them) and in strings (decoded as U+FFFD, as encoding/json does).
func TestSettingsNotUTF8InCommentsAndStrings(t *testing.T) {
	data := []byte("// caf\xe9\n{\"a\": \"b\xe9\", /* na\xefve */ \"c\": 1,}\n")
	got, err := parseJSONC(data)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"a": "b\uFFFD", "c": 1.0}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
