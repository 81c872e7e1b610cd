package tools_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/tools"
)

// readModalities is the conformance setup's model.modalities (tools.md §8).
var readModalities = map[string]any{"model": map[string]any{"modalities": map[string]any{
	"image": true, "audio": true, "video": true, "pdf": true,
}}}

// readWantText fails unless res succeeded with exactly text as its content.
func readWantText(t *testing.T, res tools.Result, text string) {
	t.Helper()
	if res.Error != nil {
		t.Fatalf("error %s: %s", res.Error.Type, res.Error.Message)
	}
	if got := res.Text(); got != text {
		t.Fatalf("content =\n%q\nwant\n%q", got, text)
	}
}

// readWantError fails unless res failed with type typ and exactly msg.
func readWantError(t *testing.T, res tools.Result, typ tools.ErrorType, msg string) {
	t.Helper()
	if res.Error == nil {
		t.Fatalf("succeeded with %q, want error %s: %s", res.Text(), typ, msg)
	}
	if res.Error.Type != typ || res.Error.Message != msg {
		t.Fatalf("error %s: %q\nwant  %s: %q", res.Error.Type, res.Error.Message, typ, msg)
	}
}

func readCall() *tools.Call { return &tools.Call{ID: "c1", Ledger: tools.NewLedger()} }

func TestCase08_RelativePathAndFilePathAlias(t *testing.T) {
	e := newTestEnv(t, readModalities)
	rf := tools.NewReadFile(e.Env)
	readWantError(t, run(t, rf, readCall(), `{"absolute_path":"a.txt"}`), tools.ErrorInvalidToolParams,
		"Not an absolute path: a.txt. Give the full path, starting with /. The workspace root is "+e.Root+
			", so the full path is probably "+e.Root+"/a.txt.")

	p := e.write(t, "a.txt", "hello\nworld")
	res := run(t, rf, readCall(), `{"file_path":"`+p+`"}`)
	readWantText(t, res, "hello\nworld")
	if res.Display != tools.Markdown("") {
		t.Errorf("display = %#v, want empty", res.Display)
	}
}

func TestCase09_OutsideSymlinkAndQwenIgnore(t *testing.T) {
	e := newTestEnv(t, readModalities)
	rf := tools.NewReadFile(e.Env)
	outsideMsg := func(p string) string {
		return "Path is outside the workspace: " + p + ". Tools may only access files inside the workspace roots: " + e.Root + "."
	}
	readWantError(t, run(t, rf, readCall(), `{"absolute_path":"/etc/hosts"}`), tools.ErrorPathNotInWorkspace, outsideMsg("/etc/hosts"))

	link := filepath.Join(e.Root, "l")
	if err := os.Symlink("/etc/hosts", link); err != nil {
		t.Fatal(err)
	}
	readWantError(t, run(t, rf, readCall(), `{"absolute_path":"`+link+`"}`), tools.ErrorPathNotInWorkspace, outsideMsg(link))

	e.write(t, ".qwenignore", "secret.txt\n")
	secret := e.write(t, "secret.txt", "s3cret")
	e.Workspace.Ignore.Invalidate(filepath.Join(e.Root, ".qwenignore"))
	res := run(t, rf, readCall(), `{"absolute_path":"`+secret+`"}`)
	if res.Error == nil || res.Error.Message != secret+" is excluded by .qwenignore, so this tool cannot use it." {
		t.Fatalf("result = %+v", res)
	}
}

func TestCase10_WindowAndTrimming(t *testing.T) {
	e := newTestEnv(t, readModalities)
	rf := tools.NewReadFile(e.Env)
	var lines []string
	for i := 1; i <= 20; i++ {
		lines = append(lines, "Line "+strconv.Itoa(i))
	}
	p := e.write(t, "twenty.txt", strings.Join(lines, "\n"))
	res := run(t, rf, readCall(), `{"absolute_path":"`+p+`","offset":5,"limit":3}`)
	readWantText(t, res, "Lines 6-8 of 20 (read other lines with offset and limit).\n\n---\n\nLine 6\nLine 7\nLine 8")
	if res.Display != tools.Markdown("Read lines 6-8 of 20 from twenty.txt") {
		t.Errorf("display = %#v", res.Display)
	}

	crlf := e.write(t, "crlf.txt", "a  \r\nb")
	readWantText(t, run(t, rf, readCall(), `{"absolute_path":"`+crlf+`"}`), "a\nb")
}

func TestCase11_UnsavedBufferWins(t *testing.T) {
	e := newTestEnv(t, readModalities)
	p := e.write(t, "doc.txt", "saved")
	e.Workspace.Overlay.Open(p, 3, "draft")
	readWantText(t, run(t, tools.NewReadFile(e.Env), readCall(), `{"absolute_path":"`+p+`"}`), "draft")
}

func TestCase12_MissingAndSniffedBinary(t *testing.T) {
	e := newTestEnv(t, readModalities)
	rf := tools.NewReadFile(e.Env)
	nope := filepath.Join(e.Root, "nope.txt")
	res := run(t, rf, readCall(), `{"absolute_path":"`+nope+`"}`)
	readWantError(t, res, tools.ErrorFileNotFound, nope+" does not exist.")
	if res.Display != tools.Markdown("File not found.") {
		t.Errorf("display = %#v", res.Display)
	}

	blob := e.write(t, "blob", "abc\x00def")
	res = run(t, rf, readCall(), `{"absolute_path":"`+blob+`"}`)
	readWantText(t, res, "blob is a binary file; its content is not shown.")
	if res.Display != tools.Markdown("Skipped binary file: blob") {
		t.Errorf("display = %#v", res.Display)
	}
}

