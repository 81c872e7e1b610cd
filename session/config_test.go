package session

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// A modelProviders entry whose envKey is set nowhere fails with a setup
// error naming that variable, not OPENAI_API_KEY; the check of an id
// names the configured ones; and each entry gets a client of its own.
func TestModelsFromSettingsPerEntry(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "settings.json"), []byte(`{"model": {"name": "a"}, "modelProviders": {"openai": [
		{"id": "a", "envKey": "A_KEY_VAR", "baseUrl": "https://a.example/v1"},
		{"id": "b", "envKey": "B_KEY_VAR", "baseUrl": "https://b.example/v1"}]}}`), 0o600)
	st := workspace.NewSettings(workspace.SettingsOptions{UserDir: dir, SystemPath: filepath.Join(dir, "none.json"),
		Getenv: func(k string) (string, bool) {
			if k == "B_KEY_VAR" {
				return "sk-b-key-value", true
			}
			return "", false
		}})
	t.Cleanup(st.Close)
	st.Load()
	def, byID, known := ModelsFromSettings(st, RetryPolicy{})

	_, err := def()
	var nm *NoModelError
	if !errors.As(err, &nm) || !strings.Contains(nm.Error(), "A_KEY_VAR") || strings.Contains(nm.Error(), "OPENAI_API_KEY") {
		t.Fatalf("default without its key: %v", err)
	}
	if s := nm.Setup(); s.Reason != "no_api_key" || len(s.Env) != 1 || s.Env[0] != "A_KEY_VAR" {
		t.Fatalf("setup = %+v", s)
	}
	m, err := byID("b")
	if err != nil || m.Name() != "b" {
		t.Fatalf("b: %v, %v", m, err)
	}
	if m2, _ := byID("b"); m2 != m {
		t.Error("the same configuration got a second client")
	}
	if err := known("b"); err != nil {
		t.Errorf("known(b) = %v", err)
	}
	if err := known("c"); err == nil || !strings.Contains(err.Error(), "a, b") {
		t.Errorf("known(c) = %v", err)
	}
}
