//go:build linux

package rpc_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// Real work runs unasked where it should (issue 29, acceptance 3): under
// an allow rule, in auto-edit and in default mode, the everyday commands
// of a Go module, an npm package, a Python package, a Makefile and a git
// repository with a pre-commit hook run inside the sandbox and finish as
// they do outside it, with warm caches. The editor answers no to every
// question, so a command that asks does not run and fails the test.
//
// The fixture is rpc/testdata/realwork: a Go module with a main package
// and a test (standard library only), an npm package whose only
// dependency is a sibling folder (file:../weblib) with its lock file, a
// Python package with pytest tests, a Makefile, and the pre-commit hook,
// which reports on its output and tries to write .git/hooks/x and
// .git/config.
//
// The caches: HOME is a fresh folder, as in the other session tests, so
// that the person's own configuration plays no part; the Go build and
// module caches stay the machine's (GOCACHE and GOMODCACHE are set to
// where they were), and npm's is ~/.npm of that home, its default place,
// warmed by the direct run. The home holds the person's settings of git
// and go, as a real one does. Nothing reaches past loopback: the fixture has
// no registry dependency, GOPROXY is off and npm's update check is off.

// realWorkRules are the allow rules a person would add for this work. A
// rule covers a chain only when it covers each part (npm ci && npm test
// needs both npm rules); "x *" also covers x alone.
var realWorkRules = []any{
	"Bash(go build *)", "Bash(go test *)", "Bash(npm ci *)", "Bash(npm test *)",
	"Bash(python3 -m pytest *)", "Bash(make *)", "Bash(git add *)", "Bash(git commit *)",
	"Bash(git stash *)", "Bash(git switch *)",
}

// realStep is one piece of work: a command run in dir (relative to the
// root), with what must be prepared before it and what it must have done.
type realStep struct {
	dir, cmd string
	before   func(t *testing.T, root string)
	// check looks at the effect; out is what the command printed (the
	// model's tool message, under qwen-ls). sandboxed says whether the
	// command ran under qwen-ls.
	check func(t *testing.T, root, out string, sandboxed bool)
}

