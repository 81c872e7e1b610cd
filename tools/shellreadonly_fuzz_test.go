//go:build linux

package tools_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/shellsafe"
)

// The read-only verdict (tools.md §6.3) is checked by running commands.
// A command judged read-only is run in a throwaway sandbox: as user
// nobody, in a new network namespace (no network at all), with PATH
// holding only the read-only programs plus shims for every other common
// program that write a marker file when started, HOME and TMPDIR inside
// the sandbox. After the run no marker may exist and the sandbox tree
// (a small git repository and files) must be unchanged. Commands judged to
// need approval are never run.
//
// Running needs root (to become nobody and to make the network
// namespace); elsewhere only the analysis half runs.

// readOnlyPrograms are linked into the sandbox PATH: the §6.3 set.
var readOnlyPrograms = []string{
	"awk", "basename", "cat", "column", "cut", "df", "dirname", "du", "env", "find", "git", "go",
	"grep", "head", "less", "ls", "more", "printenv", "ps", "rg", "sed", "sort", "stat",
	"tail", "tree", "uniq", "wc", "which", "whoami",
}

// shimmedPrograms get a marker-writing stand-in.
var shimmedPrograms = []string{
	"touch", "rm", "mv", "cp", "tee", "dd", "sh", "bash", "dash", "python3", "perl", "xargs", "nice",
	"timeout", "nohup", "chmod", "chown", "mkdir", "rmdir", "ln", "install", "truncate", "curl",
	"wget", "nc", "ssh", "vi", "vim", "nano", "ed", "ex", "editor", "sensible-editor", "pager",
	"patch", "tar", "gzip", "gunzip", "zcat", "xz", "bzip2", "zip", "unzip", "sudo", "su", "kill",
	"make", "npm", "node", "date", "id", "true", "false", "sleep", "yes", "seq", "gpg",
	"lesspipe", "file", "iconv", "sync", "script", "watch", "strace", "gdb", "setsid", "stdbuf",
	"flock", "chroot", "unshare", "nsenter", "busybox", "hostname", "sha256sum", "md5sum",
}

type roSandbox struct {
	dir   string // the whole sandbox
	work  string // the command's working directory
	marks string
	bin   string
	home  string
	tmp   string
	run   bool // commands can be run (root)
}

