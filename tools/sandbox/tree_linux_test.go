package sandbox

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The cgroup a supervisor starts in stays open until the start, even when
// the caller keeps only the command: a descriptor closed by a finalizer in
// between made the fork fail with EBADF, now and then.
func TestCgroupOfAnUnconfinedCommandSurvivesACollection(t *testing.T) {
	trees.once.Do(func() { trees.base = cgroupBase() })
	if trees.base == "" {
		t.Skip("the server may not make cgroups here")
	}
	for i := range 20 {
		cmd := exec.Command("true")
		if _, err := Wrap(cmd, Policy{Mode: None}); err != nil {
			t.Fatal(err)
		}
		if !cmd.SysProcAttr.UseCgroupFD {
			t.Fatal("an unconfined command does not start in a cgroup of its own")
		}
		fd := cmd.SysProcAttr.CgroupFD
		dir, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		runtime.GC()
		runtime.GC()
		time.Sleep(time.Millisecond)
		err := cmd.Run()
		// Without Started nothing watches the group: close and remove it
		// here.
		_ = unix.Close(fd)
		_ = os.Remove(dir)
		if err != nil {
			t.Fatalf("start %d after a collection: %v", i+1, err)
		}
	}
}
