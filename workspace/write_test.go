package workspace

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// wtUmask finds the process umask without changing it: it is the
// permission bits a directory created with 0777 does not get.
func wtUmask(t *testing.T) os.FileMode {
	t.Helper()
	probe := filepath.Join(t.TempDir(), "probe")
	if err := os.Mkdir(probe, 0o777); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(probe)
	if err != nil {
		t.Fatal(err)
	}
	return 0o777 &^ fi.Mode().Perm()
}

func wtMode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func wtRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wtNames lists a directory's entries, to catch leftover temp files.
func wtNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func wtAssertNames(t *testing.T, dir string, want ...string) {
	t.Helper()
	got := wtNames(t, dir)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("entries of %s = %q, want %q (temp file left behind?)", dir, got, want)
	}
}

func TestWriteFileAtomicNewFileAndParents(t *testing.T) {
	needUnixModes(t)
	umask := wtUmask(t)
	dir := rtTempDir(t)
	p := filepath.Join(dir, "a", "b", "new.txt")
	if err := WriteFileAtomic(p, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := string(wtRead(t, p)); got != "hello\n" {
		t.Fatalf("content = %q", got)
	}
	if got, want := wtMode(t, p), os.FileMode(0o644)&^umask; got != want {
		t.Errorf("new file mode = %v, want %v", got, want)
	}
	for _, d := range []string{filepath.Join(dir, "a"), filepath.Join(dir, "a", "b")} {
		if got, want := wtMode(t, d), os.FileMode(0o755)&^umask; got != want {
			t.Errorf("parent %s mode = %v, want %v", d, got, want)
		}
	}
	wtAssertNames(t, filepath.Join(dir, "a", "b"), "new.txt")

	// perm is honoured for a new file.
	q := filepath.Join(dir, "private.txt")
	if err := WriteFileAtomic(q, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := wtMode(t, q); got != 0o600&^umask {
		t.Errorf("new private file mode = %v", got)
	}
}

func TestWriteFileAtomicKeepsMode(t *testing.T) {
	modes := []os.FileMode{0o640, 0o755, 0o600, 0o444}
	if runtime.GOOS == "windows" {
		modes = []os.FileMode{0o444} // the read-only flag is all there is
	}
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			dir := rtTempDir(t)
			p := filepath.Join(dir, "f")
			rtWriteFile(t, p, "old")
			// Chmod is not subject to the umask, so the mode is exact.
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
			if err := WriteFileAtomic(p, []byte("new content"), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := wtMode(t, p); got != mode {
				t.Errorf("mode after write = %v, want %v", got, mode)
			}
			if got := string(wtRead(t, p)); got != "new content" {
				t.Errorf("content = %q", got)
			}
			wtAssertNames(t, dir, "f")
		})
	}
}

