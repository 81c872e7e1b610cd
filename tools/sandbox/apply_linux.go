//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// devices are the files a read-only or workspace-write command may still
// write: the null sink and terminal-like character devices, which change
// no file.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}

// apply confines the supervisor (and so everything it starts) and returns
// the program to run.
func apply(p Policy, argv []string) (string, []string, error) {
	name, err := exec.LookPath(argv[0])
	if err != nil {
		return "", nil, err
	}
	if p.Mounts {
		if err := bindReadOnly(p.readOnlyPaths()); err != nil {
			return "", nil, err
		}
		// Capabilities given to make the mounts (in a user namespace)
		// do not pass to the command.
		_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	}
	if err := restrict(p); err != nil {
		return "", nil, fmt.Errorf("landlock: %w", err)
	}
	return name, argv, nil
}

// bindReadOnly makes each existing path a read-only bind mount of itself
// in the supervisor's private mount namespace. A file bind-mounted that way
// can neither be written nor renamed over nor removed (EBUSY).
func bindReadOnly(paths []string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mount namespace private: %w", err)
	}
	for _, path := range paths {
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

// restrict applies the Landlock rules of the policy to every thread of the
// supervisor.
func restrict(p Policy) error {
	switch p.Mode {
	case None, Protect:
		// Everything is allowed, but a process under Landlock cannot
		// change the mount topology, so the read-only binds stay, nor
		// reach the processes outside (/proc/PID/root of the server).
		// Best effort: on a kernel without Landlock the binds alone are
		// left.
		cfg := landlock.Config{HandledAccessFS: allFS}.BestEffort()
		return restrictThread(cfg, landlock.PathAccess(allFS, "/"))
	}
	cfg, err := strictConfig()
	if err != nil {
		return err
	}
	dev := landlock.RWFiles(devices...).IgnoreIfMissing()
	if ABI() >= 5 {
		// ioctl on the terminal (stty, isatty-driven tools); ABI 4
		// neither handles nor grants it.
		dev = dev.WithIoctlDev()
	}
	rules := []landlock.Rule{landlock.RODirs("/"), dev}
	if p.Mode == WorkspaceWrite {
		var dirs []string
		for _, d := range append(append([]string(nil), p.Writable...), p.TempDir) {
			if d != "" {
				dirs = append(dirs, d)
			}
		}
		if len(dirs) > 0 {
			rules = append(rules, landlock.RWDirs(dirs...).IgnoreIfMissing().WithRefer())
		}
	}
	// No network rule: every TCP connect and bind is denied.
	return restrictThread(cfg, rules...)
}

// restrictThread confines the calling OS thread, which the supervisor's
// goroutine is locked to and which starts the command: the command and
// everything it starts inherit the domain. Confining only this thread,
// not every thread of the supervisor as Config.Restrict does, saves the
// round of signals to each thread that costs about a millisecond per
// command; the other threads run only the supervisor's own code.
func restrictThread(cfg landlock.Config, rules ...landlock.Rule) error {
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil || fd < 0 {
		return err
	}
	defer unix.Close(fd)
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
	case abi >= 7:
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
