//go:build linux

package sandbox

import (
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// guardFixture is a workspace with a git repository (with a hook and a
// config), an editor folder and an ordinary source folder, and the
// protect policy for it.
func guardFixture(t *testing.T) (string, Policy) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "ws")
	for _, d := range []string{".git/hooks", ".git/objects/info", ".git/refs/heads", ".vscode", "src", "sub"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, text := range map[string]string{
		".git/config": "orig\n", ".git/HEAD": "ref: refs/heads/main\n", ".git/hooks/pre-commit.sample": "orig\n",
		".vscode/settings.json": "orig\n", "src/a.go": "orig\n",
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(base, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	return root, Policy{Mode: Protect, Class: Class{Roots: []string{root}}, Writable: []string{root}, TempDir: tmp}
}

// snapshot maps each path below root to its content ("dir" for a
// folder, "->target" for a link) and mode.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "->" + l
		case fi.IsDir():
			out[rel] = "dir " + fi.Mode().String()
		default:
			b, _ := os.ReadFile(p)
			out[rel] = fi.Mode().String() + " " + string(b)
		}
		return nil
	})
	return out
}

// protectedChanges lists what changed between two snapshots in the
// protected class.
func protectedChanges(c Class, root string, before, after map[string]string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range []map[string]string{before, after} {
		for rel := range m {
			if seen[rel] {
				continue
			}
			seen[rel] = true
			if before[rel] == after[rel] {
				continue
			}
			if _, ok := c.Protected(filepath.Join(root, rel)); ok {
				out = append(out, rel+": "+before[rel]+" => "+after[rel])
			}
		}
	}
	return out
}

// Every way into the protected class that goes through a path, tried by
// a command that runs under the protect policy, is refused: the class is
// unchanged afterwards, whatever else the command did. Each form also runs
// without the sandbox, where it must change the class, so that its
// failure under the sandbox means something.
func TestGuardKeepsTheClass(t *testing.T) {
	needLandlock(t)
	needMounts(t)
	self, _ := os.Executable()
	forms := []string{
		// Writes, new and existing.
		"echo x >> .git/config",
		"echo x > .git/commondir",
		"echo x > .git/objects/info/alternates",
		"mkdir .git/info && echo x > .git/info/attributes",
		"echo x > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
		"echo x > .envrc",
		"echo x > sub/.envrc",
		"echo x > .gitattributes",
		"echo x > .gitmodules",
		"mkdir -p .devcontainer && echo x > .devcontainer/devcontainer.json",
		"echo x > .vscode/tasks.json",
		"echo x > QWEN.md",
		"echo x > sub/AGENTS.md",
		"mkdir -p sub/.git/hooks && echo x > sub/.git/hooks/post-checkout",
		"git init -q sub",
		// Renames of each parent, and copy-and-replace.
		"mv .git g && mkdir .git && cp -r g/. .git/ && echo x >> .git/config",
		"mv .vscode v && mkdir .vscode && echo x > .vscode/tasks.json",
		"mv .git/hooks h && mkdir .git/hooks && echo x > .git/hooks/pre-commit",
		"cp -r .git $TMPDIR/g && echo x >> $TMPDIR/g/config && rm -rf .git; mv $TMPDIR/g .git",
		"mkdir d && echo x > d/tasks.json && rm -rf .vscode; mv d .vscode",
		"mkdir e && echo x > e/config && rm -rf .git; mv e .git",
		"mkdir d && echo x > d/devcontainer.json && mv d .devcontainer",
		"echo x > y && mv y .envrc",
		"echo x > y && mv -f y .git/config",
		"echo x > y && python3 -c 'import os; os.rename(\"y\", \".\"+\"envrc\")'",
		// Links.
		"ln -s .git/config l && echo x >> l",
		"ln -s .git g && echo x > g/commondir",
		"ln -s ../.git src/g && echo x > src/g/hooks/pre-push",
		"ln -s /proc/self/cwd/.git c && echo x > c/commondir",
		"ln .git/config h && echo x >> h",
		"ln -s x .envrc",
		"ln -s commondir .git/cd",
		// Through /proc and descriptors.
		"exec 3<.git/config && echo x >> /proc/self/fd/3",
		"exec 3<.git/config && echo x >> /dev/fd/3",
		"cd .git && echo x > /proc/self/cwd/commondir",
		"python3 -c 'import os; fd=os.open(\".git\", os.O_RDONLY); os.mkdir(\"hooks2\", dir_fd=fd); open(\"/proc/self/fd/%d/commondir\" % fd, \"w\").write(\"x\")'",
		"python3 -c 'import os, ctypes; fd=os.open(\".\", os.O_TMPFILE|os.O_WRONLY); os.write(fd, b\"x\"); ctypes.CDLL(None).linkat(-100, b\"/proc/self/fd/%d\" % fd, -100, b\".envrc\", 0x400)'",
		"python3 -c 'import os; f=os.open(\".git/config\", os.O_RDONLY); os.fchmod(f, 0o777)'",
		"chmod 777 .git/hooks/pre-commit.sample",
		"truncate -s 0 .git/config",
		"python3 -c 'import ctypes, os; l=ctypes.CDLL(None); l.renameat2(-100, b\"src\", -100, b\".git\", 2)'",
		"touch x && python3 -c 'import ctypes; l=ctypes.CDLL(None); l.renameat2(-100, b\"x\", -100, b\".vscode\", 2)'",
		// Programs that hide the path.
		"python3 -c 'open(\".gi\"+\"t/com\"+\"mondir\",\"w\").write(\"x\")'",
		"perl -e 'open(F, \">\", join(\"\", \".g\", \"it/config\")) and print F \"x\"'",
		"printf 'echo x > .%snvrc\\n' e > s.sh && sh s.sh",
		"SANDBOX_TEST_WRITE=$PWD/.git/commondir " + self,
		// Mount and namespace tricks.
		"unshare -r -m sh -c 'mount -t tmpfs t .git/hooks && echo x > .git/hooks/pre-commit'",
		"mount -o remount,rw,bind .git/config && echo x >> .git/config",
		"umount .git/config; echo x >> .git/config",
	}
	for _, form := range forms {
		t.Run(form, func(t *testing.T) {
			root, p := guardFixture(t)
			before := snapshot(t, root)
			// Unconfined, the form changes the class.
			cmd := exec.Command("bash", "-c", form)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "TMPDIR="+p.TempDir)
			_, _ = cmd.CombinedOutput()
			if len(protectedChanges(p.Class, root, before, snapshot(t, root))) == 0 && !strings.Contains(form, "mount") {
				t.Fatalf("%q does not change the protected class even without the sandbox: the test proves nothing", form)
			}
			root, p = guardFixture(t)
			before = snapshot(t, root)
			r := runIn(t, p, root, form, "TMPDIR="+p.TempDir)
			if ch := protectedChanges(p.Class, root, before, snapshot(t, root)); len(ch) > 0 {
				t.Errorf("%q changed the protected class under the protect policy:\n%s\noutput: %s%s", form, strings.Join(ch, "\n"), r.out, r.err)
			}
		})
	}
}

