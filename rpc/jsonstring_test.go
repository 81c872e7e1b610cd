package rpc

import (
	"strings"
	"testing"

	"go.lsp.dev/protocol"
)

// FuzzUnquoteString checks the document decoder of big messages against
// go.lsp.dev/protocol, which decodes the small ones: the same text for
// every valid JSON string.
func FuzzUnquoteString(f *testing.F) {
	for _, s := range []string{`""`, `"abc"`, `"a\nb\tc\"d\\e\/f\bg\fh\ri"`, `"\u00e9\u4e16"`, `"\ud83d\ude00"`, `"\ud83d"`,
		`"\ude00\ud83d"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\ud83d\ud83d\ude00"`, "\"\xff\xc3(\xe2\x82\"", "\"\xed\xa0\x80\"",
		`"ünïcödé \u00fc"`, "\"\xf0\x9f\x98\"", "\"" + strings.Repeat(`a\"`, 100) + "\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) < 2 || raw[0] != '"' {
			return
		}
		if end, ok := scanString(raw, 0); !ok || end != len(raw) {
			return
		}
		var want protocol.TextDocumentItem
		doc := append(append([]byte(`{"text":`), raw...), '}')
		if err := protocol.Unmarshal(doc, &want); err != nil {
			t.Fatalf("protocol.Unmarshal(%q): %v", doc, err)
		}
		if got := unquoteString(raw); got != want.Text {
			t.Fatalf("unquoteString(%q) = %q, protocol decodes %q", raw, got, want.Text)
		}
	})
}