var realSteps = []realStep{
	{dir: "goapp", cmd: "go build ./...", check: func(t *testing.T, root, out string, _ bool) {
		bin := filepath.Join(root, "goapp", "goapp")
		got, err := exec.Command(bin).Output()
		if err != nil || string(got) != "hello, world\n" {
			t.Errorf("go build ./...: the binary %s printed %q (%v)", bin, got, err)
		}
	}},
	{dir: "goapp", cmd: "go test ./...", check: func(t *testing.T, root, out string, _ bool) {
		if !strings.Contains(out, "ok  \texample.com/goapp") {
			t.Errorf("go test ./... did not pass: %s", out)
		}
	}},
	{dir: "web", cmd: "npm ci && npm test", check: func(t *testing.T, root, out string, _ bool) {
		if _, err := os.Stat(filepath.Join(root, "web", "node_modules", "weblib", "index.js")); err != nil {
			t.Errorf("npm ci installed no weblib: %v", err)
		}
		if !strings.Contains(out, "web: 2 checks passed") {
			t.Errorf("npm test did not print its line: %s", out)
		}
	}},
	{dir: "pyproj", cmd: "python3 -m pytest", check: func(t *testing.T, root, out string, _ bool) {
		if !strings.Contains(out, "2 passed") {
			t.Errorf("pytest did not pass: %s", out)
		}
	}},
	{dir: "mk", cmd: "make", check: func(t *testing.T, root, out string, _ bool) {
		data, err := os.ReadFile(filepath.Join(root, "mk", "out", "report.txt"))
		if err != nil || string(data) != "alpha\nbeta\n" {
			t.Errorf("make's target is %q (%v)", data, err)
		}
		if !strings.Contains(out, "make: built out/report.txt") {
			t.Errorf("make did not say it built the target: %s", out)
		}
	}},
	{dir: "", cmd: `git add notes.txt && git commit -m "add notes"`, before: func(t *testing.T, root string) {
		writeFile(t, filepath.Join(root, "notes.txt"), "first\n")
	}, check: func(t *testing.T, root, out string, sandboxed bool) {
		if got := gitOut(t, root, "log", "-1", "--format=%s"); got != "add notes" {
			t.Errorf("the last commit is %q, want %q", got, "add notes")
		}
		if got := gitOut(t, root, "show", "--name-only", "--format=", "HEAD"); got != "notes.txt" {
			t.Errorf("the commit holds %q, want notes.txt", got)
		}
		if !strings.Contains(out, "pre-commit: 1 staged file(s) checked") {
			t.Errorf("the pre-commit hook did not run: %s", out)
		}
		// The hook's two writes: refused inside the sandbox, made
		// outside it (so the refusal is the sandbox's).
		hook := filepath.Join(root, ".git", "hooks", "x")
		_, err := os.Lstat(hook)
		config, _ := os.ReadFile(filepath.Join(root, ".git", "config"))
		wrote := strings.Contains(string(config), "# hook")
		if sandboxed {
			for _, w := range []string{"writing .git/hooks/x was refused", "writing .git/config was refused"} {
				if !strings.Contains(out, w) {
					t.Errorf("the hook did not report %q: %s", w, out)
				}
			}
			if err == nil || wrote {
				t.Errorf("the hook wrote the git folder: hooks/x exists: %v, config written: %v", err == nil, wrote)
			}
		} else if err != nil || !wrote || !strings.Contains(out, "pre-commit: wrote .git/hooks/x") {
			t.Errorf("run directly, the hook could not write .git/hooks/x (%v) or .git/config (%v): %s", err, wrote, out)
		}
	}},
	{dir: "", cmd: "git stash", before: func(t *testing.T, root string) {
		writeFile(t, filepath.Join(root, "notes.txt"), "first\nsecond\n")
	}, check: func(t *testing.T, root, out string, _ bool) {
		if got := gitOut(t, root, "stash", "list"); !strings.HasPrefix(got, "stash@{0}: WIP on main") || strings.Contains(got, "\n") {
			t.Errorf("git stash list = %q, want one entry", got)
		}
		if data, _ := os.ReadFile(filepath.Join(root, "notes.txt")); string(data) != "first\n" {
			t.Errorf("after git stash notes.txt is %q", data)
		}
	}},
	{dir: "", cmd: "git switch -c feature", check: func(t *testing.T, root, out string, _ bool) {
		if got := gitOut(t, root, "branch", "--show-current"); got != "feature" {
			t.Errorf("the branch is %q, want feature", got)
		}
	}},
}

func TestRealWorkRunsUnasked(t *testing.T) {
	requireSandbox(t)
	requireRealWorkTools(t)
	realWorkEnv(t)
	home := realWorkHome(t)

	// Run directly first: the fixture works, and the caches are warm.
	direct, _ := filepath.EvalSymlinks(t.TempDir())
	realWorkFixture(t, direct)
	for _, s := range realSteps {
		if s.before != nil {
			s.before(t, direct)
		}
		cmd := exec.Command("bash", "-c", s.cmd)
		cmd.Dir = filepath.Join(direct, s.dir)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%q run directly failed (%v), so the fixture is broken:\n%s", s.cmd, err, out)
		}
		t.Logf("directly: %-50q %v", s.cmd, time.Since(start).Round(time.Millisecond))
		s.check(t, direct, string(out), false)
	}
	if t.Failed() {
		t.FailNow()
	}

	for _, sc := range []struct{ name, mode, sandbox string }{
		{"auto-edit, allow rules", "auto-edit", ""},
		{"default, allow rules", "default", ""},
		{"default, allow rules, workspace-write", "default", "workspace-write"},
	} {
		t.Run(sc.name, func(t *testing.T) {
			w := startRealWork(t, sc.mode, sc.sandbox, realWorkRules, home)
			a := w.agent
			realWorkFixture(t, a.root)

			// The editor's no is heard: a command no rule covers asks, and
			// does not run.
			a.runIn(t, "uncovered", "touch asked.txt", "")
			if _, err := os.Stat(filepath.Join(a.root, "asked.txt")); w.asked() != 1 || err == nil {
				t.Fatalf("touch asked.txt: %d questions, ran: %v", w.asked(), err == nil)
			}

			for i, s := range realSteps {
				if s.before != nil {
					s.before(t, a.root)
				}
				msg, ok := w.runUnasked(t, fmt.Sprintf("w%d", i), s.cmd, s.dir)
				if ok {
					s.check(t, a.root, msg, true)
				}
			}
		})
	}
}

