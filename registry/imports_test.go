package registry

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportDirection keeps architecture.md §2 true: registry must not
// depend on session or rpc, directly or not.
func TestImportDirection(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/qwen-ls/qwen-ls/"
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"session", "rpc"} {
			if dep == module+banned || strings.HasPrefix(dep, module+banned+"/") {
				t.Errorf("registry depends on %s", dep)
			}
		}
	}
}
