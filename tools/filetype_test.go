package tools_test

import (
	"bytes"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
)

func TestFileTypeByName(t *testing.T) {
	cases := []struct {
		name  string
		want  tools.FileType
		known bool
	}{
		// Step 1 comes first: .ts is TypeScript, not a video stream.
		{"main.ts", tools.FileText, true},
		{"a.MTS", tools.FileText, true},
		{"x.cts", tools.FileText, true},
		{"App.tsx", tools.FileText, true},
		{"logo.svg", tools.FileSVG, true},
		{"nb.ipynb", tools.FileNotebook, true},
		{"i.PNG", tools.FileImage, true},
		{"photo.jpeg", tools.FileImage, true},
		{"p.heic", tools.FileImage, true},
		{"s.opus", tools.FileAudio, true},
		{"m.mkv", tools.FileVideo, true},
		{"doc.pdf", tools.FilePDF, true},
		{"lib.so", tools.FileBinary, true},
		{"a.tar", tools.FileBinary, true},
		{"report.docx", tools.FileBinary, true},
		{"main.go", tools.FileText, true},
		{"notes.md", tools.FileText, true},
		{"Dockerfile", tools.FileText, true},
		{"Makefile", tools.FileText, true},
		{"go.mod", tools.FileText, true},
		{"LICENSE", tools.FileText, true},
		{"README", tools.FileText, true},
		{".gitignore", tools.FileText, true},
		{".env", tools.FileText, true},
		{"blob", "", false},
		{"data.xyz", "", false},
	}
	for _, c := range cases {
		got, known := tools.FileTypeByName("/w/" + c.name)
		if got != c.want || known != c.known {
			t.Errorf("FileTypeByName(%q) = %q, %v; want %q, %v", c.name, got, known, c.want, c.known)
		}
	}
}

func TestSniffFileType(t *testing.T) {
	controls := bytes.Repeat([]byte{0x01}, 31)
	cases := []struct {
		name string
		head []byte
		want tools.FileType
	}{
		{"empty", nil, tools.FileText},
		{"plain", []byte("hello\n"), tools.FileText},
		{"nul", []byte("ab\x00cd"), tools.FileBinary},
		{"utf-16 with BOM", []byte("\xFF\xFEh\x00i\x00"), tools.FileText},
		{"utf-8 BOM", []byte("\xEF\xBB\xBFhi"), tools.FileText},
		// 31 of 100 bytes are control characters: over 30 %.
		{"31% controls", append(append([]byte{}, controls...), bytes.Repeat([]byte("a"), 69)...), tools.FileBinary},
		// 30 of 100 is not over 30 %.
		{"30% controls", append(bytes.Repeat([]byte{0x02}, 30), bytes.Repeat([]byte("a"), 70)...), tools.FileText},
		// Tab, newline, vertical tab, form feed and CR (0x09-0x0D) do not count.
		{"whitespace", bytes.Repeat([]byte("\t\n\r\f\v"), 50), tools.FileText},
		// A NUL past the first 4,096 bytes is not seen.
		{"late nul", append(bytes.Repeat([]byte("a"), 4096), 0), tools.FileText},
	}
	for _, c := range cases {
		if got := tools.SniffFileType(c.head); got != c.want {
			t.Errorf("%s: SniffFileType = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestDetectAndBufferFileType(t *testing.T) {
	// The name wins over the bytes: a .go file with a NUL is text, a
	// .png full of text is an image.
	if got := tools.DetectFileType("a.go", []byte("x\x00y")); got != tools.FileText {
		t.Errorf("a.go with NUL = %q", got)
	}
	if got := tools.DetectFileType("i.png", []byte("not really")); got != tools.FileImage {
		t.Errorf("i.png = %q", got)
	}
	if got := tools.DetectFileType("blob", []byte("x\x00y")); got != tools.FileBinary {
		t.Errorf("blob = %q", got)
	}
	// A buffer is typed by name only; binary and unknown names are text.
	for name, want := range map[string]tools.FileType{
		"a.bin": tools.FileText, "blob": tools.FileText, "i.png": tools.FileImage,
		"n.ipynb": tools.FileNotebook, "s.svg": tools.FileSVG, "d.pdf": tools.FilePDF,
	} {
		if got := tools.BufferFileType(name); got != want {
			t.Errorf("BufferFileType(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestMIMEType(t *testing.T) {
	for name, want := range map[string]string{
		"a.png": "image/png", "a.JPG": "image/jpeg", "a.webp": "image/webp", "a.mp3": "audio/mpeg",
		"a.wav": "audio/wav", "a.mp4": "video/mp4", "a.mov": "video/quicktime", "a.pdf": "application/pdf",
		"a.txt": "", "a.svg": "",
	} {
		if got := tools.MIMEType(name); got != want {
			t.Errorf("MIMEType(%q) = %q, want %q", name, got, want)
		}
	}
	if !tools.IsBinaryExtension("x.WASM") || tools.IsBinaryExtension("x.go") {
		t.Error("IsBinaryExtension")
	}
}