func TestWriteFileAtomicThroughSymlink(t *testing.T) {
	needSymlinks(t)
	dir := rtTempDir(t)
	target := filepath.Join(dir, "real", "target.txt")
	rtWriteFile(t, target, "old")
	if err := os.Chmod(target, 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.txt")
	rtSymlink(t, filepath.Join("real", "target.txt"), link)
	// A second link to the first: the chain is followed to the end.
	link2 := filepath.Join(dir, "link2.txt")
	rtSymlink(t, "link.txt", link2)

	for i, p := range []string{link, link2} {
		content := []byte(strings.Repeat("new", i+1))
		if err := WriteFileAtomic(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := wtRead(t, target); !bytes.Equal(got, content) {
			t.Fatalf("target content after writing %s = %q", p, got)
		}
		for _, l := range []string{link, link2} {
			fi, err := os.Lstat(l)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("%s is no longer a symlink", l)
			}
		}
		if got := wtMode(t, target); got != 0o640 {
			t.Errorf("target mode = %v, want 0640", got)
		}
	}
	wtAssertNames(t, dir, "link.txt", "link2.txt", "real")
	wtAssertNames(t, filepath.Join(dir, "real"), "target.txt")
}

func TestWriteFileAtomicRelativeLinkInLinkedDir(t *testing.T) {
	needSymlinks(t)
	// dir/alias -> dir/deep/real; dir/deep/real/l -> ../t.txt. The link's
	// relative target counts from deep/real, so the file is dir/deep/t.txt,
	// not dir/t.txt.
	dir := rtTempDir(t)
	rtMkdirAll(t, filepath.Join(dir, "deep", "real"))
	rtWriteFile(t, filepath.Join(dir, "deep", "t.txt"), "old")
	rtSymlink(t, filepath.Join(dir, "deep", "real"), filepath.Join(dir, "alias"))
	rtSymlink(t, filepath.Join("..", "t.txt"), filepath.Join(dir, "deep", "real", "l"))
	if err := WriteFileAtomic(filepath.Join(dir, "alias", "l"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := string(wtRead(t, filepath.Join(dir, "deep", "t.txt"))); got != "new" {
		t.Fatalf("target content = %q", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "t.txt")); !os.IsNotExist(err) {
		t.Fatalf("wrote to the wrong place: %v", err)
	}
}

func TestWriteFileAtomicDanglingSymlink(t *testing.T) {
	needSymlinks(t)
	dir := rtTempDir(t)
	link := filepath.Join(dir, "link")
	rtSymlink(t, filepath.Join("made", "later.txt"), link)
	if err := WriteFileAtomic(link, []byte("created"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := string(wtRead(t, filepath.Join(dir, "made", "later.txt"))); got != "created" {
		t.Fatalf("content = %q", got)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("link replaced: %v %v", fi, err)
	}
}

func TestWriteFileAtomicFailureLeavesNoTemp(t *testing.T) {
	dir := rtTempDir(t)
	// Target is a directory (empty, and with content).
	rtMkdirAll(t, filepath.Join(dir, "empty"))
	rtWriteFile(t, filepath.Join(dir, "full", "keep.txt"), "keep")
	for _, name := range []string{"empty", "full"} {
		if err := WriteFileAtomic(filepath.Join(dir, name), []byte("x"), 0o644); err == nil {
			t.Fatalf("writing over directory %s succeeded", name)
		} else if !strings.Contains(err.Error(), filepath.Join(dir, name)) {
			t.Errorf("error does not name the path: %v", err)
		}
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !fi.IsDir() {
			t.Fatalf("%s is no longer a directory: %v", name, err)
		}
	}
	wtAssertNames(t, dir, "empty", "full")
	wtAssertNames(t, filepath.Join(dir, "full"), "keep.txt")
	wtAssertNames(t, filepath.Join(dir, "empty"))

	// A parent that is a file cannot be created.
	rtWriteFile(t, filepath.Join(dir, "file"), "f")
	if err := WriteFileAtomic(filepath.Join(dir, "file", "child.txt"), []byte("x"), 0o644); err == nil {
		t.Fatal("writing below a regular file succeeded")
	}
	wtAssertNames(t, dir, "empty", "file", "full")
}

func TestWriteFileAtomicReadOnlyDirFails(t *testing.T) {
	needUnixModes(t)
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	dir := rtTempDir(t)
	ro := filepath.Join(dir, "ro")
	rtWriteFile(t, filepath.Join(ro, "f.txt"), "old")
	if err := os.Chmod(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(ro, 0o755) })
	if err := WriteFileAtomic(filepath.Join(ro, "f.txt"), []byte("new"), 0o644); err == nil {
		t.Fatal("write in a read-only directory succeeded")
	}
	if got := string(wtRead(t, filepath.Join(ro, "f.txt"))); got != "old" {
		t.Fatalf("content changed to %q", got)
	}
	wtAssertNames(t, ro, "f.txt")
}

func TestWriteFileAtomicReaderSeesWholeFiles(t *testing.T) {
	if runtime.GOOS == "windows" {
		// Go opens files there without sharing deletion, so readers
		// that reopen the file without a pause keep the replacing
		// rename out for as long as they run.
		t.Skip("Windows refuses to replace a file while a reader holds it open")
	}
	dir := rtTempDir(t)
	p := filepath.Join(dir, "big.txt")
	// Different sizes and fill bytes, so a torn read (a prefix, a mix or
	// an empty file) matches none of them.
	versions := [][]byte{
		bytes.Repeat([]byte("a"), 3<<20),
		bytes.Repeat([]byte("bc"), 1<<20),
		bytes.Repeat([]byte("d"), 5<<20),
	}
	if err := WriteFileAtomic(p, versions[0], 0o644); err != nil {
		t.Fatal(err)
	}

	const writes = 30
	done := make(chan struct{})
	var wg sync.WaitGroup
	var reads int
	var bad []string
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			b, err := os.ReadFile(p)
			reads++
			if err != nil {
				bad = append(bad, "read error: "+err.Error())
				continue
			}
			ok := false
			for _, v := range versions {
				if bytes.Equal(b, v) {
					ok = true
					break
				}
			}
			if !ok {
				bad = append(bad, fmt.Sprintf("torn read: %d bytes", len(b)))
			}
		}
	}()
	var werr error
	for i := 1; i <= writes && werr == nil; i++ {
		werr = WriteFileAtomic(p, versions[i%len(versions)], 0o644)
	}
	close(done)
	wg.Wait()
	if werr != nil {
		t.Fatal(werr)
	}
	if len(bad) > 0 {
		t.Fatalf("%d of %d reads saw a partial file, first: %s", len(bad), reads, bad[0])
	}
	if reads == 0 {
		t.Fatal("the reader never read")
	}
	wtAssertNames(t, dir, "big.txt")
}

func TestDecodeText(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		text string
		bom  string
		crlf bool
		cs   string
	}{
		{"empty", nil, "", "", false, "utf-8"},
		{"plain lf", []byte("a\nb\n"), "a\nb\n", "", false, "utf-8"},
		{"plain crlf", []byte("a\r\nb\r\n"), "a\r\nb\r\n", "", true, "utf-8"},
		{"mixed is crlf", []byte("a\nb\r\nc"), "a\nb\r\nc", "", true, "utf-8"},
		{"lone cr is not crlf", []byte("a\rb"), "a\rb", "", false, "utf-8"},
		{"utf-8 bom", []byte("\xEF\xBB\xBFhé\n"), "hé\n", BOMUTF8, false, "utf-8"},
		{"invalid utf-8 kept", []byte("caf\xE9"), "caf\xE9", "", false, "utf-8"},
		{"utf-16le", []byte("\xFF\xFEh\x00\xE9\x00\r\x00\n\x00"), "hé\r\n", bomUTF16LE, true, "utf-16le"},
		{"utf-16be", []byte("\xFE\xFF\x00h\x00\xE9"), "hé", bomUTF16BE, false, "utf-16be"},
		{"utf-16le surrogate pair", []byte("\xFF\xFE\x3D\xD8\x00\xDE"), "😀", bomUTF16LE, false, "utf-16le"},
		{"utf-16le odd length", []byte("\xFF\xFEh\x00i"), "h\uFFFD", bomUTF16LE, false, "utf-16le"},
		{"utf-32le", []byte("\xFF\xFE\x00\x00h\x00\x00\x00\x00\xF6\x01\x00"), "h😀", bomUTF32LE, false, "utf-32le"},
		{"utf-32be", []byte("\x00\x00\xFE\xFF\x00\x00\x00h"), "h", bomUTF32BE, false, "utf-32be"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text, f := DecodeText(c.in)
			if text != c.text {
				t.Errorf("text = %q, want %q", text, c.text)
			}
			if string(f.BOM) != c.bom {
				t.Errorf("BOM = % X, want % X", f.BOM, []byte(c.bom))
			}
			if f.CRLF != c.crlf {
				t.Errorf("CRLF = %v, want %v", f.CRLF, c.crlf)
			}
			if f.Charset() != c.cs {
				t.Errorf("Charset = %q, want %q", f.Charset(), c.cs)
			}
			if d := DetectFormat(c.in); string(d.BOM) != string(f.BOM) || d.CRLF != f.CRLF {
				t.Errorf("DetectFormat = %+v, DecodeText format = %+v", d, f)
			}
			// What was decoded encodes back to the same bytes, except
			// where decoding replaced a broken unit and where mixed
			// endings become pure CRLF.
			if c.name != "utf-16le odd length" && c.name != "mixed is crlf" {
				if got := EncodeText(text, f); !bytes.Equal(got, c.in) && len(c.in) > 0 {
					t.Errorf("EncodeText(DecodeText) = % X, want % X", got, c.in)
				}
			}
		})
	}
}

