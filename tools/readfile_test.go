package tools_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/toolstest"
)

var updateReadGolden = flag.Bool("update-read", false, "rewrite the golden declarations of read_file, read_many_files and list_directory")

// readDeclarationJSON is a tool's declaration as the golden files pin
// it: the static attributes and what the model receives (name,
// description, parameters). HTML characters stay unescaped, so the
// descriptions read as written.
func readDeclarationJSON(t *testing.T, tool tools.Tool) []byte {
	t.Helper()
	if _, err := tools.CompileArgsSchema(tool.Schema()); err != nil {
		t.Fatalf("%s schema does not compile: %v", tool.Name(), err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	err := enc.Encode(struct {
		Name        string          `json:"name"`
		DisplayName string          `json:"displayName"`
		Kind        tools.Kind      `json:"kind"`
		Aliases     []string        `json:"aliases"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}{tool.Name(), tool.DisplayName(), tool.Kind(), tool.Aliases(), tool.Description(), tool.Schema()})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReadToolDeclarationsGolden(t *testing.T) {
	e := newTestEnv(t, nil)
	for _, tool := range []tools.Tool{tools.NewReadFile(e.Env), tools.NewReadManyFiles(e.Env), tools.NewListDirectory(e.Env)} {
		toolstest.Golden(t, "declarations/"+tool.Name()+".json", readDeclarationJSON(t, tool), *updateReadGolden)
	}
}

func TestReadToolSpecs(t *testing.T) {
	e := newTestEnv(t, nil)
	rf, rm, ls := tools.NewReadFile(e.Env), tools.NewReadManyFiles(e.Env), tools.NewListDirectory(e.Env)
	for _, c := range []struct {
		tool       tools.Tool
		name, disp string
		kind       tools.Kind
	}{
		{rf, "read_file", "ReadFile", tools.KindRead},
		{rm, "read_many_files", "ReadManyFiles", tools.KindRead},
		{ls, "list_directory", "ListFiles", tools.KindSearch},
	} {
		if c.tool.Name() != c.name || c.tool.DisplayName() != c.disp || c.tool.Kind() != c.kind || c.tool.Source() != "builtin" {
			t.Errorf("%s: %s %s %s", c.name, c.tool.Name(), c.tool.DisplayName(), c.tool.Kind())
		}
		if strings.TrimSpace(c.tool.Description()) == "" {
			t.Errorf("%s has no description", c.name)
		}
	}
	if got := rf.ParameterAliases()["file_path"]; got != "absolute_path" {
		t.Errorf("read_file aliases = %v", rf.ParameterAliases())
	}
}

func TestReadFileValidation(t *testing.T) {
	e := newTestEnv(t, nil)
	rf := tools.NewReadFile(e.Env)
	p := e.write(t, "a.txt", "x")
	e.write(t, ".qwenignore", "a.txt\n")
	e.Workspace.Ignore.Invalidate(filepath.Join(e.Root, ".qwenignore"))
	cases := []struct{ args, msg string }{
		{`{}`, "params must have required property 'absolute_path'"},
		{`{"absolute_path":"  "}`, `Argument "absolute_path" must not be empty.`},
		// The path is checked before offset and limit...
		{`{"absolute_path":"rel.txt","offset":-1}`, "Not an absolute path: rel.txt. Give the full path, starting with /. The workspace root is " +
			e.Root + ", so the full path is probably " + e.Root + "/rel.txt."},
		// ...offset before limit, and both before .qwenignore.
		{`{"absolute_path":"` + p + `","offset":-1,"limit":0}`, `Argument "offset" must be 0 or more.`},
		{`{"absolute_path":"` + p + `","limit":0}`, `Argument "limit" must be 1 or more.`},
		{`{"absolute_path":"` + p + `","limit":-3}`, `Argument "limit" must be 1 or more.`},
		{`{"absolute_path":"` + p + `"}`, p + " is excluded by .qwenignore, so this tool cannot use it."},
		{`{"absolute_path":"` + p + `","offset":"x"}`, "params/offset must be integer"},
	}
	for _, c := range cases {
		_, terr := tools.PrepareArgs(rf, c.args)
		if terr == nil || terr.Message != c.msg {
			t.Errorf("%s: error %+v\nwant %q", c.args, terr, c.msg)
		}
	}
	// A shell-escaped path is unescaped and cleaned.
	q := e.write(t, "my file.txt", "ok")
	params, terr := tools.PrepareArgs(rf, `{"absolute_path":"`+e.Root+`/./my\\ file.txt"}`)
	if terr != nil {
		t.Fatal(terr)
	}
	if locs := rf.Locations(params); len(locs) != 1 || locs[0].Path != q || locs[0].Line != 1 {
		t.Errorf("locations = %+v", locs)
	}
}

func TestReadFileDescribe(t *testing.T) {
	e := newTestEnv(t, nil)
	rf := tools.NewReadFile(e.Env)
	p := filepath.Join(e.Root, "src", "a.go")
	for args, want := range map[string]string{
		`{"absolute_path":"` + p + `"}`:                       "src/a.go",
		`{"absolute_path":"` + p + `","offset":9,"limit":11}`: "src/a.go (lines 10-20)",
		`{"absolute_path":"` + p + `","offset":4}`:            "src/a.go (from line 5)",
		`{"absolute_path":"` + p + `","limit":30}`:            "src/a.go (first 30 lines)",
	} {
		params, terr := tools.PrepareArgs(rf, args)
		if terr != nil {
			t.Fatal(terr)
		}
		if got := rf.Describe(params); got != want {
			t.Errorf("Describe(%s) = %q, want %q", args, got, want)
		}
	}
	params, _ := tools.PrepareArgs(rf, `{"absolute_path":"`+p+`","offset":9}`)
	if locs := rf.Locations(params); len(locs) != 1 || locs[0].Path != p || locs[0].Line != 10 {
		t.Errorf("locations = %+v", locs)
	}
	long := filepath.Join(e.Root, strings.Repeat("d", 60), strings.Repeat("f", 60)+".txt")
	params, _ = tools.PrepareArgs(rf, `{"absolute_path":"`+long+`"}`)
	got := rf.Describe(params)
	if len(got) != 80 || !strings.Contains(got, "...") || !strings.HasPrefix(got, "ddd") || !strings.HasSuffix(got, "f.txt") {
		t.Errorf("long title = %q (%d)", got, len(got))
	}
}

// TestReadFileOddInputs covers the awkward files a model may ask for.
func TestReadFileOddInputs(t *testing.T) {
	e := newTestEnv(t, nil)
	rf := tools.NewReadFile(e.Env)
	read := func(p string) tools.Result { return run(t, rf, readCall(), `{"absolute_path":"`+p+`"}`) }

	t.Run("50 MB file", func(t *testing.T) {
		p := filepath.Join(e.Root, "huge.txt")
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(50_000_000); err != nil {
			t.Fatal(err)
		}
		f.Close()
		res := read(p)
		readWantError(t, res, tools.ErrorFileTooLarge, p+" is too large to read: 47.68 MB, over the 10 MB limit.")
		if res.Display != tools.Markdown(res.Error.Message) {
			t.Errorf("display = %#v", res.Display)
		}
	})
	t.Run("binary file", func(t *testing.T) {
		p := e.write(t, "prog.exe", "MZ\x90\x00\x03")
		readWantText(t, read(p), "prog.exe is a binary file; its content is not shown.")
	})
	t.Run("invalid UTF-8 in a legacy charset", func(t *testing.T) {
		p := e.write(t, "latin.txt", "caf\xe9 cr\xe8me br\xfbl\xe9e\n")
		readWantText(t, read(p), "café crème brûlée\n")
	})
	t.Run("undecidable bytes", func(t *testing.T) {
		p := e.write(t, "junk.txt", "ok \xFF\xFE\x80\x81 end\x90")
		readWantText(t, read(p), "ok \uFFFD\uFFFD\uFFFD\uFFFD end\uFFFD")
	})
	t.Run("20,000-character lines", func(t *testing.T) {
		line := strings.Repeat("z", 20000)
		p := e.write(t, "long.txt", line+"\n"+line+"\n")
		// The first line fits the 25,000-character budget; the second is
		// cut to 25,000 - 20,000 - 1 characters.
		res := read(p)
		readWantText(t, res, "Lines 1-2 of 3 (read other lines with offset and limit).\n\n---\n\n"+
			line+"\n"+strings.Repeat("z", 4999)+"... [truncated]")
		if res.Display != tools.Markdown("Read lines 1-2 of 3 from long.txt (truncated)") {
			t.Errorf("display = %#v", res.Display)
		}
		// Paging on reaches the second line whole.
		readWantText(t, run(t, rf, readCall(), `{"absolute_path":"`+p+`","offset":1,"limit":1}`),
			"Lines 2-2 of 3 (read other lines with offset and limit).\n\n---\n\n"+line)
	})
	t.Run("empty file", func(t *testing.T) {
		p := e.write(t, "empty.txt", "")
		res := read(p)
		readWantText(t, res, "")
		if res.Display != tools.Markdown("") {
			t.Errorf("display = %#v", res.Display)
		}
		readWantError(t, run(t, rf, readCall(), `{"absolute_path":"`+p+`","offset":1}`), tools.ErrorInvalidToolParams,
			"The file has 1 lines, so offset 1 is past its end.")
	})
	t.Run("FIFO", func(t *testing.T) {
		p := filepath.Join(e.Root, "pipe")
		if err := mkfifo(p); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		// Nothing writes to the FIFO: opening it would block forever.
		res := read(p)
		readWantError(t, res, tools.ErrorReadContentFailure, p+" is not a regular file (it is a FIFO, socket or device).")
		if res.Display != tools.Markdown("Not a regular file.") {
			t.Errorf("display = %#v", res.Display)
		}
	})
	t.Run("directory", func(t *testing.T) {
		d := filepath.Join(e.Root, "sub")
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		res := read(d)
		readWantError(t, res, tools.ErrorTargetIsDirectory, d+" is a directory, not a file.")
		if res.Display != tools.Markdown("Path is a directory.") {
			t.Errorf("display = %#v", res.Display)
		}
	})
	t.Run("unreadable file", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root reads files whatever their mode")
		}
		p := e.write(t, "locked.txt", "x")
		if err := os.Chmod(p, 0); err != nil {
			t.Fatal(err)
		}
		readWantError(t, read(p), tools.ErrorReadContentFailure, "Could not read "+p+": permission denied")
	})
}

func TestReadFilePathSafety(t *testing.T) {
	e := newTestEnv(t, nil)
	rf := tools.NewReadFile(e.Env)
	outside := filepath.Dir(e.Root)
	secret := filepath.Join(outside, "outside.txt")
	if err := os.WriteFile(secret, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	outsideMsg := func(p string) string {
		return "Path is outside the workspace: " + p + ". Tools may only access files inside the workspace roots: " + e.Root + "."
	}
	if err := os.Symlink(secret, filepath.Join(e.Root, "leak.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(e.Root, "up")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		arg, msg string
		typ      tools.ErrorType
	}{
		{"notes/a.txt", "Not an absolute path: notes/a.txt. Give the full path, starting with /. The workspace root is " +
			e.Root + ", so the full path is probably " + e.Root + "/notes/a.txt.", tools.ErrorInvalidToolParams},
		{"../outside.txt", "Not an absolute path: ../outside.txt. Give the full path, starting with /. The workspace root is " +
			e.Root + ", so the full path is probably " + secret + ".", tools.ErrorInvalidToolParams},
		{secret, outsideMsg(secret), tools.ErrorPathNotInWorkspace},
		{e.Root + "/../outside.txt", outsideMsg(secret), tools.ErrorPathNotInWorkspace},
		{e.Root + "/leak.txt", outsideMsg(e.Root + "/leak.txt"), tools.ErrorPathNotInWorkspace},
		{e.Root + "/up/outside.txt", outsideMsg(e.Root + "/up/outside.txt"), tools.ErrorPathNotInWorkspace},
	}
	for _, c := range cases {
		res := run(t, rf, readCall(), `{"absolute_path":"`+c.arg+`"}`)
		readWantError(t, res, c.typ, c.msg)
		if !strings.Contains(res.Error.Message, e.Root) {
			t.Errorf("%s: the message does not name the root", c.arg)
		}
	}
	// The project temp dir is readable (saved tool outputs live there).
	tmp := filepath.Join(e.ProjectTempDir(), "run_shell_command_0123456789ab.output")
	if err := os.MkdirAll(filepath.Dir(tmp), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tmp, []byte("saved output\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	readWantText(t, run(t, rf, readCall(), `{"absolute_path":"`+tmp+`"}`), "saved output\n")
}

// TestReadToolsSeeUnsavedText checks that read_file and read_many_files
// return the editor's unsaved text, not the disk's (tools.md §2.3).
func TestReadToolsSeeUnsavedText(t *testing.T) {
	e := newTestEnv(t, nil)
	p := e.write(t, "pkg/a.go", "package saved\n")
	e.Workspace.Overlay.Open(p, 4, "package draft\n")
	// A buffer for a file that is not on disk yet.
	n := filepath.Join(e.Root, "pkg", "new.go")
	e.Workspace.Overlay.Open(n, 1, "package fresh\n")

	call := readCall()
	readWantText(t, run(t, tools.NewReadFile(e.Env), call, `{"absolute_path":"`+p+`"}`), "package draft\n")
	readWantText(t, run(t, tools.NewReadFile(e.Env), call, `{"absolute_path":"`+n+`"}`), "package fresh\n")
	if entry, ok := call.Ledger.Lookup(p); !ok || entry.Version != 4 || !entry.Full || !entry.Editable {
		t.Errorf("ledger entry = %+v, %v", entry, ok)
	}

	res := run(t, tools.NewReadManyFiles(e.Env), readCall(), `{"paths":["pkg/*.go"]}`)
	readWantText(t, res, "--- "+p+" ---\n\npackage draft\n\n\n--- "+n+" ---\n\npackage fresh\n\n\n\n--- end of files ---")
}

func TestReadFileRecordsLedger(t *testing.T) {
	e := newTestEnv(t, nil)
	rf := tools.NewReadFile(e.Env)
	call := readCall()
	p := e.write(t, "a.txt", "1\n2\n3\n")
	run(t, rf, call, `{"absolute_path":"`+p+`","limit":1}`)
	entry, ok := call.Ledger.Lookup(p)
	if !ok || entry.Full || entry.ByReadFile || !entry.Editable || entry.Hash != tools.HashText("1\n2\n3\n") {
		t.Errorf("partial read entry = %+v", entry)
	}
	run(t, rf, call, `{"absolute_path":"`+p+`"}`)
	if entry, _ := call.Ledger.Lookup(p); !entry.Full || !entry.ByReadFile {
		t.Errorf("full read entry = %+v", entry)
	}
	b := e.write(t, "blob.dat", "\x00\x01")
	run(t, rf, call, `{"absolute_path":"`+b+`"}`)
	if entry, _ := call.Ledger.Lookup(b); entry.Editable || entry.Kind != "binary" {
		t.Errorf("binary entry = %+v", entry)
	}
	// A call without a ledger still reads.
	readWantText(t, run(t, rf, &tools.Call{}, `{"absolute_path":"`+p+`"}`), "1\n2\n3\n")
}

func BenchmarkReadFile1MB(b *testing.B) {
	e := newTestEnv(b, nil)
	line := strings.Repeat("abcdefghij", 7) + "0123456789\n" // 81 bytes
	p := e.write(b, "big.txt", strings.Repeat(line, (1<<20)/len(line)+1))
	rf := tools.NewReadFile(e.Env)
	args := `{"absolute_path":"` + p + `"}`
	call := readCall()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res := run(b, rf, call, args)
		if res.Error != nil || !strings.HasPrefix(res.Text(), "Lines 1-") {
			b.Fatalf("result = %+v", res.Error)
		}
	}
}
