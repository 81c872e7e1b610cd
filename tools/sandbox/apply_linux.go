//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/qwen-ls/qwen-ls/tools/sandbox/launch"
)

// devices are the files a read-only or workspace-write command may still
// write: the null sink and terminal-like character devices, which change
// no file.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}

// launchPlan works out everything the supervisor's first stage (package
// launch) does for p, so that the supervisor only opens, mounts and calls
// what the plan lists: the binds of what exists of the protected class,
// its own /proc, the Landlock ruleset, the system call filter, and the
// command with its environment.
func launchPlan(p Policy, path string, args []string) (launch.Plan, error) {
	lp := launch.Plan{
		Path: path, Args: args, ProbeOnly: p.ProbeOnly,
		Unset: []string{envPolicy, launch.EnvPlan},
	}
	if p.UnsetGORACE {
		lp.Unset = append(lp.Unset, "GORACE")
	}
	if p.Mode == ReadOnly {
		lp.Set = append(lp.Set, "GIT_OPTIONAL_LOCKS=0")
	}
	if p.Mode.Writes() && p.TempDir != "" {
		lp.Set = append(lp.Set, "TMPDIR="+p.TempDir)
	}
	if p.Linger {
		lp.StatusFD = statusFD
	}
	if p.ServerFD > 0 {
		lp.CloseOnExec = append(lp.CloseOnExec, p.ServerFD)
	}
	if p.Mounts {
		lp.Mounts, lp.ClearAmbient = true, true
		if p.Mode.Confined() {
			if p.Mode.Writes() {
				lp.Binds = classBinds(p.Class)
			}
			// The command's own /proc: its PID namespace, so that no
			// other process's command line, environment or files show.
			lp.Proc = true
		} else {
			for _, a := range p.AlwaysProtected {
				if a != "" {
					lp.Binds = append(lp.Binds, launch.Bind{Path: a, ReadOnly: true})
				}
			}
		}
	}
	if !p.Mode.Confined() {
		// Everything is allowed, but a process under Landlock cannot
		// change the mount topology, so the read-only binds stay, nor
		// reach the processes outside (/proc/PID/root of the server).
		// Best effort: on a kernel without Landlock the binds alone are
		// left.
		if fs := fsRights(ABI()); fs != 0 {
			lp.Landlock = &launch.Ruleset{HandledFS: fs, Rules: []launch.Rule{{Path: "/", Access: fs}}}
			lp.Optional = true
		}
		return lp, nil
	}
	if !guardArch {
		return lp, errors.New("no system call filter for this architecture")
	}
	// Root in the user namespace: the command gets no capability, not
	// even inside the namespace. Nothing the command runs may read or
	// write the supervisor's memory (it holds the guard, which is not
	// confined).
	lp.DropBounding = os.Geteuid() == 0
	lp.Undumpable = true
	rs, err := confinedRuleset(p)
	if err != nil {
		return lp, fmt.Errorf("landlock: %w", err)
	}
	lp.Landlock = rs
	raw, err := filterFor(p.Mode, p.Mode.Writes())
	if err != nil {
		return lp, err
	}
	for _, r := range raw {
		lp.Filter = append(lp.Filter, launch.Instruction{Op: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K})
	}
	lp.Listener = p.Mode.Writes()
	if lp.Listener {
		lp.Devices = devices
	}
	return lp, nil
}

// fsRights are the file system rights Landlock knows at ABI abi.
func fsRights(abi int) uint64 {
	switch {
	case abi >= 9:
		return 1<<17 - 1
	case abi >= 5:
		return 1<<16 - 1
	case abi >= 3:
		return 1<<15 - 1
	case abi == 2:
		return 1<<14 - 1
	case abi == 1:
		return 1<<13 - 1
	}
	return 0
}

// classBinds lists what exists of the protected class, to be made
// read-only bind mounts: at the top of each root, the protected folders
// and files; in each git directory, every entry git's everyday commands
// do not write (config, hooks, info, and whatever else is there), after
// the git directory itself is made a mount point of its own (read-write,
// so that git can take its locks and write its index and HEAD beside the
// rest), which cannot be renamed or replaced. What does not exist is kept
// by the guard.
func classBinds(c Class) []launch.Bind {
	var binds, gitBinds []launch.Bind
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
			binds = append(binds, launch.Bind{Path: p, ReadOnly: true})
		}
	}
	for _, g := range append(gitDirs, c.GitDirs...) {
		entries, err := os.ReadDir(g)
		if err != nil {
			continue
		}
		gitBinds = append(gitBinds, launch.Bind{Path: g})
		for _, e := range entries {
			if !GitTopWritable(e.Name()) {
				gitBinds = append(gitBinds, launch.Bind{Path: filepath.Join(g, e.Name()), ReadOnly: true})
			}
		}
		gitBinds = append(gitBinds, launch.Bind{Path: filepath.Join(g, "objects", "info"), ReadOnly: true})
	}
	for _, h := range c.HookDirs {
		binds = append(binds, launch.Bind{Path: h, ReadOnly: true})
	}
	return append(gitBinds, binds...)
}

