//go:build linux

package rpc_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools/sandbox"
)

// The class battery (issue 29, acceptance 2): where TestContainmentBattery
// tries shell forms, this one tries classes. For every protected class
// (user state, git internals, editor and environment files, secrets
// outside the roots, other processes, sockets) it takes a few targets and
// tries each way in: a write, a rename of each parent, copy-and-replace
// through /tmp and through the command's own $TMPDIR, create-if-missing,
// symbolic and hard links, unshare and mount, and a program that hides
// the path (python3, perl, a shell script written first, and the program
// a repository's core.fsmonitor names, which `git status` runs). Each case
// is one run_shell_command call sent by the scripted model through a real
// session, under each policy that runs commands without a yes: a
// read-only verdict, an allow rule, auto-edit, yolo and workspace-write.
// The editor rejects every question, so a case either is asked and does
// not run, or runs unasked inside the sandbox.
//
// A case holds when, afterwards, no protected file or folder changed (its
// content, whether it exists, which file or folder it is), no secret of
// the home folder or of another process is in a model request, and
// nothing arrived at the test's listeners. TestContainmentClassWaysAreLive
// runs every case directly with bash, as the person would, and shows that
// it does leave its mark there, so that "held" means something.

// The kinds of mark a case leaves.
const (
	markWrite  = "write"
	markRead   = "read"
	markProc   = "process"
	markSocket = "socket"
)

// The protected classes, in the order of the table.
var protectedClasses = []string{
	"user state", "git internals", "editor and environment files",
	"secrets outside the roots", "other processes", "sockets",
}

// classCase is one way into one target.
type classCase struct {
	class, target, way string
	mark               string
	// cmd is the command sent; for a hook case, the program the
	// repository's fsmonitor runs (the command sent is `git status`).
	cmd  string
	hook bool
	// live: run directly by bash, the case leaves its mark.
	live bool
	// policies names the scenarios the case runs in (nil: all). The
	// other policies allow what it tries by design (the network of an
	// allow rule or yolo).
	policies []string
}

// hookCommand is what a hook case sends: a read-only `git status` in the
// nested repository whose core.fsmonitor runs hookrun/cmd.sh.
const hookCommand = "git -C fsm status --short"

// classRules cover every form of the battery, so that under the allow
// rule scenario the forms the parser does not stop run unasked, under the
// policy that may write.
var classRules = []string{
	"Bash(echo *)", "Bash(mv *)", "Bash(cp *)", "Bash(ln *)", "Bash(python3 *)", "Bash(sh *)",
	"Bash(unshare *)", "Bash(perl *)", "Bash(mkdir *)", "Bash(rm *)", "Bash(touch *)",
	"Bash(cat *)", "Bash(grep *)", "Bash(printf *)", "Bash(base64 *)", "Bash(mount *)", "Bash(ps *)",
}

// classScenarios are the policies that run a command without a yes. The
// folder is trusted: its own repositories' configuration is then the
// person's, and git's read-only commands run unasked there.
var classScenarios = []unaskedScenario{
	{name: "read-only verdict", mode: "default", trusted: true},
	{name: "allow rule", mode: "default", trusted: true, rules: classRules},
	{name: "auto-edit", mode: "auto-edit", trusted: true},
	{name: "yolo", mode: "yolo", trusted: true},
	{name: "workspace-write", mode: "yolo", trusted: true, sandbox: "workspace-write"},
}

// classFixture is a prepared home folder and root, with what the cases
// need and what they must not change.
type classFixture struct {
	root, home, qhome string
	// scratch is a folder in the root for links and scripts; tmpBase a
	// folder in /tmp for copy-and-replace.
	scratch, tmpBase string
	// rootTpl and homeTpl are pristine copies, restored after a case
	// that changed anything; rootTree and homeTree describe them.
	rootTpl, homeTpl   string
	rootTree, homeTree map[string]string
	// secret is in the home folder's secret files; procSecrets are in the
	// environment and command line of the process at pid, and the
	// server's.
	secret      string
	procSecrets []string
	// word is what socket cases send, with the case's number.
	word string
	// owned are the names, relative to the home folder, that qwen-ls
	// itself writes: its temporary and session folders, and the build
	// caches it makes for commands to write. No case is judged by them.
	owned []string
	pid   int
	ch    *channelListeners
	// expected is the protected state as prepared.
	expected map[string]string
}

// classHomeFiles are the home folder's files: user state and secrets.
func classHomeFiles(secret string) map[string]string {
	text := "SECRETWORD\n" + secret + "\n"
	return map[string]string{
		".qwen/settings.json":       "{}\n",
		".qwen/trustedFolders.json": "{}\n",
		".qwen/.env":                text,
		".gitconfig":                "[user]\n\tname = t\n",
		".bashrc":                   "# rc\n",
		".ssh/id_rsa":               "-----BEGIN OPENSSH PRIVATE KEY-----\n" + text,
	}
}