// realWork is a session whose editor answers no to every question, and
// counts them.
type realWork struct {
	agent *agent
	mu    sync.Mutex
	asks  []string
}

// startRealWork starts a session in mode with the allow rules and the
// tools.sandbox setting sandbox ("" is the default), HOME being home.
func startRealWork(t *testing.T, mode, sandbox string, rules []any, home string) *realWork {
	t.Helper()
	settings := map[string]any{"permissions": map[string]any{"allow": rules}}
	if sandbox != "" {
		settings["tools"] = map[string]any{"sandbox": sandbox}
	}
	a := startAgentWith(t, mode, rpc.Options{QwenHome: filepath.Join(home, ".qwen")}, func(p *rpctest.InitParams) {
		opts := p.InitializationOptions.(map[string]any)
		opts["settings"] = settings
		opts["workspaceTrusted"] = true
	})
	w := &realWork{agent: a}
	a.e.Handle("qwen/requestPermission", func(params json.RawMessage) (any, error) {
		w.mu.Lock()
		w.asks = append(w.asks, string(params))
		w.mu.Unlock()
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "cancel"}}, nil
	})
	// After a call runs, the model says "ok" and the turn ends.
	a.model.SetSide(func(r modeltest.Request) (modeltest.Response, bool) {
		if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == "tool" {
			return modeltest.Response{Text: "ok"}, true
		}
		return modeltest.Response{}, false
	})
	return w
}

func (w *realWork) asked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.asks)
}

// runUnasked has the model run cmd in dir and reports whether it ran
// without a question and finished with exit code 0, with nothing the
// sandbox blocked; it returns what the model was told.
func (w *realWork) runUnasked(t *testing.T, id, cmd, dir string) (string, bool) {
	t.Helper()
	n := w.asked()
	start := time.Now()
	w.agent.runIn(t, id, cmd, dir)
	t.Logf("%-50q %v", cmd, time.Since(start).Round(time.Millisecond))
	if w.asked() != n {
		w.mu.Lock()
		t.Errorf("%q asked: %s", cmd, w.asks[n])
		w.mu.Unlock()
		return "", false
	}
	msg := w.agent.toolMessage(t, id)
	if !strings.Contains(msg, "\nExit Code: 0\n") || strings.Contains(msg, "\nSandbox: ") {
		t.Errorf("%q did not finish as it does outside the sandbox:\n%s", cmd, msg)
		return msg, false
	}
	return msg, true
}

// runIn has the model run command in dir (relative to the root), as call
// id, in one turn.
func (a *agent) runIn(t *testing.T, id, command, dir string) {
	t.Helper()
	args, _ := json.Marshal(map[string]any{"command": command, "directory": dir, "timeout": 300000})
	a.model.Push(modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: id, Name: "run_shell_command", Arguments: string(args)}}})
	if _, err := a.prompt("run it"); err != nil {
		t.Fatal(err)
	}
}

// requireRealWorkTools fails the test, saying what to install, when a
// program the work needs is missing: CI installs them (.ci/go), so a
// missing one is a broken machine, not a reason to skip.
func requireRealWorkTools(t *testing.T) {
	t.Helper()
	var missing []string
	for _, p := range []struct{ prog, pkg string }{
		{"go", "Go"}, {"git", "Debian's git"}, {"node", "Debian's nodejs"}, {"npm", "Debian's npm"},
		{"make", "Debian's make"}, {"bash", "bash"},
	} {
		if _, err := exec.LookPath(p.prog); err != nil {
			missing = append(missing, fmt.Sprintf("%s (install %s)", p.prog, p.pkg))
		}
	}
	if pytestPython(t) == "" {
		missing = append(missing, "a python3 with pytest (install Debian's python3-pytest)")
	}
	if len(missing) > 0 {
		t.Fatalf("the real-work test needs %s; .ci/go installs them on Debian", strings.Join(missing, ", "))
	}
}

