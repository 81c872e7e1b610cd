package tools_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// trustedShellEnv is a trusted workspace whose root is a git repository
// with one committed file, a.txt, and a sub-folder sub.
func trustedShellEnv(t *testing.T) (*testEnv, *tools.Shell) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	e, sh := shellTestEnv(t, nil)
	trusted := true
	e.Env.Settings().SetEditorTrust(&trusted)
	e.write(t, "a.txt", "alpha\n")
	e.write(t, "sub/b.go", "package sub\n")
	e.write(t, "go.mod", "module example.com/m\n\ngo 1.21\n")
	gitRun(t, e.Root, "init", "-q")
	gitRun(t, e.Root, "add", "a.txt")
	gitRun(t, e.Root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
	return e, sh
}

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
	return string(out)
}

func asks(t *testing.T, sh *tools.Shell, params map[string]any) bool {
	t.Helper()
	conf, terr := tools.GuardConfirm(context.Background(), sh, &tools.Call{}, params)
	if terr != nil {
		t.Fatalf("%v: %v", params, terr)
	}
	return conf != nil
}

// The everyday read-only commands run unasked, and plan mode allows
// them, in a trusted repository.
func TestOrdinaryReadOnlyCommandsStayUnasked(t *testing.T) {
	_, sh := trustedShellEnv(t)
	for _, c := range []string{
		"ls", "ls -la sub", "git status", "git status --short", "git log -p", "git log --oneline -3", "git diff",
		"git diff HEAD", "git show HEAD --stat", "git -C sub status", "cd sub && git log -1", "(cd sub && git status) && git log -1", "rg alpha", "rg -n alpha .",
		"grep -r alpha .", "grep -rn alpha . 2>/dev/null", "find . -name '*.go'", "cat a.txt", "head -n 1 a.txt",
		"tail -1 a.txt", "wc -l a.txt", "go list", "go list ./...", "go list -m", "go list -f '{{.Dir}}' ./sub",
		"go list -json ./...", "sed -n 1p a.txt", "less a.txt", "awk '{print $1}' a.txt", "sort a.txt | uniq -c",
		"echo $HOME", "x=1; echo ${x}",
	} {
		params := map[string]any{"command": c}
		if asks(t, sh, params) {
			t.Errorf("%q asks", c)
		}
		if !sh.AllowedInPlanMode(params) {
			t.Errorf("%q is refused in plan mode", c)
		}
	}
	if asks(t, sh, map[string]any{"command": "git status", "directory": "sub"}) {
		t.Error("git status in sub asks")
	}
	for _, c := range []string{"go build ./...", "go list -export ./...", "go list -compiled", "go list -toolexec x ./...",
		"go list -mod=mod ./...", "go list -modfile=x.mod", "go list -overlay=o.json", "go list -u -m all", "go test ./..."} {
		if !asks(t, sh, map[string]any{"command": c}) {
			t.Errorf("%q runs unasked", c)
		}
	}
}

