package tools

import (
	"github.com/qwen-ls/qwen-ls/tools/lazy"

	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/qwen-ls/qwen-ls/tools/sandbox"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// The values of the tools.sandbox setting.
const (
	sandboxOff            = "off"
	sandboxReadOnly       = "read-only"
	sandboxWorkspaceWrite = "workspace-write"
)

// sandboxSetting is tools.sandbox: read-only (the default: commands
// judged read-only run in the read-only sandbox, other unasked commands
// write by allow-list), workspace-write (every unasked command writes only
// inside the roots and a private temporary folder, without network) or
// danger-full-access, also spelled off (unasked commands run with no
// sandbox; both come back as sandboxOff). Full access is honoured only from
// the user, editor and system settings: the settings merge leaves it out
// of a workspace's layer, trusted or not (workspace.SandboxFullAccess). An
// unknown value counts as the default.
func (e *Env) sandboxSetting() string {
	if e == nil || e.Workspace == nil || e.Settings() == nil {
		return sandboxReadOnly
	}
	switch v := e.Settings().String("tools.sandbox", sandboxReadOnly); {
	case workspace.SandboxFullAccess(v):
		return sandboxOff
	case v == sandboxWorkspaceWrite:
		return v
	}
	return sandboxReadOnly
}

// readOnlyNeedsAsk reports whether a command judged read-only must still
// ask, because no sandbox can confine it here.
func (e *Env) readOnlyNeedsAsk() bool {
	return e.sandboxSetting() != sandboxOff && !sandbox.Probe().ReadOnly()
}

// shellPolicy chooses the sandbox of a command from why it runs and the
// tools.sandbox setting: read-only for a command the parser judged
// read-only, protect (writes by allow-list, with the network) or
// workspace-write (the same without it) for a command that runs because
// of an allow rule or an approval mode, none for one the person approved.
func (s *Shell) shellPolicy(call *Call) sandbox.Policy {
	p := sandbox.Policy{Mode: sandbox.None, AlwaysProtected: s.env.alwaysProtected()}
	setting := s.env.sandboxSetting()
	approval := approvalUnknown
	sessionID := ""
	if call != nil {
		approval, sessionID = call.Approval, call.SessionID
	}
	if setting == sandboxOff || approval == ApprovalUser || !sandbox.Probe().ReadOnly() {
		// Without a sandbox, the protected paths are kept by the
		// parser's check alone (the scheduler asks for them).
		return p
	}
	switch {
	case approval == ApprovalNotNeeded:
		p.Mode = sandbox.ReadOnly
	case setting == sandboxWorkspaceWrite:
		p.Mode = sandbox.WorkspaceWrite
	default:
		p.Mode = sandbox.Protect
	}
	layout := s.env.sandboxLayout(sessionID, p.Mode.Writes())
	p.Readable = layout.Readable()
	p.Class = s.env.protectedClass()
	if !p.Mode.Writes() {
		return p
	}
	p.Writable = layout.Writable()
	p.TempDir = layout.TempDir
	return p
}

// sandboxDenials are the messages of a command an operation was refused
// to: EACCES and EPERM from Landlock and the system call filter, EROFS and
// EBUSY from the read-only bind mounts.
var sandboxDenials = lazy.Regexp{Expr: `(?m)^(.*?)(?:: )?(Permission denied|Read-only file system|Operation not permitted|Device or resource busy)\s*$`}

// networkDenials are the messages of a command that found no network.
var networkDenials = lazy.Regexp{Expr: `(?i)(connect|socket|bind|/dev/tcp|network is unreachable|could not resolve|name resolution|name or service not known)`}

// quotedName finds the file a tool's message names ('x', ‘x’ or "x").
var quotedName = lazy.Regexp{Expr: `['‘"]([^'’"]+)['’"]`}

// maxBlocked bounds the refusals a result names.
const maxBlocked = 3

// blockedBySandbox says what the sandbox refused the command, or "" when
// nothing shows that it did. The supervisor's own reports come first:
// they name the exact path and why. What Landlock refuses without a report
// (a read, a removal, a connection) is taken from the error output only
// when the message names a path the policy forbids and the person's own
// rights allow, or, in a policy without network, a failed connection: an
// ordinary "Permission denied" (a file the person may not read either, a
// process's /proc entry) is not the sandbox's doing.
func blockedBySandbox(pol sandbox.Policy, denials []sandbox.Denial, dir, stderr string) string {
	if pol.Mode == sandbox.None {
		return ""
	}
	if len(denials) > 0 {
		var parts []string
		for i, d := range denials {
			if i == maxBlocked {
				parts = append(parts, fmt.Sprintf("and %d more", len(denials)-maxBlocked))
				break
			}
			parts = append(parts, d.String())
		}
		return strings.Join(parts, "; ")
	}
	for _, m := range sandboxDenials.Get().FindAllStringSubmatch(stderr, 8) {
		line := m[1]
		if !pol.Network() && networkDenials.Get().MatchString(line) && !strings.Contains(line, "/proc/") {
			return "network access (this policy has no network)"
		}
		name := ""
		if q := quotedName.Get().FindAllStringSubmatch(line, -1); len(q) > 0 {
			name = q[len(q)-1][1]
		} else if parts := strings.Split(strings.TrimSuffix(line, ":"), ": "); len(parts) > 1 {
			name = strings.TrimSpace(parts[len(parts)-1])
		}
		if name == "" || strings.ContainsAny(name, "\n") {
			continue
		}
		if !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		if what := refusedAccess(pol, filepath.Clean(name)); what != "" {
			return what
		}
	}
	return ""
}

// refusedAccess says which access to path the policy refuses and the
// person's rights allow ("" when none): a read outside the read
// allow-list, else a write outside the write allow-list or into the
// protected class.
func refusedAccess(pol sandbox.Policy, path string) string {
	if path == "/proc" || strings.HasPrefix(path, "/proc/") {
		// The command's /proc is its own namespace's, not this one's.
		return ""
	}
	if len(pol.Readable) > 0 && !withinAny(path, pol.Readable) {
		if f, err := os.Open(path); err == nil {
			f.Close()
			return "read " + path + " (outside what a command that runs unasked may read: the workspace roots, the system, the toolchains and the caches, not the home folder)"
		}
		return ""
	}
	if !pol.Mode.Writes() {
		if personCanWrite(path) {
			return "write " + path + " (a command judged read-only writes nothing)"
		}
		return ""
	}
	if k, ok := pol.Class.Protected(path); ok {
		return sandbox.Denial{Op: "write", Path: path, Kind: k}.String()
	}
	if withinAny(path, append(append([]string(nil), pol.Writable...), pol.TempDir)) {
		return ""
	}
	if personCanWrite(path) {
		return sandbox.Denial{Op: "write", Path: path}.String()
	}
	return ""
}

func withinAny(path string, dirs []string) bool {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if path == d || strings.HasPrefix(path, strings.TrimSuffix(d, string(filepath.Separator))+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// personCanWrite reports whether the server's own rights let it write
// path, or create it in its folder.
func personCanWrite(path string) bool {
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return false
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return false
		}
		f.Close()
		return true
	}
	fi, err := os.Stat(filepath.Dir(path))
	return err == nil && fi.IsDir() && fi.Mode().Perm()&0o222 != 0
}

// UnaskedPolicy is the sandbox of a process that qwen-ls starts for the
// agent without asking anyone and that is no command of the model: a
// language server (docs/design.md "Code intelligence"). It gets what a
// command run by an allow rule or an approval mode gets (writes in the
// roots, its own temporary folder under owner and the build caches; reads
// by allow-list; the network unless tools.sandbox is workspace-write), and
// no confinement where the setting turns the sandbox off or the system has
// none. Either way it runs under the supervisor, which kills it and all
// it started when qwen-ls dies.
func (e *Env) UnaskedPolicy(owner string) sandbox.Policy {
	p := sandbox.Policy{Mode: sandbox.None, AlwaysProtected: e.alwaysProtected()}
	setting := e.sandboxSetting()
	if setting == sandboxOff || !sandbox.Probe().ReadOnly() {
		return p
	}
	p.Mode = sandbox.Protect
	if setting == sandboxWorkspaceWrite {
		p.Mode = sandbox.WorkspaceWrite
	}
	layout := e.sandboxLayout(owner, true)
	p.Readable, p.Class = layout.Readable(), e.protectedClass()
	p.Writable, p.TempDir = layout.Writable(), layout.TempDir
	return p
}
