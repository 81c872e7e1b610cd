package tools_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/toolstest"
)

// testEnv is the conformance setup of tools.md §8 (toolstest.Setup), with
// the helpers of this package's tests.
type testEnv struct {
	*toolstest.Setup
}

func newTestEnv(t testing.TB, settings map[string]any) *testEnv {
	t.Helper()
	return &testEnv{toolstest.NewSetup(t, settings)}
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

// run executes tool on raw arguments the way the scheduler does
// (toolstest.Run).
func run(t testing.TB, tool tools.Tool, call *tools.Call, raw string) tools.Result {
	t.Helper()
	return toolstest.Run(t, tool, call, raw)
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