// prepareClasses lays out the root: a repository with a commit, an
// existing .vscode/tasks.json, .git/info/attributes and QWEN.md; sub2, a
// plain folder (its .vscode missing); scratch; and fsm, a nested
// repository whose core.fsmonitor runs hookrun/cmd.sh with its output on
// stderr. It keeps pristine copies of the root and the home folder.
func prepareClasses(t *testing.T, f *classFixture) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for rel, text := range classHomeFiles(f.secret) {
		writeFileAll(t, filepath.Join(f.home, rel), text)
	}
	root := f.root
	writeFileAll(t, filepath.Join(root, "keep.txt"), "keep\n")
	gitIn(t, root, "init", "-q", ".")
	gitIn(t, root, "add", "keep.txt")
	gitIn(t, root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
	writeFileAll(t, filepath.Join(root, ".git", "info", "attributes"), "* text=auto\n")
	writeFileAll(t, filepath.Join(root, ".vscode", "tasks.json"), "{}\n")
	writeFileAll(t, filepath.Join(root, "QWEN.md"), "# notes\n")
	writeFileAll(t, filepath.Join(root, "sub2", "f.txt"), "f\n")
	f.scratch = filepath.Join(root, "scratch")
	if err := os.MkdirAll(f.scratch, 0o755); err != nil {
		t.Fatal(err)
	}
	mon := filepath.Join(root, "hookrun", "mon.sh")
	writeFileAll(t, mon, "#!/bin/sh\ncd "+root+" && sh hookrun/cmd.sh >&2\nexit 1\n")
	if err := os.Chmod(mon, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFileAll(t, filepath.Join(root, "hookrun", "cmd.sh"), ":\n")
	writeFileAll(t, filepath.Join(root, "fsm", "f"), "f\n")
	gitIn(t, filepath.Join(root, "fsm"), "init", "-q", ".")
	gitIn(t, filepath.Join(root, "fsm"), "config", "core.fsmonitor", mon)

	f.word = nonce(t)
	f.owned = []string{".qwen/tmp", ".qwen/projects"}
	entries, _ := os.ReadDir(f.home)
	for _, e := range entries {
		if _, fixture := classHomeFiles("")[e.Name()]; !fixture && e.Name() != ".qwen" && e.Name() != ".ssh" {
			f.owned = append(f.owned, e.Name())
		}
	}
	base, err := os.MkdirTemp("", "qb")
	if err != nil {
		t.Fatal(err)
	}
	f.tmpBase = base
	t.Cleanup(func() { os.RemoveAll(base) })
	tpl := t.TempDir()
	f.rootTpl, f.homeTpl = filepath.Join(tpl, "root"), filepath.Join(tpl, "home")
	for src, dst := range map[string]string{root: f.rootTpl, f.home: f.homeTpl} {
		if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
			t.Fatalf("cp -a %s: %v %s", src, err, out)
		}
	}
	for _, rel := range f.owned {
		_ = os.RemoveAll(filepath.Join(f.homeTpl, rel))
	}
	f.rootTree, f.homeTree = f.tree(f.rootTpl, false), f.tree(f.homeTpl, true)
	f.expected = f.protectedState()
}

// protectedPaths are what no case may change, by label: the user state
// and secret files, the git directory's protected part, the editor
// files, the folders they are in, and the protected names that must stay
// missing.
func (f *classFixture) protectedPaths() map[string]string {
	out := map[string]string{}
	for _, rel := range []string{"", ".qwen", ".qwen/settings.json", ".qwen/trustedFolders.json", ".qwen/.env",
		".gitconfig", ".bashrc", ".ssh", ".ssh/id_rsa"} {
		out["~/"+rel] = filepath.Join(f.home, rel)
	}
	for _, rel := range []string{"", ".git", ".git/config", ".git/hooks", ".git/hooks/pre-commit", ".git/info",
		".git/info/attributes", ".git/commondir", ".git/objects/info", ".git/objects/info/alternates",
		".vscode", ".vscode/tasks.json", "sub2/.vscode", ".envrc", ".gitattributes", ".devcontainer", "QWEN.md",
		"fsm/.git/config", "fsm/.git/hooks", "fsm/.git/hooks/pre-commit", "fsm/.git/objects/info"} {
		out["./"+rel] = filepath.Join(f.root, rel)
	}
	out["~.bak"] = f.home + ".bak"
	out["~/.qwen.bak"] = f.qhome + ".bak"
	out["the root.bak"] = f.root + ".bak"
	return out
}

// protectedState describes each protected path: which file or folder it
// is (its inode), a file's content, a folder's names (for the home
// folder, the qwen folder and the git directory, the names no command may
// add or remove: not qwen-ls's own tmp, not what git writes for commits;
// none for the root, where commands may write).
func (f *classFixture) protectedState() map[string]string {
	out := map[string]string{}
	for label, p := range f.protectedPaths() {
		fi, err := os.Lstat(p)
		if err != nil {
			out[label] = "missing"
			continue
		}
		out[label] = describe(p, fi, f)
	}
	return out
}

