// Package sandbox runs commands under a supervisor process that dies with
// the server and confines what the command may change.
//
// The server does not run a command directly. It runs its own executable
// again as `qwen-ls sandbox-exec` (any binary that links this package can
// play that part: the check happens when the package is initialised), with
// the policy in an environment variable that the supervisor removes before
// it starts the command. The supervisor:
//
//   - learns when the server dies (Linux: a parent-death signal; macOS:
//     kqueue on the parent's pid) and then kills every process the command
//     started, wherever it moved in the process tree (Linux: the supervisor
//     is a child subreaper, so orphans come back to it);
//   - applies the policy to itself (Landlock rules and read-only bind
//     mounts on Linux, a Seatbelt profile on macOS) and then starts the
//     command, which inherits it;
//   - forwards the signals it gets and reports the command's exit status.
//
// The policies are described on Mode.
package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Mode says what a command may change.
type Mode string

const (
	// None runs the command as the person's own: they approved it. Only
	// the trust list and the user's settings file stay read-only (where
	// the kernel gives a private mount namespace).
	None Mode = "none"
	// ReadOnly is for commands the parser judged read-only: no write
	// anywhere but /dev/null and terminal-like devices, no socket at all;
	// reads by allow-list (Layout.Readable).
	ReadOnly Mode = "read-only"
	// Protect is for commands that run because of an allow rule or an
	// approval mode: writes by allow-list (the roots, a private temporary
	// folder, the named build caches) except the protected class inside
	// the roots (Class), reads by allow-list, the network as the
	// person's.
	Protect Mode = "protect"
	// WorkspaceWrite is the stricter opt-in: Protect without the network
	// (no TCP, no UDP; Unix sockets only).
	WorkspaceWrite Mode = "workspace-write"
)

// Valid reports whether m is one of the four modes.
func (m Mode) Valid() bool {
	switch m {
	case None, ReadOnly, Protect, WorkspaceWrite:
		return true
	}
	return false
}

// Confined reports whether the mode confines the command (every mode but
// None).
func (m Mode) Confined() bool { return m == ReadOnly || m == Protect || m == WorkspaceWrite }

// Writes reports whether the mode lets the command write (inside its
// allow-list).
func (m Mode) Writes() bool { return m == Protect || m == WorkspaceWrite }

// Policy is what the supervisor applies before it starts the command.
type Policy struct {
	Mode Mode `json:"mode"`
	// Writable are the folders a Protect or WorkspaceWrite command may
	// write (Layout.Writable: the roots, the temporary folder, the
	// caches); TempDir is its private temporary folder, which the
	// supervisor also gives as TMPDIR.
	Writable []string `json:"writable,omitempty"`
	TempDir  string   `json:"tempDir,omitempty"`
	// Readable are the folders and files a confined command may read
	// (Layout.Readable). Empty: everything.
	Readable []string `json:"readable,omitempty"`
	// Class is the protected class inside the roots: read-only to a
	// Protect or WorkspaceWrite command, by the guard and by read-only
	// bind mounts of what exists.
	Class Class `json:"class"`
	// AlwaysProtected are read-only in mode None too, where the kernel
	// gives a mount namespace (the trust list, the user's settings).
	AlwaysProtected []string `json:"alwaysProtected,omitempty"`
	// Linger keeps the supervisor alive after the command exits while
	// processes the command started still run, so that they die with
	// the server too. The command's status then comes on a pipe (see
	// Supervised.MainDone).
	Linger bool `json:"linger,omitempty"`
	// Mounts is set by Wrap when the supervisor starts in private user,
	// mount and PID namespaces: it makes the read-only bind mounts and
	// mounts its own /proc, and fails rather than run the command
	// without them.
	Mounts bool `json:"mounts,omitempty"`
	// ServerFD is the descriptor, in the supervisor, of a pidfd of the
	// server (0: none): in a PID namespace the parent cannot be found
	// by its pid.
	ServerFD int `json:"serverFD,omitempty"`
	// ProbeOnly makes the supervisor apply the policy and exit 0 without
	// running anything (Probe uses it).
	ProbeOnly bool `json:"probeOnly,omitempty"`
	// UnsetGORACE: Wrap set GORACE for a race-enabled supervisor; the
	// command does not get it.
	UnsetGORACE bool `json:"unsetGORACE,omitempty"`
}

// Network reports whether the policy lets the command open TCP
// connections and listeners.
func (p Policy) Network() bool {
	return p.Mode == None || p.Mode == Protect
}

// envPolicy carries the JSON policy from the server to the supervisor,
// which removes it from its environment before it starts the command.
const envPolicy = "QWEN_LS_SANDBOX_POLICY"

