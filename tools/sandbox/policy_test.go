package sandbox

import "testing"

func TestPolicyRoundTrip(t *testing.T) {
	p := Policy{Mode: WorkspaceWrite, Writable: []string{"/a"}, TempDir: "/t", Class: Class{Roots: []string{"/a"}}, Linger: true}
	enc, err := encodePolicy(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodePolicy(enc)
	if err != nil || got.Mode != p.Mode || got.TempDir != "/t" || len(got.Class.Roots) != 1 || !got.Linger {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	for _, bad := range []string{`{"mode":"yolo"}`, `{`, `{}`} {
		if _, err := decodePolicy(bad); err == nil {
			t.Errorf("decodePolicy(%s) accepted", bad)
		}
	}
	if _, err := encodePolicy(Policy{Mode: "x"}); err == nil {
		t.Error("encodePolicy accepted an unknown mode")
	}
}

func TestSupportString(t *testing.T) {
	cases := map[string]Support{
		"sandbox: landlock ABI 7, namespaces: yes":                                         {OS: "linux", Landlock: 7, Mounts: true},
		"sandbox: seatbelt (sandbox-exec)":                                                 {OS: "darwin", Seatbelt: true},
		"sandbox: none (not available on windows); read-only commands ask before they run": {OS: "windows"},
	}
	for want, s := range cases {
		if got := s.String(); got != want {
			t.Errorf("%+v: %q, want %q", s, got, want)
		}
	}
	if (Support{OS: "linux", Landlock: 3}).ReadOnly() {
		t.Error("ABI 3 has no network rules, yet ReadOnly")
	}
}
