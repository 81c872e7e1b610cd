package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
)

// Header lines whose Unicode lower-casing has another byte length than the
// line itself: the resync search must index the line, not a folded copy.
// Each line ends in a Content-Length header for the well-formed body that
// follows it, which must go through.
func TestHeaderLinesThatChangeLengthWhenLowerCased(t *testing.T) {
	ok := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`
	for _, tc := range []struct{ name, line string }{
		// Ⱥ (2 bytes) lower-cases to ⱥ (3 bytes): the folded copy is longer.
		{"longer when folded", strings.Repeat("Ⱥ", 20) + "Content-Length: "},
		// An invalid byte becomes U+FFFD (3 bytes) in the folded copy.
		{"invalid UTF-8", "\xff\xfe\xfdContent-Length: "},
		// İ (2 bytes) lower-cases to i̇ (3 bytes).
		{"dotted capital I", "İİİİ content-length:"},
		// ẞ (3 bytes) lower-cases to ß (2 bytes): the folded copy is shorter,
		// so an index found in it lands inside the line, at the wrong place.
		{"shorter when folded", strings.Repeat("ẞ", 8) + "Content-Length: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			s := newStream(strings.NewReader(tc.line+strconv.Itoa(len(ok))+"\r\n\r\n"+ok+frame(ok)), &out, nil, false)
			var msgs []json.RawMessage
			var err error
			for range 4 {
				var m json.RawMessage
				if err = s.ReadObject(&m); err != nil {
					break
				}
				msgs = append(msgs, m)
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("stream ended with %v", err)
			}
			if len(msgs) != 2 || string(msgs[0]) != ok || string(msgs[1]) != ok {
				t.Fatalf("want both messages through; got %q, answers %q", msgs, out.String())
			}
		})
	}
}

func TestIndexASCIIFold(t *testing.T) {
	for _, tc := range []struct {
		s, sub string
		want   int
	}{
		{"Content-Length: 1", "content-length:", 0},
		{"xxCONTENT-LENGTH:", "content-length:", 2},
		{"ⱥContent-length:", "content-length:", 3},
		{"content-lengtḫ:", "content-length:", -1},
		{"conten", "content-length:", -1},
		{"", "a", -1},
		{"ab", "", 0},
	} {
		if got := indexASCIIFold(tc.s, tc.sub); got != tc.want {
			t.Errorf("indexASCIIFold(%q, %q) = %d, want %d", tc.s, tc.sub, got, tc.want)
		}
	}
}
