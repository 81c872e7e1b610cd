package shellsafe_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools/shellsafe"
)

// homeContext is a fake home folder holding secrets and a root, proj,
// below it; outside is a folder that is neither.
func homeContext(t *testing.T) (ctx shellsafe.Context, home, outside string) {
	t.Helper()
	base, _ := filepath.EvalSymlinks(t.TempDir())
	home = filepath.Join(base, "home")
	root := filepath.Join(home, "proj")
	outside = filepath.Join(base, "tmp")
	for _, d := range []string{filepath.Join(home, ".ssh"), filepath.Join(home, ".aws"), filepath.Join(home, ".config"),
		filepath.Join(home, ".qwen"), filepath.Join(root, "src", "deep"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{".ssh/id_rsa", ".aws/credentials", ".netrc", ".qwen/.env", ".git-credentials",
		".bash_history", "proj/src/a.go", "proj/README.md"} {
		if err := os.WriteFile(filepath.Join(home, f), []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	inside := func(p string) bool {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			real = filepath.Clean(p)
		}
		return real == root || strings.HasPrefix(real, root+string(filepath.Separator))
	}
	return shellsafe.Context{RepoConfigTrusted: true, Dir: root, Home: home, Inside: inside}, home, outside
}

// A read-only command that reads under the home folder, outside the
// roots, asks (HomeRead says what it reads), however the path is spelt:
// ~, $HOME, cd, "..", globs, braces, links, input redirections, the
// files of grep -f, find's starting points. System paths, the roots (here
// below the home folder), /tmp, and words that are not paths (what echo
// prints, grep's pattern, a quoted tilde) stay read-only. Without a home
// folder nothing changes.
func TestReadsUnderTheHomeFolderAsk(t *testing.T) {
	ctx, home, outside := homeContext(t)
	root := ctx.Dir
	if err := os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(root, "keys")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(outside, "x"), []byte("x\n"), 0o644)
	asks := map[string]string{
		"cat ~/.ssh/id_rsa":                      "~/.ssh/id_rsa",
		"cat $HOME/.aws/credentials":             "~/.aws/credentials",
		"cat ${HOME}/.aws/credentials":           "~/.aws/credentials",
		`cat "$HOME"/.git-credentials`:           "~/.git-credentials",
		`cat "$HOME/.git-credentials"`:           "~/.git-credentials",
		"head ~/.netrc":                          "~/.netrc",
		"grep -r token ~":                        "~",
		"grep -r x ~/":                           "~",
		"grep -rn --include=*.go x ~/.config":    "~/.config",
		"ls ~/.ssh":                              "~/.ssh",
		"ls -la ~":                               "~",
		"cd ~ && cat .netrc":                     "~/.netrc",
		"cd ~ && ls":                             "~",
		"cd ~/.ssh; cat id_rsa":                  "~/.ssh/id_rsa",
		"cd && grep -r token":                    "~",
		"cat ../.netrc":                          "~/.netrc",
		"cat src/../../.netrc":                   "~/.netrc",
		"find ~ -name id_rsa":                    "~",
		"find -L ~/.ssh -type f":                 "~/.ssh",
		"rg secret ~/.config":                    "~/.config",
		"rg --files ~/.ssh":                      "~/.ssh",
		"wc -c ~/.qwen/.env":                     "~/.qwen/.env",
		"wc --files0-from=$HOME/.netrc":          "~/.netrc",
		"tail ~/.bash_history":                   "~/.bash_history",
		"cat ~/.ss?/id_*":                        "~/.ss?/id_*",
		"cat ~/{.ssh,.aws}/nothing":              "~/{.ssh,.aws}/nothing",
		"cat ~/**/id_rsa":                        "~",
		"cat keys/id_rsa":                        "~/.ssh/id_rsa",
		"cat < ~/.netrc":                         "~/.netrc",
		"wc -l <~/.netrc":                        "~/.netrc",
		"{ cat; } < ~/.netrc":                    "~/.netrc",
		"grep -f ~/.netrc README.md":             "~/.netrc",
		"grep -e x ~/.netrc":                     "~/.netrc",
		"sed -n 1p ~/.netrc":                     "~/.netrc",
		"awk '{print}' ~/.netrc":                 "~/.netrc",
		"less ~/.netrc":                          "~/.netrc",
		"stat ~/.ssh/id_rsa":                     "~/.ssh/id_rsa",
		"sort -u ~/.bash_history | head":         "~/.bash_history",
		"git diff --no-index ~/.netrc README.md": "~/.netrc",
		"cat README.md && cat ~/.netrc":          "~/.netrc",
		"cat " + home + "/.netrc":                "~/.netrc",
	}
	stays := []string{
		"cat /etc/os-release", "ls /usr/lib", "cat README.md", "grep -r foo .", "ls", "ls -la", "git status",
		"git log", "cat ~/proj/src/a.go", "ls ~/proj", "cat $HOME/proj/README.md", "cat /tmp/x",
		"cat " + outside + "/x", "echo ~", "echo ~/.ssh/id_rsa", "echo $HOME", "printf '%s\\n' ~/.netrc",
		"basename ~/.ssh/id_rsa", "dirname $HOME/.netrc", "cd ~ && pwd", "cd ~; cd proj && ls",
		"grep ~ README.md", "grep -e ~ README.md", "rg -e ~ src", `cat "~/.netrc"`, "cat \\~/.netrc",
		"sort -t '~' README.md", "awk 1 x=~/.netrc README.md", "cat src/**/*.go", "find . -name '*.go'",
		"find src -newer README.md", "grep -rn token src", "rg token", "wc -l < README.md", "cat ../proj/README.md",
		"head -n 5 src/a.go", "tree -L 2", "du -sh .",
	}
	for cmd, want := range asks {
		a, err := shellsafe.Analyze(cmd, ctx)
		if err != nil {
			t.Errorf("%q: %v", cmd, err)
			continue
		}
		var got []string
		for _, s := range a.SubCommands {
			if s.HomeRead != "" {
				got = append(got, s.HomeRead)
				if s.ReadOnly {
					t.Errorf("%q: %v reads %s but is read-only", cmd, s, s.HomeRead)
				}
			}
		}
		if a.ReadOnly() || len(got) != 1 || got[0] != want {
			t.Errorf("%q: read-only %v, reads %q under home, want %q", cmd, a.ReadOnly(), got, want)
		}
		// It would have been read-only but for the home folder.
		noHome := ctx
		noHome.Home = ""
		if b, _ := shellsafe.Analyze(cmd, noHome); !b.ReadOnly() {
			t.Errorf("%q asks without a home folder: %v", cmd, b.SubCommands)
		}
		rootHome := ctx
		rootHome.Home = "/"
		if b, _ := shellsafe.Analyze(cmd, rootHome); !b.ReadOnly() {
			t.Errorf("%q asks with / as the home folder: %v", cmd, b.SubCommands)
		}
	}
	for _, cmd := range stays {
		a, err := shellsafe.Analyze(cmd, ctx)
		if err != nil {
			t.Errorf("%q: %v", cmd, err)
			continue
		}
		if !a.ReadOnly() {
			t.Errorf("%q should stay read-only: %v", cmd, a.SubCommands)
		}
	}
}

// A home read is not covered by an allow rule for the command (only by a
// bare Bash rule), and names no write targets: it writes nothing.
func TestHomeReadsAndAllowRules(t *testing.T) {
	ctx, _, _ := homeContext(t)
	a, err := shellsafe.Analyze("cat ~/.ssh/id_rsa", ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s := a.SubCommands[0]; len(s.Targets) != 0 || s.Unresolved != "" {
		t.Errorf("targets %q, unresolved %q", s.Targets, s.Unresolved)
	}
	for rule, covered := range map[string]bool{"cat *": false, "cat ~/.ssh/id_rsa": false, "*": true} {
		if got := len(shellsafe.Cover(a.SubCommands, []string{rule}, nil).Uncovered) == 0; got != covered {
			t.Errorf("Bash(%s): covered %v, want %v", rule, got, covered)
		}
	}
}
