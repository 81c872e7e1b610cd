package toolstest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// Setup is the conformance setup of tools.md §8: one root W (a temp dir,
// not a git repository) and a private home, with an Env over them.
type Setup struct {
	*tools.Env
	Root string // W, as a real path
	Home string // the private ~/.qwen
}

// NewSetup builds a Setup in t's temporary directory, with settings (when
// not nil) as the editor's layer. The workspace stops when t ends.
func NewSetup(t testing.TB, settings map[string]any) *Setup {
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
	return &Setup{Env: &tools.Env{Workspace: ws, QwenHome: home}, Root: root, Home: home}
}

// Run prepares raw arguments for tool and executes it the way the
// scheduler does: prepare, confirm (the proposal is kept on the call),
// execute. It does not ask anyone: a confirmation is taken as accepted
// as proposed unless call.Decision is set.
func Run(t testing.TB, tool tools.Tool, call *tools.Call, raw string) tools.Result {
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

// Declaration is what the golden declaration files pin: everything the
// model and qwen/listTools learn about a tool, as indented JSON.
func Declaration(t testing.TB, tool tools.Tool) []byte {
	t.Helper()
	b, err := json.MarshalIndent(struct {
		Name        string          `json:"name"`
		DisplayName string          `json:"displayName"`
		Kind        tools.Kind      `json:"kind"`
		Aliases     []string        `json:"aliases"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}{tool.Name(), tool.DisplayName(), tool.Kind(), tool.Aliases(), tool.Description(), tool.Schema()}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}
