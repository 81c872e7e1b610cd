package commands

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Names come from the path under the folder; the project's replace the
// user's; files without a prompt, with bad TOML or with spaces in their
// names are left out and named in the problems.
func TestLoad(t *testing.T) {
	user, proj := t.TempDir(), t.TempDir()
	write(t, filepath.Join(user, "a.toml"), `prompt = "user a"`)
	write(t, filepath.Join(user, "b.toml"), "description = \"B\"\nprompt = '''multi\nline'''")
	write(t, filepath.Join(proj, "a.toml"), `prompt = "project a"`)
	write(t, filepath.Join(proj, "git", "commit.toml"), `prompt = "commit {{args}}"`)
	write(t, filepath.Join(proj, "odd:name.toml"), `prompt = "x"`)
	write(t, filepath.Join(proj, "no prompt.toml"), `prompt = "x"`)
	write(t, filepath.Join(proj, "empty.toml"), `description = "no prompt"`)
	write(t, filepath.Join(proj, "bad.toml"), `prompt = `)
	write(t, filepath.Join(proj, "readme.md"), `not a command`)
	cmds, problems := Load(Dir{user, SourceUser}, Dir{proj, SourceProject}, Dir{filepath.Join(proj, "missing"), SourceProject})
	got := map[string]Command{}
	for _, c := range cmds {
		got[c.Name] = c
	}
	if len(cmds) != 4 || got["a"].Prompt != "project a" || got["a"].Source != SourceProject || got["b"].Description != "B" ||
		got["b"].Prompt != "multi\nline" || !got["git:commit"].TakesArgs() || got["odd_name"].Prompt != "x" {
		t.Fatalf("commands = %+v", cmds)
	}
	if got["git:commit"].Description != "Custom command from git/commit.toml" {
		t.Fatalf("default description = %q", got["git:commit"].Description)
	}
	if len(problems) != 3 {
		t.Fatalf("problems = %q", problems)
	}
}

// A file too large to be a prompt is left out.
func TestLoadBoundsFileSize(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "big.toml"), `prompt = "`+strings.Repeat("x", maxFileSize)+`"`)
	cmds, problems := Load(Dir{dir, SourceUser})
	if len(cmds) != 0 || len(problems) != 1 {
		t.Fatalf("%v %q", cmds, problems)
	}
}

func TestExpand(t *testing.T) {
	var ran []string
	h := Hooks{
		ReadFile: func(p string) (string, error) {
			if p == "missing" {
				return "", errors.New("no such file")
			}
			return "<" + p + ":{{args}} !{rm -rf /}>", nil
		},
		Shell: func(_ context.Context, cmd string) (string, error) {
			ran = append(ran, cmd)
			return "out({{args}})", nil
		},
	}
	ctx := context.Background()
	cases := []struct{ prompt, args, want string }{
		{"Hi {{args}}!", "a b", "Hi a b!"},
		{"Plain.", "", "Plain."},
		{"Plain.\n", "x y", "Plain.\n\n/c x y"},
		{"F: @{ f.txt }", "", "F: <f.txt:{{args}} !{rm -rf /}>"},
		{"S: !{awk '{print $1}' {{args}}} {{args}}", "it's", "S: out({{args}}) it's"},
		{"!{}", "", ""},
	}
	for _, c := range cases {
		ran = nil
		got, err := Expand(ctx, "c", c.prompt, c.args, h)
		if err != nil || got != c.want {
			t.Errorf("Expand(%q, %q) = %q, %v; want %q", c.prompt, c.args, got, err, c.want)
		}
	}
	ran = nil
	Expand(ctx, "c", "!{awk '{print $1}' {{args}}}", "it's", h)
	if len(ran) != 1 || ran[0] != `awk '{print $1}' 'it'\''s'` {
		t.Fatalf("ran %q", ran)
	}
	for _, bad := range []string{"!{unclosed", "@{missing}", "@{ }", "x @{a{b}"} {
		if _, err := Expand(ctx, "c", bad, "", h); err == nil {
			t.Errorf("Expand(%q) did not fail", bad)
		}
	}
	// A refused shell command stops the expansion.
	h.Shell = func(context.Context, string) (string, error) { return "", errors.New("refused") }
	if _, err := Expand(ctx, "c", "a !{ls} b", "", h); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("err = %v", err)
	}
}
