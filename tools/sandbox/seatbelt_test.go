package sandbox

import (
	"strings"
	"testing"
)

func TestSeatbeltProfiles(t *testing.T) {
	prot := []string{"/w/.git/config", `/w/odd "name"\x`}
	always := []string{"/home/u/.qwen/trustedFolders.json"}
	cases := []struct {
		p            Policy
		want, reject []string
	}{
		{Policy{Mode: ReadOnly, Protected: prot, AlwaysProtected: always},
			[]string{"(deny default)", "(allow file-read*)", `(allow file-write-data (literal "/dev/null")`, `(deny file-write* (literal "/home/u/.qwen/trustedFolders.json")`},
			[]string{"(allow default)", "network", "(allow file-write* (subpath", `"/w/.git/config"`}},
		{Policy{Mode: WorkspaceWrite, Writable: []string{"/w", "relative"}, TempDir: "/tmp/q", Protected: prot, AlwaysProtected: always},
			[]string{"(deny default)", `(allow file-write* (subpath "/w") (subpath "/tmp/q"))`, `(literal "/w/.git/config") (subpath "/w/.git/config")`, `"/w/odd \"name\"\\x"`},
			[]string{"(allow default)", "network", "relative"}},
		{Policy{Mode: Protect, Protected: prot, AlwaysProtected: always},
			[]string{"(allow default)", `(deny file-write* (literal "/home/u/.qwen/trustedFolders.json") (subpath "/home/u/.qwen/trustedFolders.json") (literal "/w/.git/config")`},
			[]string{"(deny default)"}},
		{Policy{Mode: None, Protected: prot, AlwaysProtected: always},
			[]string{"(allow default)", `(deny file-write* (literal "/home/u/.qwen/trustedFolders.json") (subpath "/home/u/.qwen/trustedFolders.json"))`},
			[]string{"(deny default)", ".git/config"}},
	}
	for _, c := range cases {
		got := SeatbeltProfile(c.p)
		if !strings.HasPrefix(got, "(version 1)\n") {
			t.Errorf("%s: no version line:\n%s", c.p.Mode, got)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: profile lacks %q:\n%s", c.p.Mode, w, got)
			}
		}
		for _, r := range c.reject {
			if strings.Contains(got, r) {
				t.Errorf("%s: profile holds %q:\n%s", c.p.Mode, r, got)
			}
		}
		// The denials of writes come last, so that they win.
		if i := strings.LastIndex(got, "(deny file-write*"); i >= 0 && strings.Contains(got[i:], "(allow") {
			t.Errorf("%s: an allow follows the write denials:\n%s", c.p.Mode, got)
		}
		if strings.Count(got, "(") != strings.Count(got, ")") {
			t.Errorf("%s: unbalanced parentheses:\n%s", c.p.Mode, got)
		}
	}
}

func TestPolicyRoundTrip(t *testing.T) {
	p := Policy{Mode: WorkspaceWrite, Writable: []string{"/a"}, TempDir: "/t", Protected: []string{"/a/.git"}, Linger: true}
	enc, err := encodePolicy(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodePolicy(enc)
	if err != nil || got.Mode != p.Mode || got.TempDir != "/t" || len(got.Protected) != 1 || !got.Linger {
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
		"sandbox: landlock ABI 7, mount namespaces: yes":                                   {OS: "linux", Landlock: 7, Mounts: true},
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