// readPNG is a 1×1 PNG.
var readPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89" +
	"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

func TestCase13_ImageByModality(t *testing.T) {
	off := newTestEnv(t, map[string]any{"model": map[string]any{"modalities": map[string]any{"image": false}}})
	p := off.write(t, "i.png", string(readPNG))
	res := run(t, tools.NewReadFile(off.Env), readCall(), `{"absolute_path":"`+p+`"}`)
	readWantText(t, res, `[Skipped image file "i.png": the current model does not accept image input, so its content cannot be shown.]`)
	if res.Display != tools.Markdown("Skipped image file: i.png (the model does not accept image input)") {
		t.Errorf("display = %#v", res.Display)
	}

	on := newTestEnv(t, readModalities)
	p = on.write(t, "i.png", string(readPNG))
	res = run(t, tools.NewReadFile(on.Env), readCall(), `{"absolute_path":"`+p+`"}`)
	if res.Error != nil || len(res.LLMContent) != 1 || res.LLMContent[0].InlineData == nil {
		t.Fatalf("result = %+v", res)
	}
	d := res.LLMContent[0].InlineData
	if d.MimeType != "image/png" || d.DisplayName != "i.png" || d.Data != base64.StdEncoding.EncodeToString(readPNG) {
		t.Errorf("inline data = %s %s %q", d.MimeType, d.DisplayName, d.Data)
	}
	if res.Display != tools.Markdown("Read image file: i.png") {
		t.Errorf("display = %#v", res.Display)
	}
}

func TestCase14_UnchangedReadShortcut(t *testing.T) {
	e := newTestEnv(t, readModalities)
	rf := tools.NewReadFile(e.Env)
	call := readCall()
	p := e.write(t, "a.txt", "one\ntwo\n")
	readWantText(t, run(t, rf, call, `{"absolute_path":"`+p+`"}`), "one\ntwo\n")
	res := run(t, rf, call, `{"absolute_path":"`+p+`"}`)
	if !strings.HasPrefix(res.Text(), "[a.txt has not changed since you read it in full") || res.Error != nil {
		t.Fatalf("second read = %q", res.Text())
	}
	if res.Display != tools.Markdown("Unchanged: a.txt") {
		t.Errorf("display = %#v", res.Display)
	}
	// An explicit window is never shortened.
	readWantText(t, run(t, rf, call, `{"absolute_path":"`+p+`","offset":0,"limit":5}`), "one\ntwo\n")

	// That windowed read is now the last ledger event, so a full read is
	// not shortened either; the one after it is.
	readWantText(t, run(t, rf, call, `{"absolute_path":"`+p+`"}`), "one\ntwo\n")
	if !strings.HasPrefix(run(t, rf, call, `{"absolute_path":"`+p+`"}`).Text(), "[a.txt has not changed") {
		t.Error("the full read after the full read was not shortened")
	}

	// A change on disk (another size, and another mtime) shows the text again.
	e.write(t, "a.txt", "one\ntwo\nthree\n")
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(p, later, later); err != nil {
		t.Fatal(err)
	}
	readWantText(t, run(t, rf, call, `{"absolute_path":"`+p+`"}`), "one\ntwo\nthree\n")
	if !strings.HasPrefix(run(t, rf, call, `{"absolute_path":"`+p+`"}`).Text(), "[a.txt has not changed") {
		t.Error("the read after the re-read was not shortened")
	}
	// After the history was compacted, the earlier content is gone.
	call.Ledger.HistoryCompacted()
	readWantText(t, run(t, rf, call, `{"absolute_path":"`+p+`"}`), "one\ntwo\nthree\n")
}

func TestCase15_ListDirectoryOrder(t *testing.T) {
	e := newTestEnv(t, readModalities)
	e.write(t, "d/b.txt", "b")
	e.write(t, "d/a.txt", "a")
	if err := os.Mkdir(filepath.Join(e.Root, "d", "z"), 0o755); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(e.Root, "d")
	res := run(t, tools.NewListDirectory(e.Env), readCall(), `{"path":"`+d+`"}`)
	readWantText(t, res, "Contents of "+d+" (3 entries):\n---\n[DIR] z\na.txt\nb.txt")
	if res.Display != tools.Markdown("Listed 3 item(s)") {
		t.Errorf("display = %#v", res.Display)
	}
}

func TestCase16_ListDirectoryGitIgnored(t *testing.T) {
	e := newTestEnv(t, readModalities)
	readGitRepo(t, e, "*.log\n")
	e.write(t, "d/a.log", "log")
	e.write(t, "d/b.txt", "b")
	d := filepath.Join(e.Root, "d")
	res := run(t, tools.NewListDirectory(e.Env), readCall(), `{"path":"`+d+`"}`)
	readWantText(t, res, "Contents of "+d+" (1 entry):\n---\nb.txt\n\n(1 git-ignored)")
	if res.Display != tools.Markdown("Listed 1 item(s) (1 git-ignored)") {
		t.Errorf("display = %#v", res.Display)
	}
}

// readGitRepo turns the root into a git repository with the given
// .gitignore, and makes the ignore rules see it at once rather than when
// the watcher reports it.
func readGitRepo(t *testing.T, e *testEnv, gitignore string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(e.Root, ".git", "info"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.write(t, ".gitignore", gitignore)
	e.Workspace.Ignore.Invalidate(filepath.Join(e.Root, ".git"))
	e.Workspace.Ignore.Invalidate(filepath.Join(e.Root, ".gitignore"))
}
