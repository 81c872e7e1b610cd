package rpc_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"go.lsp.dev/protocol"

	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
)

// bigJSONText is the JSON of a text over 1 MiB, written by hand so that it
// holds every kind of escape a client may send: short escapes, \u escapes
// of ASCII, of other characters, of surrogate pairs and of lone
// surrogates, and raw bytes that are not UTF-8.
func bigJSONText(tag string) string {
	piece := `\tfunc f() { return \"a\\b\/c\" }\r\n` + `caf\u00e9 \u4e16\u754c \ud83d\ude00 \ud83d lone \ude00 end \u0041\u003c\n` +
		"raw ü 世界 \xff\xfe bytes\\n"
	return `"` + tag + strings.Repeat(piece, (1<<20)/len(piece)+1) + `"`
}

// decodeText is what the protocol package, which decodes small
// documents, makes of a JSON text: big ones must decode the same.
func decodeText(t *testing.T, jsonText string) string {
	t.Helper()
	var item protocol.TextDocumentItem
	if err := protocol.Unmarshal([]byte(`{"text":`+jsonText+`}`), &item); err != nil {
		t.Fatal(err)
	}
	return item.Text
}

// Documents over 1 MiB take their own decoding path (their text decoded
// apart from the rest, and off the read path for a whole text). Through
// it, a didOpen, a whole-text didChange, a batch of partial changes with a
// big text and a later keystroke give the same buffers as the protocol
// package's decoding would.
func TestBigDocumentsDecodeAsSmallOnes(t *testing.T) {
	e := start(t)
	root := t.TempDir()
	e.Initialize(rpctest.InitParams{Roots: []string{root}})
	path := filepath.Join(root, "big.go")
	uri, _ := json.Marshal("file://" + filepath.ToSlash(path))

	open := bigJSONText("open ")
	e.SendFrame([]byte(`{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"languageId":"go","text":` + open +
		`,"uri":` + string(uri) + `,"version":1}}}`))
	want := decodeText(t, open)
	assertText(t, e, path, want, 1)

	replace := bigJSONText("replaced ")
	e.SendFrame([]byte(`{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"contentChanges":[{"text":` + replace +
		`}],"textDocument":{"uri":` + string(uri) + `,"version":2}}}`))
	want = decodeText(t, replace)
	assertText(t, e, path, want, 2)

	// Two partial changes in one batch, the first with a big text: insert
	// it at the start, then replace 8 characters of what it inserted.
	insert := bigJSONText("inserted ")
	e.SendFrame([]byte(`{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":` + string(uri) + `,"version":3},"contentChanges":[` +
		`{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}},"text":` + insert + `},` +
		`{"range":{"start":{"line":0,"character":9},"end":{"line":0,"character":17}},"text":"INSERTED"}]}}`))
	ins := decodeText(t, insert)
	want = ins + want
	want = want[:9] + "INSERTED" + want[17:]
	assertText(t, e, path, want, 3)

	v := e.Change(path, rpctest.Edit{StartLine: 0, StartChar: 0, EndLine: 0, EndChar: 0, Text: "// "})
	assertText(t, e, path, "// "+want, v)
}

// A big didChange of a document that is not open is refused as a small
// one is, and the server goes on.
func TestBigChangeOfClosedDocumentIsLogged(t *testing.T) {
	e := start(t)
	root := t.TempDir()
	e.Initialize(rpctest.InitParams{Roots: []string{root}})
	uri, _ := json.Marshal("file://" + filepath.ToSlash(filepath.Join(root, "never.go")))
	e.SendFrame([]byte(`{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":` + string(uri) +
		`,"version":2},"contentChanges":[{"text":` + bigJSONText("") + `}]}}`))
	if _, err := e.Call("test/text", map[string]any{"path": "/x"}); err != nil {
		t.Fatalf("request after the refused change: %v", err)
	}
}
