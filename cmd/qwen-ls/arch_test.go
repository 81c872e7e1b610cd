package main

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/qwen-ls/qwen-ls"

// importRules is the import direction of architecture.md §2 as one
// allow-list: for each package of the module, the packages of the module
// it may depend on, directly or not. A package is looked up by its path,
// then by its parent's "/*" entry, so a new tools/<leaf> package is held
// to the leaf rule without an edit; a package the table does not cover
// fails the test. In may, "x" is that package and "x/*" any package
// below it. Only packages with protocol set may depend on the JSON-RPC
// and LSP packages.
var importRules = map[string]struct {
	may      []string
	protocol bool
}{
	// The editor's side: cmd wires everything.
	"cmd/qwen-ls":    {may: []string{"*"}, protocol: true},
	"cmd/qwen-bench": {may: []string{"*"}, protocol: true},
	// The scripted model of the editor tests: a test program, never linked
	// into qwen-ls (TestReleaseBinaryLinksNoTestSupport).
	"cmd/qwen-scripted-model": {may: []string{"session/modeltest", "workspace"}},
	"rpc":                     {may: []string{"session", "session/commands", "registry", "tools", "tools/*", "workspace"}, protocol: true},
	"rpc/rpctest":             {may: []string{"rpc", "session", "session/commands", "registry", "tools", "tools/*", "workspace"}, protocol: true},
	// The agent: session takes the registry as an interface.
	"session":   {may: []string{"tools", "tools/*", "workspace"}},
	"session/*": {may: []string{"session", "tools", "tools/*", "workspace"}},
	"registry":  {may: []string{"tools", "tools/*", "workspace"}},
	"tools":     {may: []string{"tools/*", "workspace"}},
	// Packages under tools that build on tools itself.
	"tools/web":       {may: []string{"tools", "tools/*", "workspace"}},
	"tools/toolset":   {may: []string{"tools", "tools/*", "workspace"}},
	"tools/toolstest": {may: []string{"tools", "tools/*", "workspace"}},
	// A leaf of tools: never tools itself (nor, through it, anything
	// above); it may use other leaves and the workspace.
	"tools/*": {may: []string{"tools/*", "workspace"}},
	// The shell analysis gets what it needs of the workspace as values,
	// so that the parser and the sandbox meet at one small interface.
	"tools/shellsafe": {may: []string{"tools/lazy"}},
	// The language servers qwen-ls starts itself speak LSP: the one leaf
	// that may use the protocol packages (and procgroup, a leaf).
	"tools/langserver": {may: []string{"tools/*"}, protocol: true},
	// Values built on first use, for every package that has tables.
	"tools/lazy": {},
	// The sandbox supervisor's first stage runs among the first of the
	// binary's initialisers only because it imports nothing but the
	// standard library's runtime, os, sync and syscall.
	"tools/sandbox/launch": {},
	"workspace":            {},
	// A build check of the VS Code package, not part of the server.
	"editors/vscode/scripts/vsixcheck": {},
}

var protocolPkgs = []string{"go.lsp.dev/protocol", "github.com/sourcegraph/jsonrpc2"}

// importRule finds the rule for pkg (a path inside the module).
func importRule(pkg string) (may []string, protocol, ok bool) {
	if r, ok := importRules[pkg]; ok {
		return r.may, r.protocol, true
	}
	if i := strings.LastIndex(pkg, "/"); i > 0 {
		if r, ok := importRules[pkg[:i]+"/*"]; ok {
			return r.may, r.protocol, true
		}
	}
	return nil, false, false
}

// importAllowed reports whether pkg may depend on dep (both paths inside
// the module).
func importAllowed(pkg, dep string) bool {
	may, _, ok := importRule(pkg)
	if !ok {
		return false
	}
	for _, m := range may {
		if m == "*" || m == dep {
			return true
		}
		if base, ok := strings.CutSuffix(m, "/*"); ok && strings.HasPrefix(dep, base+"/") {
			return true
		}
	}
	return false
}

// The import direction of architecture.md §2, checked on the real
// dependency graph (go list -deps) of every package of the module, so an
// arrow that runs the wrong way fails CI instead of creeping in.
func TestImportDirection(t *testing.T) {
	// The table itself refuses what the architecture forbids.
	for _, c := range [][2]string{
		{"tools", "rpc"}, {"tools", "session"}, {"tools", "registry"},
		{"tools/diff", "tools"}, {"tools/procgroup", "tools"}, {"tools/shellsafe", "workspace"},
		{"session", "rpc"}, {"session", "registry"}, {"registry", "session"}, {"registry", "rpc"},
		{"workspace", "tools"}, {"rpc", "rpc/rpctest"}, {"rpc", "session/modeltest"}, {"session/commands", "rpc"},
	} {
		if importAllowed(c[0], c[1]) {
			t.Errorf("the rules let %s import %s", c[0], c[1])
		}
	}
	out, err := exec.Command("go", "list", "-deps=false", "-json=ImportPath,Deps", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
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
		pkg, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok {
			t.Errorf("%s is outside the module", p.ImportPath)
			continue
		}
		_, protocol, ok := importRule(pkg)
		if !ok {
			t.Errorf("%s has no import rule: add it to importRules", pkg)
			continue
		}
		checked++
		for _, dep := range p.Deps {
			if d, ok := strings.CutPrefix(dep, module+"/"); ok {
				if !importAllowed(pkg, d) {
					t.Errorf("%s depends on %s, against architecture.md §2", pkg, d)
				}
				continue
			}
			for _, b := range protocolPkgs {
				if !protocol && isPkg(dep, b) {
					t.Errorf("%s depends on the protocol package %s", pkg, dep)
				}
			}
		}
	}
	t.Logf("%d packages checked", checked)
	if checked < 10 {
		t.Fatalf("only %d packages checked; is the module path right?", checked)
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

// The binary links with Go's own linker whenever cgo is on: no package
// outside the standard library has cgo files (the standard library's net
// and os/user do not force the external linker). A non-standard cgo
// package makes every `go build` on a machine with a C compiler link with
// the system linker, whose output the page cache holds in large folios
// that the kernel maps whole: the idle server then counts about 13 MB
// more resident (docs/benchmarks.md, "Idle memory"). That came in once
// through go-landlock, which imports libcap's psx. The same check on
// go-landlock's system-call package shows that it sees such a package.
func TestBinaryLinksNoCgoPackage(t *testing.T) {
	cgoDeps := func(pkg string) []string {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{if and (not .Standard) .CgoFiles}}{{.ImportPath}}{{end}}", pkg)
		cmd.Env = append(cmd.Environ(), "CGO_ENABLED=1", "GOOS=linux")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	if found := cgoDeps(module + "/cmd/qwen-ls"); len(found) > 0 {
		t.Errorf("cmd/qwen-ls links packages with cgo files, so cgo builds link externally: %v", found)
	}
	if found := cgoDeps("github.com/landlock-lsm/go-landlock/landlock/syscall"); len(found) == 0 {
		t.Errorf("the check finds no cgo package under go-landlock's system calls, which import libcap's psx")
	}
}
