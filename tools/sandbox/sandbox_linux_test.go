//go:build linux

package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary is also a compiled program that writes with open(2):
// run with SANDBOX_TEST_WRITE=PATH it writes PATH and exits.
func TestMain(m *testing.M) {
	if p := os.Getenv("SANDBOX_TEST_WRITE"); p != "" {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv("SANDBOX_TEST_SERVER") != "" {
		fakeServer()
	}
	if spec := os.Getenv("SANDBOX_TEST_RUN"); spec != "" {
		runOnce(spec)
	}
	os.Exit(m.Run())
}

// TestLandlockRequired fails, not skips, on a kernel without Landlock, so
// that the sandbox is never silently off in CI.
func TestLandlockRequired(t *testing.T) {
	if abi := ABI(); abi < 4 {
		if os.Getenv(EnvOptional) == "1" {
			t.Skipf("Landlock ABI %d; %s=1 lets this pass", abi, EnvOptional)
		}
		t.Fatalf("the kernel offers Landlock ABI %d; the read-only sandbox needs 4 or later (network rules). "+
			"Commands judged read-only would then ask before they run. On a developer machine with an old kernel, "+
			"set %s=1 to let this test pass; CI must never set it.", abi, EnvOptional)
	}
	if s := Probe(); !s.ReadOnly() {
		t.Fatalf("Probe() = %+v, want a read-only sandbox", s)
	}
}

type result struct {
	out, err string
	code     int
}

// runIn runs `bash -c script` in dir under p and returns its output.
func runIn(t *testing.T, p Policy, dir, script string, env ...string) result {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	var sup *Supervised
	if p.Mode != "" {
		var err error
		if sup, err = Wrap(cmd, p); err != nil {
			t.Fatal(err)
		}
	}
	err := startWrapped(cmd, sup)
	if err == nil {
		err = cmd.Wait()
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%s: %v", script, err)
	}
	return result{out.String(), errb.String(), cmd.ProcessState.ExitCode()}
}

// startWrapped starts cmd as a caller that starts a wrapped command itself
// must: Started follows the start, whether or not it worked.
func startWrapped(cmd *exec.Cmd, sup *Supervised) error {
	err := cmd.Start()
	if sup != nil {
		sup.Started()
	}
	return err
}

func needLandlock(t *testing.T) {
	if ABI() < 4 {
		if os.Getenv(EnvOptional) == "1" {
			t.Skip("no Landlock")
		}
		t.Fatal("no Landlock (see TestLandlockRequired)")
	}
}

func listen(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func TestReadOnlyDeniesWrites(t *testing.T) {
	needLandlock(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "existing"), []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	port := listen(t)
	cases := map[string]string{
		"touch":      "touch marker",
		"redirect":   "echo x > marker",
		"append":     "echo x >> existing",
		"truncate":   ": > existing",
		"mkdir":      "mkdir marker",
		"rm":         "rm existing",
		"ln":         "ln -s existing marker",
		"hardlink":   "ln existing marker",
		"mv":         "mv existing marker",
		"cp":         "cp existing marker",
		"tmp":        "echo x > /tmp/qwen-sandbox-marker-$$ && touch marker",
		"program":    "SANDBOX_TEST_WRITE=$PWD/marker " + strconv.Quote(self),
		"python":     `python3 -c 'open("marker","w").write("x")'`,
		"devtcp":     "exec 3<>/dev/tcp/127.0.0.1/" + port + " && touch marker",
		"curl":       "curl -s -m 5 http://127.0.0.1:" + port + "/ ; [ $? -ne 7 ] && touch marker; exit 1",
		"bind":       `python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen()' && touch marker`,
		"procroot":   "echo x > /proc/1/root" + dir + "/marker",
		"gitconfig":  "git config --global user.name sandboxed",
		"subshell":   "(cd .. && touch " + filepath.Base(dir) + "/marker)",
		"dd":         "dd if=/dev/zero of=marker count=1",
		"sed-i":      "sed -i s/keep/gone/ existing",
		"tee":        "echo x | tee marker",
		"background": "touch marker & wait $!",
	}
	for name, script := range cases {
		t.Run(name, func(t *testing.T) {
			r := runIn(t, Policy{Mode: ReadOnly}, dir, script, "HOME="+dir)
			if r.code == 0 {
				t.Errorf("%q succeeded in the read-only sandbox: %+v", script, r)
			}
			if _, err := os.Lstat(filepath.Join(dir, "marker")); err == nil {
				t.Errorf("%q left a marker", script)
				os.RemoveAll(filepath.Join(dir, "marker"))
			}
			if b, err := os.ReadFile(filepath.Join(dir, "existing")); err != nil || string(b) != "keep\n" {
				t.Errorf("%q changed the existing file: %q %v", script, b, err)
				os.WriteFile(filepath.Join(dir, "existing"), []byte("keep\n"), 0o644)
			}
		})
	}
}

func TestReadOnlyAllowsReadsAndDevices(t *testing.T) {
	needLandlock(t)
	dir := t.TempDir()
	r := runIn(t, Policy{Mode: ReadOnly}, dir, "echo a > /dev/null && echo b >&2 && echo c > /dev/stderr && cat /etc/hostname >/dev/null && echo ok")
	if r.code != 0 || r.out != "ok\n" {
		t.Fatalf("got %+v", r)
	}
	r = runIn(t, Policy{Mode: ReadOnly}, dir, "echo $GIT_OPTIONAL_LOCKS; env | grep -c "+envPolicy+" || true")
	if r.out != "0\n0\n" {
		t.Fatalf("environment: %q", r.out)
	}
}

// protectFixture is a workspace with its protected paths and a user
// folder with the trust list and settings.
func protectFixture(t *testing.T) (root, user string, p Policy) {
	t.Helper()
	base := t.TempDir()
	root, user = filepath.Join(base, "ws"), filepath.Join(base, "home", ".qwen")
	for _, d := range []string{".git/hooks", ".git/info", ".qwen", ".vscode", "src"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(user, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{".git/config", ".qwen/settings.json", ".envrc", ".vscode/tasks.json"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("orig\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"trustedFolders.json", "settings.json"} {
		if err := os.WriteFile(filepath.Join(user, f), []byte("orig\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, ".git"), filepath.Join(root, "src", "g")); err != nil {
		t.Fatal(err)
	}
	p = Policy{Mode: Protect, Class: Class{Roots: []string{root}}, Writable: []string{root},
		AlwaysProtected: []string{filepath.Join(user, "trustedFolders.json"), filepath.Join(user, "settings.json")}}
	return root, user, p
}

func checkOrig(t *testing.T, script string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil || string(b) != "orig\n" {
			t.Errorf("%q changed %s: %q %v", script, p, b, err)
		}
	}
}

func needMounts(t *testing.T) {
	if !Probe().Mounts {
		t.Fatal("no private mount namespace on this machine; the protect policy falls back to the parser")
	}
}

func TestProtectKeepsProtectedPaths(t *testing.T) {
	needMounts(t)
	root, user, p := protectFixture(t)
	protected := []string{filepath.Join(root, ".git/config"), filepath.Join(root, ".qwen/settings.json"), filepath.Join(root, ".envrc"),
		filepath.Join(root, ".vscode/tasks.json"), filepath.Join(user, "trustedFolders.json"), filepath.Join(user, "settings.json")}
	cases := []string{
		"echo x > .git/config",
		"echo x >> .git/config",
		"echo x > .git/hooks/pre-commit",
		"cd .git && echo x > hooks/pre-commit",
		"cd .git && echo x > config",
		"echo x > src/g/config",
		"echo x > src/g/hooks/post-checkout",
		"echo x > .g''it/con\"fig\"",
		"echo x > .gi?/confi[g]",
		"mv .qwen/settings.json .qwen/old",
		"rm -f .qwen/settings.json",
		"ln -sf /etc/passwd .qwen/settings.json",
		"echo '{}' > .qwen/new.json",
		"mkdir .qwen/agents",
		"rm -rf .qwen",
		"mv .qwen q2",
		"echo x > .envrc",
		"rm .envrc",
		"echo x > .vscode/tasks.json",
		"echo x > .git/info/attributes",
		"echo '{\"/\":\"TRUST_FOLDER\"}' > " + filepath.Join(user, "trustedFolders.json"),
		"rm " + filepath.Join(user, "trustedFolders.json"),
		"mv " + filepath.Join(user, "settings.json") + " /tmp/x$$",
		"umount " + filepath.Join(root, ".git/config") + " && echo x > .git/config",
		"mount -o remount,rw,bind " + filepath.Join(root, ".git/config") + " && echo x > .git/config",
		"echo x > /proc/1/root" + root + "/.git/config",
		"echo x > /proc/$PPID/root" + root + "/.git/config",
		"unshare -m sh -c 'umount " + root + "/.git/config; echo x > " + root + "/.git/config'",
	}
	for i, script := range cases {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			r := runIn(t, p, root, script)
			_ = r
			checkOrig(t, script, protected...)
			for _, f := range []string{".git/hooks/pre-commit", ".git/hooks/post-checkout", ".qwen/new.json", ".qwen/agents", ".git/info/attributes", "q2"} {
				if _, err := os.Lstat(filepath.Join(root, f)); err == nil {
					t.Errorf("%q created %s", script, f)
					os.RemoveAll(filepath.Join(root, f))
				}
			}
		})
	}
	// Ordinary work still works: writes in the workspace, a loopback
	// listener and a connection.
	port := listen(t)
	r := runIn(t, p, root, `echo hi > src/out.txt && mkdir -p build/cache && mv src/out.txt build/ && rm -r build && `+
		`python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen()' && `+
		`exec 3<>/dev/tcp/127.0.0.1/`+port+` && cat .git/config`)
	if r.code != 0 || r.out != "orig\n" {
		t.Fatalf("ordinary work failed under protect: %+v", r)
	}
}

func TestNoneKeepsTrustList(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mode none uses a mount namespace only as root")
	}
	needMounts(t)
	root, user, p := protectFixture(t)
	p.Mode = None
	trust := filepath.Join(user, "trustedFolders.json")
	runIn(t, p, root, "echo x > "+trust+"; rm -f "+trust)
	checkOrig(t, "none", trust)
	r := runIn(t, p, root, "echo x > .git/config && echo x > .envrc")
	if r.code != 0 {
		t.Fatalf("mode none should let the person's command write the workspace: %+v", r)
	}
}

func TestWorkspaceWrite(t *testing.T) {
	needLandlock(t)
	needMounts(t)
	root, _, p := protectFixture(t)
	outside := t.TempDir()
	tmp := t.TempDir()
	p.Mode, p.Writable, p.TempDir = WorkspaceWrite, []string{root}, tmp
	port := listen(t)
	for _, script := range []string{
		"echo x > " + outside + "/marker",
		"mkdir " + outside + "/marker",
		"echo x > .git/config",
		"echo x > .qwen/marker",
		"exec 3<>/dev/tcp/127.0.0.1/" + port + " && touch " + outside + "/marker",
	} {
		r := runIn(t, p, root, script)
		if r.code == 0 {
			t.Errorf("%q succeeded under workspace-write", script)
		}
	}
	if _, err := os.Lstat(filepath.Join(outside, "marker")); err == nil {
		t.Error("a write outside the roots got through")
	}
	checkOrig(t, "workspace-write", filepath.Join(root, ".git/config"))
	r := runIn(t, p, root, `echo hi > src/a && mv src/a src/b && f=$(mktemp) && echo t > "$f" && cat "$f" && [ "$TMPDIR" = "`+tmp+`" ]`)
	if r.code != 0 || r.out != "t\n" {
		t.Fatalf("workspace writes or TMPDIR failed: %+v", r)
	}
}

func TestLingerReportsStatusFirst(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("bash", "-c", "sleep 1 & exit 3")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s, err := Wrap(cmd, Policy{Mode: ReadOnly, Linger: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	st := s.WaitMain()
	if st.Code != 3 || st.Signal != 0 {
		t.Fatalf("status %+v, want exit 3", st)
	}
	select {
	case <-s.Exited():
		t.Fatal("the supervisor left while the background sleep still ran")
	default:
	}
	<-s.Exited()
	if code := s.Cmd.ProcessState.ExitCode(); code != 3 {
		t.Fatalf("supervisor exit %d, want 3", code)
	}
}

func TestSignalStatusPassesThrough(t *testing.T) {
	cmd := exec.Command("bash", "-c", "kill -TERM $$")
	sup, err := Wrap(cmd, Policy{Mode: None})
	if err != nil {
		t.Fatal(err)
	}
	if err = startWrapped(cmd, sup); err == nil {
		err = cmd.Wait()
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if err == nil || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("want death by SIGTERM, got %v", cmd.ProcessState)
	}
}

// fakeServer starts `bash -c SCRIPT` under the supervisor, prints the
// supervisor's pid and waits to be killed.
func fakeServer() {
	cmd := exec.Command("bash", "-c", os.Getenv("SANDBOX_TEST_SERVER"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s, err := Wrap(cmd, Policy{Mode: Protect, Linger: true})
	if err == nil {
		err = s.Start()
	}
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println(s.Cmd.Process.Pid)
	select {}
}

// TestChildrenDieWithServer kills a server with SIGKILL while its command
// runs a foreground sleep, a background one, and one that left the
// process group: none survives.
func TestChildrenDieWithServer(t *testing.T) {
	marker := "qwen-sandbox-orphan-" + strconv.Itoa(os.Getpid())
	self, _ := os.Executable()
	script := fmt.Sprintf("(exec -a %[1]s sleep 300) & setsid bash -c 'exec -a %[1]s sleep 302' & ( (exec -a %[1]s sleep 303) &) ; (exec -a %[1]s sleep 301); true", marker)
	srv := exec.Command(self, "-test.run=^$")
	srv.Env = append(os.Environ(), "SANDBOX_TEST_SERVER="+script)
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	buf := make([]byte, 64)
	n, _ := out.Read(buf)
	if _, err := strconv.Atoi(strings.TrimSpace(string(buf[:n]))); err != nil {
		t.Fatalf("fake server said %q", buf[:n])
	}
	// Wait until all four sleeps run.
	waitFor(t, func() bool { return len(withMarker(marker)) == 4 })
	if err := srv.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(withMarker(marker)) == 0 })
}

// withMarker lists the live processes whose argv[0] is marker.
func withMarker(marker string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.HasPrefix(b, []byte(marker+"\x00")) {
			continue
		}
		if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}

// waitFor polls cond for up to 10 s (no timing is asserted: the limit only
// ends a test that would hang).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not reached in 10 s")
}

// runOnce, in a child test binary, runs `bash -c script` in dir under a
// protect policy for the paths given, and prints whether the supervisor
// made its mounts, then the command's output.
func runOnce(spec string) {
	var in struct {
		Dir, Script string
	}
	if err := json.Unmarshal([]byte(spec), &in); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	cmd := exec.Command("bash", "-c", in.Script)
	cmd.Dir = in.Dir
	cmd.Env = removeEnv(os.Environ(), "SANDBOX_TEST_RUN")
	s, err := Wrap(cmd, Policy{Mode: Protect, Class: Class{Roots: []string{in.Dir}}, Writable: []string{in.Dir}})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	out, err := cmd.CombinedOutput()
	fmt.Printf("mounts=%v err=%v\n%s", s.Policy.Mounts, err, out)
	os.Exit(0)
}

// TestProtectAsNonRoot: a server that does not run as root gets its
// mount namespace from a user namespace with an identity map, and the
// protected paths are still read-only, while the workspace is writable
// and the files keep their owner.
func TestProtectAsNonRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to start the server as another user")
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err != nil || strings.TrimSpace(string(b)) == "0" {
		t.Skip("no user namespaces on this kernel")
	}
	dir, err := os.MkdirTemp("", "qwen-sandbox-nonroot")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	self, _ := os.Executable()
	bin := filepath.Join(dir, "sandbox.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	cfg := filepath.Join(ws, ".git", "config")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("orig\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, ws, filepath.Dir(cfg), cfg} {
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	spec, _ := json.Marshal(map[string]any{"Dir": ws,
		"Script": "echo x > .git/config; rm -f .git/config; echo ok > out && id -u && stat -c %u out"})
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), "SANDBOX_TEST_RUN="+string(spec), "HOME="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	text := string(out)
	if !strings.HasPrefix(text, "mounts=true") {
		t.Fatalf("no mount namespace for a non-root server (unprivileged user namespaces off?):\n%s", text)
	}
	checkOrig(t, "non-root protect", cfg)
	if b, _ := os.ReadFile(filepath.Join(ws, "out")); string(b) != "ok\n" || !strings.Contains(text, "65534\n65534") {
		t.Fatalf("the workspace write failed or the uid was not kept:\n%s", text)
	}
}

// What is below a moved folder or a link comes along unchecked by name:
// a folder built in the command's temporary folder, outside the roots,
// holds whatever names it likes. Renamed, linked or copied into the roots,
// none of its protected names may arrive there; a git directory's objects
// folder may not be swapped for one that brings info/alternates; nor may
// a protected name where no read-only mount keeps it (a nested
// repository's git directory, an .envrc below the top) be removed.
// Ordinary moves, links and removals still work.
func TestProtectKeepsTreesMovedIn(t *testing.T) {
	needLandlock(t)
	needMounts(t)
	root, _, p := protectFixture(t)
	tmp := t.TempDir()
	p.TempDir = tmp
	for _, d := range []string{".git/objects/info", ".git/refs/heads", "src/n/.git/hooks"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"src/n/.envrc", "src/n/.git/config"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("orig\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustNot := []string{"src/sub/.envrc", "src/sub/.vscode", "src/r/.git", "src/link", "src/link2", "src/link3",
		"src/link4", ".git/objects/info/alternates", "src/py/.envrc"}
	for i, script := range []string{
		`mkdir -p "$TMPDIR/d/.vscode" && echo x > "$TMPDIR/d/.envrc" && echo x > "$TMPDIR/d/.vscode/tasks.json" && echo x > "$TMPDIR/d/f" && mv "$TMPDIR/d" src/sub`,
		`python3 -c 'import os; d = os.environ["TMPDIR"] + "/p"; os.makedirs(d); open(d + "/.env" + "rc", "w").write("x"); os.rename(d, "src/py")'`,
		`mkdir -p "$TMPDIR/r/.git/hooks" && echo x > "$TMPDIR/r/.git/hooks/pre-commit" && mv "$TMPDIR/r" src/r`,
		`mkdir -p "$TMPDIR/l" && echo x > "$TMPDIR/l/.envrc" && ln -s "$TMPDIR/l" src/link`,
		`mkdir -p "$TMPDIR/l" && ln -s "$TMPDIR/l" "$TMPDIR/lnk" && mv "$TMPDIR/lnk" src/link2`,
		`mkdir -p "$TMPDIR/l" && ln -s "$TMPDIR/l" "$TMPDIR/lnk3" && ln -P "$TMPDIR/lnk3" src/link3`,
		`ln -s /proc/self/cwd/../.. src/link4`,
		`mv .git/objects .git/refs/o && mkdir -p .git/refs/n/info && echo /x > .git/refs/n/info/alternates && mv .git/refs/n .git/objects`,
		`rm -f src/n/.envrc; rm -rf src/n/.git; rmdir src/n/.git/hooks`,
	} {
		r := runIn(t, p, root, script)
		for _, f := range mustNot {
			if _, err := os.Lstat(filepath.Join(root, f)); err == nil {
				t.Errorf("%d: %q made %s: %+v", i, script, f, r)
				os.RemoveAll(filepath.Join(root, f))
			}
		}
		checkOrig(t, script, filepath.Join(root, "src/n/.envrc"), filepath.Join(root, "src/n/.git/config"))
		if _, err := os.Stat(filepath.Join(root, ".git/objects/info")); os.IsNotExist(err) {
			// The swap's first step is allowed (objects may be renamed
			// within the git directory): put it back for the next case.
			os.Rename(filepath.Join(root, ".git/refs/o"), filepath.Join(root, ".git/objects"))
		}
	}
	// What these forms do to ordinary names still works: a folder from
	// the temporary folder arrives (copied), links inside the roots and
	// to the system are made, plain files are removed. Removing a
	// protected folder that is not empty fails as it would anyway (git
	// tries its git directory when it cleans up empty folders).
	r := runIn(t, p, root, `mkdir -p "$TMPDIR/plain" && echo x > "$TMPDIR/plain/f" && mv "$TMPDIR/plain" src/plain && `+
		`ln -s plain/f src/l1 && ln -s /usr/bin src/l2 && mv src/plain src/plain2 && rm src/plain2/f && rmdir src/plain2 && cat src/l2/env > /dev/null && `+
		`{ rmdir src/n/.git 2>&1 | grep -q 'not empty'; } && { rm src/n/.gone 2>&1 | grep -q 'No such file'; } && echo ok`)
	if r.code != 0 || r.out != "ok\n" {
		t.Fatalf("ordinary moves, links and removals failed: %+v", r)
	}
}
