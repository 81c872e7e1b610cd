package workspace

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// A write killed between its temp file and the rename leaves a
// .qwen-tmp-* file behind. The next server's index removes such files that
// are older than itself, and only those: a younger one may belong to a
// write in progress, and a name of another shape is the user's.
func TestIndexRemovesStaleTempFiles(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-time.Hour)
	stale := []string{
		".qwen-tmp-main.go.3k9x0a1b2c3d",
		"sub/.qwen-tmp-notes.md.z",
	}
	kept := []string{
		"main.go",
		".qwen-tmp-",                       // no random suffix
		".qwen-tmp-main.go.",               // empty suffix
		".qwen-tmp-main.go.UPPER",          // not base 36 lower case
		".qwen-tmp-main.go.12345678901234", // longer than a uint64 in base 36
		"x.qwen-tmp-main.go.abc",           // prefix not at the start
		".qwen-tmp-link.abc",               // a symlink, never one of ours
	}
	if runtime.GOOS == "windows" {
		// Windows drops a name's trailing dot, and a symlink needs a
		// privilege there (Wine makes one its own Lstat cannot read).
		kept = slices.DeleteFunc(kept, func(n string) bool {
			return strings.HasSuffix(n, ".") || n == ".qwen-tmp-link.abc"
		})
	}
	for _, n := range append(slices.Clone(stale), kept...) {
		p := filepath.Join(root, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if n == ".qwen-tmp-link.abc" {
			if err := os.Symlink("main.go", p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	// Written by a process that is still writing: newer than the index.
	young := filepath.Join(root, ".qwen-tmp-young.txt.abc")
	// Written just before the index, within the margin for coarse file
	// times: it may be a write of this very process.
	recent := filepath.Join(root, ".qwen-tmp-recent.txt.abc")
	if err := os.WriteFile(recent, []byte("r"), 0o644); err != nil {
		t.Fatal(err)
	}

	w, _ := newWatcher()
	defer w.Close()
	rs := newRoots(root)
	ix := newIndex(rs, newIgnorer(rs), w)
	defer ix.Close()
	if err := os.WriteFile(young, []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The young file's mtime must be after the index's start even on a
	// file system with coarse timestamps.
	future := time.Now().Add(time.Minute)
	if err := os.Chtimes(young, future, future); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ix.Start(ctx)
	select {
	case <-ix.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the first build did not finish")
	}
	for _, n := range stale {
		if _, err := os.Lstat(filepath.Join(root, n)); !os.IsNotExist(err) {
			t.Errorf("stale temp file %s was not removed (err %v)", n, err)
		}
	}
	for _, n := range append(kept, filepath.Base(young), filepath.Base(recent)) {
		if _, err := os.Lstat(filepath.Join(root, n)); err != nil {
			t.Errorf("%s was removed: %v", n, err)
		}
	}
	for _, e := range ix.Files() {
		for _, n := range stale {
			if e.Path == filepath.Join(root, n) {
				t.Errorf("the index lists the removed file %s", n)
			}
		}
	}
}

func TestIsTempNameMatchesCreateTemp(t *testing.T) {
	dir := t.TempDir()
	for _, base := range []string{"a.go", "no-extension", string(make([]byte, 0)) + "x.tar.gz", "long" + string(slices.Repeat([]byte("n"), 200))} {
		name, f, err := createTemp(dir, base, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if !IsTempName(filepath.Base(name)) {
			t.Errorf("IsTempName(%q) = false for a name createTemp made", filepath.Base(name))
		}
	}
}
