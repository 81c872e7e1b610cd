package workspace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
)

// settingRead is one way the module's code reads a settings key.
type settingRead struct {
	Key    string // canonical dotted key; for a prefix read, the prefix
	Method string // the *Settings accessor: Get, String, Bool, Int, Strings
	Prefix bool   // the key's last part is built at run time
	// Def is the default passed to String, Bool or Int, when constant.
	Def   constant.Value
	Where string
}

// settingsAccessors are the methods of *Settings that take a key.
var settingsAccessors = map[string]bool{"Get": true, "String": true, "Bool": true, "Int": true, "Strings": true}

var (
	scanOnce  sync.Once
	scanReads []settingRead
	scanErrs  []string
)

// scanSettingsReads type-checks every package of the module (its non-test
// files) and returns each call of a *Settings accessor with the key it
// reads. Keys must be constants, a constant prefix + a run-time part, or
// (for a helper that takes keys as parameters) constants spelled in the
// same function; anything else is an error, so a read can never hide.
func scanSettingsReads(t *testing.T) ([]settingRead, []string) {
	t.Helper()
	scanOnce.Do(func() { scanReads, scanErrs = doScanSettingsReads() })
	return scanReads, scanErrs
}

type listedPackage struct {
	ImportPath string
	Dir        string
	Export     string
	GoFiles    []string
	Standard   bool
	Module     *struct{ Path string }
}

func doScanSettingsReads() (reads []settingRead, errs []string) {
	const mod = "github.com/qwen-ls/qwen-ls"
	// go test puts its own GOROOT/bin first in PATH.
	cmd := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Dir,Export,GoFiles,Standard,Module", mod+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, []string{fmt.Sprintf("go list: %v: %s", err, stderr.String())}
	}
	exports := map[string]string{}
	var ours []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			return nil, []string{"go list output: " + err.Error()}
		}
		exports[p.ImportPath] = p.Export
		if !p.Standard && p.Module != nil && p.Module.Path == mod {
			ours = append(ours, p)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	if len(ours) < 5 {
		return nil, []string{fmt.Sprintf("go list found only %d packages of the module", len(ours))}
	}
	sawWorkspace := false
	for _, p := range ours {
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			files = append(files, f)
		}
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
		conf := types.Config{Importer: imp}
		if _, err := conf.Check(p.ImportPath, fset, files, info); err != nil {
			errs = append(errs, fmt.Sprintf("type-check %s: %v", p.ImportPath, err))
			continue
		}
		if p.ImportPath == mod+"/workspace" {
			sawWorkspace = true
		}
		for _, f := range files {
			r, e := readsInFile(fset, f, info)
			reads = append(reads, r...)
			errs = append(errs, e...)
		}
	}
	if !sawWorkspace {
		errs = append(errs, "the workspace package was not scanned")
	}
	return reads, errs
}

// isSettingsAccessor reports whether sel selects a key-taking method of
// workspace.Settings.
func isSettingsAccessor(sel *types.Selection) bool {
	if sel == nil || sel.Kind() != types.MethodVal || !settingsAccessors[sel.Obj().Name()] {
		return false
	}
	recv := sel.Recv()
	if p, ok := recv.(*types.Pointer); ok {
		recv = p.Elem()
	}
	n, ok := recv.(*types.Named)
	return ok && n.Obj().Name() == "Settings" && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "github.com/qwen-ls/qwen-ls/workspace"
}

// isAccessorDecl reports whether fd declares one of the accessors.
func isAccessorDecl(fd *ast.FuncDecl) bool {
	if fd == nil || fd.Recv == nil || len(fd.Recv.List) != 1 || !settingsAccessors[fd.Name.Name] {
		return false
	}
	typ := fd.Recv.List[0].Type
	if st, ok := typ.(*ast.StarExpr); ok {
		typ = st.X
	}
	id, ok := typ.(*ast.Ident)
	return ok && id.Name == "Settings"
}

