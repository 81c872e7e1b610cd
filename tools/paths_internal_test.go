package tools

import (
	"testing"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// Path arguments by each system's rules: on Windows "\" and "/" both
// separate and no backslash is taken for a shell escape (C:\proj\[id] is
// a Next.js route folder, not an escaped bracket); on Unix a backslash
// before a shell character is dropped (tools.md §2.2).
func TestPathArgumentsInEveryFlavor(t *testing.T) {
	rows := []struct {
		in                 string
		windows, unixClean string
	}{
		{`C:\Users\me\a.go`, `C:\Users\me\a.go`, `C:\Users\me\a.go`},
		{`C:/Users/me/a.go`, `C:\Users\me\a.go`, `C:/Users/me/a.go`},
		{` C:\Users/me\..\me\a.go `, `C:\Users\me\a.go`, `C:\Users/me\..\me\a.go`},
		{`C:\proj\[id]\page.tsx`, `C:\proj\[id]\page.tsx`, `C:\proj[id]\page.tsx`},
		{`\\server\share\dir\f.txt`, `\\server\share\dir\f.txt`, `\\server\share\dir\f.txt`},
		{`/home/me/My\ Project/a.go`, `\home\me\My\ Project\a.go`, `/home/me/My Project/a.go`},
		{`/home/me/a\(1\).go`, `\home\me\a\(1\).go`, `/home/me/a(1).go`},
		{"   ", "", ""},
	}
	for _, r := range rows {
		if got := cleanPathArgFor(workspace.WindowsPaths, r.in); got != r.windows {
			t.Errorf("windows: %q -> %q, want %q", r.in, got, r.windows)
		}
		for _, f := range []workspace.PathFlavor{workspace.DarwinPaths, workspace.LinuxPaths} {
			if got := cleanPathArgFor(f, r.in); got != r.unixClean {
				t.Errorf("%s: %q -> %q, want %q", f.Name, r.in, got, r.unixClean)
			}
		}
	}
	for _, abs := range []string{`C:\x`, `c:/x`, `\\srv\share\x`} {
		if !workspace.WindowsPaths.IsAbs(cleanPathArgFor(workspace.WindowsPaths, abs)) {
			t.Errorf("windows: %q is not absolute after cleaning", abs)
		}
	}
	if workspace.WindowsPaths.IsAbs(cleanPathArgFor(workspace.WindowsPaths, `/home/me`)) {
		t.Error(`windows: /home/me counts as absolute`)
	}
}

// A path rooted without a drive is refused on Windows (the model means a
// POSIX root, Windows would read the current drive) and is an ordinary
// absolute path elsewhere.
func TestDrivelessPathsOnWindowsOnly(t *testing.T) {
	for p, want := range map[string]bool{`/`: true, `\`: true, `/etc`: true, `\Windows\x`: true,
		`C:\x`: false, `c:/x`: false, `\\srv\share\x`: false, `rel\x`: false, ``: false} {
		if got := driveless(workspace.WindowsPaths, cleanPathArgFor(workspace.WindowsPaths, p)); got != want {
			t.Errorf("windows: driveless(%q) = %v, want %v", p, got, want)
		}
		for _, f := range []workspace.PathFlavor{workspace.DarwinPaths, workspace.LinuxPaths} {
			if driveless(f, cleanPathArgFor(f, p)) {
				t.Errorf("%s: %q counts as driveless", f.Name, p)
			}
		}
	}
}
