package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxFileLines is the most lines a non-test Go file may have. A file past
// ~600 lines is a sign that it holds two things (architecture.md §3);
// past this it is split by responsibility, not allowed (issue 30).
const maxFileLines = 800

// Every non-test Go file of the repository, testdata included, stays
// within maxFileLines. Hidden folders (.git, .ci's caches, .peers'
// checkouts) and node_modules are not ours and are skipped.
func TestFileSize(t *testing.T) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	checked := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		checked++
		if n := lineCount(data); n > maxFileLines {
			rel, _ := filepath.Rel(root, p)
			t.Errorf("%s has %d lines, over %d: split it by responsibility", filepath.ToSlash(rel), n, maxFileLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d files checked under %s", checked, root)
	// The walk must have seen the module, not some folder beside it.
	if _, err := os.Stat(filepath.Join(root, "cmd", "qwen-ls", "main.go")); err != nil || checked < 100 {
		t.Fatalf("only %d files checked under %s; is it the module's root?", checked, root)
	}
}

// lineCount counts lines as wc -l does, plus a last line without a newline.
func lineCount(data []byte) int {
	n := bytes.Count(data, []byte("\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return n
}