// newROSandbox builds a sandbox in a t.TempDir of the caller.
func newROSandbox(t testing.TB) *roSandbox {
	t.Helper()
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	// The parents of t.TempDir are private to root; nobody must reach in.
	for p := filepath.Dir(base); p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
		_ = os.Chmod(p, 0o711)
	}
	sb := &roSandbox{
		dir:   base,
		work:  filepath.Join(base, "work"),
		marks: filepath.Join(base, "marks"),
		bin:   filepath.Join(base, "bin"),
		home:  filepath.Join(base, "home"),
		tmp:   filepath.Join(base, "tmp"),
		run:   os.Geteuid() == 0 && sandboxWorks(),
	}
	for _, d := range []string{sb.work, sb.marks, sb.bin, sb.home, sb.tmp, filepath.Join(sb.work, "sub", "deep")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range readOnlyPrograms {
		if p, err := exec.LookPath(name); err == nil {
			if err := os.Symlink(p, filepath.Join(sb.bin, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, name := range shimmedPrograms {
		shim := fmt.Sprintf("#!/bin/bash\necho \"$0 $*\" > %q\nexit 0\n", filepath.Join(sb.marks, name))
		if err := os.WriteFile(filepath.Join(sb.bin, name), []byte(shim), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"a.txt": "alpha\nbeta\ngamma\nalpha\n", "b.txt": "beta\n", "s/a/b/w": "z\n",
		"sub/c.go": "package c\n", "sub/deep/d.md": "# d\n",
		// A key-binding file for less whose #env section sets LESSOPEN
		// to a program outside the read-only set.
		"k": "#env\nLESSOPEN=|touch %s.opened\n",
		// Go's telemetry counters (files under the user's config folder,
		// and a go process that uploads them) are go's own bookkeeping,
		// not a change the command makes: turned off, as "go telemetry
		// off" does, so that the comparison sees the command alone.
		"../home/.config/go/telemetry/mode": "off\n",
		// Files named like options, where a glob picks them up.
		"opt/-delete": "x\n", "sedd/-i": "y\n", "sedd/x.txt": "alpha\n",
	}
	for rel, content := range files {
		p := filepath.Join(sb.work, rel)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A workspace program named ls: running it is starting a program
	// outside the read-only set.
	wsLs := fmt.Sprintf("#!/bin/bash\necho \"$0 $*\" > %q\n", filepath.Join(sb.marks, "workspace-ls"))
	if err := os.WriteFile(filepath.Join(sb.work, "ls"), []byte(wsLs), 0o755); err != nil {
		t.Fatal(err)
	}
	if git, err := exec.LookPath("git"); err == nil {
		cmd := exec.Command(git, "-c", "init.defaultBranch=main", "init", "-q", ".")
		cmd.Dir = sb.work
		cmd.Env = []string{"HOME=" + sb.home, "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git init: %v %s", err, out)
		}
		for _, args := range [][]string{{"add", "a.txt", "sub"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"}, {"branch", "side"}} {
			cmd := exec.Command(git, args...)
			cmd.Dir = sb.work
			cmd.Env = []string{"HOME=" + sb.home, "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin"}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v %s", args, err, out)
			}
		}
	}
	if sb.run {
		// Everything belongs to nobody, so a write the verdict missed is
		// not stopped by permissions: it shows up in the comparison.
		_ = filepath.WalkDir(base, func(p string, _ fs.DirEntry, err error) error {
			if err == nil {
				_ = os.Lchown(p, 65534, 65534)
			}
			return nil
		})
	}
	return sb
}

// sandboxWorks reports whether this machine lets a process start as
// nobody in a new network namespace (a container may forbid it).
func sandboxWorks() bool {
	cmd := exec.Command("/bin/bash", "-c", "exit 0")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNET,
		Credential: &syscall.Credential{Uid: 65534, Gid: 65534},
	}
	return cmd.Run() == nil
}

// snapshot lists every entry of the sandbox with its type, mode, size and
// content hash; git's index, which a read-only git refreshes, is left out.
func (sb *roSandbox) snapshot(t testing.TB) map[string]string {
	t.Helper()
	out := map[string]string{}
	_ = filepath.WalkDir(sb.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			out[p] = "error " + err.Error()
			return nil
		}
		rel, _ := filepath.Rel(sb.dir, p)
		if rel == filepath.Join("work", ".git", "index") {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			out[rel] = "error"
			return nil
		}
		v := fmt.Sprintf("%v %d", fi.Mode(), fi.Size())
		if fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			v += fmt.Sprintf(" %x", sha256.Sum256(data))
		} else if fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			v += " -> " + target
		}
		out[rel] = v
		return nil
	})
	return out
}

// context is what the analysis is told of the sandbox: a trusted folder
// whose only root is the working directory.
func (sb *roSandbox) context() shellsafe.Context {
	return shellsafe.Context{
		RepoConfigTrusted: true, Dir: sb.work, Home: sb.home,
		Inside: func(p string) bool {
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				real = filepath.Clean(p)
			}
			return real == sb.work || strings.HasPrefix(real, sb.work+string(filepath.Separator))
		},
	}
}

// exec runs command in the sandbox and returns what it broke: markers
// left by shims and changes to the tree.
func (sb *roSandbox) exec(t testing.TB, command string) []string {
	t.Helper()
	before := sb.snapshot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/bash", "-c", command)
	cmd.Dir = sb.work
	cmd.Env = []string{
		"PATH=" + sb.bin, "HOME=" + sb.home, "TMPDIR=" + sb.tmp, "LANG=C", "TERM=dumb",
		"PAGER=cat", "GIT_PAGER=cat", "QWEN_CODE=1", "GIT_CONFIG_NOSYSTEM=1",
		// go list may run; it must neither fetch nor fill a cache.
		"GOCACHE=off", "GOTOOLCHAIN=local", "GOPROXY=off", "GOFLAGS=", "GOPATH=" + filepath.Join(sb.tmp, "gopath"),
	}
	cmd.Stdin = nil
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:    true,
		Cloneflags: syscall.CLONE_NEWNET,
		Credential: &syscall.Credential{Uid: 65534, Gid: 65534},
	}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	runErr := cmd.Run()
	var exitErr *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exitErr) && ctx.Err() == nil {
		t.Fatalf("could not run %q in the sandbox: %v", command, runErr)
	}
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	var broke []string
	marks, _ := os.ReadDir(sb.marks)
	for _, m := range marks {
		data, _ := os.ReadFile(filepath.Join(sb.marks, m.Name()))
		broke = append(broke, fmt.Sprintf("started %s: %s", m.Name(), strings.TrimSpace(string(data))))
		_ = os.Remove(filepath.Join(sb.marks, m.Name()))
	}
	after := sb.snapshot(t)
	for k, v := range after {
		if k == "marks" || strings.HasPrefix(k, "marks"+string(filepath.Separator)) {
			continue
		}
		if before[k] != v {
			broke = append(broke, fmt.Sprintf("changed %s: %q -> %q", k, before[k], v))
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			broke = append(broke, "removed "+k)
		}
	}
	slices.Sort(broke)
	if len(broke) > 0 {
		broke = append(broke, "output: "+truncateForLog(out.String()))
	}
	return broke
}

