package shellsafe_test

import (
	"slices"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools/shellsafe"
)

// subSummary is what the split tests compare: text, root and verdict of
// each sub-command.
type subSummary struct {
	text, root string
	readOnly   bool
}

func summarize(a *shellsafe.Analysis) []subSummary {
	var out []subSummary
	for _, s := range a.SubCommands {
		out = append(out, subSummary{s.Text, s.Root, s.ReadOnly})
	}
	return out
}

func mustParse(t *testing.T, cmd string) *shellsafe.Analysis {
	t.Helper()
	a, err := shellsafe.Parse(cmd)
	if err != nil {
		t.Fatalf("parse %q: %v", cmd, err)
	}
	return a
}

func TestParseShellCommandSplits(t *testing.T) {
	for _, c := range []struct {
		cmd   string
		want  []subSummary
		subst bool
	}{
		{"git status; rm -rf x", []subSummary{{"git status", "git", true}, {"rm -rf x", "rm", false}}, false},
		{"ls | grep x && echo done || pwd", []subSummary{{"ls", "ls", true}, {"grep x", "grep", true}, {"echo done", "echo", true}, {"pwd", "pwd", true}}, false},
		{"ls |& wc -l", []subSummary{{"ls", "ls", true}, {"wc -l", "wc", true}}, false},
		{"sleep 1 & cat a\nhead b", []subSummary{{"sleep 1", "sleep", false}, {"cat a", "cat", true}, {"head b", "head", true}}, false},
		{"(cd a && ls) > out", []subSummary{{"cd a", "cd", false}, {"ls", "ls", false}}, false},
		{"{ ls; pwd; }", []subSummary{{"ls", "ls", true}, {"pwd", "pwd", true}}, false},
		{"echo $(rm x)", []subSummary{{"echo $(rm x)", "echo", false}, {"rm x", "rm", false}}, true},
		{"echo `rm x`", []subSummary{{"echo `rm x`", "echo", false}, {"rm x", "rm", false}}, true},
		{"cat <(ls) >(wc)", []subSummary{{"cat <(ls) >(wc)", "cat", false}, {"ls", "ls", true}, {"wc", "wc", true}}, true},
		{"echo \"$(git rev-parse HEAD)\"", []subSummary{{"echo \"$(git rev-parse HEAD)\"", "echo", false}, {"git rev-parse HEAD", "git", true}}, true},
		{"X=$(ls); echo $X", []subSummary{{"X=$(ls)", "", false}, {"ls", "ls", true}, {"echo $X", "echo", true}}, true},
		{"if git diff --quiet; then rm x; else echo same; fi", []subSummary{{"git diff --quiet", "git", true}, {"rm x", "rm", false}, {"echo same", "echo", true}}, false},
		{"for f in $(ls); do cat $f; done", []subSummary{{"ls", "ls", true}, {"cat $f", "cat", true}}, true},
		{"while read l; do echo $l; done < in", []subSummary{{"read l", "read", false}, {"echo $l", "echo", true}}, false},
		{"case $x in a) ls;; *) rm y;; esac", []subSummary{{"ls", "ls", true}, {"rm y", "rm", false}}, false},
		{"f() { rm -rf x; }; f", []subSummary{{"rm -rf x", "rm", false}, {"f", "f", false}}, false},
		{"FOO=1 BAR=2 git status", []subSummary{{"FOO=1 BAR=2 git status", "git", false}}, false},
		{"LC_ALL=C git status", []subSummary{{"LC_ALL=C git status", "git", true}}, false},
		{"/bin/rm -f x", []subSummary{{"/bin/rm -f x", "rm", false}}, false},
		{"./ls", []subSummary{{"./ls", "ls", false}}, false},
		{"$CMD x", []subSummary{{"$CMD x", "$CMD", false}}, false},
		{"timeout 5 rm x", []subSummary{{"timeout 5 rm x", "timeout", false}}, false},
		{"export A=1 && time ls", []subSummary{{"export A=1", "export", false}, {"ls", "ls", true}}, false},
		{"! grep -q x f", []subSummary{{"! grep -q x f", "grep", true}}, false},
		{"cat <<EOF\n$(rm x)\nEOF", []subSummary{{"cat <<EOF", "cat", false}, {"rm x", "rm", false}}, true},
	} {
		a := mustParse(t, c.cmd)
		if got := summarize(a); !slices.Equal(got, c.want) {
			t.Errorf("%q split into\n  %v\nwant\n  %v", c.cmd, got, c.want)
		}
		if a.Substitution != c.subst {
			t.Errorf("%q: substitution = %v, want %v", c.cmd, a.Substitution, c.subst)
		}
	}
}