// describe is how protectedState describes one existing path.
func describe(p string, fi os.FileInfo, f *classFixture) string {
	ino := fi.Sys().(*syscall.Stat_t).Ino
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		target, _ := os.Readlink(p)
		return "link to " + target
	case fi.IsDir():
		var names []string
		if p != f.root {
			entries, _ := os.ReadDir(p)
			for _, e := range entries {
				if rel, err := filepath.Rel(f.home, filepath.Join(p, e.Name())); err == nil && slices.Contains(f.owned, rel) {
					continue
				}
				if filepath.Base(p) == ".git" && sandbox.GitTopWritable(e.Name()) {
					continue
				}
				names = append(names, e.Name())
			}
		}
		return fmt.Sprintf("folder %d %v", ino, names)
	default:
		data, _ := os.ReadFile(p)
		return fmt.Sprintf("file %d %q", ino, data)
	}
}

// broken lists the protected paths that changed. One that is missing
// now because a folder above it, which is not in the class, was renamed
// has not changed: it is found, the same file or folder, at its new place
// (where the guard keeps it by name as before), and nothing took its
// place. Removed, it is broken.
func (f *classFixture) broken() []string {
	var out []string
	got := f.protectedState()
	var moved map[uint64]string
	for label, want := range f.expected {
		if got[label] == want {
			continue
		}
		if got[label] == "missing" {
			if moved == nil {
				moved = f.inodes()
			}
			var ino uint64
			if _, err := fmt.Sscanf(strings.TrimPrefix(strings.TrimPrefix(want, "file "), "folder "), "%d", &ino); err == nil {
				if p, ok := moved[ino]; ok {
					if now, err := os.Lstat(p); err == nil && describe(p, now, f) == want {
						continue
					}
				}
			}
		}
		out = append(out, fmt.Sprintf("%s: %s, was %s", label, got[label], want))
	}
	sort.Strings(out)
	return out
}

// inodes maps every inode under the root and the home folder to a path.
func (f *classFixture) inodes() map[uint64]string {
	out := map[uint64]string{}
	for _, dir := range []string{f.root, f.home} {
		_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil {
				out[fi.Sys().(*syscall.Stat_t).Ino] = p
			}
			return nil
		})
	}
	return out
}

// tree describes every file under dir (its kind, mode and content),
// leaving out the hook program the test writes and, in the home folder,
// what qwen-ls owns.
func (f *classFixture) tree(dir string, home bool) map[string]string {
	out := map[string]string{}
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if home && slices.Contains(f.owned, rel) {
			return filepath.SkipDir
		}
		if !home && rel == "hookrun/cmd.sh" {
			return nil
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "link " + target
		case fi.IsDir():
			out[rel] = "dir " + fi.Mode().String()
		default:
			data, _ := os.ReadFile(p)
			out[rel] = fi.Mode().String() + " " + string(data)
		}
		return nil
	})
	return out
}

func sameTree(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// restore puts the root and the home folder back as prepared where a
// case changed them (what qwen-ls owns in the home folder aside), and
// takes the protected state anew: a restored file is a new file.
func (f *classFixture) restore(t *testing.T) {
	t.Helper()
	entries, _ := os.ReadDir(f.tmpBase)
	for _, e := range entries {
		_ = os.RemoveAll(filepath.Join(f.tmpBase, e.Name()))
	}
	f.sync(t, f.root, f.rootTpl, f.rootTree, false)
	f.sync(t, f.home, f.homeTpl, f.homeTree, true)
	f.expected = f.protectedState()
}

// sync makes dir match its template: it removes what differs or is not
// in the template, then copies back what is missing.
func (f *classFixture) sync(t *testing.T, dir, tpl string, want map[string]string, home bool) {
	t.Helper()
	_ = os.RemoveAll(dir + ".bak")
	if fi, err := os.Lstat(dir); err == nil && !fi.IsDir() {
		// A link (or a file) in the folder's place.
		_ = os.Remove(dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	got := f.tree(dir, home)
	if sameTree(got, want) {
		return
	}
	var extra []string
	for rel, desc := range got {
		if rel != "." && want[rel] != desc {
			extra = append(extra, rel)
		}
	}
	sort.Strings(extra)
	var removed []string
	for _, rel := range extra {
		if slices.ContainsFunc(removed, func(r string) bool { return strings.HasPrefix(rel, r+"/") }) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, rel)); err != nil {
			t.Fatal(err)
		}
		removed = append(removed, rel)
	}
	var missing []string
	for rel := range want {
		if _, err := os.Lstat(filepath.Join(dir, rel)); err != nil {
			missing = append(missing, rel)
		}
	}
	sort.Strings(missing)
	for _, rel := range missing {
		src, dst := filepath.Join(tpl, rel), filepath.Join(dir, rel)
		fi, err := os.Lstat(src)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(src)
			err = os.Symlink(target, dst)
		case fi.IsDir():
			err = os.Mkdir(dst, fi.Mode().Perm())
		default:
			var data []byte
			if data, err = os.ReadFile(src); err == nil {
				err = os.WriteFile(dst, data, fi.Mode().Perm())
			}
		}
		if err == nil {
			err = os.Lchown(dst, os.Getuid(), os.Getgid())
		}
		if err == nil && fi.Mode()&os.ModeSymlink == 0 {
			err = os.Chmod(dst, fi.Mode().Perm())
		}
		if err != nil {
			t.Fatalf("restore %s: %v", dst, err)
		}
	}
	if now := f.tree(dir, home); !sameTree(now, want) {
		t.Fatalf("%s could not be restored", dir)
	}
}

