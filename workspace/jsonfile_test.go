package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Writers that change the trust list or a settings file at the same time
// (two servers, or a server and `qwen-ls trust`) keep every change: the
// read-change-write of each holds a lock on the folder.
func TestConcurrentWritersKeepEveryChange(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	file := filepath.Join(home, TrustFileName)
	const writers = 24
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers)
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- SetTrustLevel(file, projectPath(i), TrustFolder)
		}()
	}
	// Two settings readers over one user file, as two servers have.
	opts := SettingsOptions{UserDir: home, SystemPath: filepath.Join(dir, "none.json"), Getenv: func(string) (string, bool) { return "", false }}
	a, b := NewSettings(opts), NewSettings(opts)
	for i := 0; i < writers; i++ {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.AppendAllowRules(ScopeUser, []string{fmt.Sprintf("Bash(tool%d *)", i)})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	list, err := ReadTrustFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < writers; i++ {
		if list[projectPath(i)] != TrustFolder {
			t.Fatalf("the trust list lost %s: %v", projectPath(i), list)
		}
	}
	c := NewSettings(opts)
	c.Load()
	allow := c.Strings("permissions.allow")
	for i := 0; i < writers; i++ {
		if !slices.Contains(allow, fmt.Sprintf("Bash(tool%d *)", i)) {
			t.Fatalf("the user settings lost Bash(tool%d *): %v", i, allow)
		}
	}
	// Nothing is left beside the files: no lock or temp files.
	ents, _ := os.ReadDir(home)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	// On Windows the lock is held on an empty lock file, which stays.
	names = slices.DeleteFunc(names, func(n string) bool { return runtime.GOOS == "windows" && n == lockFileName })
	if got := strings.Join(names, ","); got != "settings.json,"+TrustFileName {
		t.Fatalf("the folder holds %s", got)
	}
}

// projectPath is an absolute folder path on any system.
func projectPath(i int) string {
	return filepath.Join(filepath.VolumeName(os.TempDir())+string(filepath.Separator), "projects", fmt.Sprintf("p%d", i))
}