// EnvOptional, set to 1, lets the Landlock check of the tests pass on a
// kernel without Landlock (developers on old kernels). CI never sets it.
const EnvOptional = "QWEN_LS_SANDBOX_OPTIONAL"

// EnvNoNamespaces, set to 1, makes Probe report no namespaces, as on a
// system that refuses unprivileged user namespaces: confined commands
// then get Landlock, the filter and the guard without the bind mounts and
// the private /proc. Tests use it.
const EnvNoNamespaces = "QWEN_LS_SANDBOX_NO_NAMESPACES"

// EnvNoWarm, set to 1, starts every command's supervisor when the command
// starts, with none started ahead (the benchmark measures both ways).
const EnvNoWarm = "QWEN_LS_SANDBOX_NO_WARM"

// EnvNoCgroup, set to 1, starts no supervisor in a cgroup of its own, as
// on a system where the server may not make cgroups.
const EnvNoCgroup = "QWEN_LS_SANDBOX_NO_CGROUP"

// EnvDisable, set to 1, makes Probe report no sandbox, as on a kernel
// without one: read-only commands then ask. Tests use it.
const EnvDisable = "QWEN_LS_NO_SANDBOX"

// Arg is the first argument that makes a binary act as the supervisor.
const Arg = "sandbox-exec"

func encodePolicy(p Policy) (string, error) {
	if !p.Mode.Valid() {
		return "", fmt.Errorf("sandbox: unknown mode %q", p.Mode)
	}
	b, err := json.Marshal(p)
	return string(b), err
}

func decodePolicy(s string) (Policy, error) {
	var p Policy
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return p, fmt.Errorf("sandbox: bad policy: %w", err)
	}
	if !p.Mode.Valid() {
		return p, fmt.Errorf("sandbox: unknown mode %q", p.Mode)
	}
	return p, nil
}

// Denial is an operation the sandbox refused, as the supervisor saw it.
type Denial struct {
	// Op is what was tried: "write" (create, replace, rename, link,
	// change the mode), "read" or "connect".
	Op string
	// Path is the file, with links resolved as the kernel did.
	Path string
	// Kind is the protected class the path belongs to ("" when it is
	// outside the write allow-list instead).
	Kind Kind
}

// String is the denial as the person and the model read it.
func (d Denial) String() string {
	s := d.Op + " " + d.Path
	if why := d.Kind.Why(); why != "" {
		s += " (" + why + ")"
	} else if d.Op == "write" {
		s += " (outside the folders a command that runs unasked may write: the workspace roots, its temporary folder and the build caches)"
	}
	return s
}

// Support says which protection this machine gives.
type Support struct {
	// OS is runtime.GOOS.
	OS string `json:"os"`
	// Landlock is the kernel's Landlock ABI version (0: none). Seatbelt
	// is true on macOS when /usr/bin/sandbox-exec exists.
	Landlock int  `json:"landlock,omitempty"`
	Seatbelt bool `json:"seatbelt,omitempty"`
	// Mounts says whether private user, mount and PID namespaces are
	// available for confined commands (Linux: unprivileged user
	// namespaces, and a /proc that a namespace may mount again).
	Mounts bool `json:"mountNamespaces"`
	// Reason says why there is no sandbox, when there is none.
	Reason string `json:"reason,omitempty"`
}

// ReadOnly reports whether read-only commands can be confined, so that
// they may run unasked.
func (s Support) ReadOnly() bool {
	return s.Reason == "" && (s.Landlock >= 4 || s.Seatbelt)
}

// String is the one-line summary the server logs and the clients show.
func (s Support) String() string {
	switch {
	case s.Landlock > 0:
		return fmt.Sprintf("sandbox: landlock ABI %d, namespaces: %s", s.Landlock, yesNo(s.Mounts))
	case s.Seatbelt:
		return "sandbox: seatbelt (sandbox-exec)"
	}
	r := s.Reason
	if r == "" {
		r = "not available on " + s.OS
	}
	return "sandbox: none (" + r + "); read-only commands ask before they run"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// removeEnv drops every entry of name from env.
func removeEnv(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

func hasEnv(env []string, name string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}

// setEnv replaces or adds name=value in env.
func setEnv(env []string, name, value string) []string {
	return append(removeEnv(env, name), name+"="+value)
}

// exitCode is the status the supervisor exits with when it cannot start
// or confine the command (as a shell does for a command it cannot run).
const exitCode = 126

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "qwen-ls sandbox: "+format+"\n", args...)
	os.Exit(exitCode)
}
