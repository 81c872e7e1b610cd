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
	return probed
}

// probeMounts runs the supervisor once with a read-only bind mount of its
// own executable and reports whether that worked.
func probeMounts() bool {
	self, err := os.Executable()
	if err != nil {
		return false
	}
	cmd := exec.Command(self)
	s, err := Wrap(cmd, Policy{Mode: Protect, Protected: []string{self}, ProbeOnly: true})
	if err != nil || !s.Policy.Mounts {
		return false
	}
	return cmd.Run() == nil
}

// serverAttr adds the supervisor's process attributes: pdeathSignal when
// the server dies, and a private mount namespace (a user namespace with an
// identity map as well when not root) when the policy has paths to make
// read-only and the kernel gives one.
func serverAttr(a *syscall.SysProcAttr, p *Policy) {
	a.Pdeathsig = pdeathSignal
	if len(p.readOnlyPaths()) == 0 {
		return
	}
	root := os.Geteuid() == 0
	if p.Mode == None && !root {
		// A user namespace would stop sudo in a command the person
		// approved; the trust list is then kept by the tools' checks.
		return
	}
	if !p.ProbeOnly && !Probe().Mounts {
		return
	}
	p.Mounts = true
	if root {
		a.Unshareflags |= syscall.CLONE_NEWNS
		return
	}
	a.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	a.GidMappingsEnableSetgroups = false
	a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
}
