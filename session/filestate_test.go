package session

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// A file rewritten with the same size and its mtime put back still looks
// changed, through the change time (Linux, macOS); and a file replaced by
// another keeps no key of the first.
func TestStatKeySeesARewriteThatKeepsSizeAndMtime(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a.txt")
	if err := os.WriteFile(p, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := statOf(fi)
	if runtime.GOOS == "windows" {
		t.Skip("Windows keeps no change time; size and mtime judge a change there")
	}
	time.Sleep(20 * time.Millisecond)
	if err := os.WriteFile(p, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	fi2, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := statOf(fi2)
	if after.size != before.size || after.mtime != before.mtime {
		t.Fatalf("the setup did not keep size and mtime: %+v %+v", before, after)
	}
	if after == before {
		t.Fatalf("the rewrite left the key as it was: %+v", after)
	}
	if before.ctime == 0 || before.ino == 0 {
		t.Fatalf("no change time or inode read: %+v", before)
	}
}

// Two opens of one session file cannot both hold its lock, and the lock
// goes with the close.
func TestTryLockExcludesASecondOpen(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(p, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := tryLock(a); err != nil {
		t.Fatalf("first lock: %v", err)
	}
	b, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := tryLock(b); err != errLocked {
		t.Fatalf("second lock: %v, want errLocked", err)
	}
	// The locked file stays readable (Windows locks past its end).
	if data, err := os.ReadFile(p); err != nil || string(data) != "{}\n" {
		t.Fatalf("reading the locked file: %q %v", data, err)
	}
	a.Close()
	if err := tryLock(b); err != nil {
		t.Fatalf("lock after the first closed: %v", err)
	}
}