// The harness itself must see what it is meant to see: a write, a
// deletion and a shimmed program are each reported.
func TestReadOnlySandboxSeesWritesAndStarts(t *testing.T) {
	sb := newROSandbox(t)
	if !sb.run {
		t.Skip("running commands in the sandbox needs root and a network namespace (user nobody, no network); only the analysis is checked here")
	}
	writers := []string{"echo x > new.txt", "find . -name b.txt -delete", "touch x", "sed -i s/a/b/ a.txt"}
	if _, err := exec.LookPath("git"); err == nil {
		writers = append(writers, "git branch --edit-description")
	}
	for _, cmd := range writers {
		if broke := sb.exec(t, cmd); len(broke) == 0 {
			t.Errorf("%q: the sandbox saw nothing", cmd)
		}
		// Put the tree back for the next command.
		sb = newROSandbox(t)
	}
	if broke := sb.exec(t, "cat a.txt | sort | uniq -c; ls -la; git log --oneline 2>/dev/null; git status 2>/dev/null"); len(broke) != 0 {
		t.Errorf("read-only commands reported: %v", broke)
	}
	// No network in the sandbox: a listener on the host's loopback gets
	// no connection.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	sb.exec(t, fmt.Sprintf("echo x > /dev/tcp/127.0.0.1/%d", port))
	_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(100 * time.Millisecond))
	if c, err := ln.Accept(); err == nil {
		c.Close()
		t.Error("a command in the sandbox reached the host's loopback")
	}
}

// readOnlyVocabulary feeds the token form of FuzzShellReadOnly.
var readOnlyVocabulary = []string{
	"ls", "cat", "find", "git", "sed", "awk", "sort", "uniq", "tree", "rg", "printf", "env", "echo",
	"less", "grep", "head", "cd", "PATH=.", "X=1", "LC_ALL=C", "IFS=/", "-delete", "-exec", "touch",
	"m", "\\;", "{}", "-i", "-n", "p", "s/a/b/w", "'s/a/b/e'", "'1e touch m'", "-o", "out", "--output=o",
	"--open=touch", "log", "branch", "--edit", "--edit-description", "remote", "show", "grep", "diff",
	"-v", "'{print > \"o\"}'", "'BEGIN{system(\"touch m\")}'", "*", "-*", "{-exec,touch,m,\\;}",
	"x{,-i}", ";", "|", "&&", "||", "&", "\n", ">", ">&2", "2>/dev/null", "<", "a.txt", "b.txt", "sub",
	"--pre=touch", "-z", "--hostname-bin=touch", "-R", "$(touch m)", "`touch m`", "<(touch m)",
	"'$x'", "\"$x\"", "$x", "~", "..", "/", "-C", "sub", "--no-pager", "-c", "core.pager=touch",
	"show", "HEAD", "--", "-f", "-e", "-F:", "--sort", "u", "-u", "xargs", "-print", "-name", "'*'",
	"(", ")", "{", "}", "!", "f()", "if", "then", "fi", "for", "in", "do", "done", "<<<", "x",
	// Evaluated variable contents, awk continuations, lesskey files, git
	// elsewhere, go list.
	"x='a[$(touch m)]';", "$((x))", "$[x]", "${y[x]}", "${y:x}", "${!x}", "${x@P}", "a[x]=1", "((x))",
	"'BEGIN{system \\\n(\"touch m\")}'", "'{print \\\n> \"o\"}'", "--lesskey-src=k", "-k", "k",
	"--log-file=o", "+!touch", "/tmp", "go", "list", "-export", "-toolexec=touch", "-mod=mod", ">>",
}

func tokenCommand(script []byte) string {
	var b strings.Builder
	for i, c := range script {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(readOnlyVocabulary[int(c)%len(readOnlyVocabulary)])
	}
	return b.String()
}