func TestWriteTextKeepsFormat(t *testing.T) {
	cases := []struct {
		name string
		disk []byte // the file as it was
		edit func(string) string
		want []byte // the file after writing the edited text back
	}{
		{
			"crlf kept when the edit uses lf",
			[]byte("one\r\ntwo\r\n"),
			func(s string) string { return strings.Replace(s, "two\r\n", "two\nthree\n", 1) },
			[]byte("one\r\ntwo\r\nthree\r\n"),
		},
		{
			"mixed becomes pure crlf",
			[]byte("a\r\nb\nc\r\n"),
			func(s string) string { return s + "d\n" },
			[]byte("a\r\nb\r\nc\r\nd\r\n"),
		},
		{
			"lf stays lf",
			[]byte("a\nb\n"),
			func(s string) string { return s + "c\n" },
			[]byte("a\nb\nc\n"),
		},
		{
			"utf-8 bom kept",
			[]byte("\xEF\xBB\xBFx = 1\n"),
			func(s string) string { return strings.Replace(s, "1", "2", 1) },
			[]byte("\xEF\xBB\xBFx = 2\n"),
		},
		{
			"utf-8 bom and crlf kept",
			[]byte("\xEF\xBB\xBFa\r\n"),
			func(s string) string { return s + "b\n" },
			[]byte("\xEF\xBB\xBFa\r\nb\r\n"),
		},
		{
			"utf-16le bom round trip",
			append([]byte("\xFF\xFE"), utf16le("héllo\r\n")...),
			func(s string) string { return s + "wörld 😀\n" },
			append([]byte("\xFF\xFE"), utf16le("héllo\r\nwörld 😀\r\n")...),
		},
		{
			"utf-16be bom round trip",
			[]byte("\xFE\xFF\x00a"),
			func(s string) string { return s + "b" },
			[]byte("\xFE\xFF\x00a\x00b"),
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := rtTempDir(t)
			p := filepath.Join(dir, "f.txt")
			if err := os.WriteFile(p, c.disk, 0o644); err != nil {
				t.Fatal(err)
			}
			text, f := DecodeText(wtRead(t, p))
			if err := WriteText(p, c.edit(text), f); err != nil {
				t.Fatal(err)
			}
			if got := wtRead(t, p); !bytes.Equal(got, c.want) {
				t.Fatalf("file = % X\nwant   % X", got, c.want)
			}
			// Reading it again gives the edited text in the same format.
			text2, f2 := DecodeText(wtRead(t, p))
			if string(f2.BOM) != string(f.BOM) {
				t.Errorf("BOM changed: % X -> % X", f.BOM, f2.BOM)
			}
			if f.CRLF && !f2.CRLF {
				t.Error("CRLF lost")
			}
			if f.CRLF && strings.Count(text2, "\n") != strings.Count(text2, "\r\n") {
				t.Errorf("not pure CRLF: %q", text2)
			}
			wtAssertNames(t, dir, "f.txt")
		})
	}
}

