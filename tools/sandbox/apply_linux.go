//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// devices are the files a read-only or workspace-write command may still
// write: the null sink and terminal-like character devices, which change
// no file.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}

// apply confines the supervisor's thread (and so everything it starts)
// and returns the program to run. report receives what the guard refuses.
func apply(p Policy, argv []string, report func(Denial)) (string, []string, error) {
	name, err := exec.LookPath(argv[0])
	if err != nil {
		return "", nil, err
	}
	if p.Mounts {
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return "", nil, fmt.Errorf("make the mount namespace private: %w", err)
		}
		if p.Mode.Confined() {
			if p.Mode.Writes() {
				if err := bindClass(p.Class); err != nil {
					return "", nil, err
				}
			}
			// The command's own /proc: its PID namespace, so that no
			// other process's command line, environment or files show.
			if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
				return "", nil, fmt.Errorf("mount /proc: %w", err)
			}
		} else if err := bindReadOnly(p.AlwaysProtected); err != nil {
			return "", nil, err
		}
		// Capabilities given to make the mounts (in a user namespace)
		// do not pass to the command.
		_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	}
	if !p.Mode.Confined() {
		// Everything is allowed, but a process under Landlock cannot
		// change the mount topology, so the read-only binds stay, nor
		// reach the processes outside (/proc/PID/root of the server).
		// Best effort: on a kernel without Landlock the binds alone are
		// left.
		cfg := landlock.Config{HandledAccessFS: allFS}.BestEffort()
		fd, flags, err := cfg.NewRulesetFD(landlock.PathAccess(allFS, "/"))
		if err != nil || fd < 0 {
			return name, argv, err
		}
		defer unix.Close(fd)
		return name, argv, restrictWith(fd, flags)
	}
	if !guardArch {
		return "", nil, errors.New("no system call filter for this architecture")
	}
	if os.Geteuid() == 0 {
		// Root in the user namespace: the command gets no capability,
		// not even inside the namespace.
		for c := 0; c <= unix.CAP_LAST_CAP; c++ {
			_ = unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		}
	}
	// Nothing the command runs may read or write the supervisor's
	// memory (it holds the guard, which is not confined).
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	fd, flags, err := confinedRuleset(p)
	if err != nil {
		return "", nil, fmt.Errorf("landlock: %w", err)
	}
	if err := restrictWith(fd, flags); err != nil {
		unix.Close(fd)
		return "", nil, fmt.Errorf("landlock: %w", err)
	}
	listener, err := installFilter(p.Mode, p.Mode.Writes())
	if err != nil {
		unix.Close(fd)
		return "", nil, err
	}
	if p.Mode.Writes() {
		// The ruleset stays open: the guard confines a new worker with
		// it for each call that waits on a pipe.
		if err := startGuard(listener, fd, flags, p, report); err != nil {
			return "", nil, fmt.Errorf("guard: %w", err)
		}
	} else {
		unix.Close(fd)
	}
	return name, argv, nil
}

// bindClass makes what exists of the protected class read-only bind
// mounts: at the top of each root, the protected folders and files; in
// each git directory, every entry git's everyday commands do not write
// (config, hooks, info, and whatever else is there), after the git
// directory itself is made a mount point of its own, which cannot be
// renamed or replaced. What does not exist is kept by the guard.
func bindClass(c Class) error {
	var gitDirs []string
	for _, root := range c.Roots {
		entries, err := os.ReadDir(root)
		if err != nil {
			continue
		}
		for _, e := range entries {
			p := filepath.Join(root, e.Name())
			k, ok := c.Protected(p)
			if !ok {
				continue
			}
			if k == KindGit {
				if fi, err := os.Stat(p); err == nil && fi.IsDir() {
					gitDirs = append(gitDirs, p)
					continue
				}
			}
			if err := bindReadOnly([]string{p}); err != nil {
				return err
			}
		}
	}
	gitDirs = append(gitDirs, c.GitDirs...)
	for _, g := range gitDirs {
		if err := bindGitDir(g); err != nil {
			return err
		}
	}
	return bindReadOnly(c.HookDirs)
}

// bindGitDir makes g a mount point (read-write, so that git can take its
// locks and write its index and HEAD beside the rest) and every entry git
// does not write a read-only mount on it.
func bindGitDir(g string) error {
	fi, err := os.Stat(g)
	if err != nil || !fi.IsDir() {
		return nil
	}
	if err := unix.Mount(g, g, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", g, err)
	}
	entries, err := os.ReadDir(g)
	if err != nil {
		return fmt.Errorf("read %s: %w", g, err)
	}
	var ro []string
	for _, e := range entries {
		if !GitTopWritable(e.Name()) {
			ro = append(ro, filepath.Join(g, e.Name()))
		}
	}
	ro = append(ro, filepath.Join(g, "objects", "info"))
	return bindReadOnly(ro)
}

