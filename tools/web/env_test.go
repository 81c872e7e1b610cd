package web_test

import (
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/toolstest"
)

// testEnv is the conformance setup of tools.md §8 (toolstest.Setup).
type testEnv = toolstest.Setup

func newTestEnv(t testing.TB, settings map[string]any) *testEnv {
	t.Helper()
	return toolstest.NewSetup(t, settings)
}

// run executes tool on raw arguments the way the scheduler does
// (toolstest.Run).
func run(t testing.TB, tool tools.Tool, call *tools.Call, raw string) tools.Result {
	t.Helper()
	return toolstest.Run(t, tool, call, raw)
}

// declarationJSON is what the golden files pin (toolstest.Declaration).
func declarationJSON(t testing.TB, tool tools.Tool) []byte {
	t.Helper()
	return toolstest.Declaration(t, tool)
}
