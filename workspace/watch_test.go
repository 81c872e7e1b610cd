package workspace

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A stop that never returns (fsnotify's Windows backend under Wine lost
// the packet that wakes its reader) must not hold Close, and so the
// server's exit, for good.
func TestCloseWithinLeavesAStuckStopBehind(t *testing.T) {
	release := make(chan struct{})
	returned := make(chan struct{})
	err := closeWithin(20*time.Millisecond, func() error {
		defer close(returned)
		<-release
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "did not stop within 20ms") {
		t.Fatalf("closeWithin on a stuck stop: %v", err)
	}
	close(release)
	<-returned
}

func TestCloseWithinGivesStopsOwnResult(t *testing.T) {
	want := errors.New("close failed")
	if err := closeWithin(time.Hour, func() error { return want }); err != want {
		t.Fatalf("closeWithin = %v, want %v", err, want)
	}
	if err := closeWithin(time.Hour, func() error { return nil }); err != nil {
		t.Fatalf("closeWithin = %v, want nil", err)
	}
	// The real watcher closes within the bound.
	w, err := newWatcher()
	if err != nil {
		t.Skip("no file watcher here:", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}
