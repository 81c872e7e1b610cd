package tools

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/qwen-ls/qwen-ls/workspace"
)

func TestFilterEnv(t *testing.T) {
	env := []string{
		"PATH=/usr/bin:/bin", "HOME=/home/u", "OPENAI_API_KEY=sk-1", "DASHSCOPE_API_KEY=x", "TAVILY_API_KEY=y",
		"QWEN_API_KEY=k", "QWEN_OAUTH_TOKEN=t", "QWEN_HOME=/q", "MY_KEY_VAR=from-settings",
		"COPY=secret-value-1", "HEADER=Bearer secret-value-1", "SHORT=secret-v", "EMPTY=",
	}
	got := filterEnv(env, []string{"MY_KEY_VAR"}, []string{"secret-value-1"})
	want := []string{"PATH=/usr/bin:/bin", "HOME=/home/u", "QWEN_HOME=/q", "SHORT=secret-v", "EMPTY="}
	if !slices.Equal(got, want) {
		t.Fatalf("filterEnv = %q\nwant %q", got, want)
	}
}

// An MCP server's env often repeats ordinary variables ("PATH": "$PATH");
// such values are redacted from logs but must not be taken from a child's
// environment. Values under a name that says secret are.
func TestConfiguredSecretsNamedOnlyForEnv(t *testing.T) {
	ws := workspace.New(workspace.Options{Settings: workspace.SettingsOptions{
		UserDir:    t.TempDir(),
		SystemPath: filepath.Join(t.TempDir(), "none.json"),
		Getenv:     func(string) (string, bool) { return "", false },
	}})
	defer ws.Close()
	ws.Settings.SetEditorLayer(map[string]any{
		"model": map[string]any{"apiKey": "model-key-123456"},
		"mcpServers": map[string]any{"s": map[string]any{
			"env":     map[string]any{"PATH": "/usr/local/bin:/usr/bin", "GITHUB_TOKEN": "ghp_token_value"},
			"headers": map[string]any{"Authorization": "Bearer header-token-1"},
		}},
		"webSearch": map[string]any{"provider": []any{map[string]any{"type": "tavily", "apiKey": "tvly-key-value"}}},
		"ui":        map[string]any{"theme": "a long ordinary value"},
	})
	all, named := ConfiguredSecrets(ws.Settings)
	for _, s := range []string{"model-key-123456", "ghp_token_value", "Bearer header-token-1", "tvly-key-value"} {
		if !slices.Contains(named, s) || !slices.Contains(all, s) {
			t.Errorf("%q: in all = %v, in named = %v", s, slices.Contains(all, s), slices.Contains(named, s))
		}
	}
	if !slices.Contains(all, "/usr/local/bin:/usr/bin") || slices.Contains(named, "/usr/local/bin:/usr/bin") {
		t.Errorf("an env value whose name says nothing: all = %q, named = %q", all, named)
	}
	if slices.Contains(all, "a long ordinary value") {
		t.Errorf("an ordinary setting counted as a secret: %q", all)
	}
	t.Setenv("PATH", "/usr/local/bin:/usr/bin")
	t.Setenv("GH", "ghp_token_value")
	env := ChildEnv(ws.Settings)
	if !slices.Contains(env, "PATH=/usr/local/bin:/usr/bin") || slices.Contains(env, "GH=ghp_token_value") {
		t.Errorf("ChildEnv kept PATH = %v, kept GH = %v", slices.Contains(env, "PATH=/usr/local/bin:/usr/bin"), slices.Contains(env, "GH=ghp_token_value"))
	}
}

// The keys of Qwen Code's model providers live in .env files and in
// variables named by envKey, not in the settings tree: they are configured
// secrets all the same, and a child whose environment holds one loses
// that variable.
func TestProviderKeysAndDotEnvSecretsAreConfigured(t *testing.T) {
	home := t.TempDir()
	qwenDir := filepath.Join(home, ".qwen")
	os.MkdirAll(qwenDir, 0o755)
	os.WriteFile(filepath.Join(qwenDir, "settings.json"), []byte(`{"modelProviders": {"openai": [
		{"id": "a", "envKey": "A_PROVIDER_KEY", "baseUrl": "https://a.example/v1"},
		{"id": "b", "envKey": "B_PROVIDER_KEY", "baseUrl": "https://b.example/v1"}]}}`), 0o600)
	os.WriteFile(filepath.Join(qwenDir, ".env"), []byte("A_PROVIDER_KEY=sk-a-from-dotenv-1234\nSOME_TOKEN=tok-from-dotenv-5678\nPLAIN=ordinary-value-123\n"), 0o600)
	ws := workspace.New(workspace.Options{Settings: workspace.SettingsOptions{
		UserDir: qwenDir, SystemPath: filepath.Join(home, "none.json"),
		Getenv: func(k string) (string, bool) {
			if k == "B_PROVIDER_KEY" {
				return "sk-b-from-process-9999", true
			}
			return "", false
		},
	}})
	defer ws.Close()
	ws.Settings.Load()
	all, named := ConfiguredSecrets(ws.Settings)
	for _, s := range []string{"sk-a-from-dotenv-1234", "sk-b-from-process-9999", "tok-from-dotenv-5678"} {
		if !slices.Contains(named, s) || !slices.Contains(all, s) {
			t.Errorf("%q: in all = %v, in named = %v", s, slices.Contains(all, s), slices.Contains(named, s))
		}
	}
	if slices.Contains(all, "ordinary-value-123") {
		t.Error("a .env value whose name says nothing is taken as a secret")
	}
	env := filterEnv([]string{"COPY_OF_A=sk-a-from-dotenv-1234", "B=Bearer sk-b-from-process-9999", "PLAIN=ordinary-value-123"}, keySourceVars(ws.Settings), named)
	if !slices.Equal(env, []string{"PLAIN=ordinary-value-123"}) {
		t.Fatalf("child env = %q", env)
	}
}
