package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// flavoredEnv is a tool environment whose workspace follows the given
// system's path rules on this machine's file system.
func flavoredEnv(t *testing.T, f workspace.PathFlavor) (*tools.Env, string) {
	t.Helper()
	base := t.TempDir()
	root, _ := filepath.EvalSymlinks(base)
	root = filepath.Join(root, "Proj")
	os.MkdirAll(root, 0o755)
	ws := workspace.New(workspace.Options{
		Roots: []string{root},
		Paths: workspace.PathSystem{Flavor: f},
		Settings: workspace.SettingsOptions{
			UserDir:    filepath.Join(base, "home", ".qwen"),
			SystemPath: filepath.Join(base, "etc", "settings.json"),
			Getenv:     func(string) (string, bool) { return "", false },
		},
	})
	t.Cleanup(func() { _ = ws.Close() })
	return &tools.Env{Workspace: ws, QwenHome: filepath.Join(base, "home", ".qwen")}, root
}

// A new file gets the system's line endings when no setting says
// otherwise: CRLF for Windows, LF for macOS and Linux (a file that exists
// keeps its own: TestWriteFile*).
func TestNewFilesGetTheSystemsLineEndings(t *testing.T) {
	for _, f := range []workspace.PathFlavor{workspace.WindowsPaths, workspace.DarwinPaths, workspace.LinuxPaths} {
		env, root := flavoredEnv(t, f)
		p := filepath.Join(root, "new.txt")
		res := run(t, tools.NewWriteFile(env), newEditCall(nil), writeArgs(t, p, "one\ntwo\n"))
		if res.Error != nil {
			t.Fatalf("%s: %v", f.Name, res.Error)
		}
		want := "one\ntwo\n"
		if f.CRLF() {
			want = "one\r\ntwo\r\n"
		}
		if data, _ := os.ReadFile(p); string(data) != want {
			t.Errorf("%s: new file = %q, want %q", f.Name, data, want)
		}
	}
}

// A path that differs from the root only in case is inside on Windows
// and macOS, outside on Linux, and a path argument that is not absolute
// is told how an absolute one starts on that system.
func TestPathArgumentsFollowTheWorkspaceFlavor(t *testing.T) {
	for _, f := range []workspace.PathFlavor{workspace.WindowsPaths, workspace.DarwinPaths, workspace.LinuxPaths} {
		env, root := flavoredEnv(t, f)
		other := filepath.Join(filepath.Dir(root), "PROJ", "x.txt")
		_, terr := env.AbsPath(other, tools.PathOptions{})
		if (terr == nil) != f.CaseInsensitive {
			t.Errorf("%s: AbsPath(%q) with root %q: %v", f.Name, other, root, terr)
		}
		_, terr = env.AbsPath("rel/x.txt", tools.PathOptions{})
		hint := "starting with /"
		if f.Drives {
			hint = `starting with a drive, such as C:\`
		}
		if terr == nil || !strings.Contains(terr.Message, hint) {
			t.Errorf("%s: a relative path gives %v, want the hint %q", f.Name, terr, hint)
		}
	}
}
