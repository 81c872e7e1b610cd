package sandbox

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/qwen-ls/qwen-ls/tools/procgroup"
	"golang.org/x/sys/unix"
)

// A supervisor that runs its command unconfined (one the person approved,
// an MCP server, a discovery command) has no PID namespace whose end takes
// the whole tree with it, and the command can kill it (kill -9 $PPID):
// what it started would then run on under init. Where the server may make
// cgroups (cgroup v2, its own cgroup writable: a systemd user session
// delegates it, and root may), each such supervisor starts inside a cgroup
// of its own (clone3's CLONE_INTO_CGROUP, so nothing runs outside it even
// for an instant). When the supervisor has exited, for any reason, the
// server kills whatever is left in the cgroup and removes it. Moving out
// of a cgroup takes a deliberate write to another cgroup's cgroup.procs,
// which no ordinary command does.

// treeGroups is where the server makes the cgroups of its trees; base is
// empty when it cannot.
type treeGroups struct {
	once sync.Once
	base string
	seq  atomic.Int64
}

var trees treeGroups

// treeGroup is the cgroup of one supervised tree.
type treeGroup struct {
	dir string
	// fd is the open folder that clone3 starts the supervisor in. It is a
	// plain descriptor, not an *os.File, whose finalizer could close it
	// between Wrap and the caller's start (a fork then fails with EBADF).
	fd int
}

// cgroupBase finds the server's own cgroup v2 folder, if it may make
// cgroups below it.
func cgroupBase() string {
	if os.Getenv(EnvNoCgroup) == "1" {
		return ""
	}
	mnt := cgroup2Mount()
	if mnt == "" {
		return ""
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	var rel string
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel, found = p, true
			break
		}
	}
	if !found {
		return ""
	}
	base := filepath.Join(mnt, filepath.Clean("/"+rel))
	// Starting a process in a child cgroup writes the common ancestor's
	// cgroup.procs: the server's own cgroup must be writable.
	if unix.Access(filepath.Join(base, "cgroup.procs"), unix.W_OK) != nil {
		return ""
	}
	probe := filepath.Join(base, fmt.Sprintf("qwen-ls-%d-probe", os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return ""
	}
	_, killErr := os.Stat(filepath.Join(probe, "cgroup.kill"))
	_, freezeErr := os.Stat(filepath.Join(probe, "cgroup.freeze"))
	_ = os.Remove(probe)
	if killErr != nil && freezeErr != nil {
		// Neither cgroup.kill (5.14) nor the freezer (5.2): a sweep
		// could race with forks.
		return ""
	}
	sweepStale(base)
	return base
}

// cgroup2Mount is where the cgroup v2 hierarchy is mounted ("" if it is
// not): /sys/fs/cgroup on unified systems, /sys/fs/cgroup/unified on
// hybrid ones.
func cgroup2Mount() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS... - FSTYPE SOURCE SUPER
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		if fs := strings.Fields(post); len(fs) == 0 || fs[0] != "cgroup2" {
			continue
		}
		if fields := strings.Fields(pre); len(fields) >= 5 && fields[3] == "/" {
			return unescapeMount(fields[4])
		}
	}
	return ""
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// sweepStale removes the empty cgroups a server that was killed left
// behind (its supervisors emptied them as they ended).
func sweepStale(base string) {
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "qwen-ls-")
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		if pid, err := strconv.Atoi(pidText); err != nil || pid == os.Getpid() || syscall.Kill(pid, 0) == nil {
			continue
		}
		_ = os.Remove(filepath.Join(base, e.Name()))
	}
}

// newTreeGroup makes the cgroup of a supervisor about to start; nil when
// the server cannot make cgroups.
func newTreeGroup() *treeGroup {
	trees.once.Do(func() { trees.base = cgroupBase() })
	if trees.base == "" {
		return nil
	}
	dir := filepath.Join(trees.base, fmt.Sprintf("qwen-ls-%d-%d", os.Getpid(), trees.seq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(dir)
		return nil
	}
	return &treeGroup{dir: dir, fd: fd}
}

// attach has the process start in the group.
func (g *treeGroup) attach(a *syscall.SysProcAttr) {
	a.UseCgroupFD = true
	a.CgroupFD = g.fd
}

// watch ends the group once the supervisor pid has exited. The wait
// leaves the reaping to the supervisor's owner.
func (g *treeGroup) watch(pid int) {
	go func() {
		procgroup.WaitExit(pid)
		g.end()
	}()
}

// discard removes a group whose supervisor never started.
func (g *treeGroup) discard() {
	_ = unix.Close(g.fd)
	_ = os.Remove(g.dir)
}

// end kills whatever is left in the group and removes it.
func (g *treeGroup) end() {
	defer unix.Close(g.fd)
	if !g.populated() {
		_ = os.Remove(g.dir)
		return
	}
	if os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0) != nil {
		g.killFrozen()
	}
	for deadline := time.Now().Add(2 * time.Second); g.populated() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	_ = os.Remove(g.dir)
}

// killFrozen kills every member with the group frozen, so that none can
// fork while the list is read (kernels before cgroup.kill).
func (g *treeGroup) killFrozen() {
	_ = os.WriteFile(filepath.Join(g.dir, "cgroup.freeze"), []byte("1"), 0)
	for i := 0; i < 100 && g.populated(); i++ {
		b, _ := os.ReadFile(filepath.Join(g.dir, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		_ = os.WriteFile(filepath.Join(g.dir, "cgroup.freeze"), []byte("0"), 0)
		time.Sleep(5 * time.Millisecond)
	}
}

// populated reports whether a process is left in the group.
func (g *treeGroup) populated() bool {
	b, err := os.ReadFile(filepath.Join(g.dir, "cgroup.events"))
	if err != nil {
		return false
	}
	return bytes.Contains(b, []byte("populated 1"))
}
