package workspace

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

var flavors = []PathFlavor{WindowsPaths, DarwinPaths, LinuxPaths}

func TestNativeFlavorMatchesTheSystem(t *testing.T) {
	f := NativePaths()
	if f.Sep() != filepath.Separator {
		t.Errorf("native flavour %s separates with %q, the system with %q", f.Name, f.Sep(), filepath.Separator)
	}
	abs, _ := filepath.Abs("x")
	if !f.IsAbs(abs) || f.Clean(abs) != filepath.Clean(abs) {
		t.Errorf("native flavour %s: IsAbs(%q) = %v, Clean = %q, filepath.Clean = %q", f.Name, abs, f.IsAbs(abs), f.Clean(abs), filepath.Clean(abs))
	}
}

func TestFlavorSyntax(t *testing.T) {
	type row struct {
		in    string
		abs   bool
		clean string
	}
	cases := map[string][]row{
		"windows": {
			{`C:\Users\me\a.go`, true, `C:\Users\me\a.go`},
			{`c:/Users/me/../me/a.go`, true, `c:\Users\me\a.go`},
			{`C:/Users\me//a.go`, true, `C:\Users\me\a.go`},
			{`\\server\share\dir\f.txt`, true, `\\server\share\dir\f.txt`},
			{`//server/share/dir/../f.txt`, true, `\\server\share\f.txt`},
			{`C:a.go`, false, `C:a.go`},
			{`\Users\me`, false, `\Users\me`},
			{`/home/me`, false, `\home\me`},
			{`a\b\..\c`, false, `a\c`},
		},
		"darwin": {
			{`/Users/me/a.go`, true, `/Users/me/a.go`},
			{`/Users/me/../me//a.go`, true, `/Users/me/a.go`},
			{`C:\Users\me`, false, `C:\Users\me`},
			{`a/b/../c`, false, `a/c`},
		},
	}
	cases["linux"] = cases["darwin"]
	for _, f := range flavors {
		for _, c := range cases[f.Name] {
			if got := f.IsAbs(c.in); got != c.abs {
				t.Errorf("%s: IsAbs(%q) = %v, want %v", f.Name, c.in, got, c.abs)
			}
			if got := f.Clean(c.in); got != c.clean {
				t.Errorf("%s: Clean(%q) = %q, want %q", f.Name, c.in, got, c.clean)
			}
		}
	}
}

