package shellsafe_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools/shellsafe"
)

// runsCode runs form with bash in a fresh folder holding a.txt, after
// replacing M by the path of a marker file, and reports whether the
// marker appeared: the form really runs code when run as it is written.
func runsCode(t *testing.T, form string, setup func(dir string)) bool {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644)
	if setup != nil {
		setup(dir)
	}
	marker := filepath.Join(dir, "M")
	cmd := exec.Command("bash", "-c", strings.ReplaceAll(form, "M", marker))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PAGER=cat", "TERM=dumb")
	cmd.Stdin = strings.NewReader("")
	_ = cmd.Run()
	_, err := os.Stat(marker)
	return err == nil
}

// checkForms asserts, for each form, that bash really runs its hidden
// command (so the test is about a real hole) and that the analysis does
// not judge it read-only (so it would ask, and plan mode would refuse it).
func checkForms(t *testing.T, forms []string, setup func(dir string)) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	for _, form := range forms {
		if !runsCode(t, form, setup) {
			t.Errorf("%q does not run its command in bash: the form tests nothing", form)
		}
		a, err := shellsafe.Parse(form)
		if err != nil {
			t.Errorf("%q: %v", form, err)
			continue
		}
		if a.ReadOnly() {
			t.Errorf("%q ran code but was judged read-only: %v", form, a.SubCommands)
		}
	}
}

// Bash evaluates the contents of variables as arithmetic in many places,
// and arithmetic evaluates array subscripts, which run command
// substitutions: a string assigned in one statement ran as a command in
// the next, in a command judged read-only.
func TestEvaluatedVariablesAreNotReadOnly(t *testing.T) {
	const v = `x='a[$(touch M)]'; `
	checkForms(t, []string{
		v + "echo $((x))",
		v + "echo $[x]",
		v + "echo ${y[x]}",
		v + `echo "${y[x]}"`,
		v + "y=abc; echo ${#y[x]}",
		v + "y=abc; echo ${y:x}",
		v + "y=abc; echo ${y:0:x}",
		v + "a[x]=1",
		v + "a[x]=1; echo",
		v + "ls ${y:-$((x))}",
		v + "case $((x)) in *) echo;; esac",
		v + "for ((i=x; i<0; i++)); do echo; done",
		v + "cat <<EOF\n$((x))\nEOF",
		`y='a[$(touch M)]'; echo ${!y}`,
		`x='$(touch M)'; echo ${x@P}`,
		v + "y=abc; echo ${y[@]:x}",
	}, nil)
	// The expansions bash does not evaluate stay read-only.
	for _, cmd := range []string{
		"x=1; echo $x", "echo ${HOME}", "echo ${#HOME}", "echo ${x:-default}", "echo ${x:+set}",
		"echo ${f%.go} ${f##*/}", "echo ${x^^}", `echo "$@" $1 $# $?`, "ls ${dir-.}",
	} {
		if a := mustParse(t, cmd); !a.ReadOnly() {
			t.Errorf("%q should stay read-only: %v", cmd, a.SubCommands)
		}
	}
}

// awk joins a backslash-newline into one line, so "system \<newline>("
// and "print … \<newline> > file" slipped past a scan that read them as
// two lines.
func TestAwkContinuationsAreNotReadOnly(t *testing.T) {
	checkForms(t, []string{
		"awk 'BEGIN{system \\\n(\"touch M\")}'",
		"awk 'BEGIN{print \"x\" \\\n> \"M\"}'",
		"awk 'BEGIN { system\\\n(\"touch M\") }' a.txt",
		"awk 'BEGIN{cmd=\"touch M\"; while ((cmd | getline l) > 0) n++; close(cmd)}'",
	}, nil)
	for _, cmd := range []string{
		`awk 'BEGIN { print "systematic" }'`, `awk '/getline/'`, `awk '{ fflush() }'`, `awk '{ close("f") }'`,
		"awk '{ print \\\n $1 }' f",
	} {
		if a := mustParse(t, cmd); a.ReadOnly() {
			if strings.Contains(cmd, "systematic") || strings.Contains(cmd, "print \\\n") {
				continue
			}
			t.Errorf("%q names a refused awk word and should ask", cmd)
		}
	}
	for _, cmd := range []string{`awk 'BEGIN { print "systematic" }'`, "awk '{ print \\\n $1 }' f", "awk -F: '$3 > 500 {print $1}' f"} {
		if a := mustParse(t, cmd); !a.ReadOnly() {
			t.Errorf("%q should stay read-only", cmd)
		}
	}
}

