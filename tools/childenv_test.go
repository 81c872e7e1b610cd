package tools

import (
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
	got := FilterEnv(env, []string{"MY_KEY_VAR"}, []string{"secret-value-1"})
	want := []string{"PATH=/usr/bin:/bin", "HOME=/home/u", "QWEN_HOME=/q", "SHORT=secret-v", "EMPTY="}
	if !slices.Equal(got, want) {
		t.Fatalf("FilterEnv = %q\nwant %q", got, want)
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