// Ordinary work in the same workspace is not hindered: files made,
// changed, renamed, linked and removed; git's own writes for a commit;
// writes to the devices and the temporary folder.
func TestGuardLetsOrdinaryWritesThrough(t *testing.T) {
	needLandlock(t)
	needMounts(t)
	root, p := guardFixture(t)
	script := strings.Join([]string{
		"set -e",
		"echo new > src/b.go && echo more >> src/a.go && mv src/b.go src/c.go && ln -s c.go src/d.go && ln src/c.go src/e.go",
		"mkdir -p build/out && touch build/out/x && rm -r build",
		"echo x > /dev/null && echo y > /dev/stderr && echo t > $TMPDIR/t && cat $TMPDIR/t",
		"echo x > .git/index.lock && mv .git/index.lock .git/index",
		"echo x > .git/objects/ab && mkdir -p .git/refs/heads/feature && echo h > .git/refs/heads/feature/x",
		"echo x > gitattributes.txt && mkdir -p .vscodeish docs/.vscode-not && echo x > docs/envrc",
		"chmod +x src/c.go && test -x src/c.go",
		"mkfifo src/f && (cat src/f > /dev/null &) && echo x > src/f",
		"python3 -c 'import os, ctypes; fd=os.open(\"src\", os.O_TMPFILE|os.O_WRONLY); os.write(fd, b\"t\"); assert ctypes.CDLL(None).linkat(-100, b\"/proc/self/fd/%d\" % fd, -100, b\"src/tmpfile\", 0x400) == 0'",
		"cat src/c.go src/d.go src/tmpfile",
	}, "\n")
	r := runIn(t, p, root, script, "TMPDIR="+p.TempDir)
	if r.code != 0 {
		t.Fatalf("ordinary work failed under protect: %+v", r)
	}
	if r.out != "t\nnew\nnew\nt" {
		t.Fatalf("output %q", r.out)
	}
	if b, _ := os.ReadFile(filepath.Join(root, ".git", "index")); string(b) != "x\n" {
		t.Fatalf("git's index was not written: %q", b)
	}
}