// FuzzShellReadOnly: the analysis never panics, and a command judged
// read-only (plan mode runs it, default mode runs it without asking)
// neither starts a program outside the read-only set nor changes a file.
// The command is raw text followed by words drawn from a vocabulary of
// read-only programs and the options that turn them into writers.
func FuzzShellReadOnly(f *testing.F) {
	for _, seed := range readOnlySeeds {
		f.Add(seed, []byte(nil))
	}
	f.Add("", []byte{2, 22, 23, 24, 25})
	f.Add("find . ", []byte{49})
	f.Add("git ", []byte{38, 39})
	f.Add("", []byte{byte(len(readOnlyVocabulary) - 27), byte(len(readOnlyVocabulary) - 25), 1})
	// One sandbox for the whole target (a t.TempDir would vanish with the
	// first input's subtest); every run compares it before and after.
	sb := newROSandbox(f)
	env := newTestEnv(f, nil).Env
	f.Fuzz(func(t *testing.T, raw string, script []byte) {
		if len(raw) > 300 || len(script) > 24 {
			t.Skip("keep commands short")
		}
		command := raw
		if len(script) > 0 {
			command += " " + tokenCommand(script)
		}
		// What run_shell_command refuses before judging is never run.
		if tools.NewShell(env).Validate(map[string]any{"command": command}) != nil {
			return
		}
		a, err := shellsafe.Analyze(command, sb.context())
		if err != nil || !a.ReadOnly() || !a.HasRoot() || !sb.run {
			return
		}
		if _, err := os.Stat(sb.work); err != nil {
			t.Fatalf("the sandbox is gone: %v", err)
		}
		if broke := sb.exec(t, command); len(broke) > 0 {
			t.Fatalf("%q was judged read-only but:\n  %s", command, strings.Join(broke, "\n  "))
		}
	})
}

// readOnlySeeds are commands judged read-only that exercise the read-only
// programs for real, plus the forms of every defect found so far (judged
// to need approval now, so not run).
var readOnlySeeds = []string{
	"ls -la", "cat a.txt | sort | uniq -c | sort -rn | head -3", "find . -name '*.go' -print",
	"grep -rn alpha . 2>/dev/null", "sed -n '1,2p' a.txt", "awk '{print $1}' a.txt", "git log --oneline",
	"git status", "git diff HEAD", "git branch -a", "git branch --list", "git grep -n alpha",
	"git remote -v", "git show HEAD --stat", "cut -c1-3 a.txt | wc -l", "tail -n1 a.txt; head -c3 b.txt",
	"du -s .; df -h . >/dev/null; stat a.txt >/dev/null", "printf '%s\\n' a b", "echo hi >&2",
	"env; printenv", "which ls", "basename /a/b; dirname /a/b", "cd sub && ls", "x=1; echo $x",
	"LC_ALL=C sort a.txt", "rg -n beta", "tree -L 1", "less a.txt", "more a.txt", "column -t a.txt",
	"ls *.txt", "cat sub/*/d.md", "find sub -type f", "sort -u a.txt b.txt", "uniq a.txt",
	// Defects found by this suite, judged read-only before the fixes.
	"git grep --open='touch m' alpha", "PATH=.:$PATH ls", "PATH=.; ls", "printf -v PATH %s .; ls",
	"find . {-exec,touch,m,\\;}", "git log {--output=o,}", "cd opt && find *", "cd sedd && sed s/a/b/ *",
	"LESSOPEN='|touch m %s' less a.txt", "GIT_EXTERNAL_DIFF=touch git diff HEAD", "cat < /dev/tcp/127.0.0.1/9",
	"tree -R -H . -L 1", "rg --hostname-bin=touch x", "rg -z x", "git remote show origin",
	"git branch --edit", "git branch --set-u=x", "uniq *.txt", "BASH_ENV=x ls", "ls | IFS=/ cat",
	"cat < \"$f\"", "printf \"$f\"",
	// Classes of issue 18: evaluated variable contents, awk continuations,
	// lesskey files, git aimed elsewhere, go list.
	"x='a[$(touch m)]'; echo $((x))", "x='a[$(touch m)]'; echo ${y[x]}", "x='a[$(touch m)]'; y=ab; echo ${y:x}",
	"y='a[$(touch m)]'; echo ${!y}", "x='$(touch m)'; echo ${x@P}", "x='a[$(touch m)]'; a[x]=1; ls",
	"x='a[$(touch m)]'; for ((i=x;i<0;i++)); do ls; done", "x='a[$(touch m)]'; cat <<E\n$((x))\nE",
	"awk 'BEGIN{system \\\n(\"touch m\")}'", "awk 'BEGIN{print 1 \\\n> \"o\"}'",
	"less --lesskey-src=k a.txt", "less -k k a.txt", "git -C / status", "cd / && git status",
	"cd .. && git log", "go list", "go list -export", "go list -toolexec=touch ./...",
	"x=1; echo ${x:-a} ${#x} ${x%1}", "ls ${HOME}",
}

