package launch

import (
	"reflect"
	"testing"
)

// A plan survives its text form, whatever bytes its paths hold, and
// anything else is refused rather than half read.
func TestPlanRoundTrip(t *testing.T) {
	p := Plan{
		Mounts: true, Proc: true, ClearAmbient: true, DropBounding: true, Undumpable: true,
		Binds: []Bind{{Path: "/w/.git"}, {Path: "/w/.git/config", ReadOnly: true}, {Path: "/w/a\nb \x00\xff", ReadOnly: true}},
		Landlock: &Ruleset{HandledFS: 1<<16 - 1, HandledNet: 3, Scoped: 3, Rules: []Rule{
			{Path: "/usr", Access: 7}, {Path: "/w", Access: 1<<16 - 1}, {Path: "", Access: 0}}},
		Filter:   []Instruction{{Op: 0x20, K: 4}, {Op: 0x15, Jt: 1, Jf: 255, K: 0xC000003E}, {Op: 6, K: 0x7fff0000}},
		Listener: true, Devices: []string{"/dev/null", "/dev/tty"},
		Path: "/usr/bin/bash", Args: []string{"/usr/bin/bash", "-c", "echo 'x y'\n"}, Env: []string{"A=b", "C="}, Dir: "/w/sub dir",
		Unset: []string{"QWEN_LS_SANDBOX_POLICY"}, Set: []string{"TMPDIR=/t/x=y"},
		StatusFD: 3, CloseOnExec: []int{4}, Optional: true,
	}
	got, ok := Decode(p.Encode())
	if !ok || !reflect.DeepEqual(got, p) {
		t.Fatalf("round trip:\n got %+v %v\nwant %+v", got, ok, p)
	}
	probe, ok := Decode(Plan{ProbeOnly: true}.Encode())
	if !ok || !probe.ProbeOnly {
		t.Fatalf("a probe plan: %+v %v", probe, ok)
	}
	for _, bad := range []string{"", "path 2f7", "path zz", "mounts x\npath 2f78", "rule 2f78\npath 2f78",
		"nokey\npath 2f78", "what 1\npath 2f78", "fs 99999999999999999999999\npath 2f78"} {
		if _, ok := Decode(bad); ok {
			t.Errorf("Decode(%q) accepted", bad)
		}
	}
}
