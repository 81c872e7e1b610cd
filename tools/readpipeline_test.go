package tools_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
)

func TestWindowText(t *testing.T) {
	a20, b20 := strings.Repeat("a", 20), strings.Repeat("b", 20)
	cases := []struct {
		name                  string
		text                  string
		offset, limit, budget int
		want                  tools.TextWindow
	}{
		{"empty file has one line", "", 0, 0, 0,
			tools.TextWindow{Text: "", Start: 1, End: 1, Total: 1}},
		{"final newline adds an empty line", "a\nb\n", 0, 0, 0,
			tools.TextWindow{Text: "a\nb\n", Start: 1, End: 3, Total: 3}},
		{"right trim", "a \t\r\n\tb  \r\nc", 0, 0, 0,
			tools.TextWindow{Text: "a\n\tb\nc", Start: 1, End: 3, Total: 3}},
		{"limit", "1\n2\n3\n4", 0, 2, 0,
			tools.TextWindow{Text: "1\n2", Start: 1, End: 2, Total: 4, Truncated: true}},
		{"offset and limit", "1\n2\n3\n4", 1, 2, 0,
			tools.TextWindow{Text: "2\n3", Start: 2, End: 3, Total: 4, Truncated: true}},
		{"offset to the end is truncated", "1\n2\n3", 2, 0, 0,
			tools.TextWindow{Text: "3", Start: 3, End: 3, Total: 3, Truncated: true}},
		{"exact fit is not cut", a20 + "\n" + b20, 0, 0, 41,
			tools.TextWindow{Text: a20 + "\n" + b20, Start: 1, End: 2, Total: 2}},
		// 20 + 1 + 20 > 30: the second line keeps max(30-20-1, 10) = 10.
		{"cut", a20 + "\n" + b20 + "\nc", 0, 0, 30,
			tools.TextWindow{Text: a20 + "\n" + strings.Repeat("b", 10) + "... [truncated]", Start: 1, End: 2, Total: 3, Cut: true, Truncated: true}},
		// 20 + 1 + 20 > 35: keeps 35-20-1 = 14.
		{"cut uses what is left", a20 + "\n" + b20, 0, 0, 35,
			tools.TextWindow{Text: a20 + "\n" + strings.Repeat("b", 14) + "... [truncated]", Start: 1, End: 2, Total: 2, Cut: true, Truncated: true}},
		// At least 10 characters are kept, even when less is left.
		{"cut keeps ten", a20 + "\n" + b20, 0, 0, 22,
			tools.TextWindow{Text: a20 + "\n" + strings.Repeat("b", 10) + "... [truncated]", Start: 1, End: 2, Total: 2, Cut: true, Truncated: true}},
		{"first line over budget", strings.Repeat("x", 40), 0, 0, 25,
			tools.TextWindow{Text: strings.Repeat("x", 24) + "... [truncated]", Start: 1, End: 1, Total: 1, Cut: true, Truncated: true}},
		// Characters, not bytes: é is two bytes.
		{"characters not bytes", strings.Repeat("é", 40), 0, 0, 25,
			tools.TextWindow{Text: strings.Repeat("é", 24) + "... [truncated]", Start: 1, End: 1, Total: 1, Cut: true, Truncated: true}},
		{"trailing spaces do not count", "ab     ", 0, 0, 2,
			tools.TextWindow{Text: "ab", Start: 1, End: 1, Total: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, terr := tools.WindowText(c.text, c.offset, c.limit, c.budget)
			if terr != nil {
				t.Fatalf("error %v", terr)
			}
			if got != c.want {
				t.Errorf("WindowText =\n%+v\nwant\n%+v", got, c.want)
			}
		})
	}
	_, terr := tools.WindowText("1\n2\n3", 3, 0, 0)
	if terr == nil || terr.Type != tools.ErrorInvalidToolParams || terr.Message != "The file has 3 lines, so offset 3 is past its end." {
		t.Errorf("offset past the end: %+v", terr)
	}
}

