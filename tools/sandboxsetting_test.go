package tools_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools/sandbox"
)

// tools.sandbox danger-full-access, and its older name off, turn the
// sandbox off when the user or the editor sets them: with no sandbox on
// the system a read-only command then runs unasked. The same value from
// a trusted workspace is not honoured, so the command still asks.
func TestSandboxFullAccessIsTheUsersSetting(t *testing.T) {
	for _, v := range []string{"danger-full-access", "off"} {
		_, sh := shellTestEnv(t, map[string]any{"tools": map[string]any{"sandbox": v}})
		t.Setenv(sandbox.EnvDisable, "1")
		if conf, _ := sh.ShouldConfirm(context.Background(), nil, map[string]any{"command": "ls"}); conf != nil {
			t.Errorf("editor %s: a read-only command asked: %q", v, conf.Title)
		}

		e, sh := shellTestEnv(t, nil)
		e.write(t, filepath.Join(".qwen", "settings.json"), `{"tools": {"sandbox": "`+v+`"}}`)
		trusted := true
		e.Workspace.Settings.SetEditorTrust(&trusted)
		e.Workspace.Settings.Load()
		if !e.Workspace.Settings.Trust().Trusted {
			t.Fatal("the workspace is not trusted")
		}
		if conf, _ := sh.ShouldConfirm(context.Background(), nil, map[string]any{"command": "ls"}); conf == nil {
			t.Errorf("a trusted workspace's %s turned the sandbox off", v)
		}
	}
}
