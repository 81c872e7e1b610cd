package workspace

import (
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// Full access (tools.sandbox danger-full-access, or its older name off) is
// the person's own setting: a workspace's .qwen/settings.json, trusted or
// not, cannot set it, however it spells the key, while the user's, the
// editor's and the system's value holds; a workspace may still narrow
// (workspace-write, read-only) what those layers chose.
func TestWorkspaceCannotGrantFullAccess(t *testing.T) {
	base := rtTempDir(t)
	root := filepath.Join(base, "clone")
	home := filepath.Join(base, "home", ".qwen")
	wsFile := filepath.Join(root, ".qwen", "settings.json")
	s := NewSettings(SettingsOptions{UserDir: home, SystemPath: filepath.Join(base, "none.json"),
		PrimaryRoot: func() string { return root }, Getenv: func(string) (string, bool) { return "", false }})
	t.Cleanup(s.Close)
	yes, no := true, false
	load := func(user, ws string) {
		t.Helper()
		rtWriteFile(t, filepath.Join(home, "settings.json"), user)
		rtWriteFile(t, wsFile, ws)
		s.Load()
	}
	check := func(what, want string, refused []string) {
		t.Helper()
		if got := s.String("tools.sandbox", "read-only"); got != want {
			t.Errorf("%s: tools.sandbox = %q, want %q", what, got, want)
		}
		if got := s.Trust().Refused; !slices.Equal(got, refused) {
			t.Errorf("%s: Trust().Refused = %q, want %q", what, got, refused)
		}
	}

	for _, trusted := range []*bool{&yes, &no} {
		s.SetEditorTrust(trusted)
		mode := "trusted"
		if !*trusted {
			mode = "untrusted"
		}
		for _, v := range []string{sandboxDangerFullAccess, sandboxOff} {
			refused := []string{"tools.sandbox (" + v + ")"}
			for _, spelled := range []string{`{"tools": {"sandbox": "` + v + `", "exclude": ["web_search"]}}`, `{"tools.sandbox": "` + v + `", "tools.exclude": ["web_search"]}`} {
				load(`{}`, spelled)
				check(mode+" workspace "+spelled, sandboxReadOnly, refused)
				// The rest of the workspace's tools settings stays.
				if got := s.Strings("tools.exclude"); !reflect.DeepEqual(got, []string{"web_search"}) {
					t.Errorf("%s %s: tools.exclude = %q", mode, spelled, got)
				}
				load(`{"tools": {"sandbox": "`+sandboxDangerFullAccess+`"}}`, spelled)
				check(mode+" user full access, workspace "+v, sandboxDangerFullAccess, refused)
			}
			// Trusting the folder would not apply it either, so the
			// untrusted folder's notice does not offer it.
			if slices.ContainsFunc(s.Trust().Ignored, func(n string) bool { return n == "tools.sandbox" || n == refused[0] }) {
				t.Errorf("%s: the trust notice names the refused value: %q", mode, s.Trust().Ignored)
			}
			if ignored, _ := UntrustedIgnores(root); slices.Contains(ignored, "tools.sandbox") {
				t.Errorf("UntrustedIgnores names tools.sandbox: %q", ignored)
			}
		}
		// A workspace narrows what the user chose.
		for _, v := range []string{sandboxWorkspaceWrite, sandboxReadOnly} {
			load(`{"tools": {"sandbox": "`+sandboxDangerFullAccess+`"}}`, `{"tools": {"sandbox": "`+v+`"}}`)
			check(mode+" workspace narrows to "+v, v, nil)
		}
		// The user's own full access, in either spelling, holds.
		for _, v := range []string{sandboxDangerFullAccess, sandboxOff} {
			load(`{"tools": {"sandbox": "`+v+`"}}`, `{}`)
			check(mode+" user "+v, v, nil)
		}
	}

	// The editor's layer and the system file may grant it too.
	s.SetEditorTrust(&yes)
	load(`{}`, `{"tools": {"sandbox": "off"}}`)
	s.SetEditorLayer(map[string]any{"tools": map[string]any{"sandbox": sandboxDangerFullAccess}})
	check("editor full access", sandboxDangerFullAccess, []string{"tools.sandbox (off)"})
	s.SetEditorLayer(nil)
	sys := filepath.Join(base, "system.json")
	rtWriteFile(t, sys, `{"tools": {"sandbox": "danger-full-access"}}`)
	s2 := NewSettings(SettingsOptions{UserDir: home, SystemPath: sys,
		PrimaryRoot: func() string { return root }, Getenv: func(string) (string, bool) { return "", false }})
	t.Cleanup(s2.Close)
	s2.SetEditorTrust(&yes)
	s2.Load()
	if got := s2.String("tools.sandbox", ""); got != sandboxDangerFullAccess {
		t.Errorf("system full access: tools.sandbox = %q", got)
	}
	if tr := s2.Trust(); !slices.Equal(tr.Refused, []string{"tools.sandbox (off)"}) || tr.File != wsFile {
		t.Errorf("system full access: Trust = %+v", tr)
	}
}
