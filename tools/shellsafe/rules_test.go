package shellsafe_test

import (
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools/shellsafe"
)

// oneSub parses a command that must be a single sub-command.
func oneSub(t *testing.T, cmd string) shellsafe.SubCommand {
	t.Helper()
	a := mustParse(t, cmd)
	if len(a.SubCommands) != 1 {
		t.Fatalf("%q has %d sub-commands", cmd, len(a.SubCommands))
	}
	return a.SubCommands[0]
}

func TestShellRuleMatches(t *testing.T) {
	for _, c := range []struct {
		spec, cmd string
		want      bool
	}{
		{"git", "git status", true},
		{"git", "git", true},
		{"git", "gitk", false},
		{"git status", "git status --short", true},
		{"git status", "git stash", false},
		{"git *", "git", true},
		{"git *", "git push origin main", true},
		{"git:*", "git push", true},
		{"git:*", "gitk", false},
		{"npm run *", "npm run build", true},
		{"npm run *", "npm install", false},
		{"npm run *", "npm", false},
		{"npm run test:*", "npm run test unit", true},
		{"npm run test*", "npm run test:unit", true},
		{"npm run test*", "npm run build", false},
		{"git log --format=*", "git log --format=%H", true},
		{"git * --help", "git log --help", true},
		{"git * --help", "git log", false},
		{"*", "anything at all", true},
		{"*", "$CMD x", true},
		{"", "rm -rf /", true},
		{"  git   status ", "git status", true},
		{"git status", "FOO=1 git status", true},
		{"FOO=1 git status", "git status", true},
		{"git *", "$CMD status", false},
		{"$CMD", "$CMD", false},
		{"echo *", "echo $HOME", true},
		{"echo /root", "echo $HOME", false},
		{"cat *", "cat $X", true},
		{`git commit -m "fix bug"`, `git commit -m 'fix bug'`, true},
		{`git commit -m "fix bug"`, `git commit -m fix bug`, false},
		{"rm *", "rm -rf build", true},
		{"rm *", "/bin/rm x", false},
		{"rm", "rmdir x", false},
		{"ls *.go", "ls *.go", true},
		{"ls a*", "ls abc", true},
		{"ls a*c", "ls abd", false},
		{"ls *b*", "ls xby", true},
	} {
		if got := shellsafe.RuleMatches(c.spec, oneSub(t, c.cmd)); got != c.want {
			t.Errorf("RuleMatches(%q, %q) = %v, want %v", c.spec, c.cmd, got, c.want)
		}
	}
	// A statement that runs no program matches only the wildcard.
	a := mustParse(t, "X=1; ls")
	if shellsafe.RuleMatches("X=1", a.SubCommands[0]) || !shellsafe.RuleMatches("*", a.SubCommands[0]) {
		t.Error("an assignment-only sub-command is matched by a word rule, or not by *")
	}
}

func TestCoverShellSubCommands(t *testing.T) {
	a := mustParse(t, "git status && npm run build && rm -f x && npm test")
	cov := shellsafe.Cover(a.SubCommands, []string{"npm run *"}, nil)
	if cov.Deny != -1 || cov.DeniedSubCommand != -1 {
		t.Errorf("nothing should be denied: %+v", cov)
	}
	var texts []string
	for _, s := range cov.Uncovered {
		texts = append(texts, s.Text)
	}
	// git status is read-only, npm run build allowed.
	if len(texts) != 2 || texts[0] != "rm -f x" || texts[1] != "npm test" {
		t.Errorf("uncovered = %q", texts)
	}

	cov = shellsafe.Cover(a.SubCommands, nil, []string{"docker *", "npm test", "rm *"})
	if cov.Deny != 1 || cov.DeniedSubCommand != 3 {
		t.Errorf("the first matching deny specifier is npm test (1) on sub-command 3: %+v", cov)
	}
}