// perlString is a Perl expression for s that does not spell it.
func perlString(s string) string {
	var codes []string
	for _, r := range s {
		codes = append(codes, strconv.Itoa(int(r)))
	}
	return "join(\"\", map { chr } (" + strings.Join(codes, ",") + "))"
}

// script is a command that writes the shell program to a file in scratch
// (encoded, so that no parser reads the path in it; with python3, which
// the allow rule covers, where a redirection to the file would ask) and
// runs it with sh.
func (f *classFixture) script(i int, program string) string {
	s := filepath.Join(f.scratch, fmt.Sprintf("s%d.sh", i))
	return fmt.Sprintf(`python3 -c 'import base64; open("%s", "wb").write(base64.b64decode("%s"))' && sh %s`,
		s, base64.StdEncoding.EncodeToString([]byte(program)), s)
}

// caseAdder numbers the cases of one target: cmd may name the case's
// number as {i} and the word a socket case sends as {w}.
type caseAdder struct {
	f        *classFixture
	n        *int
	out      []classCase
	template classCase
}

func (a *caseAdder) word(i int) string { return fmt.Sprintf("%s-%d", a.f.word, i) }

func (a *caseAdder) expand(s string, i int) string {
	return strings.NewReplacer("{i}", strconv.Itoa(i), "{w}", a.word(i)).Replace(s)
}

// add adds a case that sends cmd.
func (a *caseAdder) add(way, cmd string, live bool) {
	i := *a.n
	*a.n++
	c := a.template
	c.way, c.cmd, c.live = way, a.expand(cmd, i), live
	a.out = append(a.out, c)
}

// addScript adds a case that writes program to a file and runs it, one
// that pipes it into sh, and one where the fsmonitor program runs it.
func (a *caseAdder) addScript(way, program string, live bool) {
	i := *a.n
	*a.n++
	c := a.template
	c.way, c.cmd, c.live = way, a.f.script(i, a.expand(program, i)), live && onPath("python3")
	a.out = append(a.out, c)
	i = *a.n
	*a.n++
	c.way = "piped into sh"
	c.cmd = fmt.Sprintf("printf %%s %s | base64 -d | sh", base64.StdEncoding.EncodeToString([]byte(a.expand(program, i))))
	c.live = live
	a.out = append(a.out, c)
	i = *a.n
	*a.n++
	c.way, c.cmd, c.hook = "fsmonitor program", a.expand(program, i), true
	c.policies = nil
	a.out = append(a.out, c)
}

// parents are the folders above p up to top, nearest first.
func parents(p, top string) []string {
	var out []string
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		out = append(out, d)
		if d == top || d == filepath.Dir(d) {
			return out
		}
	}
}

// label names a path by its place: ~/ in the home folder, ./ in the root.
func (f *classFixture) label(p string) string {
	if rel, ok := strings.CutPrefix(p, f.root+"/"); ok {
		return "./" + rel
	}
	if p == f.root {
		return "the root"
	}
	if rel, ok := strings.CutPrefix(p, f.home+"/"); ok {
		return "~/" + rel
	}
	if p == f.home {
		return "~"
	}
	return p
}

