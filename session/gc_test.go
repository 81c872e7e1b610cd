package session

import (
	"runtime/debug"
	"testing"
)

func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// Turns with large calls share the tighter collector setting; the last to
// end restores what was set before, and a setting already tighter (or off)
// is left alone.
func TestTightenGCIsSharedAndRestored(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	r1 := tightenGC()
	r2 := tightenGC()
	if p := gcPercent(); p != largeCallGCPercent {
		t.Fatalf("while two turns run: GOGC %d, want %d", p, largeCallGCPercent)
	}
	r1()
	if p := gcPercent(); p != largeCallGCPercent {
		t.Fatalf("after the first turn ended: GOGC %d, want %d", p, largeCallGCPercent)
	}
	r2()
	if p := gcPercent(); p != 100 {
		t.Fatalf("after both ended: GOGC %d, want 100 back", p)
	}
	for _, setting := range []int{10, -1} {
		debug.SetGCPercent(setting)
		r := tightenGC()
		if p := gcPercent(); p != setting {
			t.Fatalf("GOGC %d was changed to %d", setting, p)
		}
		r()
		if p := gcPercent(); p != setting {
			t.Fatalf("GOGC %d came back as %d", setting, p)
		}
	}
}