// A path that differs from a root only in case is inside on a
// case-insensitive file system (Windows, macOS) and outside on a
// case-sensitive one (Linux); a sibling sharing the root as a prefix is
// never inside.
func TestFlavorCaseAndContainment(t *testing.T) {
	type row struct {
		root, p string
		in      map[string]bool
		rel     string
	}
	rows := []row{
		{`C:\Users\Me\proj`, `c:\users\me\PROJ\src\A.go`, map[string]bool{"windows": true}, `src\A.go`},
		{`C:\Users\Me\proj`, `C:/Users/Me/proj/src/a.go`, map[string]bool{"windows": true}, `src\a.go`},
		{`C:\Users\Me\proj`, `C:\Users\Me\project\a.go`, map[string]bool{}, ``},
		{`C:\`, `c:\x\y`, map[string]bool{"windows": true}, `x\y`},
		{`\\Server\Share\p`, `\\server\share\P\x`, map[string]bool{"windows": true}, `x`},
		{`/Users/me/proj`, `/users/ME/Proj/src/A.go`, map[string]bool{"darwin": true}, `src/A.go`},
		{`/Users/me/proj`, `/Users/me/proj/src/a.go`, map[string]bool{"darwin": true, "linux": true}, `src/a.go`},
		{`/Users/me/proj`, `/Users/me/project`, map[string]bool{}, ``},
		{`/`, `/etc/x`, map[string]bool{"darwin": true, "linux": true}, `etc/x`},
		// APFS compares names after Unicode normalisation: "é" composed
		// and decomposed are one name.
		{"/Users/me/caf\u00e9", "/Users/me/cafe\u0301/x", map[string]bool{"darwin": true}, `x`},
	}
	for _, f := range flavors {
		for _, r := range rows {
			if f.Drives && r.root[0] == '/' {
				continue // not an absolute path on Windows
			}
			got := f.Within(r.root, r.p)
			if got != r.in[f.Name] {
				t.Errorf("%s: Within(%q, %q) = %v, want %v", f.Name, r.root, r.p, got, r.in[f.Name])
				continue
			}
			if !got {
				continue
			}
			if rel, ok := f.Rel(r.root, r.p); !ok || rel != r.rel {
				t.Errorf("%s: Rel(%q, %q) = %q, %v, want %q", f.Name, r.root, r.p, rel, ok, r.rel)
			}
		}
	}
	if !WindowsPaths.Same(`C:\A\b.txt`, `c:/a/B.TXT`) || LinuxPaths.Same("/a/b", "/A/b") || !DarwinPaths.Same("/a/b", "/A/B") {
		t.Error("Same does not follow the flavours' case rules")
	}
}

// One file opened under two spellings that differ only in case is one
// buffer on a case-insensitive file system, two files on Linux.
func TestOverlayKeysFollowTheFlavor(t *testing.T) {
	for _, f := range flavors {
		o := newOverlayFor(f)
		base := filepath.Join(t.TempDir(), "Proj")
		o.Open(filepath.Join(base, "Main.go"), 1, "one")
		o.Open(filepath.Join(base, "main.go"), 2, "two")
		want := 1
		if !f.CaseInsensitive {
			want = 2
		}
		if got := len(o.Paths()); got != want {
			t.Errorf("%s: two spellings of one name give %d buffers, want %d", f.Name, got, want)
		}
		b, ok := o.Get(filepath.Join(base, "MAIN.GO"))
		if ok != f.CaseInsensitive || ok && b.Text != "two" {
			t.Errorf("%s: Get under a third spelling = %q, %v", f.Name, b.Text, ok)
		}
	}
}

// Roots compare names by the flavour: on a case-insensitive flavour a
// case-only-different path is inside (the file system would put it
// there), on Linux it is outside.
func TestRootsFollowTheFlavor(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "Proj")
	other := filepath.Join(dir, "proj", "a.txt")
	for _, f := range flavors {
		rs := newRootsFor(f, root)
		_, _, err := rs.Resolve(other)
		if (err == nil) != f.CaseInsensitive {
			t.Errorf("%s: Resolve(%q) with root %q: err %v", f.Name, other, root, err)
		}
		if f.CaseInsensitive {
			if got := rs.Rel(other); got != "a.txt" {
				t.Errorf("%s: Rel(%q) = %q, want a.txt", f.Name, other, got)
			}
		}
	}
}

func TestURIsInEveryFlavor(t *testing.T) {
	type row struct {
		uri, path string
		form      URIForm
	}
	rows := map[string][]row{
		"windows": {
			// VS Code: lower-case drive, escaped colon.
			{"file:///c%3A/Users/me/My%20Proj/a.go", `C:\Users\me\My Proj\a.go`, URIForm{EscapeAll: true, LowerDrive: true}},
			// Neovim: the drive as Windows writes it, colon kept.
			{"file:///C:/Users/me/My%20Proj/a.go", `C:\Users\me\My Proj\a.go`, URIForm{}},
			{"file://server/share/dir/f.txt", `\\server\share\dir\f.txt`, URIForm{}},
			{"file:///d:/x/%C3%A9+%23.txt", `D:\x\é+#.txt`, URIForm{LowerDrive: true}},
		},
		"linux": {
			{"file:///home/me/My%20Proj/a.go", "/home/me/My Proj/a.go", URIForm{}},
			{"file:///home/me/a%3Ab.go", "/home/me/a:b.go", URIForm{EscapeAll: true}},
			{"file://localhost/etc/x", "/etc/x", URIForm{}},
		},
	}
	rows["darwin"] = rows["linux"]
	for _, f := range flavors {
		for _, r := range rows[f.Name] {
			got, err := f.PathFromURI(r.uri)
			if err != nil || got != r.path {
				t.Errorf("%s: PathFromURI(%q) = %q, %v, want %q", f.Name, r.uri, got, err, r.path)
				continue
			}
			form := FormOf(r.uri)
			if form != r.form {
				t.Errorf("%s: FormOf(%q) = %+v, want %+v", f.Name, r.uri, form, r.form)
			}
			// Back in the client's form, the URI decodes to the same path.
			back := f.URIFromPath(got, form)
			if again, err := f.PathFromURI(back); err != nil || again != got {
				t.Errorf("%s: %q -> %q -> %q -> %q, %v", f.Name, r.uri, got, back, again, err)
			}
			if FormOf(back) != form && r.path != "/etc/x" {
				t.Errorf("%s: URIFromPath(%q) = %q is not in the form of %q", f.Name, got, back, r.uri)
			}
		}
	}
	if got := WindowsPaths.URIFromPath(`C:\Users\me\a b.go`, URIForm{EscapeAll: true, LowerDrive: true}); got != "file:///c%3A/Users/me/a%20b.go" {
		t.Errorf("VS Code form = %q", got)
	}
	if got := WindowsPaths.URIFromPath(`c:\Users\me\a b.go`, URIForm{}); got != "file:///C:/Users/me/a%20b.go" {
		t.Errorf("RFC 8089 form = %q", got)
	}
	if got := WindowsPaths.URIFromPath(`\\srv\share\a.txt`, URIForm{}); got != "file://srv/share/a.txt" {
		t.Errorf("UNC = %q", got)
	}
	for _, bad := range []string{"untitled:Untitled-1", "file:///home/me/a.go", "file://server/", "file:relative"} {
		if p, err := WindowsPaths.PathFromURI(bad); err == nil {
			t.Errorf("windows: PathFromURI(%q) = %q, want an error", bad, p)
		}
	}
	for _, bad := range []string{"untitled:Untitled-1", "file://server/share/x", "file:relative"} {
		if p, err := LinuxPaths.PathFromURI(bad); err == nil {
			t.Errorf("linux: PathFromURI(%q) = %q, want an error", bad, p)
		}
	}
}

