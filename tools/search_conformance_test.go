package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// Conformance cases 17–20 of tools.md §8 (glob and grep_search).

// searchWaitEntry waits until the workspace index is built and holds
// path in a state that ok accepts, so that a test does not race the
// watcher after writing files. It fails the test when that never happens.
func searchWaitEntry(t testing.TB, e *testEnv, path string, ok func(workspace.FileEntry) bool) {
	t.Helper()
	ix := e.Workspace.Index
	deadline := time.After(10 * time.Second)
	for {
		changed := ix.Changed()
		ready := ix.Ready()
		select {
		case <-ready:
			ready = nil
			for _, f := range ix.Files() {
				if f.Path == path && ok(f) {
					// Let the index finish the batch of events this
					// one came in (rescans run at its end).
					if err := ix.Sync(context.Background()); err != nil {
						t.Fatal(err)
					}
					return
				}
			}
		default:
		}
		select {
		case <-changed:
		case <-ready:
		case <-deadline:
			t.Fatalf("the index never showed %s as expected", path)
		}
	}
}

// searchWaitIndexed waits until the index holds each path with its current
// modification time on disk.
func searchWaitIndexed(t testing.TB, e *testEnv, paths ...string) {
	t.Helper()
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		searchWaitEntry(t, e, p, func(f workspace.FileEntry) bool { return f.ModTime.Equal(fi.ModTime()) })
	}
}

// mustText returns the llmContent text of a successful result.
func searchText(t testing.TB, res tools.Result) string {
	t.Helper()
	if res.Error != nil {
		t.Fatalf("unexpected error %s: %s", res.Error.Type, res.Error.Message)
	}
	return res.Text()
}