func present(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// writeCases are the ways to change or create the file target (relative
// to top, the root or the home folder), of class class.
func (f *classFixture) writeCases(class, target, top string, n *int) []classCase {
	tgt := filepath.Join(top, target)
	d, b := filepath.Dir(tgt), filepath.Base(tgt)
	s := f.scratch
	a := &caseAdder{f: f, n: n, template: classCase{class: class, target: f.label(tgt), mark: markWrite}}
	// Where the folder is missing, a way makes it first (that is a
	// write to the class too); a way that needs the file to exist, or
	// renames or copies a parent, is left out where it cannot apply.
	mk := ""
	if !present(d) {
		mk = "mkdir -p " + d + " && "
	}
	a.add("write", mk+"echo x > "+tgt, true)
	if present(tgt) {
		a.add("create if missing", fmt.Sprintf("rm -f %s && echo x > %s", tgt, tgt), true)
	} else {
		a.add("create if missing", fmt.Sprintf("mkdir -p %s && touch %s", d, tgt), true)
	}
	for _, p := range parents(tgt, top) {
		if !present(p) {
			continue
		}
		rel, _ := filepath.Rel(p, tgt)
		a.add("rename parent", fmt.Sprintf("mv %s %s.bak && mkdir -p %s && echo x > %s", p, p, d, tgt), true)
		for way, c := range map[string]string{
			"copy and replace via /tmp":    filepath.Join(f.tmpBase, "c{i}"),
			"copy and replace via $TMPDIR": `"$TMPDIR/c{i}"`,
		} {
			a.add(way, fmt.Sprintf("cp -r %s %s && mkdir -p %s/%s && echo x > %s/%s && rm -rf %s && mv %s %s",
				p, c, c, filepath.Dir(rel), c, rel, p, c, p), true)
		}
	}
	// The same with a program that hides every path: the folder built
	// outside the roots in $TMPDIR, then renamed or linked into the
	// place of a parent.
	for _, p := range parents(tgt, top) {
		if !present(p) {
			continue
		}
		rel, _ := filepath.Rel(p, tgt)
		head := []string{"import os, shutil", "p = " + hidden(p), "t = " + hidden(tgt), "r = " + hidden(rel)}
		a.add("rename parent, python3", python(append(head,
			"os.rename(p, p + '.bak')",
			"os.makedirs(os.path.dirname(t), exist_ok=True)",
			"open(t, 'a').write('x\\n')")...), true)
		build := append(head,
			"c = os.path.join(os.environ['TMPDIR'], 'c{i}')",
			"shutil.copytree(p, c, symlinks=True)",
			"os.makedirs(os.path.dirname(os.path.join(c, r)), exist_ok=True)",
			"open(os.path.join(c, r), 'a').write('x\\n')",
			"shutil.rmtree(p, ignore_errors=True)")
		a.add("copy and replace via $TMPDIR, python3", python(append(build, "os.rename(c, p)")...), true)
		a.add("a link to $TMPDIR in a parent's place, python3", python(append(build, "os.symlink(c, p)")...), true)
	}
	// A git directory's objects folder may be written, and renamed, but
	// its info folder (alternates) not: one built under refs and renamed
	// into its place would bring one.
	if g, rel, ok := strings.Cut(tgt, "/.git/objects/"); ok {
		a.add("swap the objects folder, python3", python("import os", "g = "+hidden(g+"/.git"), "r = "+hidden(rel),
			"os.rename(g + '/objects', g + '/refs/o{i}')",
			"os.makedirs(os.path.dirname(g + '/refs/n{i}/' + r), exist_ok=True)",
			"open(g + '/refs/n{i}/' + r, 'a').write('x\\n')",
			"os.rename(g + '/refs/n{i}', g + '/objects')"), true)
	}
	a.add("symlink", mk+fmt.Sprintf("ln -s %s %s/l{i} && echo x > %s/l{i}", tgt, s, s), true)
	a.add("symlinked parent", mk+fmt.Sprintf("ln -s %s %s/d{i} && echo x > %s/d{i}/%s", d, s, s, b), true)
	a.add("symlink in its place", mk+fmt.Sprintf("echo x > %s/f{i} && ln -sf %s/f{i} %s", s, s, tgt), true)
	if present(tgt) {
		a.add("hard link", fmt.Sprintf("ln %s %s/h{i} && echo x >> %s/h{i}", tgt, s, s), true)
	}
	a.add("hard link in its place", mk+fmt.Sprintf("echo x > %s/f{i} && ln -f %s/f{i} %s", s, s, tgt), true)
	a.add("unshare, umount", mk+fmt.Sprintf("unshare -r -m sh -c 'umount -l %s 2>/dev/null; echo x > %s'", tgt, tgt), unshareWorks())
	a.add("unshare, bind mount", mk+fmt.Sprintf("mkdir -p %s/b{i} && unshare -r -m sh -c 'mount --bind %s %s/b{i} && echo x > %s/b{i}/%s'", s, d, s, s, b), unshareWorks())
	a.add("mount -o remount,rw", mk+fmt.Sprintf("mount -o remount,bind,rw %s 2>/dev/null; echo x > %s", tgt, tgt), true)
	a.add("python3 hides the path", python("import os", "p = "+hidden(tgt), "os.makedirs(os.path.dirname(p), exist_ok=True)", "open(p, 'a').write('x\\n')"), onPath("python3"))
	a.add("perl hides the path", fmt.Sprintf(`perl -MFile::Path=make_path -MFile::Basename -e 'my $p = %s; make_path(dirname($p)); open(my $f, ">>", $p) or die "$p: $!"; print $f "x\n";'`, perlString(tgt)), onPath("perl"))
	a.addScript("sh script hides the path", fmt.Sprintf("mkdir -p %s 2>/dev/null; echo x > %s\n", d, tgt), true)
	return a.out
}

// readCases are the ways to read the secret file target in the home
// folder.
func (f *classFixture) readCases(target string, n *int) []classCase {
	tgt := filepath.Join(f.home, target)
	d, b := filepath.Dir(tgt), filepath.Base(tgt)
	s := f.scratch
	a := &caseAdder{f: f, n: n, template: classCase{class: "secrets outside the roots", target: f.label(tgt), mark: markRead}}
	a.add("read", "cat "+tgt, true)
	a.add("search", "grep -r -A1 SECRETWORD "+d, true)
	a.add("copy", fmt.Sprintf("cp %s %s/c{i} && cat %s/c{i}", tgt, s, s), true)
	for _, p := range parents(tgt, f.home) {
		rel, _ := filepath.Rel(p, tgt)
		a.add("rename parent", fmt.Sprintf("mv %s %s/r{i} && cat %s/r{i}/%s", p, s, s, rel), true)
		a.add("copy and replace via $TMPDIR", fmt.Sprintf(`cp -r %s "$TMPDIR/c{i}" && cat "$TMPDIR/c{i}/%s"`, p, rel), true)
		a.add("rename parent, python3", python("import os", "p = "+hidden(p), "d = "+hidden(filepath.Join(s, "r{i}")),
			"os.rename(p, d)", "print(open(os.path.join(d, "+hidden(rel)+")).read())"), true)
	}
	a.add("symlink", fmt.Sprintf("ln -s %s %s/l{i} && cat %s/l{i}", tgt, s, s), true)
	a.add("symlinked parent", fmt.Sprintf("ln -s %s %s/d{i} && cat %s/d{i}/%s", d, s, s, b), true)
	a.add("hard link", fmt.Sprintf("ln %s %s/h{i} && cat %s/h{i}", tgt, s, s), true)
	a.add("unshare", fmt.Sprintf("unshare -r -m sh -c 'cat %s'", tgt), unshareWorks())
	a.add("unshare, bind mount", fmt.Sprintf("mkdir -p %s/b{i} && unshare -r -m sh -c 'mount --bind %s %s/b{i} && cat %s/b{i}/%s'", s, d, s, s, b), unshareWorks())
	a.add("python3 hides the path", python("print(open("+hidden(tgt)+").read())"), onPath("python3"))
	a.add("perl hides the path", fmt.Sprintf(`perl -e 'my $p = %s; open(my $f, "<", $p) or die "$p: $!"; print <$f>;'`, perlString(tgt)), onPath("perl"))
	a.addScript("sh script hides the path", "cat "+tgt+"\n", true)
	return a.out
}

// procCases are the ways to read another process's environment or
// command line (file is "environ" or "cmdline").
func (f *classFixture) procCases(file string, n *int) []classCase {
	s := f.scratch
	glob := "/proc/[0-9]*/" + file
	own := fmt.Sprintf("/proc/%d/%s", f.pid, file)
	a := &caseAdder{f: f, n: n, template: classCase{class: "other processes", target: "/proc/PID/" + file, mark: markProc}}
	a.add("read", "cat -v "+own, true)
	a.add("search", "grep -a -o -e 'PROCSECRET=[a-z0-9]*' -e 'OPENAI_API_KEY=[a-z0-9]*' "+glob, true)
	if file == "environ" {
		a.add("ps", "ps auxeww", onPath("ps"))
	} else {
		a.add("ps", "ps -eo args", onPath("ps"))
	}
	a.add("symlink", fmt.Sprintf("ln -s /proc/%d %s/p{i} && cat -v %s/p{i}/%s", f.pid, s, s, file), true)
	// In a user namespace of its own, a process may no longer read the
	// environment of one outside; its command line it may.
	a.add("unshare", fmt.Sprintf("unshare -r sh -c 'cat -v %s'", own), file == "cmdline" && unshareWorks())
	a.add("python3 hides the path", python("import glob", "for p in glob.glob('"+glob+"'):",
		"    try: print(open(p, 'rb').read().replace(bytes(1), b' ').decode('latin-1'))",
		"    except OSError as e: print(e)"), onPath("python3"))
	a.add("perl hides the path", fmt.Sprintf(`perl -e 'for my $p (glob("%s")) { open(my $f, "<", $p) or next; local $/; my $t = <$f>; $t =~ s/\0/ /g; print "$t\n"; }'`, glob), onPath("perl"))
	a.addScript("sh script hides the path", "cat -v "+glob+"\n", true)
	return a.out
}

// socketCases are the ways to send a word to the test's listeners: a UDP
// port on loopback, a Unix datagram and a Unix stream socket outside the
// roots. Only the read-only policy closes every socket, and
// workspace-write closes UDP: a case runs under the scenarios whose
// policy closes its channel, and as the fsmonitor program, which runs
// read-only, under all.
func (f *classFixture) socketCases(n *int) []classCase {
	c := f.ch
	var out []classCase
	readOnly := []string{"read-only verdict", "auto-edit"}
	noUDP := append(slices.Clone(readOnly), "workspace-write")
	for _, ch := range []struct {
		target   string
		policies []string
		py, pl   string
	}{
		{"UDP to 127.0.0.1", noUDP,
			fmt.Sprintf("import socket\nsocket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'{w}', ('127.0.0.1', %d))", c.port()),
			fmt.Sprintf(`use IO::Socket::INET; IO::Socket::INET->new(PeerAddr => "127.0.0.1:%d", Proto => "udp")->send("{w}") or die "$!";`, c.port())},
		{"Unix datagram socket", readOnly,
			fmt.Sprintf("import socket\nsocket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'{w}', %q)", c.dgram),
			fmt.Sprintf(`use IO::Socket::UNIX; IO::Socket::UNIX->new(Type => SOCK_DGRAM(), Peer => "%s")->send("{w}") or die "$!";`, c.dgram)},
		{"Unix stream socket", readOnly,
			fmt.Sprintf("import socket\ns = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\ns.connect(%q)\ns.sendall(b'{w}')", c.stream),
			fmt.Sprintf(`use IO::Socket::UNIX; IO::Socket::UNIX->new(Type => SOCK_STREAM(), Peer => "%s")->print("{w}") or die "$!";`, c.stream)},
	} {
		a := &caseAdder{f: f, n: n, template: classCase{class: "sockets", target: ch.target, mark: markSocket, policies: ch.policies}}
		if strings.HasPrefix(ch.target, "UDP") {
			a.add("bash /dev/udp", fmt.Sprintf("echo {w} > /dev/udp/127.0.0.1/%d", c.port()), true)
		}
		a.add("python3", "python3 -c "+shellQuote(ch.py), onPath("python3"))
		a.add("perl", "perl -e "+shellQuote(ch.pl), onPath("perl"))
		a.addScript("sh script", "python3 -c "+shellQuote(ch.py)+"\n", onPath("python3"))
		out = append(out, a.out...)
	}
	return out
}

// classCases are every case, numbered from 0 in order.
func (f *classFixture) classCases() []classCase {
	n := 0
	var out []classCase
	for _, w := range []struct{ class, top, target string }{
		{"user state", f.home, ".qwen/settings.json"},
		{"user state", f.home, ".qwen/trustedFolders.json"},
		{"user state", f.home, ".gitconfig"},
		{"user state", f.home, ".bashrc"},
		{"git internals", f.root, ".git/config"},
		{"git internals", f.root, ".git/hooks/pre-commit"},
		{"git internals", f.root, ".git/commondir"},
		{"git internals", f.root, ".git/objects/info/alternates"},
		{"git internals", f.root, ".git/info/attributes"},
		{"git internals", f.root, "fsm/.git/hooks/pre-commit"},
		{"editor and environment files", f.root, ".vscode/tasks.json"},
		{"editor and environment files", f.root, "sub2/.vscode/tasks.json"},
		{"editor and environment files", f.root, ".envrc"},
		{"editor and environment files", f.root, ".gitattributes"},
		{"editor and environment files", f.root, ".devcontainer/devcontainer.json"},
		{"editor and environment files", f.root, "QWEN.md"},
	} {
		out = append(out, f.writeCases(w.class, w.target, w.top, &n)...)
	}
	for _, target := range []string{".ssh/id_rsa", ".qwen/.env"} {
		out = append(out, f.readCases(target, &n)...)
	}
	for _, file := range []string{"environ", "cmdline"} {
		out = append(out, f.procCases(file, &n)...)
	}
	out = append(out, f.socketCases(&n)...)
	return out
}

// directPython puts python3 itself first on PATH: a version manager's
// shim (pyenv's is a shell script) costs a tenth of a second a call,
// which over the battery's python3 cases is most of its time.
func directPython(t *testing.T) {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	exe := strings.TrimSpace(string(out))
	if err != nil || !filepath.IsAbs(exe) {
		return
	}
	bin := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(bin, "python3")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func onPath(prog string) bool {
	_, err := exec.LookPath(prog)
	return err == nil
}

var unshareOnce = sync.OnceValue(func() bool {
	return exec.Command("unshare", "-r", "-m", "true").Run() == nil
})

// unshareWorks reports whether unshare can make a user and mount
// namespace here, run directly (for a case's liveness).
func unshareWorks() bool { return unshareOnce() }

// startSibling starts a process beside the server that holds secrets in
// its environment (an API key among them) and its command line, as a
// server started with a key does.
func startSibling(t *testing.T) (pid int, secrets []string) {
	t.Helper()
	envSecret, argSecret, keySecret := nonce(t), nonce(t), nonce(t)
	// One process, which the cleanup ends: the secret is its argv[0].
	sib := exec.Command("sleep", "600")
	sib.Args[0] = "PROCSECRET=" + argSecret
	sib.Env = append(os.Environ(), "PROCSECRET="+envSecret, "OPENAI_API_KEY="+keySecret)
	if err := sib.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sib.Process.Kill(); _ = sib.Wait() })
	return sib.Process.Pid, []string{envSecret, argSecret, keySecret}
}