// A git command aimed at a repository outside the roots asks: that
// repository's core.fsmonitor, hooks, aliases and pager are not the
// workspace's, and trusting the folder does not trust them.
func TestGitAimedOutsideTheRootsAsks(t *testing.T) {
	e, sh := trustedShellEnv(t)
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	marker := filepath.Join(t.TempDir(), "fsmonitor-ran")
	monitor := filepath.Join(outside, "monitor.sh")
	os.WriteFile(monitor, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755)
	gitRun(t, outside, "init", "-q")
	gitRun(t, outside, "config", "core.fsmonitor", monitor)
	// The premise: git status aimed there runs that repository's program.
	cmd := exec.Command("bash", "-c", "git -C "+outside+" status --short")
	cmd.Dir = e.Root
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git status: %v %s", err, out)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("git -C did not run the other repository's fsmonitor: the threat is not what it seems")
	}

	// A sub-folder whose .git file points at the outside repository.
	e.write(t, "linked/x.txt", "x\n")
	e.write(t, "linked/.git", "gitdir: "+filepath.Join(outside, ".git")+"\n")
	rel, _ := filepath.Rel(e.Root, outside)
	for _, c := range []string{
		"git -C " + outside + " status",
		"git -C " + rel + " log",
		"git -C sub -C " + outside + " status",
		"cd " + outside + " && git status",
		"cd " + outside + "; git diff",
		"cd " + rel + " && git status",
		"cd sub && cd " + outside + " && git log -1",
		"git -C linked status",
		"cd linked && git status",
		"git -C $D status",
		"cd $D && git status",
		"cd - && git status",
		"for d in a b; do git status; cd " + outside + "; done",
		"(cd sub; cd " + outside + "; git status)",
		"(cd " + outside + ") && cd " + outside + " && git status",
		"git --git-dir=" + outside + "/.git status",
		"git --work-tree=" + outside + " status",
		"GIT_DIR=" + outside + "/.git git status",
	} {
		params := map[string]any{"command": c}
		if !asks(t, sh, params) {
			t.Errorf("%q runs unasked", c)
		}
		if sh.AllowedInPlanMode(params) {
			t.Errorf("%q is allowed in plan mode", c)
		}
	}
	if asks(t, sh, map[string]any{"command": "git status", "directory": "linked"}) == false {
		t.Error("git status in linked (a .git file pointing outside) runs unasked")
	}

	// A workspace folder that is not itself a repository, inside one that
	// is not in the workspace: git finds the outer repository.
	inner := filepath.Join(outside, "project")
	os.MkdirAll(inner, 0o755)
	ws := workspace.New(workspace.Options{Roots: []string{inner}, Settings: workspace.SettingsOptions{
		UserDir: filepath.Join(t.TempDir(), ".qwen"), SystemPath: filepath.Join(t.TempDir(), "s.json"),
		Getenv: func(string) (string, bool) { return "", false }}})
	t.Cleanup(func() { ws.Close() })
	trusted := true
	ws.Settings.SetEditorTrust(&trusted)
	env := &tools.Env{Workspace: ws, QwenHome: t.TempDir()}
	a, err := env.AnalyzeShell("git status", "")
	if err != nil || a.ReadOnly() {
		t.Errorf("git status in a root nested in an outside repository is read-only (%v)", err)
	}
	if a, _ := env.AnalyzeShell("ls", ""); !a.ReadOnly() {
		t.Error("ls there asks")
	}
}