func searchArgs(t testing.TB, m map[string]any) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCase17_GlobCaseRecencyAndDepth(t *testing.T) {
	e := newTestEnv(t, nil)
	glob := tools.NewGlob(e.Env)
	a := e.write(t, "a.TXT", "a")
	b := e.write(t, "b.txt", "b")
	searchWaitIndexed(t, e, a, b)

	got := searchText(t, run(t, glob, &tools.Call{}, `{"pattern":"*.txt"}`))
	const head = "2 files matching \"*.txt\" in the workspace (changed in the last 24 hours first, newest first; then by path):\n---\n"
	if !strings.HasPrefix(got, head) {
		t.Fatalf("output starts wrong:\n%q", got)
	}
	lines := strings.Split(strings.TrimPrefix(got, head), "\n")
	if len(lines) != 2 || !searchHasAll(lines, a, b) {
		t.Fatalf("want both files, got %q", lines)
	}

	got = searchText(t, run(t, glob, &tools.Call{}, `{"pattern":"*.txt","case_sensitive":true}`))
	if want := "1 file matching \"*.txt\" in the workspace (changed in the last 24 hours first, newest first; then by path):\n---\n" + b; got != want {
		t.Fatalf("case_sensitive:\ngot  %q\nwant %q", got, want)
	}

	now := time.Now()
	d := filepath.Join(e.Root, "m")
	old1 := e.write(t, "m/old1", "x")
	new1 := e.write(t, "m/new1", "x")
	old0 := e.write(t, "m/old0", "x")
	for p, age := range map[string]time.Duration{old1: 48 * time.Hour, new1: 0, old0: 72 * time.Hour} {
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	searchWaitIndexed(t, e, old1, new1, old0)
	got = searchText(t, run(t, glob, &tools.Call{}, searchArgs(t, map[string]any{"pattern": "*", "path": d})))
	want := "3 files matching \"*\" under " + d + " (changed in the last 24 hours first, newest first; then by path):\n---\n" +
		new1 + "\n" + old0 + "\n" + old1
	if got != want {
		t.Fatalf("recency order:\ngot  %q\nwant %q", got, want)
	}

	deep := []string{e.write(t, "top.go", ""), e.write(t, "x/mid.md", ""), e.write(t, "x/y/z/deep.go", "")}
	e.write(t, "x/y/other.txt", "")
	searchWaitIndexed(t, e, deep...)
	got = searchText(t, run(t, glob, &tools.Call{}, `{"pattern":"**/*.{go,md}"}`))
	if !strings.HasPrefix(got, "3 files matching") || !searchHasAll(strings.Split(got, "\n"), deep...) {
		t.Fatalf("**/*.{go,md}:\n%s", got)
	}
}

func searchHasAll(lines []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, l := range lines {
			if l == w {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func TestCase18_GrepFormatAndLimit(t *testing.T) {
	e := newTestEnv(t, nil)
	grep := tools.NewGrepSearch(e.Env)
	searchWaitIndexed(t, e,
		e.write(t, "fileA.txt", "hello world\nsecond line with world\n"),
		e.write(t, "sub/fileC.txt", "another world in sub dir\n"),
		e.write(t, "fileB.txt", "nothing here\n"))

	res := run(t, grep, &tools.Call{}, `{"pattern":"WORLD"}`)
	want := "3 matching lines for \"WORLD\" in the workspace:\n---\nFile: fileA.txt\nL1: hello world\nL2: second line with world\n---\nFile: sub/fileC.txt\nL1: another world in sub dir\n---"
	if got := searchText(t, res); got != want {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
	if res.Display != tools.Markdown("Found 3 matches") {
		t.Errorf("display %v", res.Display)
	}

	res = run(t, grep, &tools.Call{}, `{"pattern":"WORLD","limit":1}`)
	want = "3 matching lines for \"WORLD\" in the workspace:\n---\nFile: fileA.txt\nL1: hello world\n---\n[2 more matching lines not shown]"
	if got := searchText(t, res); got != want {
		t.Fatalf("limit 1: got\n%q\nwant\n%q", got, want)
	}
	if strings.Count(res.Text(), "\nL") != 1 {
		t.Errorf("want exactly one L line")
	}
	if res.Display != tools.Markdown("Found 3 matches (truncated)") {
		t.Errorf("display %v", res.Display)
	}
}

func TestCase19_GrepLookaroundRejected(t *testing.T) {
	e := newTestEnv(t, nil)
	res := run(t, tools.NewGrepSearch(e.Env), &tools.Call{}, `{"pattern":"foo(?=bar)"}`)
	if res.Error == nil {
		t.Fatalf("want an error, got %q", res.Text())
	}
	if res.Error.Type != tools.ErrorInvalidToolParams {
		t.Errorf("type %s", res.Error.Type)
	}
	msg := res.Error.Message
	if !strings.HasPrefix(msg, `"foo(?=bar)" is not a valid regular expression (`) ||
		!strings.Contains(msg, "Lookahead, lookbehind and backreferences are not supported") {
		t.Errorf("message %q", msg)
	}
}

func TestCase20_GrepSourcesAndExcludes(t *testing.T) {
	t.Run("unsaved buffer", func(t *testing.T) {
		e := newTestEnv(t, nil)
		grep := tools.NewGrepSearch(e.Env)
		saved := e.write(t, "saved.txt", "nothing to see\n")
		searchWaitIndexed(t, e, saved)
		e.Workspace.Overlay.Open(saved, 2, "a needle in the edit\n")
		e.Workspace.Overlay.Open(filepath.Join(e.Root, "draft.txt"), 1, "first\nneedle again\n")

		got := searchText(t, run(t, grep, &tools.Call{}, `{"pattern":"needle"}`))
		want := "2 matching lines for \"needle\" in the workspace:\n---\nFile: draft.txt\nL2: needle again\n---\nFile: saved.txt\nL1: a needle in the edit\n---"
		if got != want {
			t.Fatalf("got\n%q\nwant\n%q", got, want)
		}
	})
	t.Run("node_modules", func(t *testing.T) {
		e := newTestEnv(t, nil)
		e.write(t, "node_modules/x.js", "const needle = 1;\n")
		searchWaitIndexed(t, e, e.write(t, "other.js", "nothing\n"))
		got := searchText(t, run(t, tools.NewGrepSearch(e.Env), &tools.Call{}, `{"pattern":"needle"}`))
		if got != `No lines match "needle" in the workspace.` {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("git-ignored", func(t *testing.T) {
		e := newTestEnv(t, nil)
		if err := os.Mkdir(filepath.Join(e.Root, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		e.write(t, ".gitignore", "secret.txt\n")
		secret := e.write(t, "secret.txt", "needle\n")
		searchWaitEntry(t, e, secret, func(f workspace.FileEntry) bool { return f.Git })
		res := run(t, tools.NewGrepSearch(e.Env), &tools.Call{}, `{"pattern":"needle"}`)
		if got := searchText(t, res); got != `No lines match "needle" in the workspace.` {
			t.Fatalf("got %q", got)
		}
		if res.Display != tools.Markdown("No matches found") {
			t.Errorf("display %v", res.Display)
		}
	})
}

// Every case above also holds when the index cannot answer and the disk is
// walked: a workspace that is never started has no index.
func TestCase20_GrepSourcesAndExcludesWithoutIndex(t *testing.T) {
	root := t.TempDir()
	root, _ = filepath.EvalSymlinks(root)
	for rel, content := range map[string]string{
		".git/HEAD":         "ref\n",
		".gitignore":        "secret.txt\n",
		"secret.txt":        "needle\n",
		"node_modules/x.js": "needle\n",
		"plain.txt":         "hay\n",
	} {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws := workspace.New(workspace.Options{Roots: []string{root}, Settings: workspace.SettingsOptions{
		UserDir: filepath.Join(t.TempDir(), ".qwen"), SystemPath: filepath.Join(t.TempDir(), "s.json"),
		Getenv: func(string) (string, bool) { return "", false },
	}})
	t.Cleanup(func() { _ = ws.Close() })
	env := &tools.Env{Workspace: ws, QwenHome: t.TempDir()}
	grep := tools.NewGrepSearch(env)
	if got := searchText(t, run(t, grep, &tools.Call{}, `{"pattern":"needle"}`)); got != `No lines match "needle" in the workspace.` {
		t.Fatalf("got %q", got)
	}
	ws.Overlay.Open(filepath.Join(root, "new.txt"), 1, "needle\n")
	if got := searchText(t, run(t, grep, &tools.Call{}, `{"pattern":"needle"}`)); !strings.Contains(got, "File: new.txt\nL1: needle") {
		t.Fatalf("got %q", got)
	}
}