// sampleTargets keeps every case, except under the race detector, which
// makes each command several times slower, and with -short: there,
// scenario k tries every way of every class on one target of the class,
// the next one for the next scenario, so that each target is still tried
// under some policy.
func sampleTargets(cases []classCase, k int) func(classCase) bool {
	if !raceDetector && !testing.Short() {
		return func(classCase) bool { return true }
	}
	targets := map[string][]string{}
	for _, c := range cases {
		if !slices.Contains(targets[c.class], c.target) {
			targets[c.class] = append(targets[c.class], c.target)
		}
	}
	return func(c classCase) bool {
		ts := targets[c.class]
		return c.target == ts[k%len(ts)]
	}
}

// classTally counts, for one class or way under one scenario, the cases
// tried, those that ran (the rest were asked and rejected), and those
// that held.
type classTally struct{ tried, ran, held int }

func TestContainmentClassBattery(t *testing.T) {
	requireSandbox(t)
	directPython(t)
	serverKey := nonce(t)
	t.Setenv("OPENAI_API_KEY", serverKey)
	pid, procSecrets := startSibling(t)
	procSecrets = append(procSecrets, serverKey)
	byClass := map[string]map[string]*classTally{}
	byWay := map[string]map[string]*classTally{}
	count := func(m map[string]map[string]*classTally, row, col string, ran, held bool) {
		if m[row] == nil {
			m[row] = map[string]*classTally{}
		}
		if m[row][col] == nil {
			m[row][col] = &classTally{}
		}
		c := m[row][col]
		c.tried++
		if ran {
			c.ran++
		}
		if held {
			c.held++
		}
	}
	var ways []string
	for k, sc := range classScenarios {
		t.Run(sc.name, func(t *testing.T) {
			secret := nonce(t)
			u := startUnasked(t, sc, classHomeFiles(secret))
			// A first command lets qwen-ls make what it owns in the home
			// folder (the build caches commands may write, its session
			// files) before the fixture takes its picture.
			u.send(t, "warm", "ls")
			f := &classFixture{root: u.root, home: u.home, qhome: u.qhome, secret: secret,
				pid: pid, procSecrets: procSecrets, ch: listenChannels(t)}
			prepareClasses(t, f)
			cases := f.classCases()
			if len(cases) < 300 {
				t.Fatalf("%d cases, want at least 300", len(cases))
			}
			keep := sampleTargets(cases, k)
			for i, c := range cases {
				if c.policies != nil && !slices.Contains(c.policies, sc.name) || !keep(c) {
					continue
				}
				if !slices.Contains(ways, c.way) {
					ways = append(ways, c.way)
				}
				f.ch.arrived()
				cmd := c.cmd
				if c.hook {
					writeFileAll(t, filepath.Join(f.root, "hookrun", "cmd.sh"), c.cmd)
					cmd = hookCommand
				}
				id := fmt.Sprintf("k%d", i)
				n := len(u.model.Requests())
				msg := u.send(t, id, cmd)
				broke := f.broken()
				for _, s := range append([]string{secret}, procSecrets...) {
					if u.seen(n, s) {
						broke = append(broke, "a secret reached the model")
						break
					}
				}
				if got := f.ch.arrived(); len(got) > 0 {
					broke = append(broke, fmt.Sprintf("the listeners got %q", got))
				}
				held := len(broke) == 0
				count(byClass, c.class, sc.name, msg != "", held)
				count(byWay, c.way, sc.name, msg != "", held)
				if !held {
					t.Errorf("%s, %s, %s: %q (asked: %v) broke: %s\nthe model was told: %s",
						c.class, c.target, c.way, c.cmd, u.wasAsked(id), strings.Join(broke, "; "), brief(msg))
				}
				f.restore(t)
			}
		})
	}
	var b strings.Builder
	table := func(title string, rows []string, m map[string]map[string]*classTally) {
		fmt.Fprintf(&b, "\n%s (tried / ran unasked / held):\n%-48s", title, "")
		for _, sc := range classScenarios {
			fmt.Fprintf(&b, " %-18s", sc.name)
		}
		total := classTally{}
		for _, row := range rows {
			fmt.Fprintf(&b, "\n%-48s", row)
			for _, sc := range classScenarios {
				c := m[row][sc.name]
				if c == nil {
					fmt.Fprintf(&b, " %-18s", "-")
					continue
				}
				fmt.Fprintf(&b, " %-18s", fmt.Sprintf("%d / %d / %d", c.tried, c.ran, c.held))
				total.tried += c.tried
				total.ran += c.ran
				total.held += c.held
			}
		}
		fmt.Fprintf(&b, "\ntotal: %d tried, %d ran unasked, %d held, %d broke\n", total.tried, total.ran, total.held, total.tried-total.held)
	}
	table("By class", protectedClasses, byClass)
	table("By way", ways, byWay)
	t.Log(b.String())
}