// readContent runs the pipeline with read_file's default limits.
func readContent(t *testing.T, e *testEnv, path string) tools.FileContent {
	t.Helper()
	c, err := e.ReadContent(context.Background(), tools.ReadSpec{Path: path, Limit: e.LineLimit(), Budget: e.Threshold()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const notebookJSON = `{
 "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
 "nbformat": 4, "nbformat_minor": 5,
 "cells": [
  {"cell_type": "code", "id": "c1", "execution_count": 1, "metadata": {},
   "source": ["import sys\n", "print('hi')"],
   "outputs": [
    {"output_type": "stream", "name": "stdout", "text": ["hi\n"]},
    {"output_type": "display_data", "data": {"image/png": "iVBOR", "application/json": {}}, "metadata": {}},
    {"output_type": "execute_result", "execution_count": 1, "data": {"text/plain": "42"}, "metadata": {}}
   ]},
  {"cell_type": "code", "id": "c2", "execution_count": null, "metadata": {}, "source": "x = 1", "outputs": []},
  {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": "# Title"},
  {"cell_type": "raw", "metadata": {}, "source": "raw text"}
 ]
}`

func TestNotebookRendering(t *testing.T) {
	e := newTestEnv(t, nil)
	p := e.write(t, "nb.ipynb", notebookJSON)
	c := readContent(t, e, p)
	want := "Jupyter Notebook (python, 4 cells)\n\n" +
		"--- Code Cell c1 [1] ---\nimport sys\nprint('hi')\nOutput:\nhi\n[non-text output: application/json, image/png]\n42\n\n" +
		"--- Code Cell c2 [ ] ---\nx = 1\n\n" +
		"--- Markdown Cell m1 ---\n# Title\n\n" +
		"--- Raw Cell 4 ---\nraw text"
	if c.Err != nil || !c.Windowed || c.Window.Text != want {
		t.Fatalf("content = %+v\nwant text\n%s", c, want)
	}
	if c.Entry == nil || c.Entry.Editable || c.Entry.Kind != "notebook" || !c.Entry.Full {
		t.Errorf("ledger entry = %+v", c.Entry)
	}

	empty := e.write(t, "empty.ipynb", `{"cells": [], "metadata": {}}`)
	if c := readContent(t, e, empty); c.Window.Text != "Jupyter Notebook (unknown language, 0 cells)\n\n(empty notebook)" {
		t.Errorf("empty notebook = %q", c.Window.Text)
	}

	bad := e.write(t, "bad.ipynb", `{"cells": [`)
	c = readContent(t, e, bad)
	if c.Err == nil || c.Err.Type != tools.ErrorReadContentFailure || !strings.HasPrefix(c.Err.Message, "Could not read "+bad+": ") {
		t.Errorf("invalid notebook = %+v", c.Err)
	}
}

func TestNotebookOutputCap(t *testing.T) {
	e := newTestEnv(t, map[string]any{"tools": map[string]any{"truncateToolOutputThreshold": float64(0), "truncateToolOutputLines": float64(0)}})
	long := strings.Repeat("y", 12000)
	nb := `{"metadata": {"language_info": {"name": "julia"}}, "cells": [` +
		`{"cell_type": "code", "id": "a", "execution_count": 2, "source": "s", "outputs": [{"output_type": "stream", "text": "` + long + `"}]}]}`
	p := e.write(t, "big.ipynb", nb)
	c := readContent(t, e, p)
	want := "Jupyter Notebook (julia, 1 cell)\n\n--- Code Cell a [2] ---\ns\nOutput:\n" + strings.Repeat("y", 10000) + "... [truncated]"
	if c.Window.Text != want {
		t.Errorf("capped output has %d characters, want %d", len(c.Window.Text), len(want))
	}
}

func TestMediaModalities(t *testing.T) {
	e := newTestEnv(t, nil)
	if e.AcceptsModality(tools.FileImage) || e.AcceptsModality(tools.FilePDF) {
		t.Error("modalities must default to false")
	}
	// No pdftotext on PATH: the PDF is skipped like other media.
	t.Setenv("PATH", t.TempDir())
	p := e.write(t, "doc.pdf", "%PDF-1.4\n")
	c := readContent(t, e, p)
	if c.Message != `[Skipped PDF file "doc.pdf": the current model does not accept PDF input, so its content cannot be shown.]` ||
		c.Display != "Skipped PDF file: doc.pdf (the model does not accept PDF input)" {
		t.Errorf("pdf = %+v", c)
	}
	if c.Entry == nil || c.Entry.Editable || c.Entry.Kind != "PDF" {
		t.Errorf("ledger entry = %+v", c.Entry)
	}
	a := e.write(t, "s.mp3", "ID3")
	if c := readContent(t, e, a); c.Message != `[Skipped audio file "s.mp3": the current model does not accept audio input, so its content cannot be shown.]` {
		t.Errorf("audio = %+v", c)
	}
}

// fakePdftotext puts a pdftotext script running body on PATH.
func fakePdftotext(t *testing.T, body string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pdftotext"), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func TestPDFText(t *testing.T) {
	e := newTestEnv(t, map[string]any{"tools": map[string]any{"truncateToolOutputThreshold": float64(0)}})
	p := e.write(t, "doc.pdf", "%PDF-1.4\n")

	fakePdftotext(t, `echo "args: $*"`)
	c := readContent(t, e, p)
	if c.Err != nil || !c.Windowed || c.Window.Text != "args: -layout -l 20 -- "+p+" -\n" {
		t.Fatalf("pdf text = %+v", c)
	}
	if c.Entry == nil || c.Entry.Editable || c.Entry.Kind != "PDF" {
		t.Errorf("ledger entry = %+v", c.Entry)
	}

	fakePdftotext(t, `head -c 100005 /dev/zero | tr '\0' x`)
	c = readContent(t, e, p)
	if want := strings.Repeat("x", 100000) + "\n\n[PDF text cut at 100000 characters]"; c.Window.Text != want {
		t.Errorf("long pdf text has %d bytes, want %d", len(c.Window.Text), len(want))
	}

	fakePdftotext(t, `echo "Syntax Error: broken xref" >&2; exit 1`)
	c = readContent(t, e, p)
	if c.Err == nil || c.Err.Type != tools.ErrorReadContentFailure ||
		c.Err.Message != "Could not read "+p+": pdftotext failed: Syntax Error: broken xref" {
		t.Errorf("failing pdftotext = %+v", c.Err)
	}

	// With the PDF modality on, the bytes go to the model instead.
	on := newTestEnv(t, readModalities)
	q := on.write(t, "doc.pdf", "%PDF-1.4\n")
	if c := readContent(t, on, q); c.Media == nil || c.Media.MimeType != "application/pdf" || c.Display != "Read PDF file: doc.pdf" {
		t.Errorf("pdf with modality = %+v", c)
	}
}

func TestMediaTooLargeToSend(t *testing.T) {
	e := newTestEnv(t, readModalities)
	p := filepath.Join(e.Root, "big.png")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	// 8 MiB is under the read limit but over 10 MiB once base64-encoded.
	if err := f.Truncate(8 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	c := readContent(t, e, p)
	if c.Err == nil || c.Err.Type != tools.ErrorFileTooLarge || c.Err.Message != p+" is too large to send: over 10 MB once base64-encoded." {
		t.Errorf("result = %+v", c.Err)
	}
}

func TestSVG(t *testing.T) {
	e := newTestEnv(t, nil)
	small := e.write(t, "s.svg", "<svg>\n</svg>\n")
	if c := readContent(t, e, small); !c.Windowed || c.Window.Text != "<svg>\n</svg>\n" || c.Entry == nil || !c.Entry.Editable {
		t.Errorf("small svg = %+v", c)
	}
	big := e.write(t, "b.svg", "<svg>"+strings.Repeat(" ", 1<<20)+"</svg>")
	if c := readContent(t, e, big); c.Message != "b.svg is an SVG file over 1 MB; its content is not shown." {
		t.Errorf("big svg = %+v", c)
	}
}

func TestBufferTypesByName(t *testing.T) {
	e := newTestEnv(t, readModalities)
	// An open buffer with a binary extension is read as text.
	p := e.write(t, "x.bin", "\x00\x01\x02")
	e.Workspace.Overlay.Open(p, 1, "text in the editor")
	if c := readContent(t, e, p); !c.Windowed || c.Window.Text != "text in the editor" {
		t.Errorf("buffer x.bin = %+v", c)
	}
	// An open image is sent from the disk's bytes.
	img := e.write(t, "i.png", string(readPNG))
	e.Workspace.Overlay.Open(img, 1, "whatever the editor shows")
	if c := readContent(t, e, img); c.Media == nil || c.Media.MimeType != "image/png" {
		t.Errorf("buffer i.png = %+v", c)
	}
}
