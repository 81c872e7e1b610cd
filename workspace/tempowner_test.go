package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func ownerToken(pid int, start uint64) string {
	return strconv.FormatInt(int64(pid), 36) + "-" + strconv.FormatUint(start, 36)
}

func forgetSweeps() {
	sweeps.Lock()
	sweeps.last = nil
	sweeps.Unlock()
}

func TestTempNamesRecordTheirWriter(t *testing.T) {
	name, f, err := createTemp(t.TempDir(), "a.b-c.go", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	pid, start, ok := tempOwner(filepath.Base(name))
	wantStart, _ := procStart(os.Getpid())
	if !ok || pid != os.Getpid() || start != wantStart {
		t.Fatalf("tempOwner(%q) = %d %d %v, want this process (%d, %d)", filepath.Base(name), pid, start, ok, os.Getpid(), wantStart)
	}
	if isStaleTemp(filepath.Base(name), time.Now().Add(-time.Hour), time.Now()) {
		t.Fatalf("a temp file of this very process counts as a leftover")
	}
	for _, n := range []string{".qwen-tmp-main.go.3k9x0a1b2c3d", ".qwen-tmp-x.abc", ".qwen-tmp-.1-2.abc", ".qwen-tmp-a.-2.abc", ".qwen-tmp-a.1-.abc"} {
		if _, _, ok := tempOwner(n); ok {
			t.Errorf("tempOwner(%q) found an owner", n)
		}
	}
}

// A write cut by SIGKILL leaves its temp file; once its writer is gone, the
// next write into that folder by a live process removes it, with no restart
// and whatever its age. A temp file whose writer still runs stays.
func TestWriteSweepsTempFilesOfKilledWriters(t *testing.T) {
	dir := t.TempDir()
	// The writer is this test binary, waiting in TestHelperWaitsToBeKilled:
	// a process on every system, without a program Wine may lack.
	writer := exec.Command(os.Args[0], "-test.run=^TestHelperWaitsToBeKilled$")
	writer.Env = append(os.Environ(), helperWaitVar+"=1")
	if err := writer.Start(); err != nil {
		t.Fatal(err)
	}
	defer writer.Process.Kill()
	start, ok := procStart(writer.Process.Pid)
	if !ok {
		t.Fatal("no start time for a running process")
	}
	leftover := filepath.Join(dir, tempPrefix+"notes.md."+ownerToken(writer.Process.Pid, start)+".k3")
	// The same pid with another start time is another process: a pid
	// reused after its writer died.
	reused := filepath.Join(dir, tempPrefix+"reused.md."+ownerToken(writer.Process.Pid, start+1)+".k4")
	// A name without an owner, younger than this process: it may be a
	// write in progress of an older server, so it waits for age.
	ownerless := filepath.Join(dir, tempPrefix+"old-style.md.z9")
	for _, p := range []string{leftover, reused, ownerless} {
		if err := os.WriteFile(p, []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }

	forgetSweeps()
	if err := WriteFileAtomic(filepath.Join(dir, "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !exists(leftover) || exists(reused) || !exists(ownerless) {
		t.Fatalf("with the writer alive: leftover %v (want true), reused pid %v (want false), ownerless %v (want true)",
			exists(leftover), exists(reused), exists(ownerless))
	}

	if err := writer.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	_ = writer.Wait()
	forgetSweeps()
	if err := WriteFileAtomic(filepath.Join(dir, "b.txt"), []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	if exists(leftover) {
		t.Fatalf("the temp file of a killed writer is still there after a write into its folder")
	}
	if !exists(ownerless) {
		t.Fatalf("a young temp file without an owner was removed")
	}
	for _, n := range []string{"a.txt", "b.txt"} {
		if got, err := os.ReadFile(filepath.Join(dir, n)); err != nil || len(got) != 1 {
			t.Fatalf("%s: %q %v", n, got, err)
		}
	}
}

// The sweep removes regular files only: a symlink or a folder with a temp
// file's name is someone else's.
func TestSweepLeavesLinksAndFolders(t *testing.T) {
	needSymlinks(t)
	dir := t.TempDir()
	dead := ownerToken(1<<30, 1)
	link := filepath.Join(dir, tempPrefix+"l."+dead+".a")
	sub := filepath.Join(dir, tempPrefix+"d."+dead+".b")
	if err := os.Symlink("a.txt", link); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	forgetSweeps()
	if err := WriteFileAtomic(filepath.Join(dir, "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, sub} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed", p)
		}
	}
}

// helperWaitVar makes TestHelperWaitsToBeKilled wait, in a child process
// that stands for a writer.
const helperWaitVar = "QWEN_LS_TEST_WAIT_TO_BE_KILLED"

// TestHelperWaitsToBeKilled is not a test: run as a child with
// helperWaitVar set, it waits until it is killed (at most ten minutes).
func TestHelperWaitsToBeKilled(t *testing.T) {
	if os.Getenv(helperWaitVar) == "" {
		t.Skip("a helper process for TestWriteSweepsTempFilesOfKilledWriters")
	}
	time.Sleep(10 * time.Minute)
}
