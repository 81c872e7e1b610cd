package toolstest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Golden compares got with the file testdata/<name> of the calling test's
// package. With update set it writes got there instead (creating testdata/),
// so a test package declares
//
//	var update = flag.Bool("update", false, "rewrite golden files")
//
// and calls toolstest.Golden(t, "x.golden", got, *update); then
// `go test ./pkg -update` refreshes the files, and a review of the diff shows
// what changed. The flag lives in each test package, not here, so that this
// package keeps no state of its own.
func Golden(t testing.TB, name string, got []byte, update bool) {
	t.Helper()
	path := filepath.Join("testdata", filepath.FromSlash(name))
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("create golden directory: %v", err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("write golden file: %v", err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run the test with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (rerun with -update if the change is intended):\n%s",
			path, firstDifference(string(want), string(got)))
	}
}

// firstDifference describes the first line where want and got differ, so a
// failure of a long golden file stays readable.
func firstDifference(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		if i >= len(wl) || i >= len(gl) || wl[i] != gl[i] {
			return fmt.Sprintf("line %d:\n  want: %s\n  got:  %s", i+1, lineAt(wl, i), lineAt(gl, i))
		}
	}
	return "(no line differs)"
}

func lineAt(lines []string, i int) string {
	if i >= len(lines) {
		return "(no such line)"
	}
	return fmt.Sprintf("%q", lines[i])
}