func TestParseShellCommandWords(t *testing.T) {
	a := mustParse(t, `A=1 git commit -m "fix \"the\" bug" 'x y' a\ b $HOME "$(date)" *.go -de{l,}ete`)
	if len(a.SubCommands) < 1 {
		t.Fatal("no sub-command")
	}
	got := a.SubCommands[0].Words
	want := []shellsafe.Word{
		{Value: "git"}, {Value: "commit"}, {Value: "-m"}, {Value: `fix "the" bug`}, {Value: "x y"},
		{Value: "a b"}, {Value: "$HOME", Expanded: true}, {Value: `"$(date)"`, Expanded: true},
		{Value: "*.go", Pattern: true}, {Value: "-de{l,}ete", Pattern: true},
	}
	if !slices.Equal(got, want) {
		t.Errorf("words = %+v\nwant %+v", got, want)
	}
}

func TestParseShellCommandTrailingBackground(t *testing.T) {
	for cmd, want := range map[string]bool{
		"x &":          true,
		"a & b &":      true,
		"a & b":        false,
		"a && b":       false,
		"(x &)":        false,
		"x &\n":        true,
		"x & # later":  true,
		"{ x & }; y":   false,
		"echo '&'":     false,
		"sleep 1 &\ny": false,
	} {
		if got := mustParse(t, cmd).TrailingBackground; got != want {
			t.Errorf("%q: trailing background = %v, want %v", cmd, got, want)
		}
	}
}

func TestParseShellCommandErrors(t *testing.T) {
	for _, cmd := range []string{`echo "hi`, `echo $(`, `a &&`, `if true; then`, `echo 'x`} {
		if _, err := shellsafe.Parse(cmd); err == nil {
			t.Errorf("%q parsed", cmd)
		}
	}
	for cmd, has := range map[string]bool{"X=1": false, "X=1 Y=2; Z=3": false, "> f": false, "# only a comment": false, "X=1; true": true} {
		if got := mustParse(t, cmd).HasRoot(); got != has {
			t.Errorf("%q: HasRoot = %v, want %v", cmd, got, has)
		}
	}
}