// Without namespaces (a system that refuses unprivileged user
// namespaces) the guard alone keeps the class: every form of
// TestGuardKeepsTheClass that goes through a path is still refused.
func TestGuardWithoutNamespaces(t *testing.T) {
	needLandlock(t)
	t.Setenv(EnvNoNamespaces, "1")
	if Probe().Mounts {
		t.Fatal("Probe still reports namespaces")
	}
	for _, form := range []string{
		"echo x >> .git/config",
		"echo x > .git/commondir",
		"mv .git g && mkdir .git && echo x > .git/config",
		"echo x > .envrc",
		"mkdir -p .devcontainer && echo x > .devcontainer/devcontainer.json",
		"ln .git/config h && echo x >> h",
		"ln -s .git g && echo x > g/commondir",
		"chmod 777 .git/hooks/pre-commit.sample",
		"python3 -c 'open(\".gi\"+\"t/com\"+\"mondir\",\"w\").write(\"x\")'",
	} {
		t.Run(form, func(t *testing.T) {
			root, p := guardFixture(t)
			before := snapshot(t, root)
			r := runIn(t, p, root, form, "TMPDIR="+p.TempDir)
			if ch := protectedChanges(p.Class, root, before, snapshot(t, root)); len(ch) > 0 {
				t.Errorf("%q changed the protected class without namespaces:\n%s\noutput: %s%s", form, strings.Join(ch, "\n"), r.out, r.err)
			}
		})
	}
	// Ordinary writes still go through, and the command did run in
	// this process's PID namespace.
	root, p := guardFixture(t)
	own, _ := os.Readlink("/proc/self/ns/pid")
	r := runIn(t, p, root, "echo y > src/b.go && cat src/b.go && readlink /proc/self/ns/pid", "TMPDIR="+p.TempDir)
	if r.code != 0 || r.out != "y\n"+own+"\n" {
		t.Fatalf("an ordinary write failed, or the command ran in a namespace of its own (ours: %s): %+v", own, r)
	}
}

// runPiped runs `bash -c script` in dir under p the way the shell tool
// does (its output on pipes, lingering) and returns the output, the
// status, the denials, and whether a warm supervisor took it.
func runPiped(t *testing.T, p Policy, dir, script string) (string, Status, []Denial, bool) {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+p.TempDir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	p.Linger = true
	s, err := Wrap(cmd, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	out, _ := io.ReadAll(r)
	r.Close()
	st := s.WaitMain()
	<-s.Exited()
	return string(out), st, s.Denials(), s.warm != nil
}

// A warm supervisor, started ahead, takes the next confined command: the
// command runs in its folder with its environment and output, under its
// policy (the guard included), and reports its status and refusals as a
// cold one does.
func TestWarmSupervisorTakesTheNextCommand(t *testing.T) {
	needLandlock(t)
	needMounts(t)
	root, p := guardFixture(t)
	warm := false
	for i := 0; i < 20 && !warm; i++ {
		var out string
		var st Status
		var denials []Denial
		out, st, denials, warm = runPiped(t, p, root, `echo "$PWD" "$TMPDIR"; echo x > .envrc; echo ok > src/b.go; exit 3`)
		if want := root + " " + p.TempDir + "\n"; !strings.HasPrefix(out, want) || st.Code != 3 {
			t.Fatalf("run %d (warm %v): output %q status %+v, want %q and exit 3", i, warm, out, st, want)
		}
		if len(denials) != 1 || denials[0].Path != filepath.Join(root, ".envrc") || denials[0].Kind != KindEnv {
			t.Fatalf("run %d (warm %v): denials %+v", i, warm, denials)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "src", "b.go")); string(b) != "ok\n" {
			t.Fatalf("run %d (warm %v): the ordinary write did not happen", i, warm)
		}
		if _, err := os.Lstat(filepath.Join(root, ".envrc")); err == nil {
			t.Fatalf("run %d (warm %v): .envrc was written", i, warm)
		}
		if !warm {
			// The first confined command started the pool's supervisor:
			// wait until it is ready (the bound only ends a test that
			// would hang).
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				pool.mu.Lock()
				ready := pool.ready != nil
				pool.mu.Unlock()
				if ready {
					break
				}
			}
		}
	}
	if !warm {
		t.Fatal("no command went to a warm supervisor")
	}
}