// TestDenyMatchesOtherSpellings: a deny rule also sees through command
// paths and wrapper commands, which an allow rule does not.
func TestDenyMatchesOtherSpellings(t *testing.T) {
	for _, cmd := range []string{
		"rm x", "/bin/rm x", "timeout 5 rm x", "timeout -s KILL 5 rm x", "env X=1 rm x", "env -i rm x",
		"sudo -u root rm x", "nice -n 5 rm -rf x", "nohup rm x", "xargs rm", "xargs -n 1 rm -f",
		"command rm x", "exec rm x", "stdbuf -oL rm x", "timeout 5 nice /usr/bin/rm x", "FOO=1 rm x", "timeout $T rm x",
	} {
		sub := oneSub(t, cmd)
		if cov := shellsafe.Cover([]shellsafe.SubCommand{sub}, nil, []string{"rm *"}); cov.Deny != 0 {
			t.Errorf("%q is not denied by rm *", cmd)
		}
	}
	for _, cmd := range []string{"echo rm x", "grep rm f", "timeout 5", "env", "xargs", "rmdir x", "timeout 5 $RM x"} {
		sub := oneSub(t, cmd)
		if cov := shellsafe.Cover([]shellsafe.SubCommand{sub}, nil, []string{"rm *"}); cov.Deny != -1 {
			t.Errorf("%q is denied by rm *", cmd)
		}
	}
	// Allow rules stay literal: allowing rm does not allow a wrapper.
	sub := oneSub(t, "timeout 5 rm x")
	if cov := shellsafe.Cover([]shellsafe.SubCommand{sub}, []string{"rm *"}, nil); len(cov.Uncovered) != 1 {
		t.Error("allow rm * covered timeout 5 rm x")
	}
}

// An exact rule, what an "always" answer records for a command with a
// redirection, covers that command (blanks and the place of the
// redirection aside) run in the primary root, and nothing wider.
func TestExactRuleCoversOnlyItsCommand(t *testing.T) {
	ctx := shellsafe.Context{Dir: "/w", Base: "/w", Home: "/h", Inside: func(p string) bool { return strings.HasPrefix(p, "/w") }}
	const rule = "echo X >> log.txt"
	if !shellsafe.ExactRule(rule) || shellsafe.ExactRule("echo *") || shellsafe.ExactRule("echo X >> log.txt &") {
		t.Fatal("ExactRule misjudges a specifier")
	}
	for _, c := range []struct {
		cmd     string
		covered bool
	}{
		{"echo X >> log.txt", true},
		{"echo X >>log.txt", true},
		{"  echo   X  >>   log.txt ", true},
		{">> log.txt echo X", true},
		{"echo X >> log.txt && ls", true},
		{"echo Y >> log.txt", false},
		{"echo X >> other", false},
		{"echo X > log.txt", false},
		{"echo X Y >> log.txt", false},
		{"echo X >> log.txt 2>&1", false},
		{"echo 'X' >> log.txt", false},
		{"echo X >> log.txt; rm -rf x", false},
		{"cd sub && echo X >> log.txt", false},
		{"{ echo X >> log.txt; } > other", false},
		{"{ echo X >> log.txt; } < secret", false},
		{"PATH=. echo X >> log.txt", false},
		{"echo X >> log.txt$(touch m)", false},
	} {
		a, err := shellsafe.Analyze(c.cmd, ctx)
		if err != nil {
			t.Fatal(err)
		}
		cov := shellsafe.Cover(a.SubCommands, []string{rule}, nil)
		if got := len(cov.Uncovered) == 0 && !a.Substitution; got != c.covered {
			t.Errorf("Bash(%s) on %q: covered %v, want %v", rule, c.cmd, got, c.covered)
		}
	}
	// In another directory log.txt is another file.
	a, err := shellsafe.Analyze("echo X >> log.txt", shellsafe.Context{Dir: "/w/sub", Base: "/w", Inside: ctx.Inside})
	if err != nil {
		t.Fatal(err)
	}
	if cov := shellsafe.Cover(a.SubCommands, []string{rule}, nil); len(cov.Uncovered) != 1 {
		t.Error("the exact rule covered the command run in /w/sub")
	}
}

// The suggested rule of a command that redirects to a file is the exact
// rule for its text, when a rule can name it exactly; else the usual one,
// which does not cover it.
func TestSuggestedRuleForRedirections(t *testing.T) {
	for cmd, want := range map[string]string{
		"echo X >> log.txt":         "Bash(echo X >> log.txt)",
		"git status > out.txt":      "Bash(git status > out.txt)",
		"npm test 2>/dev/null":      "Bash(npm test *)",
		"npm run build &> b.log":    "Bash(npm run build &> b.log)",
		"cat > f <<EOF\nx\nEOF":     "Bash(cat)",
		"echo x > $F":               "Bash(echo *)",
		"echo x > *.log":            "Bash(echo *)",
		"{ echo x; } > f":           "Bash(echo *)",
		"rm -rf build":              "Bash(rm *)",
		"! grep -q x f > found.txt": "Bash(! grep -q x f > found.txt)",
	} {
		a := mustParse(t, cmd)
		if got := shellsafe.SuggestedRule(a.SubCommands[0]); got != want {
			t.Errorf("SuggestedRule(%q) = %q, want %q", cmd, got, want)
		}
	}
}
