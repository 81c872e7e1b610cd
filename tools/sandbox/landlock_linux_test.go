//go:build linux

package sandbox

import (
	"testing"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// TestConfigForMatchesGoLandlock checks the rights each Landlock ABI
// handles against go-landlock's configurations, which the sandbox used
// before it named the kernel's bits itself. go-landlock is only a test
// dependency: the binary does not link it (nor libcap's psx).
func TestConfigForMatchesGoLandlock(t *testing.T) {
	want := map[int]landlock.Config{
		4: landlock.V4, 5: landlock.V5, 6: landlock.V6, 7: landlock.V7,
		8: landlock.V8, 9: landlock.V9, 10: landlock.V10,
		// A kernel newer than this code is used as the newest it knows.
		11: landlock.V10, 12: landlock.V10,
	}
	for abi := 0; abi <= 12; abi++ {
		got, err := configFor(abi)
		w, ok := want[abi]
		if !ok {
			if err == nil {
				t.Errorf("ABI %d: got %+v, want an error (no network rules before ABI 4)", abi, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("ABI %d: %v", abi, err)
			continue
		}
		if got.fs != uint64(w.HandledAccessFS) || got.net != uint64(w.HandledAccessNet) || got.scoped != uint64(w.Scoped) {
			t.Errorf("ABI %d: fs %#x net %#x scoped %#x, go-landlock has fs %#x net %#x scoped %#x",
				abi, got.fs, got.net, got.scoped, w.HandledAccessFS, w.HandledAccessNet, w.Scoped)
		}
	}
}

// TestABIMatchesGoLandlock checks the ABI version read with the raw
// system call against go-landlock's own reading of it.
func TestABIMatchesGoLandlock(t *testing.T) {
	want, err := llsys.LandlockGetABIVersion()
	if err != nil {
		want = 0
	}
	if got := ABI(); got != want {
		t.Errorf("ABI() = %d, go-landlock reads %d", got, want)
	}
}
