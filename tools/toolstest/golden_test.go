package toolstest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder stands in for a test so that a failing comparison can be
// observed instead of failing this test.
type recorder struct {
	testing.TB
	failures []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func TestGolden(t *testing.T) {
	t.Chdir(t.TempDir())

	missing := &recorder{TB: t}
	Golden(missing, "a.golden", []byte("x\n"), false)
	if len(missing.failures) == 0 || !strings.Contains(missing.failures[0], "-update") {
		t.Errorf("a missing golden file gave %q", missing.failures)
	}

	Golden(t, "sub/a.golden", []byte("one\ntwo\n"), true)
	if b, err := os.ReadFile(filepath.Join("testdata", "sub", "a.golden")); err != nil || string(b) != "one\ntwo\n" {
		t.Fatalf("update wrote %q, %v", b, err)
	}
	Golden(t, "sub/a.golden", []byte("one\ntwo\n"), false)

	differ := &recorder{TB: t}
	Golden(differ, "sub/a.golden", []byte("one\nTWO\n"), false)
	if len(differ.failures) != 1 || !strings.Contains(differ.failures[0], `line 2:`) ||
		!strings.Contains(differ.failures[0], `want: "two"`) || !strings.Contains(differ.failures[0], `got:  "TWO"`) {
		t.Errorf("a difference was reported as %q", differ.failures)
	}

	longer := &recorder{TB: t}
	Golden(longer, "sub/a.golden", []byte("one\ntwo\nthree\n"), false)
	if len(longer.failures) != 1 || !strings.Contains(longer.failures[0], "line 3:") {
		t.Errorf("an extra line was reported as %q", longer.failures)
	}
}
