package tools_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
)

// readMany runs read_many_files with args (a JSON object).
func readMany(t *testing.T, e *testEnv, call *tools.Call, args map[string]any) tools.Result {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return run(t, tools.NewReadManyFiles(e.Env), call, string(b))
}

// readManyFiles lists the files whose headers the content holds, in order.
func readManyFiles(res tools.Result) []string {
	var out []string
	for _, line := range strings.Split(res.Text(), "\n") {
		if strings.HasPrefix(line, "--- /") && strings.HasSuffix(line, " ---") {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(line, "--- "), " ---"))
		}
	}
	return out
}

func readManyWantFiles(t *testing.T, e *testEnv, res tools.Result, rels ...string) {
	t.Helper()
	if res.Error != nil {
		t.Fatalf("error %s: %s", res.Error.Type, res.Error.Message)
	}
	got := readManyFiles(res)
	want := make([]string, len(rels))
	for i, r := range rels {
		want[i] = filepath.Join(e.Root, r)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("files read =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestReadManyFormat(t *testing.T) {
	e := newTestEnv(t, nil)
	a := e.write(t, "a.txt", "alpha  \n")
	b := e.write(t, "sub/b.md", "beta")
	call := readCall()
	res := readMany(t, e, call, map[string]any{"paths": []string{"sub", "*.txt", "a.txt"}})
	readWantText(t, res, "--- "+a+" ---\n\nalpha\n\n\n--- "+b+" ---\n\nbeta\n\n\n--- end of files ---")
	want := "### ReadManyFiles Result (Target Dir: `" + e.Root + "`)\n\nRead 2 files:\n- `a.txt`\n- `sub/b.md`"
	if res.Display != tools.Markdown(want) {
		t.Errorf("display =\n%s\nwant\n%s", res.Display, want)
	}
	for _, p := range []string{a, b} {
		if entry, ok := call.Ledger.Lookup(p); !ok || !entry.Full || !entry.Editable || entry.ByReadFile {
			t.Errorf("ledger entry for %s = %+v, %v", p, entry, ok)
		}
	}
	params, _ := tools.PrepareArgs(tools.NewReadManyFiles(e.Env), `{"paths":["sub","*.txt"],"include":["x/**"]}`)
	if got := tools.NewReadManyFiles(e.Env).Describe(params); got != "Reading files matching: sub, *.txt, x/**" {
		t.Errorf("describe = %q", got)
	}
}

func TestReadManyMatching(t *testing.T) {
	e := newTestEnv(t, nil)
	for _, rel := range []string{"A.TXT", "b.txt", "c.go", ".hidden/d.txt", "deep/er/e.txt", "deep/f.log"} {
		e.write(t, rel, rel)
	}
	call := readCall()
	// Case-insensitive, dot files, every depth.
	readManyWantFiles(t, e, readMany(t, e, call, map[string]any{"paths": []string{"**/*.txt"}}),
		".hidden/d.txt", "A.TXT", "b.txt", "deep/er/e.txt")
	// include adds, exclude removes (a directory pattern removes what is below it).
	readManyWantFiles(t, e, readMany(t, e, call, map[string]any{
		"paths": []string{"*.TXT"}, "include": []string{"c.go", "deep"}, "exclude": []string{"b.*", "deep/er"}}),
		"A.TXT", "c.go", "deep/f.log")
	// Absolute paths and globs inside the workspace.
	readManyWantFiles(t, e, readMany(t, e, call, map[string]any{"paths": []string{filepath.Join(e.Root, "deep") + "/**/*.txt"}}),
		"deep/er/e.txt")
	// The fixed part of a pattern may differ in case from the disk's.
	readManyWantFiles(t, e, readMany(t, e, call, map[string]any{"paths": []string{"DEEP/ER/*.txt"}}), "deep/er/e.txt")
}

func TestReadManyOutside(t *testing.T) {
	e := newTestEnv(t, nil)
	outside := filepath.Join(filepath.Dir(e.Root), "out.txt")
	if err := os.WriteFile(outside, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(e.Root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	e.write(t, "in.txt", "in")
	res := readMany(t, e, readCall(), map[string]any{"paths": []string{outside, "../out.txt", "*.txt"}})
	readManyWantFiles(t, e, res, "in.txt")
	if strings.Contains(res.Text(), "secret") {
		t.Fatal("a file outside the workspace was read")
	}
	d := string(res.Display.(tools.Markdown))
	for _, want := range []string{"Skipped 3 items:", "- `" + outside + "` (outside the workspace)",
		"- `../out.txt` (outside the workspace)", "- `link.txt` (outside the workspace)"} {
		if !strings.Contains(d, want) {
			t.Errorf("display lacks %q:\n%s", want, d)
		}
	}

	res = readMany(t, e, readCall(), map[string]any{"paths": []string{outside}})
	readWantText(t, res, "No file was read: nothing matched, or every match was skipped.\n\nNot read, though named:\n- "+outside+": outside the workspace")
}

func TestReadManyExcludes(t *testing.T) {
	e := newTestEnv(t, nil)
	for _, rel := range []string{"src/a.js", "node_modules/m/x.js", "dist/out.js", "build/b.js", ".vscode/s.js",
		"lib.zip", ".env", "QWEN.md", "AGENTS.md", "README.md", "sub/.DS_Store"} {
		e.write(t, rel, "x")
	}
	call := readCall()
	readManyWantFiles(t, e, readMany(t, e, call, map[string]any{"paths": []string{"**/*"}}), "README.md", "src/a.js")
	// Without useDefaultExcludes only the always-excluded directories stay out.
	// (lib.zip is then found, but as a binary file it is skipped, not read.)
	res := readMany(t, e, call, map[string]any{"paths": []string{"**/*"}, "useDefaultExcludes": false})
	readManyWantFiles(t, e, res,
		".env", ".vscode/s.js", "AGENTS.md", "QWEN.md", "README.md", "build/b.js", "dist/out.js", "src/a.js", "sub/.DS_Store")
	if d := string(res.Display.(tools.Markdown)); !strings.Contains(d, "- `lib.zip` (binary file)") {
		t.Errorf("display =\n%s", d)
	}
	// A pattern that starts inside an excluded directory searches it.
	readManyWantFiles(t, e, readMany(t, e, call, map[string]any{"paths": []string{"node_modules/**/*.js"}}), "node_modules/m/x.js")
	// context.fileName names the memory files.
	custom := newTestEnv(t, map[string]any{"context": map[string]any{"fileName": "NOTES.md"}})
	custom.write(t, "NOTES.md", "n")
	custom.write(t, "QWEN.md", "q")
	readManyWantFiles(t, custom, readMany(t, custom, readCall(), map[string]any{"paths": []string{"*.md"}}), "QWEN.md")
}

func TestReadManyIgnoreFiles(t *testing.T) {
	e := newTestEnv(t, nil)
	readGitRepo(t, e, "*.log\nignored/\n")
	e.write(t, ".qwenignore", "private.txt\n")
	e.Workspace.Ignore.Invalidate(filepath.Join(e.Root, ".qwenignore"))
	for _, rel := range []string{"keep.txt", "app.log", "ignored/x.txt", "private.txt"} {
		e.write(t, rel, rel)
	}
	res := readMany(t, e, readCall(), map[string]any{"paths": []string{"**/*.txt", "*.log"}})
	readManyWantFiles(t, e, res, "keep.txt")
	d := string(res.Display.(tools.Markdown))
	if !strings.Contains(d, "- `app.log` (ignored by .gitignore)") || !strings.Contains(d, "- `private.txt` (ignored by .qwenignore)") {
		t.Errorf("display =\n%s", d)
	}
	// The per-call options override the settings.
	res = readMany(t, e, readCall(), map[string]any{"paths": []string{"**/*.txt", "*.log"},
		"file_filtering_options": map[string]any{"respect_git_ignore": false, "respect_qwen_ignore": false}})
	readManyWantFiles(t, e, res, "app.log", "ignored/x.txt", "keep.txt", "private.txt")
	// So do the settings, when the call says nothing.
	off := newTestEnv(t, map[string]any{"context": map[string]any{"fileFiltering": map[string]any{"respectGitIgnore": false}}})
	readGitRepo(t, off, "*.log\n")
	off.write(t, "app.log", "x")
	readManyWantFiles(t, off, readMany(t, off, readCall(), map[string]any{"paths": []string{"*.log"}}), "app.log")
}

func TestReadManyMedia(t *testing.T) {
	e := newTestEnv(t, readModalities)
	e.write(t, "a.txt", "text")
	e.write(t, "i.png", string(readPNG))
	e.write(t, "doc.pdf", "%PDF")
	res := readMany(t, e, readCall(), map[string]any{"paths": []string{"*"}})
	readManyWantFiles(t, e, res, "a.txt")
	if d := string(res.Display.(tools.Markdown)); !strings.Contains(d, "- `i.png` (media or PDF file not named by a pattern)") ||
		!strings.Contains(d, "- `doc.pdf` (media or PDF file not named by a pattern)") {
		t.Errorf("display =\n%s", d)
	}

	res = readMany(t, e, readCall(), map[string]any{"paths": []string{"*.{png,txt}"}})
	if res.Error != nil || len(res.LLMContent) != 3 {
		t.Fatalf("result = %+v", res)
	}
	if p := res.LLMContent[1]; p.InlineData == nil || p.InlineData.MimeType != "image/png" ||
		p.InlineData.Data != base64.StdEncoding.EncodeToString(readPNG) || p.InlineData.DisplayName != "i.png" {
		t.Errorf("media part = %+v", p)
	}
	if !strings.HasPrefix(res.LLMContent[0].Text, "--- "+e.Root+"/a.txt ---") || res.LLMContent[2].Text != "\n--- end of files ---" {
		t.Errorf("text parts = %q, %q", res.LLMContent[0].Text, res.LLMContent[2].Text)
	}
	// Named by its base name; the model does not take images here.
	off := newTestEnv(t, nil)
	off.write(t, "i.png", string(readPNG))
	res = readMany(t, off, readCall(), map[string]any{"paths": []string{"i.png"}})
	readWantText(t, res, "No file was read: nothing matched, or every match was skipped.\n\nNot read, though named:\n- "+off.Root+"/i.png: the model does not accept image input")
	if d := string(res.Display.(tools.Markdown)); !strings.Contains(d, "- `i.png` (the model does not accept image input)") {
		t.Errorf("display =\n%s", d)
	}
}

func TestReadManyLimits(t *testing.T) {
	e := newTestEnv(t, nil)
	for i := range 105 {
		e.write(t, fmt.Sprintf("f/%03d.txt", i), strings.Repeat("line\n", 30))
	}
	res := readMany(t, e, readCall(), map[string]any{"paths": []string{"f/*.txt"}})
	files := readManyFiles(res)
	if len(files) != 100 || files[0] != filepath.Join(e.Root, "f/000.txt") || files[99] != filepath.Join(e.Root, "f/099.txt") {
		t.Fatalf("read %d files: %v ... ", len(files), files[:3])
	}
	// 100 files: max(10, 1000/100) = 10 lines each.
	if !strings.Contains(res.Text(), "--- "+e.Root+"/f/000.txt ---\n\nLines 1-10 of 31.\n---\nline\n") {
		t.Errorf("window of the first file:\n%s", res.Text()[:200])
	}
	d := string(res.Display.(tools.Markdown))
	if !strings.Contains(d, "Read 100 files:") || !strings.Contains(d, "- ...and 90 more") ||
		!strings.Contains(d, "Skipped 5 items:") || !strings.Contains(d, "- `f/100.txt` (over the 100-file limit)") {
		t.Errorf("display =\n%s", d)
	}

	// Two files: 500 lines each, and max(1000, 25000/2) characters.
	two := newTestEnv(t, nil)
	two.write(t, "a.txt", strings.Repeat("x\n", 600))
	two.write(t, "b.txt", strings.Repeat("y", 13000))
	res = readMany(t, two, readCall(), map[string]any{"paths": []string{"*.txt"}})
	text := res.Text()
	if !strings.Contains(text, "---\n\nLines 1-500 of 601.\n---\nx\n") {
		t.Error("a.txt is not cut at 500 lines")
	}
	if !strings.Contains(text, "Lines 1-1 of 1.\n---\n"+strings.Repeat("y", 12499)+"... [truncated]\n\n") {
		t.Error("b.txt is not cut at 12,500 characters")
	}
}

func TestReadManyErrors(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewReadManyFiles(e.Env)
	if _, terr := tools.PrepareArgs(tool, `{"paths":["a", " "]}`); terr == nil || terr.Message != "Each entry of 'paths' must be a non-empty string." {
		t.Errorf("blank entry: %+v", terr)
	}
	if _, terr := tools.PrepareArgs(tool, `{"paths":[]}`); terr == nil || terr.Type != tools.ErrorInvalidToolParams {
		t.Errorf("empty paths: %+v", terr)
	}
	res := readMany(t, e, readCall(), map[string]any{"paths": []string{"src/[a-"}})
	if res.Error == nil || res.Error.Type != tools.ErrorReadManyFilesSearch ||
		res.Error.Message != `The file search failed: "src/[a-" is not a valid glob pattern.` {
		t.Errorf("bad pattern: %+v", res.Error)
	}
	// A file that cannot be read is skipped with the reason.
	big := filepath.Join(e.Root, "big.txt")
	f, _ := os.Create(big)
	f.Truncate(11 << 20)
	f.Close()
	e.write(t, "ok.txt", "ok")
	res = readMany(t, e, readCall(), map[string]any{"paths": []string{"*.txt"}})
	readManyWantFiles(t, e, res, "ok.txt")
	if d := string(res.Display.(tools.Markdown)); !strings.Contains(d, "- `big.txt` ("+big+" is too large to read: 11.00 MB, over the 10 MB limit.)") {
		t.Errorf("display =\n%s", d)
	}
}

// A file the model named and did not get back comes with the reason, in
// the text the model reads and first in the display, whatever left it
// out: the search (ignore files, default excludes, exclude, a missing
// file, a path out of the roots) or the read (binary, too large).
func TestReadManySaysWhyANamedFileWasSkipped(t *testing.T) {
	e := newTestEnv(t, nil)
	readGitRepo(t, e, "*.log\nignored/\n")
	e.write(t, ".qwenignore", "private.txt\n")
	e.Workspace.Ignore.Invalidate(filepath.Join(e.Root, ".qwenignore"))
	for _, rel := range []string{"keep.txt", "app.log", "ignored/x.txt", "private.txt", ".env", "dist/out.js",
		"node_modules/m/x.js", "gen/big.txt", "notes/a.md", "notes/b.md"} {
		e.write(t, rel, rel)
	}
	e.write(t, "blob", "a\x00binary")
	e.write(t, "other.log", "matched by a glob, not named")
	big := e.write(t, "huge.txt", strings.Repeat("x", 11<<20))
	outside := filepath.Join(filepath.Dir(e.Root), "elsewhere.txt")
	res := readMany(t, e, readCall(), map[string]any{
		"paths": []string{"keep.txt", "app.log", "ignored/x.txt", "private.txt", ".env", "dist/out.js",
			"node_modules/m/x.js", "gen/big.txt", "missing.txt", "blob", big, outside, "../up.txt", "notes/*.md", "*.log"},
		"exclude": []string{"gen/**"},
	})
	readManyWantFiles(t, e, res, "keep.txt", "notes/a.md", "notes/b.md")
	W := e.Root
	reasons := []string{
		W + "/app.log: ignored by .gitignore",
		W + "/ignored/x.txt: ignored by .gitignore",
		W + "/private.txt: ignored by .qwenignore",
		W + "/.env: excluded by default (useDefaultExcludes)",
		W + "/dist/out.js: inside dist, which useDefaultExcludes leaves out",
		W + "/node_modules/m/x.js: inside node_modules, which searches leave out; name a pattern that starts inside it",
		W + "/gen/big.txt: matched by exclude",
		W + "/missing.txt: not found",
		W + "/blob: binary file",
		outside + ": outside the workspace",
		"../up.txt: outside the workspace",
	}
	text := res.Text()
	_, note, ok := strings.Cut(text, "--- end of files ---\n\nNot read, though named:\n")
	if !ok {
		t.Fatalf("no note after the files:\n%s", truncateForLog(text))
	}
	for _, want := range reasons {
		if !strings.Contains(note, "- "+want+"\n") && !strings.HasSuffix(note, "- "+want) {
			t.Errorf("the note lacks %q:\n%s", want, note)
		}
	}
	if !strings.Contains(note, "- "+big+": ") {
		t.Errorf("the note does not name the file too large to read:\n%s", note)
	}
	if got, want := strings.Count(note, "\n- ")+1, len(reasons)+1; got != want {
		t.Errorf("the note names %d paths, want %d:\n%s", got, want, note)
	}
	// The display's short list starts with what the model named.
	d := string(res.Display.(tools.Markdown))
	if !strings.Contains(d, "Skipped 13 items:\n") || !strings.Contains(d, "- ...and 8 more") || strings.Contains(d+note, "other.log") {
		t.Errorf("display =\n%s", d)
	}
	// A pattern that finds nothing is no file the model named: no note.
	res = readMany(t, e, readCall(), map[string]any{"paths": []string{"keep.txt", "*.none"}})
	if strings.Contains(res.Text(), "Not read") {
		t.Errorf("note for a glob:\n%s", res.Text())
	}
}
