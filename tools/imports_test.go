package tools_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportDirection keeps architecture.md §2 true: tools must not depend
// on session, registry or rpc, directly or not.
func TestImportDirection(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", ".", "./toolstest").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/qwen-ls/qwen-ls/"
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"session", "registry", "rpc"} {
			if dep == module+banned || strings.HasPrefix(dep, module+banned+"/") {
				t.Errorf("tools depends on %s", dep)
			}
		}
	}
}
