package tools_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// testEnv is the conformance setup of tools.md §8: one root W (a temp dir,
// not a git repository) and a private home. Settings may be given as the
// editor's layer.
type testEnv struct {
	*tools.Env
	Root string // W, as a real path
	Home string // the private ~/.qwen
}

func newTestEnv(t testing.TB, settings map[string]any) *testEnv {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "W")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	root, _ = filepath.EvalSymlinks(root)
	home := filepath.Join(base, "home", ".qwen")
	ws := workspace.New(workspace.Options{
		Roots: []string{root},
		Settings: workspace.SettingsOptions{
			UserDir:    home,
			SystemPath: filepath.Join(base, "etc", "settings.json"),
			Getenv:     func(string) (string, bool) { return "", false },
		},
	})
	if settings != nil {
		ws.Settings.SetEditorLayer(settings)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ws.Start(ctx)
	t.Cleanup(func() {
		cancel()
		_ = ws.Close()
	})
	return &testEnv{Env: &tools.Env{Workspace: ws, QwenHome: home}, Root: root, Home: home}
}

// write creates a file under the root (path relative to it) with content.
func (e *testEnv) write(t testing.TB, rel, content string) string {
	t.Helper()
	p := filepath.Join(e.Root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// run prepares raw arguments for tool and executes it the way the
// scheduler does: prepare, confirm (the proposal is kept on the call),
// execute. It does not ask anyone: a confirmation is taken as accepted
// as proposed unless call.Decision is set.
func run(t testing.TB, tool tools.Tool, call *tools.Call, raw string) tools.Result {
	t.Helper()
	params, terr := tools.PrepareArgs(tool, raw)
	if terr != nil {
		return tools.Result{Error: terr}
	}
	conf, terr := tools.GuardConfirm(context.Background(), tool, call, params)
	if terr != nil {
		return tools.Result{Error: terr}
	}
	call.Confirmation = conf
	res, err := tools.Guard(context.Background(), tool, call, params, nil)
	if err != nil {
		t.Fatalf("execute %s: %v", tool.Name(), err)
	}
	return res
}

func TestTestEnvIsHermetic(t *testing.T) {
	e := newTestEnv(t, nil)
	if got := e.Workspace.Roots.List(); len(got) != 1 || got[0] != e.Root {
		t.Fatalf("roots = %v", got)
	}
	if e.Threshold() != 25000 || e.LineLimit() != 1000 {
		t.Fatalf("default limits = %d, %d", e.Threshold(), e.LineLimit())
	}
}
