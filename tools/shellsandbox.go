package tools

import (
	"path/filepath"
	"regexp"
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

// sandboxDenials are the messages of a command stopped by the sandbox:
// EACCES and EPERM from Landlock, EROFS and EBUSY from the read-only bind
// mounts.
var sandboxDenials = regexp.MustCompile(`(?m)^(.*?)(?:: )?(Permission denied|Read-only file system|Operation not permitted|Device or resource busy)\s*$`)

// quotedName finds the file a tool's message names ('x', ‘x’ or "x").
var quotedName = regexp.MustCompile(`['‘"]([^'’"]+)['’"]`)

// blockedBySandbox says what the sandbox stopped, judging by the
// command's error output, or "" when nothing points to it.
func blockedBySandbox(pol sandbox.Policy, stderr string) string {
	if pol.Mode == sandbox.None {
		return ""
	}
	m := sandboxDenials.FindStringSubmatch(stderr)
	if m == nil {
		return ""
	}
	line := m[1]
	lower := strings.ToLower(line)
	if strings.Contains(lower, "connect") || strings.Contains(lower, "socket") || strings.Contains(lower, "bind") ||
		strings.Contains(lower, "/dev/tcp") || strings.Contains(lower, "network") {
		return "network access"
	}
	name := ""
	if q := quotedName.FindAllStringSubmatch(line, -1); len(q) > 0 {
		name = q[len(q)-1][1]
	} else if parts := strings.Split(strings.TrimSuffix(line, ":"), ": "); len(parts) > 1 {
		name = strings.TrimSpace(parts[len(parts)-1])
	}
	if name == "" || strings.ContainsAny(name, "\n") {
		return "a write (" + m[2] + ")"
	}
	return "write to " + filepath.Clean(name)
}