// bindReadOnly makes each existing path a read-only bind mount of itself
// in the supervisor's private mount namespace. A file bind-mounted that way
// can neither be written nor renamed over nor removed (EBUSY).
func bindReadOnly(paths []string) error {
	for _, path := range paths {
		if path == "" {
			continue
		}
		if _, err := os.Stat(path); err != nil {
			continue
		}
		if err := unix.Mount(path, path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", path, err)
		}
		flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
		// A remount in a user namespace must keep the locked flags of
		// the mount it copies.
		var st unix.Statfs_t
		if unix.Statfs(path, &st) == nil {
			for _, f := range []int64{unix.MS_NOSUID, unix.MS_NODEV, unix.MS_NOEXEC, unix.MS_NOATIME, unix.MS_NODIRATIME, unix.MS_RELATIME} {
				if st.Flags&f != 0 {
					flags |= uintptr(f)
				}
			}
		}
		if err := unix.Mount("", path, "", flags, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", path, err)
		}
	}
	return nil
}

// allFS is every file system right Landlock knows.
const allFS = landlock.AccessFSSet(1<<16 - 1)

// confinedRuleset is the Landlock ruleset of a confined policy: read the
// readable list, write the writable list (Protect, WorkspaceWrite) and
// the devices; no TCP (read-only, workspace-write); and, on ABI 6 and
// later, no signal to and no abstract socket of a process outside
// (read-only, workspace-write).
func confinedRuleset(p Policy) (int, uint32, error) {
	cfg, err := strictConfig()
	if err != nil {
		return -1, 0, err
	}
	switch p.Mode {
	case Protect:
		// The network as the person's own: TCP, UDP, Unix sockets.
		cfg.HandledAccessNet = 0
		cfg.Scoped = 0
		cfg.HandledAccessFS &^= landlock.AccessFSSet(llsys.AccessFSResolveUnix)
	case WorkspaceWrite:
		// Unix sockets stay (a build server, the Docker socket).
		cfg.HandledAccessFS &^= landlock.AccessFSSet(llsys.AccessFSResolveUnix)
	}
	var rules []landlock.Rule
	if len(p.Readable) == 0 {
		rules = append(rules, landlock.RODirs("/"))
	}
	for _, r := range p.Readable {
		fi, err := os.Stat(r)
		switch {
		case err != nil:
		case fi.IsDir():
			rules = append(rules, landlock.RODirs(r).IgnoreIfMissing())
		default:
			rules = append(rules, landlock.ROFiles(r).IgnoreIfMissing())
		}
	}
	dev := landlock.RWFiles(devices...).IgnoreIfMissing()
	if ABI() >= 5 {
		// ioctl on the terminal (stty, isatty-driven tools); ABI 4
		// neither handles nor grants it.
		dev = dev.WithIoctlDev()
	}
	rules = append(rules, dev)
	if p.Mode.Writes() {
		var dirs, files []string
		for _, d := range append(append([]string(nil), p.Writable...), p.TempDir) {
			if d == "" {
				continue
			}
			if fi, err := os.Stat(d); err == nil && !fi.IsDir() {
				files = append(files, d)
			} else {
				dirs = append(dirs, d)
			}
		}
		if len(dirs) > 0 {
			rules = append(rules, landlock.RWDirs(dirs...).IgnoreIfMissing().WithRefer())
		}
		if len(files) > 0 {
			rules = append(rules, landlock.RWFiles(files...).IgnoreIfMissing())
		}
	}
	return cfg.NewRulesetFD(rules...)
}

// restrictWith confines the calling OS thread with the ruleset fd. The
// supervisor's goroutine is locked to the thread that starts the
// command, and the command and everything it starts inherit the domain.
// Confining only this thread, not every thread of the supervisor as
// Config.Restrict does, saves the round of signals to each thread that
// costs about a millisecond per command; the other threads run only the
// supervisor's own code.
func restrictWith(fd int, flags uint32) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	return llsys.LandlockRestrictSelf(fd, flags)
}

// strictConfig is the newest configuration the kernel fully supports,
// with network rules (ABI 4 or later).
func strictConfig() (landlock.Config, error) {
	abi := ABI()
	switch {
	case abi >= 10:
		return landlock.V10, nil
	case abi == 9:
		return landlock.V9, nil
	case abi == 8:
		return landlock.V8, nil
	case abi == 7:
		return landlock.V7, nil
	case abi == 6:
		return landlock.V6, nil
	case abi == 5:
		return landlock.V5, nil
	case abi == 4:
		return landlock.V4, nil
	}
	return landlock.Config{}, errors.New("the kernel offers no Landlock with network rules (ABI 4 or later)")
}

// ABI is the kernel's Landlock ABI version, 0 when it has none.
func ABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}