// The regression cases of the defects found: each of these ran a program
// or wrote a file while judged read-only.
func TestShellReadOnlyRegressions(t *testing.T) {
	for _, cmd := range []string{
		// git accepts unique prefixes of long options.
		"git grep --open='touch m' x", "git grep --open-files=vi x", "git branch --edit",
		"git branch --edit-desc", "git branch --set-u=o/x", "git branch --list --del x", "git branch --unset",
		"git log --outp=x",
		// Environment for the command: PATH, pagers, preload, shell start-up.
		"PATH=. ls", "PATH=.:$PATH git status", "LESSOPEN='|touch m %s' less f", "GIT_EXTERNAL_DIFF=x git diff",
		"LD_PRELOAD=./x.so cat f", "BASH_ENV=x ls", "FOO=1 git status", "ls | IFS=/ cat",
		// Assignment-only statements that change what later commands run.
		"PATH=.; ls", "PATH=/tmp/x; git status", "IFS=x; cat $f", "GIT_DIR=/x; git log",
		// printf -v assigns any variable.
		"printf -v PATH %s .; ls", "printf -vPATH .", "printf $f x", "printf -v* x",
		// Brace and glob patterns that expand to options.
		"find . {-exec,touch,m,\\;}", "git log {--output=x,}", "find *", "sed -n p *", "sort *",
		"find . -name x {-delete,}", "uniq *.txt", "sed x* f", "awk a* f",
		// Network and unknown redirection targets.
		"cat < /dev/tcp/127.0.0.1/80", "cat </dev/udp/h/53", "ls 2>/dev/tcp/h/1", "cat < \"/dev/tcp/h/1\"",
		"cat < $f", "cat < *.txt",
		// Programs that start others or write.
		"tree -R -H . -L 1", "rg --hostname-bin=x a", "rg -z x", "rg -iz x", "rg --search-zip x",
		"git remote show origin",
	} {
		if a := mustParse(t, cmd); a.ReadOnly() {
			t.Errorf("%q should need approval: %v", cmd, a.SubCommands)
		}
	}
	for _, cmd := range []string{
		"x=1; echo $x", "LC_ALL=C sort f", "LANG=C.UTF-8 grep x f", "git remote show -n origin",
		"ls *.go", "cat sub/*", "find src/* -name x", "sed -n p a*", "printf '%s\\n' \"$x\"",
		"git branch --list 'f*'", "git log --oneline", "rg -n x", "tree -L 2", "cat < in.txt",
	} {
		if a := mustParse(t, cmd); !a.ReadOnly() {
			t.Errorf("%q should stay read-only: %v", cmd, a.SubCommands)
		}
	}
}

// A command holding a NUL byte was judged read-only and then failed to
// start ("invalid argument"); it is refused up front.
func TestShellRefusesNUL(t *testing.T) {
	e := newTestEnv(t, nil)
	terr := tools.NewShell(e.Env).Validate(map[string]any{"command": "rg\x00"})
	if terr == nil || terr.Type != tools.ErrorInvalidToolParams || !strings.Contains(terr.Message, "NUL") {
		t.Fatalf("got %+v", terr)
	}
}

// An allow rule for a command matched it whatever variables were set for
// it, so Bash(git status) let PATH=. git status run a workspace program
// named git. Only locale and display settings stay covered, and a bare
// Bash rule still covers everything.
func TestAllowRuleDoesNotCoverEnvironment(t *testing.T) {
	for cmd, want := range map[string]bool{
		"git status":                  true,
		"LC_ALL=C git status":         true,
		"PATH=. git status":           false,
		"GIT_DIR=/x git status":       false,
		"LD_PRELOAD=./x.so git log":   false,
		"PATH=. git status; ls":       false,
		"env PATH=. git status":       false, // env with arguments is its own program
		"FOO=1 git status --short":    false,
		"TZ=UTC git log --oneline -1": true,
	} {
		a := mustParse(t, cmd)
		cov := shellsafe.Cover(a.SubCommands, []string{"git *"}, nil)
		if got := len(cov.Uncovered) == 0; got != want {
			t.Errorf("%q with Bash(git *): covered %v, want %v (%v)", cmd, got, want, cov.Uncovered)
		}
		if cov := shellsafe.Cover(a.SubCommands, []string{"*"}, nil); len(cov.Uncovered) != 0 {
			t.Errorf("%q: a bare Bash rule should cover it", cmd)
		}
	}
}