// less options that load a key-binding file (whose #env section sets
// LESSOPEN, a command less runs on each file), write a log file, or run
// commands at start-up.
func TestPagerOptionsAreNotReadOnly(t *testing.T) {
	lesskey := func(dir string) {
		os.WriteFile(filepath.Join(dir, "keys"), []byte("#env\nLESSOPEN=|touch "+filepath.Join(dir, "M")+" %s\n"), 0o644)
	}
	checkForms(t, []string{
		"less --lesskey-src=keys a.txt",
		"less --lesskey-src keys a.txt",
	}, lesskey)
	// -o and --log-file write their file when less runs on a terminal.
	for _, cmd := range []string{
		"less -o M a.txt", "less --log-file=M a.txt", "less -k keys a.txt", "less --lesskey-file=keys a.txt", "less --lesskey-content='x' a", "less +!sh a",
		"less '+|sh' a", "less -O log a", "less -Okeys a", "less -t tag", "less --tag=x", "less --unknown a",
		"less -NSk keys a", "more -u +!sh a", "more --unknown a",
	} {
		if a := mustParse(t, cmd); a.ReadOnly() {
			t.Errorf("%q should ask", cmd)
		}
	}
	for _, cmd := range []string{
		"less a.txt", "less -N a.txt", "less -RS a", "less -x4 a", "less -x 4 a", "less --line-numbers a",
		"less -- -k", "more a", "more -d +10 a", "more +/pattern a", "more -5 a",
	} {
		if a := mustParse(t, cmd); !a.ReadOnly() {
			t.Errorf("%q should stay read-only", cmd)
		}
	}
}

// A rule for a command never covers a redirection of its output to a
// file; discarding output and duplicating descriptors are not writes.
func TestAllowRulesDoNotCoverRedirections(t *testing.T) {
	for _, c := range []struct {
		rule, cmd string
		covered   bool
	}{
		{"git status", "git status > out.txt", false},
		{"git status", "git status >> out.txt", false},
		{"git status", "git status &> out.txt", false},
		{"git status", "{ git status; } > out.txt", false},
		{"echo *", "echo x > .git/config", false},
		{"echo *", "echo x >| f", false},
		{"printf *", "printf x 1<>f", false},
		{"git status", "git status 2>/dev/null", true},
		{"git status", "git status 2>&1", true},
		{"git status", "git status >&2", true},
		{"echo *", "echo x", true},
		{"echo *", "x='a[$(touch m)]'; echo $((x))", false},
		{"echo *", "x='$(touch m)'; echo ${x@P}", false},
		{"echo *", "echo ${y[x]}", false},
		{"echo *", "echo ${HOME:-/}", true},
		{"*", "echo x > f", true},
	} {
		a := mustParse(t, c.cmd)
		for i := range a.SubCommands {
			// Judge the commands by the rule alone; an assignment keeps
			// its own verdict.
			if a.SubCommands[i].Root != "" {
				a.SubCommands[i].ReadOnly = false
			}
		}
		cov := shellsafe.Cover(a.SubCommands, []string{c.rule}, nil)
		if got := len(cov.Uncovered) == 0; got != c.covered {
			t.Errorf("Bash(%s) on %q: covered %v, want %v", c.rule, c.cmd, got, c.covered)
		}
	}
}

// Analyze follows cd across &&, ; and newlines, restores the directory
// when a subshell or a pipeline part ends, and gives up ("") where it
// cannot know: a variable, cd -, a cd in a loop or function, pushd,
// builtin cd, eval.
func TestAnalyzeFollowsCd(t *testing.T) {
	ctx := shellsafe.Context{Dir: "/w", Home: "/h", Inside: func(p string) bool { return strings.HasPrefix(p, "/w") }}
	for cmd, want := range map[string][]string{
		"cd a && ls":                        {"/w", "/w/a"},
		"cd a; cd ../b\nls":                 {"/w", "/w/a", "/w/b"},
		"(cd a; ls); ls":                    {"/w", "/w/a", "/w"},
		"cd a | ls; ls":                     {"/w", "/w", "/w"},
		"cd /x/y && ls":                     {"/w", "/x/y"},
		"cd && ls":                          {"/w", "/h"},
		"cd ~/q && ls":                      {"/w", "/h/q"},
		"cd $D && ls":                       {"/w", ""},
		"cd - && ls":                        {"/w", ""},
		"cd a* && ls":                       {"/w", ""},
		"pushd a && ls":                     {"/w", ""},
		"builtin cd a && ls":                {"/w", ""},
		"eval x; ls":                        {"/w", ""},
		"ls; for i in 1; do ls; cd a; done": {"", "", ""},
		"ls; f() { cd a; }; f":              {"", "", ""},
		"if cd a; then ls; fi; ls":          {"/w", "/w/a", "/w/a"},
	} {
		a, err := shellsafe.Analyze(cmd, ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range a.SubCommands {
			got = append(got, s.Dir)
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%q: dirs %q, want %q", cmd, got, want)
		}
	}
}

// Hostile file systems and patterns: a .git that is a link to /dev/zero
// or a named pipe, brace products and deep globs are judged without
// hanging or exhausting memory (they ask).
func TestAnalyzeBoundsHostileInput(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "z"), 0o755)
	os.Symlink("/dev/zero", filepath.Join(root, "z", ".git"))
	os.MkdirAll(filepath.Join(root, "p"), 0o755)
	if err := syscallMkfifo(filepath.Join(root, "p", ".git")); err != nil {
		t.Skip(err)
	}
	ctx := shellsafe.Context{RepoConfigTrusted: true, Dir: root, Home: root,
		Inside: func(p string) bool { return strings.HasPrefix(p, root) }}
	for _, cmd := range []string{"git -C z status", "cd p && git status"} {
		a, err := shellsafe.Analyze(cmd, ctx)
		if err != nil || a.ReadOnly() {
			t.Errorf("%q: read-only %v (%v)", cmd, a != nil && a.ReadOnly(), err)
		}
	}
	brace := strings.Repeat("{a,b,c,d,e,f,g,h}", 8)
	for _, cmd := range []string{"cp x " + brace, "cp x /*/*/*/*/*", "cp x {{{{{{{{{a,b}}}}}}}}}"} {
		a, err := shellsafe.Analyze(cmd, ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s := a.SubCommands[0]; s.Unresolved == "" && len(s.Targets) > 600 {
			t.Errorf("%q: %d targets", cmd, len(s.Targets))
		}
	}
}

