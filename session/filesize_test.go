package session

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxSourceLines is where a source file of this package is split: past
// it a file holds more than one thing (docs/architecture: files are named
// after what they hold), and wire.go grew to 844 lines holding both the
// request it writes and the answer it reads.
const maxSourceLines = 800

// No source file of the package (tests aside) grows past maxSourceLines.
func TestSourceFilesStayUnder800Lines(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(data, []byte("\n")); n > maxSourceLines {
			t.Errorf("%s has %d lines, over %d: split it by what its parts hold", f, n, maxSourceLines)
		}
	}
}