// Protected files reached through cd, globs, split quotes, links, >> and
// folder moves are found; a target that cannot be known asks even in yolo;
// the trust list through a glob is refused.
func TestShellProtectionResolvesPaths(t *testing.T) {
	e := newTestEnv(t, nil)
	e.write(t, ".git/config", "[core]\n")
	e.write(t, ".git/hooks/README", "x\n")
	e.write(t, "a.txt", "a\n")
	os.MkdirAll(e.Home, 0o755)
	os.WriteFile(filepath.Join(e.Home, workspace.TrustFileName), []byte("{}\n"), 0o644)
	os.WriteFile(filepath.Join(e.Home, "settings.json"), []byte("{}\n"), 0o644)
	if err := os.Symlink(".git", filepath.Join(e.Root, "g")); err != nil {
		t.Fatal(err)
	}
	// A link whose ".." is .git: Clean would drop "hooks-link/..".
	if err := os.Symlink(".git/hooks", filepath.Join(e.Root, "hooks-link")); err != nil {
		t.Fatal(err)
	}
	type want struct {
		why       string // a word of the reason; "" for none
		forbidden bool
		evenYolo  bool
	}
	for cmd, w := range map[string]want{
		"cd .git && echo x > config":                                           {why: "git's config"},
		"cd .git; cp ../a.txt hooks/pre-commit":                                {why: ".git/hooks"},
		"echo x > .gi?/config":                                                 {why: "git's config"},
		"echo x > .g''it/con\"fig\"":                                           {why: "git's config"},
		"echo x >> .git/config":                                                {why: "git's config"},
		"echo x > g/config":                                                    {why: "git's config"},
		"cp a.txt g/hooks/pre-push":                                            {why: ".git/hooks"},
		"cp a.txt .g{i,o}t/config":                                             {why: "git's config"},
		"mv .git elsewhere":                                                    {why: ".git/"},
		"ln -s .git g2 && echo x > g2/config":                                  {why: ".git/"},
		"cd sub/../.git && tee config < a.txt":                                 {why: "git's config"},
		"echo '{}' > .vscode/tasks.json":                                       {why: ".vscode"},
		"echo x > .envrc":                                                      {why: ".envrc"},
		"echo x > .git/info/attributes":                                        {why: ".git/info"},
		"echo x > .idea/workspace.xml":                                         {why: ".idea"},
		"echo x > \"$F\"":                                                      {why: "may write a protected file", evenYolo: true},
		"(cd /); echo x > .gi?/config":                                         {why: "git's config"},
		"cd / | ls; cp a.txt .g?t/config":                                      {why: "git's config"},
		"(cd sub && cd ..) && cd .git && (cd hooks; ls) && echo > config":      {why: "git's config"},
		"pushd .git && echo x > config":                                        {why: "may write a protected file", evenYolo: true},
		"builtin cd .git && echo x > config":                                   {why: "may write a protected file", evenYolo: true},
		"eval 'cd .git' && echo x > config":                                    {why: "may write a protected file", evenYolo: true},
		"f() { cd .git; }; f; echo x > config":                                 {why: "may write a protected file", evenYolo: true},
		"cd \"$D\" && echo x > config":                                         {why: "may write a protected file", evenYolo: true},
		"cp a.txt \"$DEST\"":                                                   {why: "may write a protected file", evenYolo: true},
		"echo x > $(echo f)":                                                   {why: "may write a protected file", evenYolo: true},
		"echo '{\"/\":\"TRUST_FOLDER\"}' > " + e.Home + "/trusted?olders.json": {why: "trusted folders list", forbidden: true},
		"cd " + e.Home + " && cp /dev/null trusted*":                           {why: "trusted folders list", forbidden: true},
		"cp a.txt " + e.Home + "/settings.json":                                {why: "user settings", evenYolo: true},
		"echo x > " + e.Home + "/sett''ings.json":                              {why: "user settings", evenYolo: true},
		"git config core.fsmonitor ./x":                                        {why: "git's config"},
		"git config --global alias.st '!sh'":                                   {why: "git's config"},
		"git -C sub config set core.pager x":                                   {why: "git's config"},
		"git config --unset user.name":                                         {why: "git's config"},
		"git config user.name":                                                 {},
		"git config --get core.pager":                                          {},
		"tar xzf evil.tgz":                                                     {why: ".git/"},
		"cd sub && unzip ../evil.zip":                                          {},
		"unzip evil.zip":                                                       {why: ".git/"},
		"patch -p1 < evil.diff":                                                {why: ".git/"},
		"cd $D && tar -xf x.tar":                                               {why: "may write a protected file", evenYolo: true},
		"tar czf out.tgz src":                                                  {},
		"echo x > hooks-link/../config":                                        {why: "git's config"},
		"cp a.txt hooks-link/../config":                                        {why: "git's config"},
		"cd -P hooks-link/.. && echo x > config":                               {why: "git's config"},
		"set -P; cd hooks-link/..; echo x > config":                            {why: "may write a protected file", evenYolo: true},
		"cd hooks-link/.. && echo x > config":                                  {},
		"shopt -s extglob\ncp a.txt .g@(i)t/config":                            {why: "may write a protected file", evenYolo: true},
		"shopt -s globstar dotglob; cp a.txt **/config":                        {why: "may write a protected file", evenYolo: true},
		"git commit -m 'fix (parser) bug'":                                     {},
		"cp a.txt 'b (copy).txt'":                                              {},
		"git commit -m 'steps {1..3} and *'":                                   {},
		"echo x > notes.txt":                                                   {},
		"cp a.txt b.txt":                                                       {},
		"go test ./...":                                                        {},
		"echo x > /dev/null 2>&1":                                              {},
		"make build":                                                           {},
	} {
		a, err := e.Env.AnalyzeShell(cmd, "")
		if err != nil {
			t.Fatalf("%q: %v", cmd, err)
		}
		pr := e.Env.ShellCommandProtection(a)
		if (w.why == "") != (pr.Reason == "") || !strings.Contains(pr.Reason, w.why) || pr.Forbidden != w.forbidden ||
			(w.evenYolo && !pr.EvenInYolo) {
			t.Errorf("%q: %+v, want %+v", cmd, pr, w)
		}
	}
}

