package sandbox

import "testing"

// A folder or link may be renamed into the roots only from inside them,
// and never onto a git directory's objects folder; elsewhere the class
// says nothing.
func TestTreeMoveKeeps(t *testing.T) {
	c := Class{Roots: []string{"/w"}, GitDirs: []string{"/elsewhere/wt.git"}}
	for _, tc := range []struct {
		from, to string
		keeps    bool
	}{
		{"/w/a", "/w/b", true},
		{"/w/sub/x", "/w/y/z", true},
		{"/home/u/.qwen/tmp/s/d", "/w/sub", false},
		{"/home/u/.cache/go-build/d", "/w/x/y", false},
		{"/tmp/d", "/w", false},
		{"/w/a", "/tmp/a", true},
		{"/tmp/a", "/tmp/b", true},
		{"/w/.git/refs/n", "/w/.git/objects", false},
		{"/w/.git/refs/n", "/w/.git/OBJECTS", false},
		{"/w/sub/.git/refs/n", "/w/sub/.git/objects", false},
		{"/w/.git/objects", "/w/.git/refs/o", true},
		{"/w/.git/refs/n", "/w/.git/objects/pack", true},
		{"/elsewhere/wt.git/refs/n", "/elsewhere/wt.git/objects", false},
		{"/tmp/d", "/elsewhere/wt.git/refs/x", false},
		{"/w/x", "/elsewhere/wt.git/refs/x", true},
	} {
		if got := c.TreeMoveKeeps(tc.from, tc.to); got != tc.keeps {
			t.Errorf("TreeMoveKeeps(%s, %s) = %v, want %v", tc.from, tc.to, got, tc.keeps)
		}
	}
}
