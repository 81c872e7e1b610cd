package workspace

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// decideTrustLocked decides whether the primary root is trusted; s.mu is
// held. In order: folder trust turned off by security.folderTrust.enabled
// = false in the user, editor or system settings (never the workspace's);
// the user trusting the folder through the editor during this connection;
// the editor's own answer (initializationOptions.workspaceTrusted); the
// trust list; otherwise not trusted.
func (s *Settings) decideTrustLocked() Trust {
	t := Trust{}
	if f := s.layers[layerWorkspace].file; f != "" {
		t.Root = filepath.Dir(filepath.Dir(f))
	}
	if t.Root == "" {
		t.Why = "no workspace folder is open"
		return t
	}
	if off, where := s.folderTrustOffLocked(); off {
		t.Trusted = true
		t.Why = "folder trust is turned off by security.folderTrust.enabled in " + where
		return t
	}
	if s.granted[t.Root] {
		t.Trusted = true
		t.Why = "you trusted this folder in the editor"
		return t
	}
	if s.editorTrust != nil {
		t.Trusted = *s.editorTrust
		if t.Trusted {
			t.Why = "the editor trusts this workspace (initializationOptions.workspaceTrusted)"
		} else {
			t.Why = "the editor does not trust this workspace (restricted mode)"
		}
		return t
	}
	file := s.TrustFile()
	if m, trusted, ok := s.trustRules.Decide(t.Root); ok {
		t.Trusted = trusted
		t.Denied = !trusted
		t.Why = fmt.Sprintf("%s has %q: %s", file, m.Path, m.Level)
		return t
	}
	t.Why = "it is not listed in " + file
	return t
}

// folderTrustOffLocked reports whether security.folderTrust.enabled is
// false in the highest of the system, editor and user layers that sets it,
// and where.
func (s *Settings) folderTrustOffLocked() (bool, string) {
	for _, i := range []int{layerSystem, layerEditor, layerUser} {
		if on, set := folderTrustEnabled(s.layers[i].values); set {
			return !on, layerName(i, s.layers[i].file)
		}
	}
	return false, ""
}

// folderTrustEnabled reads security.folderTrust.enabled from a canonical
// settings tree: set is false when it is absent; a boolean or a string
// that parses as one gives on, anything else leaves folder trust on.
func folderTrustEnabled(values map[string]any) (on, set bool) {
	v, ok := lookupCanonical(values, "security.folderTrust.enabled")
	if !ok {
		return true, false
	}
	switch v := v.(type) {
	case bool:
		return v, true
	case string:
		if b, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil {
			return b, true
		}
	}
	return true, true
}

func sameTrust(a, b Trust) bool {
	return a.Root == b.Root && a.Trusted == b.Trusted && a.Denied == b.Denied && a.Why == b.Why && a.File == b.File && slices.Equal(a.Ignored, b.Ignored) && slices.Equal(a.Refused, b.Refused)
}

// Trust returns the folder-trust decision for the primary root and the
// workspace settings it left out.
func (s *Settings) Trust() Trust {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t := s.trust
	t.Ignored = slices.Clone(t.Ignored)
	t.Refused = slices.Clone(t.Refused)
	return t
}

// SetEditorTrust records the editor's own trust in the workspace
// (initializationOptions.workspaceTrusted; nil: the editor said nothing).
// The OnChange callbacks run when the decision changed.
func (s *Settings) SetEditorTrust(trusted *bool) {
	s.mu.Lock()
	if trusted != nil {
		v := *trusted
		trusted = &v
	}
	s.editorTrust = trusted
	s.updateTrustLocked()
}

// GrantTrust trusts root for the rest of this connection: the user chose
// to trust it in the editor. Recording it in the trust list, so it
// outlives the connection, is the caller's business (SetTrustLevel). The
// OnChange callbacks run when the decision changed.
func (s *Settings) GrantTrust(root string) {
	s.mu.Lock()
	s.granted[filepath.Clean(root)] = true
	s.updateTrustLocked()
}

// updateTrustLocked remerges after a change of a trust input; it unlocks
// s.mu and runs the OnChange callbacks when the decision changed.
func (s *Settings) updateTrustLocked() {
	changed := s.remergeLocked()
	onChange := append([]func(){}, s.onChange...)
	s.mu.Unlock()
	if changed {
		for _, f := range onChange {
			f()
		}
	}
}
