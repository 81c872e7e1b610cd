package workspace

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/wlynxg/chardet"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
)

// The legacy charsets DecodeFileText recognises, by the names TextFormat.Legacy
// and TextFormat.Charset report. Each one is a superset of the charsets
// the detector may name for it (GB2312 and GBK are read as GB18030, CP932
// as Shift_JIS, CP949 as EUC-KR, ISO-8859-1 as Windows-1252), so a file
// decoded with it re-encodes to the same bytes.
const (
	charsetGB18030     = "gb18030"
	charsetBig5        = "big5"
	charsetShiftJIS    = "shift_jis"
	charsetEUCJP       = "euc-jp"
	charsetEUCKR       = "euc-kr"
	charsetWindows1252 = "windows-1252"
)

// legacyEncodings maps our charset names to their codecs.
var legacyEncodings = map[string]encoding.Encoding{
	charsetGB18030:     simplifiedchinese.GB18030,
	charsetBig5:        traditionalchinese.Big5,
	charsetShiftJIS:    japanese.ShiftJIS,
	charsetEUCJP:       japanese.EUCJP,
	charsetEUCKR:       korean.EUCKR,
	charsetWindows1252: charmap.Windows1252,
}

// detectorNames maps the detector's charset names (lower case) to ours.
// Names missing here (KOI8-R, the other Windows and ISO-8859 pages, the
// UTF-16/32 guesses for BOM-less data, ...) are not trusted: on short or
// mixed input the detector proposes them for Latin and CJK text alike, and
// a wrong guess would garble a file silently.
var detectorNames = map[string]string{
	"gb2312":       charsetGB18030,
	"gbk":          charsetGB18030,
	"gb18030":      charsetGB18030,
	"cp936":        charsetGB18030,
	"big5":         charsetBig5,
	"shift_jis":    charsetShiftJIS,
	"cp932":        charsetShiftJIS,
	"windows-31j":  charsetShiftJIS,
	"euc-jp":       charsetEUCJP,
	"euc-kr":       charsetEUCKR,
	"cp949":        charsetEUCKR,
	"windows-1252": charsetWindows1252,
	"iso-8859-1":   charsetWindows1252,
}

// detectSample bounds how much of a file the detector looks at. The
// sample is made of the lines that hold non-ASCII bytes, since only they
// tell the charsets apart; a file whose first non-ASCII byte comes late
// is still judged by it.
const detectSample = 64 << 10

// DecodeFileText turns a file's bytes into text the way tools read files
// (tools.md §2.5): a BOM selects UTF-8, UTF-16 or UTF-32 (see DecodeText);
// without one, valid UTF-8 is taken as it is; otherwise a detector picks
// among GB18030 (GBK, GB2312), Big5, Shift_JIS, EUC-JP, EUC-KR and
// Windows-1252, and the choice is kept in the format's Legacy field so
// that EncodeText writes the same charset back. A candidate is accepted
// only when the whole file decodes and re-encodes to the same bytes.
// When no candidate passes, the text is the bytes as lossy UTF-8 (each
// invalid byte becomes U+FFFD) and the format says UTF-8.
func DecodeFileText(data []byte) (string, TextFormat) {
	if detectBOM(data) != "" || utf8.Valid(data) {
		return DecodeText(data)
	}
	var f TextFormat
	text, cs := decodeLegacy(data)
	if cs == "" {
		text = lossyUTF8(data)
	}
	f.Legacy = cs
	f.CRLF = strings.Contains(text, "\r\n")
	return text, f
}

// decodeLegacy returns data decoded with the first detector candidate that
// round-trips, and that candidate's name; "" when none does.
func decodeLegacy(data []byte) (string, string) {
	tried := map[string]bool{}
	for _, r := range chardet.DetectAll(nonASCIISample(data)) {
		cs, ok := detectorNames[strings.ToLower(r.Charset)]
		if !ok || tried[cs] || r.Confidence <= 0 {
			continue
		}
		tried[cs] = true
		if text, ok := roundTrip(data, legacyEncodings[cs]); ok {
			return text, cs
		}
	}
	return "", ""
}

// roundTrip decodes data with enc and reports whether encoding the result
// gives data back, which rules out replaced bytes and unmapped code points.
func roundTrip(data []byte, enc encoding.Encoding) (string, bool) {
	decoded, err := enc.NewDecoder().Bytes(data)
	if err != nil || !utf8.Valid(decoded) {
		return "", false
	}
	again, err := enc.NewEncoder().Bytes(decoded)
	if err != nil || !bytes.Equal(again, data) {
		return "", false
	}
	return string(decoded), true
}

// nonASCIISample collects the lines of data that contain a byte >= 0x80,
// up to detectSample bytes.
func nonASCIISample(data []byte) []byte {
	var out []byte
	for rest := data; len(rest) > 0 && len(out) < detectSample; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = nil
		}
		if hasHighByte(line) {
			out = append(out, line...)
		}
	}
	if len(out) > detectSample {
		out = out[:detectSample]
	}
	return out
}

func hasHighByte(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return true
		}
	}
	return false
}

// lossyUTF8 replaces every byte that is not part of a valid UTF-8
// sequence with U+FFFD.
func lossyUTF8(data []byte) string {
	var sb strings.Builder
	sb.Grow(len(data) + len(data)/8)
	for len(data) > 0 {
		r, n := utf8.DecodeRune(data)
		if r == utf8.RuneError && n <= 1 {
			sb.WriteRune(utf8.RuneError)
			data = data[1:]
			continue
		}
		sb.Write(data[:n])
		data = data[n:]
	}
	return sb.String()
}

// encodeLegacy encodes text in the legacy charset cs. A character the
// charset cannot represent is an error naming it; the caller decides
// whether to substitute it.
func encodeLegacy(text, cs string) ([]byte, error) {
	enc, ok := legacyEncodings[cs]
	if !ok {
		return nil, &unencodableError{Charset: cs}
	}
	out, err := enc.NewEncoder().Bytes([]byte(text))
	if err != nil {
		return nil, &unencodableError{Charset: cs, Rune: firstUnencodable(text, enc)}
	}
	return out, nil
}

// firstUnencodable finds the first character of text that enc cannot
// encode, for the error message.
func firstUnencodable(text string, enc encoding.Encoding) rune {
	e := enc.NewEncoder()
	for _, r := range text {
		if _, err := e.String(string(r)); err != nil {
			return r
		}
	}
	return utf8.RuneError
}

// unencodableError says a text cannot be written in its file's legacy
// charset, because it holds a character that charset lacks (or the
// charset is unknown).
type unencodableError struct {
	Charset string
	Rune    rune
}

func (e *unencodableError) Error() string {
	if _, ok := legacyEncodings[e.Charset]; !ok {
		return "unknown charset " + e.Charset
	}
	return fmt.Sprintf("the file's charset %s cannot represent %q (U+%04X)", e.Charset, e.Rune, e.Rune)
}

// encodeLegacyLossy encodes text in cs, writing each character the
// charset lacks as '?', so that EncodeText never fails.
func encodeLegacyLossy(text, cs string) []byte {
	if out, err := encodeLegacy(text, cs); err == nil {
		return out
	}
	enc, ok := legacyEncodings[cs]
	if !ok {
		return []byte(text)
	}
	e := enc.NewEncoder()
	var out []byte
	for _, r := range text {
		b, err := e.Bytes(utf8.AppendRune(nil, r))
		if err != nil {
			b = []byte{'?'}
		}
		out = append(out, b...)
	}
	return out
}