func TestWriteTextNewFileDefaults(t *testing.T) {
	dir := rtTempDir(t)
	p := filepath.Join(dir, "sub", "new.txt")
	if err := WriteText(p, "a\nb\r\n", TextFormat{}); err != nil {
		t.Fatal(err)
	}
	// The zero format writes UTF-8 without a BOM and changes no line ending.
	if got := string(wtRead(t, p)); got != "a\nb\r\n" {
		t.Fatalf("content = %q", got)
	}
	q := filepath.Join(dir, "bom.txt")
	if err := WriteText(q, "x\n", TextFormat{BOM: []byte(BOMUTF8)}); err != nil {
		t.Fatal(err)
	}
	if got := wtRead(t, q); !bytes.Equal(got, []byte{0xEF, 0xBB, 0xBF, 'x', '\n'}) {
		t.Fatalf("content = % X", got)
	}
}

func utf16le(s string) []byte {
	var out []byte
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			hi, lo := 0xD800+(r>>10), 0xDC00+(r&0x3FF)
			out = append(out, byte(hi), byte(hi>>8), byte(lo), byte(lo>>8))
			continue
		}
		out = append(out, byte(r), byte(r>>8))
	}
	return out
}

func TestToCRLF(t *testing.T) {
	cases := map[string]string{
		"":             "",
		"\n":           "\r\n",
		"a\nb":         "a\r\nb",
		"a\r\nb\n":     "a\r\nb\r\n",
		"a\rb\n":       "a\rb\r\n",
		"\r\n\n\r\n\n": "\r\n\r\n\r\n\r\n",
	}
	for in, want := range cases {
		if got := toCRLF(in); got != want {
			t.Errorf("toCRLF(%q) = %q, want %q", in, got, want)
		}
	}
}
