package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// The tests below that depend on a trait of Unix skip where the system
// lacks it, saying which; .ci/wine runs the rest on Windows.

// needUnixModes skips a test of permission bits on Windows, which keeps
// only a read-only flag.
func needUnixModes(t *testing.T) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no Unix permission bits")
	}
}

// needUnixPaths skips a test written with Unix path literals ("/a",
// "/etc/...") that are not absolute on Windows.
func needUnixPaths(t *testing.T) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the test is written with Unix paths, which are not absolute on Windows")
	}
}

// needProgram skips a test that runs name when this system has no such
// program (sleep and go under Wine).
func needProgram(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("no %s on this system: %v", name, err)
	}
}

var symlinksSeen = sync.OnceValue(func() bool {
	dir, err := os.MkdirTemp("", "symlink-probe")
	if err != nil {
		return false
	}
	defer os.RemoveAll(dir)
	target := filepath.Join(dir, "target")
	if err := os.Mkdir(target, 0o755); err != nil {
		return false
	}
	link := filepath.Join(dir, "link")
	if os.Symlink(target, link) != nil {
		return false
	}
	fi, err := os.Lstat(link)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		return false
	}
	real, err := filepath.EvalSymlinks(link)
	return err == nil && real == target
})

// needSymlinks skips a test of symlink resolution where a link that
// os.Symlink makes is not seen as one (Wine; Windows without the
// privilege to make links).
func needSymlinks(t *testing.T) {
	t.Helper()
	if !symlinksSeen() {
		t.Skip("this system does not show the links os.Symlink makes as links")
	}
}
