package tools

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/qwen-ls/qwen-ls/tools/sandbox"
)

// The values of the tools.sandbox setting.
const (
	sandboxOff            = "off"
	sandboxReadOnly       = "read-only"
	sandboxWorkspaceWrite = "workspace-write"
)

// sandboxSetting is tools.sandbox: off, read-only (the default: commands
// judged read-only run in the read-only sandbox, other unasked commands
// with the protected paths read-only) or workspace-write (every unasked
// command writes only inside the roots and a private temporary folder,
// without network). An unknown value counts as the default.
func (e *Env) sandboxSetting() string {
	if e == nil || e.Workspace == nil || e.Settings() == nil {
		return sandboxReadOnly
	}
	switch v := e.Settings().String("tools.sandbox", sandboxReadOnly); v {
	case sandboxOff, sandboxWorkspaceWrite:
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
// tools.sandbox setting.
func (s *Shell) shellPolicy(call *Call) sandbox.Policy {
	protected, always := s.env.sandboxPaths()
	p := sandbox.Policy{Mode: sandbox.None, Protected: protected, AlwaysProtected: always}
	setting := s.env.sandboxSetting()
	approval := approvalUnknown
	if call != nil {
		approval = call.Approval
	}
	if setting == sandboxOff || approval == ApprovalUser {
		return p
	}
	sup := sandbox.Probe()
	switch {
	case approval == ApprovalNotNeeded && sup.ReadOnly():
		p.Mode = sandbox.ReadOnly
	case setting == sandboxWorkspaceWrite && sup.ReadOnly():
		p.Mode = sandbox.WorkspaceWrite
		if s.env.Workspace.Roots != nil {
			p.Writable = s.env.Workspace.Roots.List()
		}
		sessionID := ""
		if call != nil {
			sessionID = call.SessionID
		}
		dir := filepath.Join(s.env.ProjectTempDir(), "sandbox-tmp", sessionDirName(sessionID))
		if err := os.MkdirAll(dir, 0o700); err == nil {
			p.TempDir = dir
		}
	default:
		// Without a mount namespace the protected paths are kept by the
		// parser's check alone (the scheduler asks for them).
		p.Mode = sandbox.Protect
	}
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