var keyLiteral = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(\.[A-Za-z][A-Za-z0-9]*)+$`)

func readsInFile(fset *token.FileSet, f *ast.File, info *types.Info) (reads []settingRead, errs []string) {
	called := map[*ast.SelectorExpr]bool{}
	for _, d := range f.Decls {
		fd, _ := d.(*ast.FuncDecl)
		if isAccessorDecl(fd) {
			// String, Bool, ... pass their own key on to Get.
			continue
		}
		ast.Inspect(d, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			se, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !isSettingsAccessor(info.Selections[se]) {
				return true
			}
			called[se] = true
			where := fset.Position(call.Pos()).String()
			r := settingRead{Method: se.Sel.Name, Where: where}
			if len(call.Args) > 1 {
				r.Def = info.Types[call.Args[1]].Value
			}
			arg := call.Args[0]
			if v := info.Types[arg].Value; v != nil && v.Kind() == constant.String {
				r.Key = constant.StringVal(v)
				reads = append(reads, r)
				return true
			}
			if be, ok := arg.(*ast.BinaryExpr); ok && be.Op == token.ADD {
				if v := info.Types[be.X].Value; v != nil && v.Kind() == constant.String {
					r.Key, r.Prefix = strings.TrimSuffix(constant.StringVal(v), "."), true
					reads = append(reads, r)
					return true
				}
			}
			// A helper that takes its keys as parameters: the keys
			// are the key-shaped constants spelled in the function.
			found := 0
			if fd != nil {
				ast.Inspect(fd, func(n ast.Node) bool {
					if bl, ok := n.(*ast.BasicLit); ok && bl.Kind == token.STRING {
						if s := strings.Trim(bl.Value, "`\""); keyLiteral.MatchString(s) {
							rr := r
							rr.Key = s
							reads = append(reads, rr)
							found++
						}
					}
					return true
				})
			}
			if found == 0 {
				errs = append(errs, where+": a settings key that is not a constant; spell the keys where they are read")
			}
			return true
		})
	}
	// A method value (f := st.String) would hide its keys.
	for _, d := range f.Decls {
		if fd, _ := d.(*ast.FuncDecl); isAccessorDecl(fd) {
			continue
		}
		ast.Inspect(d, func(n ast.Node) bool {
			if se, ok := n.(*ast.SelectorExpr); ok && !called[se] && isSettingsAccessor(info.Selections[se]) {
				errs = append(errs, fset.Position(se.Pos()).String()+": a settings accessor used as a value hides the keys it reads")
			}
			return true
		})
	}
	return reads, errs
}

// TestEveryReadKeyIsKnown: every key the module reads through the
// accessors is in knownSettings, and every entry of knownSettings is read
// somewhere, so the table (and so the trust notice and the acceptance test
// below) cannot drift from the code.
func TestEveryReadKeyIsKnown(t *testing.T) {
	needProgram(t, "go")
	reads, errs := scanSettingsReads(t)
	for _, e := range errs {
		t.Error(e)
	}
	if len(reads) < 20 {
		t.Fatalf("the scan found only %d reads: %+v", len(reads), reads)
	}
	readKeys := map[string]bool{}
	for _, r := range reads {
		ks, ok := knownSettingAt(r.Key)
		if !ok || r.Prefix && !ks.Subtree {
			t.Errorf("%s reads %q, which is not in knownSettings: add it (untrusted folders then ignore it until it is also put in untrustedAllowed)", r.Where, r.Key)
			continue
		}
		readKeys[ks.Path] = true
	}
	for _, ks := range knownSettings {
		if !readKeys[ks.Path] && !readInsideWorkspace[ks.Path] {
			t.Errorf("knownSettings lists %q, which nothing reads", ks.Path)
		}
	}
	for k := range untrustedAllowed {
		if _, ok := knownSettingAt(k); !ok {
			t.Errorf("untrustedAllowed lists %q, which is not a known setting", k)
		}
	}
}

// The allow-list as this test expects it: a change of untrustedAllowed
// must be made here too, on purpose.
var wantUntrustedAllowed = []string{
	"context.fileFiltering.respectGitIgnore", "context.fileFiltering.respectQwenIgnore", "context.fileName",
	"context.loadMemoryFromIncludeDirectories", "general.defaultFileEncoding", "mcp.allowed", "mcp.excluded",
	"permissions.ask", "permissions.deny", "tools.approvalMode", "tools.core", "tools.disabled", "tools.exclude",
	"tools.sandbox", "tools.truncateToolOutputLines", "tools.truncateToolOutputThreshold", "tools.webFetch.allowPrivateAddresses",
}

func TestUntrustedAllowListIsTheReviewedOne(t *testing.T) {
	var got []string
	for k := range untrustedAllowed {
		got = append(got, k)
	}
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(wantUntrustedAllowed, "\n") {
		t.Errorf("untrustedAllowed = %q\nwant %q", got, wantUntrustedAllowed)
	}
}