// pytestPython is the first of python3 on PATH and /usr/bin/python3 that
// imports pytest, or "". A python3 put first by pyenv often lacks it,
// while Debian's python3-pytest serves /usr/bin/python3.
func pytestPython(t *testing.T) string {
	t.Helper()
	var cands []string
	if p, err := exec.LookPath("python3"); err == nil {
		cands = append(cands, p)
	}
	cands = append(cands, "/usr/bin/python3")
	for _, c := range cands {
		if exec.Command(c, "-c", "import pytest").Run() == nil {
			return c
		}
	}
	return ""
}

// realWorkEnv keeps the machine's Go caches where they are, and every tool
// off the network and away from the machine's own configuration. When the
// python3 first on PATH lacks pytest, a folder put first on PATH names the
// one that has it python3.
func realWorkEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{"GOCACHE", "GOMODCACHE"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil || strings.TrimSpace(string(out)) == "" {
			t.Fatalf("go env %s: %v", k, err)
		}
		t.Setenv(k, strings.TrimSpace(string(out)))
	}
	py := pytestPython(t)
	if first, _ := exec.LookPath("python3"); first != py {
		bin := t.TempDir()
		if err := os.Symlink(py, filepath.Join(bin, "python3")); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	// npm's cache is its default, ~/.npm.
	for _, k := range []string{"npm_config_cache", "NPM_CONFIG_CACHE", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "GOENV", "GOFLAGS"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOTOOLCHAIN", "local")
	t.Setenv("npm_config_update_notifier", "false")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
}

// realWorkHome makes a fresh folder the home folder, with the person's
// settings of git and go, which the sandbox lets commands read: git reads
// the author from ~/.gitconfig, and go the build tag goapp needs from
// ~/.config/go/env (what go env -w writes).
func realWorkHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	writeFile(t, filepath.Join(home, ".gitconfig"), "[user]\n\tname = Real Work\n\temail = work@example.com\n[init]\n\tdefaultBranch = main\n")
	if err := os.MkdirAll(filepath.Join(home, ".config", "go"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(home, ".config", "go", "env"), "GOFLAGS=-tags=realwork\n")
	return home
}

// realWorkFixture copies rpc/testdata/realwork into root and makes root a
// git repository with everything committed and the pre-commit hook in
// place.
func realWorkFixture(t *testing.T, root string) {
	t.Helper()
	src := filepath.Join("testdata", "realwork")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "pre-commit" {
			return nil
		}
		if rel == "gitignore" {
			rel = ".gitignore"
		}
		dst := filepath.Join(root, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main", "."}, {"add", "."}, {"commit", "-q", "--no-verify", "-m", "fixture"}} {
		gitOut(t, root, args...)
	}
	hook, err := os.ReadFile(filepath.Join(src, "pre-commit"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".git", "hooks", "pre-commit"), hook, 0o755); err != nil {
		t.Fatal(err)
	}
}

// gitOut runs git in dir, as the person would (their ~/.gitconfig), and
// returns its trimmed output.
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func writeFile(t *testing.T, p, text string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A dependency from a registry (a loopback one here). Under an allow rule
// the command has the network, so npm ci downloads the package into a
// cold ~/.npm; under workspace-write it has none, so npm ci works when the
// cache already holds the package and fails with a cold one: that needs a
// yes (or a warm cache).
func TestRealWorkRegistryInstall(t *testing.T) {
	requireSandbox(t)
	requireRealWorkTools(t)
	realWorkEnv(t)
	reg := startLoopbackRegistry(t)

	for _, c := range []struct {
		name, sandbox  string
		warm, installs bool
	}{
		{"allow rule, cold cache", "", false, true},
		{"workspace-write, warm cache", "workspace-write", true, true},
		{"workspace-write, cold cache", "workspace-write", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := realWorkHome(t)
			if c.warm {
				// Run directly: the fixture works, and the cache is warm.
				dir := t.TempDir()
				reg.writeApp(t, dir)
				n := reg.fetches()
				cmd := exec.Command("npm", "ci")
				cmd.Dir = dir
				if out, err := cmd.CombinedOutput(); err != nil || reg.fetches() != n+1 {
					t.Fatalf("npm ci run directly: %v, %d downloads:\n%s", err, reg.fetches()-n, out)
				}
			}
			w := startRealWork(t, "default", c.sandbox, []any{"Bash(npm ci *)"}, home)
			reg.writeApp(t, w.agent.root)
			n := reg.fetches()
			installed := func() bool {
				_, err := os.Stat(filepath.Join(w.agent.root, "node_modules", "padder", "index.js"))
				return err == nil
			}
			if c.installs {
				if _, ok := w.runUnasked(t, "ci", "npm ci", ""); ok && !installed() {
					t.Error("npm ci finished, but padder is not installed")
				}
				want := 1
				if c.warm {
					want = 0
				}
				if got := reg.fetches() - n; got != want {
					t.Errorf("npm ci downloaded the package %d times, want %d", got, want)
				}
				return
			}
			w.agent.runIn(t, "ci", "npm ci", "")
			msg := w.agent.toolMessage(t, "ci")
			if strings.Contains(msg, "\nExit Code: 0\n") || installed() || reg.fetches() != n || !strings.Contains(msg, "connect EACCES") {
				t.Errorf("npm ci reached the registry under workspace-write (%d downloads):\n%s", reg.fetches()-n, msg)
			}
			t.Logf("refused; questions: %d; sandbox note: %v", w.asked(), strings.Contains(msg, "\nSandbox: "))
		})
	}
}

// loopbackRegistry serves one npm package, padder 1.0.0, as a registry
// does: its metadata and its tarball.
type loopbackRegistry struct {
	url, integrity string
	mu             sync.Mutex
	downloads      int
}

func startLoopbackRegistry(t *testing.T) *loopbackRegistry {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, text := range map[string]string{
		"package/package.json": `{"name":"padder","version":"1.0.0","main":"index.js"}`,
		"package/index.js":     "module.exports = (s, n) => String(s).padStart(n);\n",
	} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(text)), ModTime: time.Unix(1e9, 0)}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(text))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	tgz := buf.Bytes()
	sum := sha512.Sum512(tgz)
	r := &loopbackRegistry{integrity: "sha512-" + base64.StdEncoding.EncodeToString(sum[:])}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/padder":
			json.NewEncoder(w).Encode(map[string]any{
				"name": "padder", "dist-tags": map[string]any{"latest": "1.0.0"},
				"versions": map[string]any{"1.0.0": map[string]any{
					"name": "padder", "version": "1.0.0", "main": "index.js",
					"dist": map[string]any{"tarball": r.url + "/padder-1.0.0.tgz", "integrity": r.integrity},
				}},
			})
		case "/padder-1.0.0.tgz":
			r.mu.Lock()
			r.downloads++
			r.mu.Unlock()
			w.Write(tgz)
		default:
			http.NotFound(w, req)
		}
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