// The rights a rule grants: read (and execute) a hierarchy; read and
// write it, moving files within and into it included; read and write
// files (devices).
var (
	rightsRead = uint64(unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR)
	rightsRW   = rightsRead | uint64(unix.LANDLOCK_ACCESS_FS_WRITE_FILE|unix.LANDLOCK_ACCESS_FS_REMOVE_DIR|unix.LANDLOCK_ACCESS_FS_REMOVE_FILE|
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR|unix.LANDLOCK_ACCESS_FS_MAKE_DIR|unix.LANDLOCK_ACCESS_FS_MAKE_REG|unix.LANDLOCK_ACCESS_FS_MAKE_SOCK|
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO|unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK|unix.LANDLOCK_ACCESS_FS_MAKE_SYM|unix.LANDLOCK_ACCESS_FS_TRUNCATE|
		unix.LANDLOCK_ACCESS_FS_REFER)
	rightsDevice = uint64(unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV)
)

// confinedRuleset is the Landlock ruleset of a confined policy: read the
// readable list, write the writable list (Protect, WorkspaceWrite) and
// the devices; no TCP (read-only, workspace-write); and, on ABI 6 and
// later, no signal to and no abstract socket of a process outside
// (read-only, workspace-write). A rule grants only rights the ruleset
// handles; the supervisor narrows a rule for a file to the file rights.
func confinedRuleset(p Policy) (*launch.Ruleset, error) {
	cfg, err := strictConfig()
	if err != nil {
		return nil, err
	}
	switch p.Mode {
	case Protect:
		// The network as the person's own: TCP, UDP, Unix sockets.
		cfg.net = 0
		cfg.scoped = 0
		cfg.fs &^= unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	case WorkspaceWrite:
		// Unix sockets stay (a build server, the Docker socket).
		cfg.fs &^= unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	}
	fs := cfg.fs
	rs := &launch.Ruleset{HandledFS: fs, HandledNet: cfg.net, Scoped: cfg.scoped}
	add := func(path string, access uint64) {
		if path != "" && access&fs != 0 {
			rs.Rules = append(rs.Rules, launch.Rule{Path: path, Access: access & fs})
		}
	}
	if len(p.Readable) == 0 {
		add("/", rightsRead)
	}
	for _, r := range p.Readable {
		add(r, rightsRead)
	}
	for _, d := range devices {
		add(d, rightsDevice)
	}
	if p.Mode.Writes() {
		for _, d := range append(append([]string(nil), p.Writable...), p.TempDir) {
			add(d, rightsRW)
		}
	}
	return rs, nil
}

// restrictWith confines the calling OS thread with the ruleset fd. The
// supervisor's goroutine is locked to the thread that starts the
// command, and the command and everything it starts inherit the domain.
// Confining only this thread, not every thread of the supervisor as
// go-landlock's Config.Restrict does, saves the round of signals to each thread that
// costs about a millisecond per command; the other threads run only the
// supervisor's own code.
func restrictWith(fd int, flags uint32) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), uintptr(flags), 0); e != 0 {
		return e
	}
	return nil
}

// landlockConfig is what a Landlock ruleset handles: the file-system and
// network rights, and the scopes.
type landlockConfig struct{ fs, net, scoped uint64 }

// strictConfig is the newest configuration the kernel fully supports,
// with network rules (ABI 4 or later).
func strictConfig() (landlockConfig, error) { return configFor(ABI()) }

// newestABI is the newest Landlock ABI whose rights this code knows;
// a newer kernel is used as this one.
const newestABI = 10

// configFor is everything Landlock ABI abi can handle, up to newestABI.
// The rights are x/sys/unix's names of the kernel's bits, added in the
// ABI that introduced each (the kernel's landlock.h and its
// documentation). These were go-landlock's V4 to V10 until that module
// was dropped: its system-call wrappers import libcap's psx, whose cgo
// file made every cgo-enabled build link externally (see
// docs/benchmarks.md, "Idle memory"). landlock_linux_test.go checks the table
// against go-landlock's.
func configFor(abi int) (landlockConfig, error) {
	if abi < 4 {
		return landlockConfig{}, errors.New("the kernel offers no Landlock with network rules (ABI 4 or later)")
	}
	abi = min(abi, newestABI)
	c := landlockConfig{
		// ABI 1: execute up to make_sym (the first 13 bits); 2: refer;
		// 3: truncate.
		fs: unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
			unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR |
			unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
			unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
			unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
			unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
			unix.LANDLOCK_ACCESS_FS_MAKE_SYM | unix.LANDLOCK_ACCESS_FS_REFER |
			unix.LANDLOCK_ACCESS_FS_TRUNCATE,
		// ABI 4: TCP.
		net: unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP,
	}
	if abi >= 5 {
		c.fs |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	if abi >= 6 {
		c.scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	if abi >= 9 {
		c.fs |= unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	}
	if abi >= 10 {
		c.net |= unix.LANDLOCK_ACCESS_NET_BIND_UDP | unix.LANDLOCK_ACCESS_NET_CONNECT_SEND_UDP
	}
	return c, nil
}

// ABI is the kernel's Landlock ABI version, 0 when it has none.
func ABI() int {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0
	}
	return int(v)
}

// planFor is the launch plan of p for the command argv.
func planFor(p Policy, argv []string) (*launch.Plan, error) {
	lp, err := launchPlan(p, argv[0], argv)
	if err != nil {
		return nil, err
	}
	return &lp, nil
}