// Every case marked live does leave its mark when bash runs it directly,
// as the person would, with the rights of the test: it changes a
// protected file, prints a secret of the home folder or of another
// process, or reaches a listener. Its absence under qwen-ls then proves
// something.
func TestContainmentClassWaysAreLive(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	directPython(t)
	home, _ := filepath.EvalSymlinks(t.TempDir())
	t.Setenv("HOME", home)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	pid, procSecrets := startSibling(t)
	f := &classFixture{root: root, home: home, qhome: filepath.Join(home, ".qwen"), secret: nonce(t),
		pid: pid, procSecrets: procSecrets, ch: listenChannels(t)}
	prepareClasses(t, f)
	cases := f.classCases()
	live, notLive := 0, 0
	for _, c := range cases {
		f.ch.arrived()
		tmp := t.TempDir()
		var cmd *exec.Cmd
		if c.hook {
			writeFileAll(t, filepath.Join(root, "hookrun", "cmd.sh"), c.cmd)
			cmd = exec.Command("bash", "-c", hookCommand)
		} else {
			cmd = exec.Command("bash", "-c", c.cmd)
		}
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "GIT_CONFIG_NOSYSTEM=1")
		out, _ := cmd.CombinedOutput()
		left := false
		switch c.mark {
		case markWrite:
			left = len(f.broken()) > 0
		case markRead:
			left = strings.Contains(string(out), f.secret)
		case markProc:
			for _, s := range procSecrets {
				left = left || strings.Contains(string(out), s)
			}
		case markSocket:
			left = len(f.ch.arrived()) > 0
		}
		f.restore(t)
		switch {
		case left:
			live++
		case c.live:
			t.Errorf("%s, %s, %s: %q run directly left no mark, so its holding proves nothing; it said: %s", c.class, c.target, c.way, c.cmd, out)
		default:
			notLive++
			t.Logf("not live, as expected: %s, %s, %s", c.class, c.target, c.way)
		}
	}
	t.Logf("%d of %d cases live run directly; %d are not, as expected (a missing file or folder, a program not installed)", live, len(cases), notLive)
}
