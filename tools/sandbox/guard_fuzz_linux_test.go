//go:build linux

package sandbox

import (
	"strings"
	"testing"
)

// fuzzNames are the parts paths are made of: the protected names in
// several spellings, git's own files, ordinary names, and the parts that
// move about (.., ., /proc/self links).
var fuzzNames = []string{
	".git", ".GIT", "hooks", "config", "commondir", "objects", "info", "alternates", "index", "index.lock",
	"HEAD", "refs", ".vscode", "tasks.json", ".envrc", ".gitattributes", ".devcontainer", "QWEN.md",
	"a", "b", "src", "..", ".", "/proc/self/cwd", "$TMPDIR", "pre-commit", ".qwen", "settings.json",
}

// fuzzScript turns bytes into a short shell script of file operations on
// paths made of fuzzNames: each operation takes an opcode byte and one or
// two paths of one to three parts.
func fuzzScript(data []byte) string {
	pos := 0
	next := func() int {
		if pos >= len(data) {
			return 0
		}
		pos++
		return int(data[pos-1])
	}
	path := func() string {
		n := next()%3 + 1
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fuzzNames[next()%len(fuzzNames)]
		}
		p := strings.Join(parts, "/")
		return strings.ReplaceAll(p, "//", "/")
	}
	q := func(s string) string {
		if strings.HasPrefix(s, "$TMPDIR") {
			return `"$TMPDIR"` + shellQuote(s[len("$TMPDIR"):])
		}
		return shellQuote(s)
	}
	var lines []string
	for len(lines) < 12 && pos < len(data) {
		switch next() % 10 {
		case 0:
			lines = append(lines, "mkdir -p "+q(path()))
		case 1:
			lines = append(lines, "echo x > "+q(path()))
		case 2:
			lines = append(lines, "echo x >> "+q(path()))
		case 3:
			lines = append(lines, "ln -s "+q(path())+" "+q(path()))
		case 4:
			lines = append(lines, "ln "+q(path())+" "+q(path()))
		case 5:
			lines = append(lines, "mv -f "+q(path())+" "+q(path()))
		case 6:
			lines = append(lines, "chmod 755 "+q(path()))
		case 7:
			lines = append(lines, "rm -rf "+q(path()))
		case 8:
			lines = append(lines, "cp -r "+q(path())+" "+q(path()))
		case 9:
			lines = append(lines, "truncate -s 0 "+q(path()))
		}
	}
	return strings.Join(lines, " 2>/dev/null\n") + " 2>/dev/null\ntrue"
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// FuzzGuardKeepsTheClass runs scripts of file operations on paths made of
// protected and ordinary names, under the protect policy, and checks that
// the protected class is unchanged afterwards, whatever the operations
// did elsewhere.
func FuzzGuardKeepsTheClass(f *testing.F) {
	if ABI() < 4 || !Probe().Mounts {
		f.Skip("needs Landlock and namespaces (TestLandlockRequired says why CI has them)")
	}
	// Starting points: renames onto .git, links into it, writes through
	// links, copies over it.
	for _, seed := range [][]byte{
		{5, 0, 18, 0, 0},
		{3, 1, 0, 3, 0, 0, 1, 0},
		{0, 1, 0, 4, 1, 0, 2},
		{1, 0, 13, 5, 0, 18, 0, 12},
		{8, 0, 0, 1, 18, 5, 1, 18, 0},
		{3, 0, 25, 1, 18, 1, 1, 18, 4},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		script := fuzzScript(data)
		root, p := guardFixture(t)
		before := snapshot(t, root)
		r := runIn(t, p, root, script, "TMPDIR="+p.TempDir)
		if ch := protectedChanges(p.Class, root, before, snapshot(t, root)); len(ch) > 0 {
			t.Fatalf("the script changed the protected class:\n%s\n\n%s\noutput: %s%s", script, strings.Join(ch, "\n"), r.out, r.err)
		}
	})
}
