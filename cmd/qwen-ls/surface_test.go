package main

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// surfaceCeilings caps the exported surface of the packages other layers
// build on: exported package-level names (each const, var, func and type
// once) and exported methods of exported types. It is a ratchet: a
// change that unexports something may lower a ceiling freely; one that
// exports more must raise it here, in review.
var surfaceCeilings = map[string]struct{ names, methods int }{
	// tools: +2 names (CodeIntel, the interface the lsp tool and the
	// verdict after edits take from the Host, and NewLSP) and +1 method
	// (Env.UnaskedPolicy, the sandbox rpc starts language servers under).
	// +6 names and +3 methods for partial reviews (issue 31): the
	// ReviewReport of a hunk-by-hunk decision and its HunkReport, made by
	// NewReviewReport or ReviewReportOf, worded by RejectionReason, which
	// the scheduler and rpc (the call's last update, replays) share.
	"tools":     {135, 98},
	"rpc":       {11, 7},
	"workspace": {85, 102},
	// tools/langserver: +1 name (StartGrouped, the one way a language
	// server is started in a process group, which rpc wraps in the
	// sandbox's supervisor).
	"tools/langserver": {14, 17},
}

// exportedSurface counts the exported names and methods of the package in
// dir over all its non-test files, whatever their build constraints, so
// that the count is the same on every system (a name defined once per
// system counts once).
func exportedSurface(dir string) (names, methods []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	nameSet, methodSet := map[string]bool{}, map[string]bool{}
	fset := token.NewFileSet()
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, nil, err
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					nameSet[d.Name.Name] = true
				} else if recv := receiverType(d.Recv.List[0].Type); ast.IsExported(recv) {
					methodSet[recv+"."+d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							nameSet[s.Name.Name] = true
						}
					case *ast.ValueSpec:
						for _, id := range s.Names {
							if id.IsExported() {
								nameSet[id.Name] = true
							}
						}
					}
				}
			}
		}
	}
	for n := range nameSet {
		names = append(names, n)
	}
	for m := range methodSet {
		methods = append(methods, m)
	}
	sort.Strings(names)
	sort.Strings(methods)
	return names, methods, nil
}

// receiverType is the name of a method's receiver type: T in T, *T,
// T[K] and *T[K].
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// The exported surface of each package of the module, printed (go test
// -v), and held under surfaceCeilings.
func TestExportedSurface(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Dir", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct{ ImportPath, Dir string }
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkg := strings.TrimPrefix(p.ImportPath, module+"/")
		names, methods, err := exportedSurface(p.Dir)
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		t.Logf("%-34s %4d names %4d methods", pkg, len(names), len(methods))
		c, ok := surfaceCeilings[pkg]
		if !ok {
			continue
		}
		seen[pkg] = true
		if len(names) > c.names {
			t.Errorf("%s exports %d names, over its ceiling of %d: unexport what no other package uses, or raise the ceiling in surfaceCeilings", pkg, len(names), c.names)
		}
		if len(methods) > c.methods {
			t.Errorf("%s exports %d methods, over its ceiling of %d: unexport what no other package uses, or raise the ceiling in surfaceCeilings", pkg, len(methods), c.methods)
		}
		if testing.Verbose() && (pkg == "rpc" || pkg == "workspace") {
			t.Logf("%s: %s", pkg, strings.Join(names, " "))
		}
	}
	for pkg := range surfaceCeilings {
		if !seen[pkg] {
			t.Errorf("%s has a ceiling but is not in the module", pkg)
		}
	}
}
