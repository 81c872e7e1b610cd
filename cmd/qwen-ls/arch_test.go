package main

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/qwen-ls/qwen-ls"

// The import direction of architecture.md §2, checked on the real
// dependency graph (go list -deps), so an arrow that runs the wrong way
// fails CI instead of creeping in.
func TestImportDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps=false", "-json=ImportPath,Deps", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	protocolPkgs := []string{"go.lsp.dev/protocol", "github.com/sourcegraph/jsonrpc2"}
	forbidden := map[string][]string{
		module + "/session":   append([]string{module + "/rpc", module + "/registry"}, protocolPkgs...),
		module + "/registry":  append([]string{module + "/session", module + "/rpc"}, protocolPkgs...),
		module + "/tools":     append([]string{module + "/session", module + "/registry", module + "/rpc"}, protocolPkgs...),
		module + "/workspace": append([]string{module + "/"}, protocolPkgs...),
		// The shell analysis gets what it needs of the workspace as values,
		// so that the parser and the sandbox meet at one small interface.
		module + "/tools/shellsafe": append([]string{module + "/"}, protocolPkgs...),
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	checked := 0
	for {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		for _, dep := range p.Deps {
			// Only cmd/qwen-ls (and rpc's own subpackages) may import rpc.
			if isPkg(dep, module+"/rpc") && !strings.HasPrefix(p.ImportPath, module+"/cmd/") && !isPkg(p.ImportPath, module+"/rpc") {
				t.Errorf("%s imports %s: only cmd/qwen-ls may", p.ImportPath, dep)
			}
		}
		for owner, bad := range forbidden {
			if !isPkg(p.ImportPath, owner) || strings.HasSuffix(p.ImportPath, "test") {
				continue
			}
			checked++
			for _, dep := range p.Deps {
				for _, b := range bad {
					if dep == b || (strings.HasSuffix(b, "/") && strings.HasPrefix(dep, b)) || strings.HasPrefix(dep, b+"/") {
						t.Errorf("%s depends on %s, against architecture.md §2", p.ImportPath, dep)
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no layered package was checked; is the module path right?")
	}
}

// isPkg reports whether p is pkg or one of its subpackages.
func isPkg(p, pkg string) bool { return p == pkg || strings.HasPrefix(p, pkg+"/") }

// The release binary carries no test support: the scripted model
// (session/modeltest), the fake editor (rpc/rpctest) and the testing
// package stay in tests and in cmd/qwen-scripted-model. The same check on
// cmd/qwen-scripted-model, which must link the scripted model, shows that
// it sees such a dependency when there is one.
func TestReleaseBinaryLinksNoTestSupport(t *testing.T) {
	testOnly := func(dep string) bool {
		return dep == "testing" || (isPkg(dep, module) && strings.HasSuffix(dep, "test"))
	}
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		var found []string
		for _, dep := range strings.Fields(string(out)) {
			if testOnly(dep) {
				found = append(found, dep)
			}
		}
		return found
	}
	if found := deps(module + "/cmd/qwen-ls"); len(found) > 0 {
		t.Errorf("cmd/qwen-ls links test support: %v", found)
	}
	found := deps(module + "/cmd/qwen-scripted-model")
	for _, dep := range found {
		if dep == module+"/session/modeltest" {
			return
		}
	}
	t.Errorf("the check finds no session/modeltest in cmd/qwen-scripted-model, which serves it; found %v", found)
}
