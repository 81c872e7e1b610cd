package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// newRoots returns a root set holding paths, compared by the running
// system's path rules.
func newRoots(paths ...string) *Roots {
	return newRootsFor(NativePaths(), paths...)
}

// rtTempDir returns a fresh temp dir by its real path, so expectations do
// not depend on whether the system temp dir sits behind a symlink.
func rtTempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func rtMkdirAll(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func rtWriteFile(t *testing.T, p, content string) {
	t.Helper()
	rtMkdirAll(t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func rtSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// rtFixture lays out
//
//	base/ws/               the root
//	base/ws/sub/file.txt
//	base/ws/in -> sub      (directory symlink inside → inside)
//	base/ws/infile -> sub/file.txt
//	base/ws/out -> ../outside          (directory symlink out)
//	base/ws/outfile -> ../outside/secret.txt
//	base/ws/dangling -> ../outside/nothing-yet.txt
//	base/outside/secret.txt
//	base/ws2/              a second root
//	base/wsx/              a sibling sharing "ws" as a prefix
type rtFixture struct {
	base, ws, ws2, outside, wsx string
}

func newRtFixture(t *testing.T) rtFixture {
	t.Helper()
	base := rtTempDir(t)
	f := rtFixture{
		base:    base,
		ws:      filepath.Join(base, "ws"),
		ws2:     filepath.Join(base, "ws2"),
		outside: filepath.Join(base, "outside"),
		wsx:     filepath.Join(base, "wsx"),
	}
	rtWriteFile(t, filepath.Join(f.ws, "sub", "file.txt"), "inside\n")
	rtWriteFile(t, filepath.Join(f.outside, "secret.txt"), "secret\n")
	rtWriteFile(t, filepath.Join(f.ws2, "two.txt"), "two\n")
	rtWriteFile(t, filepath.Join(f.wsx, "x.txt"), "x\n")
	rtSymlink(t, "sub", filepath.Join(f.ws, "in"))
	rtSymlink(t, filepath.Join("sub", "file.txt"), filepath.Join(f.ws, "infile"))
	rtSymlink(t, filepath.Join("..", "outside"), filepath.Join(f.ws, "out"))
	rtSymlink(t, filepath.Join("..", "outside", "secret.txt"), filepath.Join(f.ws, "outfile"))
	rtSymlink(t, filepath.Join("..", "outside", "nothing-yet.txt"), filepath.Join(f.ws, "dangling"))
	return f
}

func TestResolveRelativeRefused(t *testing.T) {
	f := newRtFixture(t)
	r := newRoots(f.ws)
	for _, p := range []string{"sub/file.txt", "./sub", "", "..", "~/x"} {
		_, _, err := r.Resolve(p)
		if !errors.Is(err, errNotAbsolute) {
			t.Errorf("Resolve(%q) err = %v, want errNotAbsolute", p, err)
		}
		var pe *pathError
		if errors.As(err, &pe) && (len(pe.Roots) != 1 || pe.Roots[0] != f.ws) {
			t.Errorf("Resolve(%q) pathError roots = %v, want [%s]", p, pe.Roots, f.ws)
		}
	}
}

func TestResolveMembership(t *testing.T) {
	f := newRtFixture(t)
	r := newRoots(f.ws)
	cases := []struct {
		name   string
		path   string
		inside bool
		clean  string // expected cleaned path when inside ("" = same as path)
	}{
		{"root itself", f.ws, true, ""},
		{"root with trailing slash", f.ws + "/", true, f.ws},
		{"plain file", filepath.Join(f.ws, "sub", "file.txt"), true, ""},
		{"missing file", filepath.Join(f.ws, "sub", "new.txt"), true, ""},
		{"missing deep path", filepath.Join(f.ws, "a", "b", "c.txt"), true, ""},
		{"dot dot that stays inside", f.ws + "/sub/../sub/file.txt", true, filepath.Join(f.ws, "sub", "file.txt")},
		{"double slashes", f.ws + "//sub///file.txt", true, filepath.Join(f.ws, "sub", "file.txt")},
		{"dot dot escape", f.ws + "/sub/../../outside/secret.txt", false, ""},
		{"dot dot escape to missing", f.ws + "/../elsewhere.txt", false, ""},
		{"dot dot past filesystem root", f.ws + "/../../../../../../../../etc/passwd", false, ""},
		{"dir symlink inside to inside", filepath.Join(f.ws, "in", "file.txt"), true, ""},
		{"file symlink inside to inside", filepath.Join(f.ws, "infile"), true, ""},
		{"dir symlink out", filepath.Join(f.ws, "out"), false, ""},
		{"file under dir symlink out", filepath.Join(f.ws, "out", "secret.txt"), false, ""},
		{"missing file under dir symlink out", filepath.Join(f.ws, "out", "new.txt"), false, ""},
		{"missing file under dir symlink in", filepath.Join(f.ws, "in", "new.txt"), true, ""},
		{"file symlink out", filepath.Join(f.ws, "outfile"), false, ""},
		{"dangling symlink out", filepath.Join(f.ws, "dangling"), false, ""},
		{"sibling sharing the prefix", filepath.Join(f.wsx, "x.txt"), false, ""},
		{"sibling dir sharing the prefix", f.wsx, false, ""},
		{"parent of root", f.base, false, ""},
		{"outside entirely", filepath.Join(f.outside, "secret.txt"), false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if strings.Contains(c.name, "symlink") {
				needSymlinks(t)
			}
			clean, root, err := r.Resolve(c.path)
			if !c.inside {
				if !errors.Is(err, errOutside) {
					t.Fatalf("Resolve(%q) = %q, %q, %v; want errOutside", c.path, clean, root, err)
				}
				var pe *pathError
				if !errors.As(err, &pe) || pe.Path != filepath.Clean(c.path) {
					t.Fatalf("pathError = %#v, want Path %q", err, filepath.Clean(c.path))
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v", c.path, err)
			}
			want := c.clean
			if want == "" {
				want = c.path
			}
			if clean != want {
				t.Errorf("clean = %q, want %q", clean, want)
			}
			if root != f.ws {
				t.Errorf("root = %q, want %q", root, f.ws)
			}
		})
	}
}

func TestResolveSymlinkLoopReturns(t *testing.T) {
	f := newRtFixture(t)
	r := newRoots(f.ws)
	// a -> b -> a: the path cannot be resolved, and must not crash or hang.
	rtSymlink(t, "b", filepath.Join(f.ws, "a"))
	rtSymlink(t, "a", filepath.Join(f.ws, "b"))
	clean, _, err := r.Resolve(filepath.Join(f.ws, "a", "x"))
	// The loop never leaves the root, so judging it inside is right; what
	// matters is that the call returns.
	if err != nil && !errors.Is(err, errOutside) {
		t.Fatalf("unexpected error %v", err)
	}
	if err == nil && clean != filepath.Join(f.ws, "a", "x") {
		t.Fatalf("clean = %q", clean)
	}
}

func TestResolveMultiRoot(t *testing.T) {
	f := newRtFixture(t)
	r := newRoots(f.ws, f.ws2)
	if got := r.Primary(); got != f.ws {
		t.Errorf("Primary = %q, want %q", got, f.ws)
	}
	_, root, err := r.Resolve(filepath.Join(f.ws2, "two.txt"))
	if err != nil || root != f.ws2 {
		t.Fatalf("Resolve in second root = %q, %v; want root %q", root, err, f.ws2)
	}
	_, root, err = r.Resolve(filepath.Join(f.ws, "sub", "file.txt"))
	if err != nil || root != f.ws {
		t.Fatalf("Resolve in first root = %q, %v; want root %q", root, err, f.ws)
	}
	_, _, err = r.Resolve(filepath.Join(f.outside, "secret.txt"))
	var pe *pathError
	if !errors.As(err, &pe) || len(pe.Roots) != 2 || pe.Roots[0] != f.ws || pe.Roots[1] != f.ws2 {
		t.Fatalf("outside error = %v, want both roots listed", err)
	}
}

func TestRootsAddRemoveAtRuntime(t *testing.T) {
	needSymlinks(t)
	f := newRtFixture(t)
	r := newRoots(f.ws)
	p := filepath.Join(f.outside, "secret.txt")
	if _, _, err := r.Resolve(p); !errors.Is(err, errOutside) {
		t.Fatalf("before Add: %v", err)
	}
	r.Add(f.outside)
	r.Add(f.outside) // twice is harmless
	if got := r.List(); len(got) != 2 || got[1] != f.outside {
		t.Fatalf("List after Add = %v", got)
	}
	if _, root, err := r.Resolve(p); err != nil || root != f.outside {
		t.Fatalf("after Add: root %q, err %v", root, err)
	}
	// A symlink that was outside now points into a root.
	if _, _, err := r.Resolve(filepath.Join(f.ws, "outfile")); err != nil {
		t.Fatalf("symlink into added root: %v", err)
	}
	r.Remove(f.outside)
	if _, _, err := r.Resolve(p); !errors.Is(err, errOutside) {
		t.Fatalf("after Remove: %v", err)
	}
	if got := r.List(); len(got) != 1 || got[0] != f.ws {
		t.Fatalf("List after Remove = %v", got)
	}

	r.Set([]string{f.ws2})
	if _, _, err := r.Resolve(filepath.Join(f.ws, "sub", "file.txt")); !errors.Is(err, errOutside) {
		t.Fatalf("after Set, old root still inside: %v", err)
	}
	if r.Primary() != f.ws2 {
		t.Fatalf("Primary after Set = %q", r.Primary())
	}
}

func TestRootsGivenThroughSymlink(t *testing.T) {
	needSymlinks(t)
	f := newRtFixture(t)
	link := filepath.Join(f.base, "wslink")
	rtSymlink(t, f.ws, link)
	r := newRoots(link)
	if got := r.List(); len(got) != 1 || got[0] != f.ws {
		t.Fatalf("List = %v, want the real path %q", got, f.ws)
	}
	// Reached through the link name or the real name, it is inside.
	for _, p := range []string{filepath.Join(link, "sub", "file.txt"), filepath.Join(f.ws, "sub", "file.txt")} {
		clean, root, err := r.Resolve(p)
		if err != nil || root != f.ws || clean != p {
			t.Errorf("Resolve(%q) = %q, %q, %v", p, clean, root, err)
		}
	}
	// Removing it by the name it was added with works.
	r.Remove(link)
	if len(r.List()) != 0 {
		t.Fatalf("Remove by link name left %v", r.List())
	}
	r.Add(link)
	r.Remove(f.ws)
	if len(r.List()) != 0 {
		t.Fatalf("Remove by real name left %v", r.List())
	}
}

func TestRootsMissingRootAppearsLater(t *testing.T) {
	needSymlinks(t)
	f := newRtFixture(t)
	later := filepath.Join(f.base, "later")
	r := newRoots(later)
	p := filepath.Join(later, "a.txt")
	if _, _, err := r.Resolve(p); err != nil {
		t.Fatalf("missing root, path below it: %v", err)
	}
	// The root appears as a symlink to the outside directory: the root is
	// then that directory, and paths are judged by it.
	rtSymlink(t, f.outside, later)
	if got := r.Primary(); got != f.outside {
		t.Fatalf("Primary after the root appeared = %q, want %q", got, f.outside)
	}
	if _, root, err := r.Resolve(filepath.Join(later, "secret.txt")); err != nil || root != f.outside {
		t.Fatalf("Resolve after the root appeared: %q, %v", root, err)
	}
}

func TestRootsSlashRoot(t *testing.T) {
	needUnixPaths(t)
	r := newRoots("/")
	if _, root, err := r.Resolve("/etc/hostname-does-not-matter"); err != nil || root != "/" {
		t.Fatalf("root / : %q, %v", root, err)
	}
	if got := r.Rel("/"); got != "." {
		t.Errorf("Rel(/) = %q", got)
	}
}

func TestRootsRel(t *testing.T) {
	needSymlinks(t)
	f := newRtFixture(t)
	link := filepath.Join(f.base, "wslink")
	rtSymlink(t, f.ws, link)
	r := newRoots(f.ws, f.ws2)
	cases := []struct{ in, want string }{
		{f.ws, "."},
		{f.ws + "/", "."},
		{filepath.Join(f.ws, "sub", "file.txt"), filepath.Join("sub", "file.txt")},
		{f.ws + "/sub/../sub/file.txt", filepath.Join("sub", "file.txt")},
		{f.ws2, "."},
		{filepath.Join(f.ws2, "two.txt"), "two.txt"},
		{filepath.Join(link, "sub", "file.txt"), filepath.Join("sub", "file.txt")},
		{filepath.Join(f.outside, "secret.txt"), filepath.Join(f.outside, "secret.txt")},
		{filepath.Join(f.wsx, "x.txt"), filepath.Join(f.wsx, "x.txt")},
		{f.ws + "/../outside", f.outside},
		{"relative/p", filepath.Join("relative", "p")},
	}
	for _, c := range cases {
		if got := r.Rel(c.in); got != c.want {
			t.Errorf("Rel(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestRealPath(t *testing.T) {
	needSymlinks(t)
	f := newRtFixture(t)
	cases := []struct{ in, want string }{
		{filepath.Join(f.ws, "in", "file.txt"), filepath.Join(f.ws, "sub", "file.txt")},
		{filepath.Join(f.ws, "in", "missing", "x"), filepath.Join(f.ws, "sub", "missing", "x")},
		{filepath.Join(f.ws, "out", "new.txt"), filepath.Join(f.outside, "new.txt")},
		{filepath.Join(f.ws, "dangling"), filepath.Join(f.outside, "nothing-yet.txt")},
		{filepath.Join(f.ws, "nope", "nada"), filepath.Join(f.ws, "nope", "nada")},
	}
	for _, c := range cases {
		if got := RealPath(c.in); got != c.want {
			t.Errorf("RealPath(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
