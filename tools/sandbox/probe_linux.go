//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

var (
	probeOnce sync.Once
	probed    Support
)

// Probe says which protection this machine gives; it is measured once.
// With QWEN_LS_NO_SANDBOX=1 it reports none.
func Probe() Support {
	if os.Getenv(EnvDisable) == "1" {
		return Support{OS: runtime.GOOS, Reason: "turned off by " + EnvDisable}
	}
	probeOnce.Do(func() {
		probed = Support{OS: runtime.GOOS, Landlock: ABI()}
		probed.Mounts = probeMounts()
		if probed.Landlock < 4 {
			probed.Reason = "the kernel offers no Landlock with network rules (ABI 4 or later)"
		}
	})
	if os.Getenv(EnvNoNamespaces) == "1" {
		s := probed
		s.Mounts = false
		return s
	}
	return probed
}

// probeMounts runs the supervisor once with the namespaces and the
// confinement of a command that may write (a user, mount and PID
// namespace, its own /proc, Landlock, the system call filter and the
// guard) and reports whether that worked.
func probeMounts() bool {
	self, err := os.Executable()
	if err != nil {
		return false
	}
	cmd := exec.Command(self)
	s, err := Wrap(cmd, Policy{Mode: Protect, ProbeOnly: true})
	if err != nil || !s.Policy.Mounts {
		return false
	}
	return cmd.Run() == nil
}

// serverAttr adds the supervisor's process attributes, where the kernel
// gives them (the supervisor asks for its parent-death signal itself,
// armParentDeath): for a confined
// command, a mount namespace and a PID namespace (and, for a server that
// is not root, a user namespace with an identity map to make them in);
// for a command the person approved, run as root, a mount namespace for
// the read-only trust list and settings.
func serverAttr(a *syscall.SysProcAttr, p *Policy) {
	root := os.Geteuid() == 0
	if !p.Mode.Confined() {
		if len(p.AlwaysProtected) == 0 || !root {
			// A user namespace would stop sudo in a command the person
			// approved; the trust list is then kept by the tools' checks.
			return
		}
		if !Probe().Mounts {
			return
		}
		p.Mounts = true
		a.Unshareflags |= syscall.CLONE_NEWNS
		return
	}
	if !p.ProbeOnly && !Probe().Mounts {
		return
	}
	p.Mounts = true
	a.Cloneflags |= syscall.CLONE_NEWNS | syscall.CLONE_NEWPID
	if root {
		// Root makes the namespaces itself; the command then holds no
		// capability because the supervisor empties its bounding set
		// (DropBounding). A user namespace would cost its identity map,
		// which the server writes while the supervisor waits.
		return
	}
	a.Cloneflags |= syscall.CLONE_NEWUSER
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	a.GidMappingsEnableSetgroups = false
	a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
}
