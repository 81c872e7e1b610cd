package workspace

import (
	"slices"
	"strings"
	"testing"
)

// While a buffer's text is still being produced (OpenLater), what does not
// need that text is served at once: other buffers, its version, the list
// of open paths. The text function is held until all of them have
// answered, so a wait on it would hang this test rather than pass.
func TestOpenLaterServesOthersWhileTheTextIsMade(t *testing.T) {
	o := newOverlay()
	o.Open("/other", 1, "other text")
	release := make(chan struct{})
	o.OpenLater("/big", 7, func() string {
		<-release
		return "big\ntext"
	})
	if b := mustGetBuffer(t, o, "/other"); b.Text != "other text" {
		t.Fatalf("other buffer = %q", b.Text)
	}
	if err := o.Apply("/other", 2, []Change{{lspRange(0, 0, 0, 5), "OTHER"}}, UTF16); err != nil {
		t.Fatal(err)
	}
	if v, ok := o.Version("/big"); !ok || v != 7 {
		t.Fatalf("Version(/big) = %d, %v", v, ok)
	}
	if paths := strings.Join(sortedPaths(o), ","); paths != "/big,/other" {
		t.Fatalf("Paths = %s", paths)
	}
	close(release)
	if b := mustGetBuffer(t, o, "/big"); b.Text != "big\ntext" || b.Version != 7 || b.Dirty {
		t.Fatalf("big buffer = %+v", b)
	}
	if n, ok := o.Len("/big"); !ok || n != 8 {
		t.Fatalf("Len = %d, %v", n, ok)
	}
	if off, err := o.Offset("/big", Position{1, 2}, UTF16); err != nil || off != 6 {
		t.Fatalf("Offset = %d, %v", off, err)
	}
	if p, ok := o.Position("/big", 6, UTF8); !ok || p != (Position{1, 2}) {
		t.Fatalf("Position = %v, %v", p, ok)
	}
}

// A change sent after the open applies to the text the open produces,
// however long that takes: Apply waits for it.
func TestApplyAfterOpenLaterWaitsForTheText(t *testing.T) {
	o := newOverlay()
	release := make(chan struct{})
	o.OpenLater("/a", 1, func() string {
		<-release
		return "hello world"
	})
	done := make(chan error, 1)
	go func() { done <- o.Apply("/a", 2, []Change{{lspRange(0, 0, 0, 5), "HELLO"}}, UTF16) }()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b := mustGetBuffer(t, o, "/a"); b.Text != "HELLO world" || b.Version != 2 || !b.Dirty {
		t.Fatalf("buffer = %+v", b)
	}
}

// ReplaceLater replaces an open buffer's whole text; a buffer that is
// not open is refused, as Apply refuses it. Closing a buffer whose text is
// still being made forgets it.
func TestReplaceLaterAndClose(t *testing.T) {
	o := newOverlay()
	if err := o.ReplaceLater("/a", 2, func() string { return "x" }); err == nil || !strings.Contains(err.Error(), "not open") {
		t.Fatalf("ReplaceLater of a closed document: %v", err)
	}
	o.Open("/a", 1, "old")
	if err := o.ReplaceLater("/a", 2, func() string { return "new\r\ntext" }); err != nil {
		t.Fatal(err)
	}
	if b := mustGetBuffer(t, o, "/a"); b.Text != "new\r\ntext" || b.Version != 2 || !b.Dirty {
		t.Fatalf("buffer = %+v", b)
	}
	if err := o.Apply("/a", 3, []Change{{lspRange(1, 0, 1, 4), "TEXT"}}, UTF16); err != nil {
		t.Fatal(err)
	}
	if b := mustGetBuffer(t, o, "/a"); b.Text != "new\r\nTEXT" {
		t.Fatalf("buffer after an edit = %q", b.Text)
	}
	release := make(chan struct{})
	o.OpenLater("/b", 1, func() string {
		<-release
		return "b"
	})
	o.Close("/b")
	if _, ok := o.Get("/b"); ok {
		t.Fatal("a closed buffer is still open")
	}
	close(release)
}

// A text function that panics leaves the buffer empty instead of taking
// the process down.
func TestOpenLaterPanicLeavesEmptyBuffer(t *testing.T) {
	o := newOverlay()
	o.OpenLater("/p", 1, func() string { panic("boom") })
	if b := mustGetBuffer(t, o, "/p"); b.Text != "" || b.Version != 1 {
		t.Fatalf("buffer = %+v", b)
	}
}

func sortedPaths(o *Overlay) []string {
	p := o.Paths()
	slices.Sort(p)
	return p
}
