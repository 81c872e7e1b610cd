package tools_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// ledgerReadFully reads p with read_file, recording it in l.
func ledgerReadFully(t *testing.T, e *testEnv, l *tools.Ledger, p string) {
	t.Helper()
	res := run(t, tools.NewReadFile(e.Env), &tools.Call{Ledger: l}, `{"absolute_path":"`+p+`"}`)
	if res.Error != nil {
		t.Fatal(res.Error.Message)
	}
}

func ledgerWantUnchanged(t *testing.T, e *testEnv, l *tools.Ledger, p string, known, unchanged bool) {
	t.Helper()
	_, k, u, err := e.Unchanged(l, p)
	if err != nil {
		t.Fatalf("Unchanged: %v", err)
	}
	if k != known || u != unchanged {
		t.Errorf("Unchanged(%s) = known %v, unchanged %v; want %v, %v", filepath.Base(p), k, u, known, unchanged)
	}
}

// ledgerTouch moves p's mtime, leaving its content alone.
func ledgerTouch(t *testing.T, p string, d time.Duration) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	mt := fi.ModTime().Add(d)
	if err := os.Chtimes(p, mt, mt); err != nil {
		t.Fatal(err)
	}
}

func TestUnchangedDisk(t *testing.T) {
	e := newTestEnv(t, nil)
	l := tools.NewLedger()
	p := e.write(t, "a.txt", "hello\n")
	ledgerWantUnchanged(t, e, l, p, false, false)

	ledgerReadFully(t, e, l, p)
	ledgerWantUnchanged(t, e, l, p, true, true)

	// Same size, same text, another mtime: the hash decides.
	ledgerTouch(t, p, time.Hour)
	ledgerWantUnchanged(t, e, l, p, true, true)

	// Same size, another text, another mtime.
	e.write(t, "a.txt", "HELLO\n")
	ledgerTouch(t, p, 2*time.Hour)
	ledgerWantUnchanged(t, e, l, p, true, false)

	os.Remove(p)
	if _, known, unchanged, err := e.Unchanged(l, p); !known || unchanged || !workspace.IsNotExist(err) {
		t.Errorf("missing file: known %v, unchanged %v, err %v", known, unchanged, err)
	}
}

func TestUnchangedBuffer(t *testing.T) {
	e := newTestEnv(t, nil)
	l := tools.NewLedger()
	p := e.write(t, "b.txt", "disk\n")
	e.Workspace.Overlay.Open(p, 5, "buffer\n")
	ledgerReadFully(t, e, l, p)
	ledgerWantUnchanged(t, e, l, p, true, true)

	// A new version with the same text is unchanged by hash...
	e.Workspace.Overlay.Open(p, 6, "buffer\n")
	ledgerWantUnchanged(t, e, l, p, true, true)
	// ...one with other text is changed, whatever the disk says.
	e.Workspace.Overlay.Open(p, 7, "typed\n")
	ledgerWantUnchanged(t, e, l, p, true, false)

	// Closed without saving: the disk text is not what was read.
	e.Workspace.Overlay.Close(p)
	ledgerWantUnchanged(t, e, l, p, true, false)
}

func TestUnchangedDiskReadThenOpened(t *testing.T) {
	e := newTestEnv(t, nil)
	l := tools.NewLedger()
	p := e.write(t, "c.txt", "same\n")
	ledgerReadFully(t, e, l, p)
	// Opened in the editor with the disk's text: still the text read.
	e.Workspace.Overlay.Open(p, 1, "same\n")
	ledgerWantUnchanged(t, e, l, p, true, true)
	e.Workspace.Overlay.Open(p, 2, "other\n")
	ledgerWantUnchanged(t, e, l, p, true, false)
}

func TestUnchangedBinaryHashesBytes(t *testing.T) {
	e := newTestEnv(t, nil)
	l := tools.NewLedger()
	p := e.write(t, "x.dat", "\x00\x01\xff")
	ledgerReadFully(t, e, l, p)
	entry, known, unchanged, err := e.Unchanged(l, p)
	if !known || !unchanged || err != nil || entry.Editable || entry.Kind != "binary" {
		t.Fatalf("entry %+v, known %v, unchanged %v, err %v", entry, known, unchanged, err)
	}
	ledgerTouch(t, p, time.Hour)
	ledgerWantUnchanged(t, e, l, p, true, true)
	e.write(t, "x.dat", "\x00\x02\xff")
	ledgerTouch(t, p, 2*time.Hour)
	ledgerWantUnchanged(t, e, l, p, true, false)
}