func (r *loopbackRegistry) fetches() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.downloads
}

// writeApp writes, into dir, a package that depends on padder from this
// registry, with its lock file.
func (r *loopbackRegistry) writeApp(t *testing.T, dir string) {
	t.Helper()
	// No retries: a refused connection fails at once, not after npm's
	// minute of back-off.
	writeFile(t, filepath.Join(dir, ".npmrc"), "registry="+r.url+"/\naudit=false\nfund=false\nfetch-retries=0\n")
	writeFile(t, filepath.Join(dir, "package.json"), `{"name":"app","version":"1.0.0","private":true,"dependencies":{"padder":"1.0.0"}}`+"\n")
	lock, _ := json.MarshalIndent(map[string]any{
		"name": "app", "version": "1.0.0", "lockfileVersion": 3, "requires": true,
		"packages": map[string]any{
			"":                    map[string]any{"name": "app", "version": "1.0.0", "dependencies": map[string]any{"padder": "1.0.0"}},
			"node_modules/padder": map[string]any{"version": "1.0.0", "resolved": r.url + "/padder-1.0.0.tgz", "integrity": r.integrity},
		},
	}, "", "  ")
	writeFile(t, filepath.Join(dir, "package-lock.json"), string(lock)+"\n")
}

// What needs a yes: a command an allow rule covers still runs in the
// sandbox, so one that writes outside the roots, the temporary folder and
// the caches, or into the git folder's configuration, fails and writes
// nothing. Run directly, each does its work.
func TestRealWorkBeyondTheAllowListIsRefused(t *testing.T) {
	requireSandbox(t)
	requireRealWorkTools(t)
	realWorkEnv(t)
	for _, k := range []string{"GOBIN", "GOPATH"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	steps := []struct {
		dir, cmd string
		// wrote reports whether the command did its work.
		wrote func(root, home string) bool
	}{
		{"goapp", "go install ./...", func(root, home string) bool {
			_, err := os.Stat(filepath.Join(home, "go", "bin", "goapp"))
			return err == nil
		}},
		{"web", "npm install -g ../weblib", func(root, home string) bool {
			_, err := os.Stat(filepath.Join(home, ".npm-global", "lib", "node_modules", "weblib"))
			return err == nil
		}},
		{"", "git config user.name Someone", func(root, home string) bool {
			data, _ := os.ReadFile(filepath.Join(root, ".git", "config"))
			return strings.Contains(string(data), "Someone")
		}},
	}
	prepare := func(t *testing.T) string {
		home := realWorkHome(t)
		// npm install -g writes its prefix: one in the home folder, so
		// that the direct run leaves the machine alone.
		t.Setenv("npm_config_prefix", filepath.Join(home, ".npm-global"))
		return home
	}

	home := prepare(t)
	direct, _ := filepath.EvalSymlinks(t.TempDir())
	realWorkFixture(t, direct)
	for _, s := range steps {
		cmd := exec.Command("bash", "-c", s.cmd)
		cmd.Dir = filepath.Join(direct, s.dir)
		if out, err := cmd.CombinedOutput(); err != nil || !s.wrote(direct, home) {
			t.Fatalf("%q run directly: %v, did its work: %v\n%s", s.cmd, err, s.wrote(direct, home), out)
		}
	}

	t.Run("allow rules", func(t *testing.T) {
		home := prepare(t)
		w := startRealWork(t, "default", "", []any{"Bash(go install *)", "Bash(npm install *)", "Bash(git config *)"}, home)
		realWorkFixture(t, w.agent.root)
		for i, s := range steps {
			id := fmt.Sprintf("b%d", i)
			n := w.asked()
			w.agent.runIn(t, id, s.cmd, s.dir)
			// The model is told nothing when a question before the run
			// was answered no: the turn ends there.
			msg := toolText(w.agent.model, id)
			if strings.Contains(msg, "\nExit Code: 0\n") || s.wrote(w.agent.root, home) {
				t.Errorf("%q did its work unasked:\n%s", s.cmd, msg)
			}
			var asks []string
			w.mu.Lock()
			for _, q := range w.asks[n:] {
				var p struct {
					ToolCall struct {
						Title string `json:"title"`
					} `json:"toolCall"`
				}
				_ = json.Unmarshal([]byte(q), &p)
				asks = append(asks, p.ToolCall.Title)
			}
			w.mu.Unlock()
			sandboxLine := ""
			if _, after, ok := strings.Cut(msg, "\nSandbox: "); ok {
				sandboxLine = after
			}
			t.Logf("%q did not do its work; questions: %q; model told: exit code %v, sandbox note %q", s.cmd, asks, strings.Contains(msg, "Exit Code:"), sandboxLine)
		}
	})
}