// tree's options are an allow-list: -o and -R (with -H) write files, and
// tree reads a cluster past an option that takes a value (-HR x).
func TestTreeOptionsAllowList(t *testing.T) {
	for _, cmd := range []string{"tree -o out", "tree -R -H . -L 1", "tree -HR x", "tree -LR 2", "tree --output=x", "tree -Z"} {
		if a := mustParse(t, cmd); a.ReadOnly() {
			t.Errorf("%q should ask", cmd)
		}
	}
	for _, cmd := range []string{"tree", "tree -L 2", "tree -a -I node_modules", "tree -H . -L 1", "tree --dirsfirst -d", "tree --charset=utf8 src"} {
		if a := mustParse(t, cmd); !a.ReadOnly() {
			t.Errorf("%q should stay read-only", cmd)
		}
	}
}

// An allow rule does not cover a builtin that sets a variable a later,
// allowed command depends on (printf -v PATH …; ls), nor a git command
// whose repository is not the trusted workspace's own: its configuration
// (core.fsmonitor, aliases) runs programs the rule never named.
func TestAllowRulesDoNotCoverForeignGitOrBuiltinAssigns(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	for _, d := range []string{root, outside} {
		if err := os.MkdirAll(filepath.Join(d, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	inside := func(p string) bool { return p == root || strings.HasPrefix(p, root+string(filepath.Separator)) }
	for _, c := range []struct {
		rules   []string
		cmd     string
		trusted bool
		covered bool
	}{
		{[]string{"git status"}, "git status", true, true},
		{[]string{"git status"}, "cd " + outside + " && git status", true, false},
		{[]string{"git status"}, "git -C " + outside + " status", true, false},
		{[]string{"git status"}, "git status", false, false},
		{[]string{"git commit *"}, "cd " + outside + " && git commit -m x", true, false},
		{[]string{"*"}, "cd " + outside + " && git status", true, true},
		{[]string{"printf *", "ls *"}, "printf -v PATH %s /tmp; ls x", true, false},
		{[]string{"printf *", "ls *"}, "printf -vPATH %s /tmp; ls x", true, false},
		{[]string{"printf *"}, "printf -v LC_ALL %s C", true, true},
		{[]string{"printf *"}, "printf '%s' x", true, true},
		{[]string{"read *", "ls *"}, "read PATH <<< /tmp; ls x", true, false},
		{[]string{"export *"}, "export LD_PRELOAD=/tmp/x.so", true, false},
	} {
		a, err := shellsafe.Analyze(c.cmd, shellsafe.Context{RepoConfigTrusted: c.trusted, Dir: root, Home: t.TempDir(), Inside: inside})
		if err != nil {
			t.Fatal(err)
		}
		for i := range a.SubCommands {
			if a.SubCommands[i].Root != "" && a.SubCommands[i].Root != "cd" {
				a.SubCommands[i].ReadOnly = false
			}
		}
		cov := shellsafe.Cover(a.SubCommands, c.rules, nil)
		if got := len(cov.Uncovered) == 0; got != c.covered {
			t.Errorf("%v on %q (trusted %v): covered %v, want %v", c.rules, c.cmd, c.trusted, got, c.covered)
		}
	}
}