// TestShellReadOnly pins the read-only verdicts of tools.md §6.3 and the
// limits of each command.
func TestShellReadOnly(t *testing.T) {
	yes := []string{
		"ls -la", "cat a b", "echo hi", "printf '%s\\n' x", "pwd", "whoami", "which go", "wc -l f",
		"head -n 5 f", "tail -20 f", "sort -u f", "sort -k 2 f", "uniq f", "cut -d: -f1 f", "column -t f",
		"stat f", "du -sh .", "df -h", "ps aux", "tree -L 2", "basename /a/b", "dirname /a/b", "cd sub",
		"less f", "more f", "grep -rn x .", "rg -n x", "ls $HOME", "cat ~/x", "ls *.go",
		"git status", "git log --oneline -5", "git diff HEAD~1", "git show HEAD:f", "git blame f",
		"git cat-file -p HEAD", "git describe --tags", "git ls-files", "git rev-parse HEAD", "git grep -n x",
		"git remote -v", "git remote show -n origin", "git branch", "git branch -a", "git branch -vv",
		"git branch --contains abc", "git branch --list 'f*'", "git --no-pager diff", "git -C sub status",
		"find . -name '*.go'", "find . -type f -newer x -print", "env", "printenv",
		"sed -n '1,5p' f", "sed 's/a/b/' f", "sed 's/hello/world/g' f", "sed -e 's/a/b/' -e 'p' f",
		"sed 's|/|_|g' f", "sed 's/[/]/x/' f", "sed '/start/,/end/d' f", "sed -E 's/(a|b)+/x/2' f",
		"sed '$!N;P;D' f", "sed '1i\\hello' f", "sed 'y/abc/xyz/' f", "sed -n '/x/{p;q}' f",
		"awk '{print $1}' f", "awk -F: '$3 > 500 {print $1}' /etc/passwd", "awk '/a|b/ {n++} END {print n}' f",
		"awk -v x=1 'BEGIN {print x}'", "awk '$1 || $2' f", "awk '{ if ($1 > 2) print $1 }' f",
		"cat f | grep x | sort | uniq -c | head", "ls 2>&1", "ls >&2 2>&-", "grep x f >&2",
	}
	no := []string{
		"rm x", "touch f", "mkdir d", "npm test", "python x.py", "timeout 5 ls", "xargs ls",
		"echo hi > file", "echo hi >> file", "ls &> out", "ls &>> out", "ls >| out", "cat <> f", "ls >& out",
		"echo $(ls)", "echo `ls`", "cat <(ls)", "./ls", "/bin/ls", "$LS", "l*s",
		"git", "git push", "git commit -m x", "git checkout .", "git -c core.pager=sh log", "git remote add o u",
		"git remote remove o", "git remote rename a b", "git remote set-url o u", "git remote prune o",
		"git branch -d x", "git branch -D x", "git branch -m a b", "git branch -M a b", "git branch --delete x",
		"git branch --move a b", "git branch newbranch", "git branch -c a b", "git branch -u o/x",
		"git diff --output=x", "git log --output x", "git grep -O x", "git grep --open-files-in-pager=vi x",
		"find . -delete", "find . -exec rm {} \\;", "find . -execdir rm {} +", "find . -ok rm {} \\;",
		"find . -okdir rm {} \\;", "find . -fprint out", "find . -fprint0 out", "find . -fprintf out %p",
		"find . -fls out", "find . $ARGS", "find . -de{l,}ete", "find . -del*",
		"sed -i 's/a/b/' f", "sed -ni 'p' f", "sed -i.bak 's/a/b/' f", "sed --in-place 's/a/b/' f",
		"sed -f script f", "sed 's/a/b/w out' f", "sed 's/a/b/e' f", "sed '1w out' f", "sed 'W out' f",
		"sed -e p -e '1e date' f", "sed 'e date' f", "sed $S f", "sed",
		"awk '{system(\"rm x\")}' f", "awk '{ system (\"x\") }'", "awk '{print > \"out\"}' f",
		"awk '{print $1 >> \"out\"}' f", "awk '{print | \"sh\"}' f", "awk '{\"date\" | getline d}' f",
		"awk 'BEGIN { while ((getline l < \"f\") > 0) n++ }'", "awk -f prog.awk f", "awk '@include \"x\"'",
		"env FOO=1 rm x", "env ls", "printenv HOME",
		"sort -o out f", "sort -uo out f", "sort --output=out f", "sort --compress-program=sh f",
		"uniq in out", "tree -o out", "rg --pre sh x", "rg --pre=sh x",
	}
	for _, cmd := range yes {
		if a := mustParse(t, cmd); !a.ReadOnly() {
			t.Errorf("%q should be read-only: %v", cmd, a.SubCommands)
		}
	}
	for _, cmd := range no {
		if a := mustParse(t, cmd); a.ReadOnly() {
			t.Errorf("%q should need approval: %v", cmd, a.SubCommands)
		}
	}
}

func TestSuggestedShellRule(t *testing.T) {
	for cmd, want := range map[string]string{
		"ls":                "Bash(ls)",
		"rm -rf x":          "Bash(rm *)",
		"npm run build":     "Bash(npm run *)",
		"npm frobnicate":    "Bash(npm *)",
		"git push origin":   "Bash(git push *)",
		"go test ./...":     "Bash(go test *)",
		"cargo build":       "Bash(cargo build *)",
		"docker compose up": "Bash(docker compose *)",
		"kubectl get pods":  "Bash(kubectl get *)",
		"pip install x":     "Bash(pip install *)",
		"pnpm add x":        "Bash(pnpm add *)",
		"yarn test":         "Bash(yarn test *)",
		"make build":        "Bash(make build *)",
		"make -j4":          "Bash(make *)",
		"FOO=1 npm test":    "Bash(npm test *)",
		"/usr/bin/git push": "Bash(git push *)",
		"timeout 5 rm x":    "Bash(timeout *)",
		"touch $F":          "Bash(touch *)",
	} {
		a := mustParse(t, cmd)
		if got := shellsafe.SuggestedRule(a.SubCommands[0]); got != want {
			t.Errorf("%q: rule %q, want %q", cmd, got, want)
		}
	}
}

// Redirecting to /dev/null discards output: a read-only command stays
// read-only, while a redirection to a real file still asks.
func TestDevNullIsNotAWrite(t *testing.T) {
	for cmd, want := range map[string]bool{
		"grep -r x . 2>/dev/null":  true,
		"ls >/dev/null 2>&1":       true,
		"cat a &>/dev/null":        true,
		"ls > out.txt":             false,
		"ls 2>/dev/null > out.txt": false,
	} {
		a, err := shellsafe.Parse(cmd)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.ReadOnly(); got != want {
			t.Errorf("%q read-only = %v, want %v", cmd, got, want)
		}
	}
}