func TestLineEndingsFollowTheFlavor(t *testing.T) {
	if !WindowsPaths.CRLF() || DarwinPaths.CRLF() || LinuxPaths.CRLF() {
		t.Error("only Windows ends lines with CRLF by default")
	}
}

// A played volume maps to a native folder and back.
func TestPathSystemVolumes(t *testing.T) {
	dir := t.TempDir()
	ps := PathSystem{Flavor: WindowsPaths, Volumes: map[string]string{"C:": dir}}
	n, err := ps.ToNative(`c:\Users\me\a.txt`)
	if want := filepath.Join(dir, "Users", "me", "a.txt"); err != nil || n != want {
		t.Fatalf("ToNative = %q, %v, want %q", n, err, want)
	}
	if back := ps.FromNative(n); back != `C:\Users\me\a.txt` {
		t.Errorf("FromNative(%q) = %q", n, back)
	}
	if _, err := ps.ToNative(`D:\x`); err == nil {
		t.Error("a volume that is not played maps somewhere")
	}
}

// A path whose tail does not exist yet resolves to itself below its real
// folder, volume included (on Windows the walk once started at "\" and
// made "\C:users\..." of it), and is inside a root that holds its folder.
func TestRealPathOfAMissingTailKeepsTheVolume(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "missing", "deeper", "x.txt")
	if got := RealPath(p); got != p {
		t.Fatalf("RealPath(%q) = %q", p, got)
	}
	if _, _, err := newRoots(dir).Resolve(p); err != nil {
		t.Fatalf("Resolve(%q) with root %q: %v", p, dir, err)
	}
}

// The path the system holds for an open file (used to catch a symlink
// swapped in after a check) names the file that was opened: /proc on
// Linux, GetFinalPathNameByHandle on Windows.
func TestOpenedPathNamesTheOpenedFile(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "Opened File.txt")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, ok := OpenedPath(f.Fd())
	if !ok {
		if runtime.GOOS == "linux" || runtime.GOOS == "windows" {
			t.Fatalf("no opened path for %s", p)
		}
		t.Skipf("%s does not say which path a file was opened by", runtime.GOOS)
	}
	if !NativePaths().Same(got, p) {
		t.Fatalf("OpenedPath = %q, want %q", got, p)
	}
	if !newRoots(dir).ContainsReal(got) {
		t.Fatalf("the root %q does not contain the opened path %q", dir, got)
	}
}