// ProtectedPaths names, per root and user folder, exactly what the
// sandbox must keep read-only.
func TestProtectedPathsList(t *testing.T) {
	e := newTestEnv(t, nil)
	// What is at the top of the git directory and git does not write for
	// commits and branches is listed, and what it writes is not.
	e.write(t, ".git/description", "x\n")
	e.write(t, ".git/HEAD", "ref: refs/heads/main\n")
	got := e.Env.ProtectedPaths()
	for _, p := range []string{filepath.Join(e.Root, ".git", "HEAD"), filepath.Join(e.Root, ".git", "refs"), filepath.Join(e.Root, ".git", "objects")} {
		if slices.Contains(got, p) {
			t.Errorf("%s, which git writes for commits, is listed", p)
		}
	}
	for _, p := range []string{
		filepath.Join(e.Root, ".qwen"), filepath.Join(e.Root, ".git", "hooks"), filepath.Join(e.Root, ".git", "config"),
		filepath.Join(e.Root, ".git", "info"), filepath.Join(e.Root, ".vscode"), filepath.Join(e.Root, ".idea"),
		filepath.Join(e.Root, ".envrc"), filepath.Join(e.Root, "QWEN.md"), filepath.Join(e.Root, "AGENTS.md"),
		filepath.Join(e.Root, ".devcontainer"), filepath.Join(e.Root, ".husky"), filepath.Join(e.Root, ".githooks"),
		filepath.Join(e.Root, ".gitattributes"), filepath.Join(e.Root, ".gitmodules"), filepath.Join(e.Root, ".git"),
		filepath.Join(e.Root, ".git", "commondir"), filepath.Join(e.Root, ".git", "objects", "info"),
		filepath.Join(e.Root, ".git", "modules"), filepath.Join(e.Root, ".git", "worktrees"),
		filepath.Join(e.Root, ".git", "description"),
		filepath.Join(e.Home, "settings.json"), filepath.Join(e.Home, workspace.TrustFileName),
	} {
		if !slices.Contains(got, p) {
			t.Errorf("%s is not listed in %q", p, got)
		}
	}
	for _, p := range got {
		if !filepath.IsAbs(p) {
			t.Errorf("%q is not absolute", p)
		}
		if filepath.Base(p) == ".qwen" {
			// The whole folder is kept read-only; its settings and agents
			// are what asks.
			p = filepath.Join(p, "settings.json")
		}
		if pr := e.Env.ProtectedWrite(filepath.Join(p, "x")); pr.Reason == "" {
			if pr := e.Env.ProtectedWrite(p); pr.Reason == "" {
				t.Errorf("%s is listed but ProtectedWrite does not protect it", p)
			}
		}
	}
	// A worktree's .git file: the git directories it names are listed too.
	other, _ := filepath.EvalSymlinks(t.TempDir())
	os.MkdirAll(filepath.Join(other, "wt"), 0o755)
	os.WriteFile(filepath.Join(other, "wt", "commondir"), []byte("../common\n"), 0o644)
	os.RemoveAll(filepath.Join(e.Root, ".git"))
	e.write(t, ".git", "gitdir: "+filepath.Join(other, "wt")+"\n")
	got = e.Env.ProtectedPaths()
	for _, p := range []string{filepath.Join(other, "wt", "config"), filepath.Join(other, "common", "hooks"), filepath.Join(other, "common", "config"),
		filepath.Join(other, "wt", "commondir"), filepath.Join(other, "common", "objects", "info")} {
		if !slices.Contains(got, p) {
			t.Errorf("%s is not listed in %q", p, got)
		}
	}
}
