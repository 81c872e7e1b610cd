package workspace

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
)

// encodeTextStrict is EncodeText that fails, instead of substituting, when
// the text holds a character the file's legacy charset cannot represent:
// it shows what EncodeText replaces.
func encodeTextStrict(text string, f TextFormat) ([]byte, error) {
	if f.Legacy == "" {
		return EncodeText(text, f), nil
	}
	if f.CRLF {
		text = toCRLF(text)
	}
	return encodeLegacy(text, f.Legacy)
}

func encodeWith(t *testing.T, enc encoding.Encoding, s string) []byte {
	t.Helper()
	b, err := enc.NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatalf("encode sample: %v", err)
	}
	return b
}

func TestDecodeFileTextLegacyCharsets(t *testing.T) {
	cases := []struct {
		name string
		enc  encoding.Encoding
		text string
		cs   string
	}{
		{"gbk", simplifiedchinese.GBK,
			"你好，世界！这是一个测试文件，包含一些中文字符。\n我们希望检测器能识别它，并且写回时保持原样。\n", charsetGB18030},
		{"big5", traditionalchinese.Big5,
			"你好，世界！這是一個測試檔案，包含一些繁體中文字元。\n我們希望偵測器能識別它。\n", charsetBig5},
		{"shift_jis", japanese.ShiftJIS,
			"こんにちは、世界！これはテストファイルです。\n日本語の文字が含まれています。\n", charsetShiftJIS},
		{"euc-jp", japanese.EUCJP,
			"こんにちは、世界！これはテストファイルです。\n日本語の文字が含まれています。\n", charsetEUCJP},
		{"euc-kr", korean.EUCKR,
			"안녕하세요, 세계! 이것은 테스트 파일입니다.\n한국어 문자가 포함되어 있습니다.\n", charsetEUCKR},
		{"windows-1252", charmap.Windows1252,
			"Café crème brûlée — “quotes” naïve façade.\nÜber große Straße.\n", charsetWindows1252},
		{"latin-1 short", charmap.Windows1252, "café", charsetWindows1252},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw := encodeWith(t, c.enc, c.text)
			if utf8.Valid(raw) {
				t.Fatalf("the sample is valid UTF-8, so it tests nothing")
			}
			text, f := DecodeFileText(raw)
			if text != c.text {
				t.Errorf("text = %q, want %q", text, c.text)
			}
			if f.Charset() != c.cs || f.Legacy != c.cs {
				t.Errorf("Charset = %q, Legacy = %q, want %q", f.Charset(), f.Legacy, c.cs)
			}
			if len(f.BOM) != 0 || f.CRLF {
				t.Errorf("format = %+v, want no BOM and LF", f)
			}
			if got := EncodeText(text, f); !bytes.Equal(got, raw) {
				t.Errorf("EncodeText(DecodeFileText) = % X, want % X", got, raw)
			}
			strict, err := encodeTextStrict(text, f)
			if err != nil || !bytes.Equal(strict, raw) {
				t.Errorf("encodeTextStrict = % X, %v", strict, err)
			}
		})
	}
}

func TestDecodeFileTextKeepsUnicode(t *testing.T) {
	for _, in := range []string{"", "plain\n", "héllo 世界\r\n", BOMUTF8 + "x", bomUTF16LE + "h\x00"} {
		text, f := DecodeFileText([]byte(in))
		wantText, wantF := DecodeText([]byte(in))
		if text != wantText || string(f.BOM) != string(wantF.BOM) || f.CRLF != wantF.CRLF || f.Legacy != "" {
			t.Errorf("DecodeFileText(%q) = %q, %+v; DecodeText gives %q, %+v", in, text, f, wantText, wantF)
		}
	}
}

func TestDecodeFileTextLegacyCRLF(t *testing.T) {
	raw := encodeWith(t, japanese.ShiftJIS, "一行目です。日本語のテキスト。\r\n二行目です。日本語のテキスト。\r\n")
	text, f := DecodeFileText(raw)
	if f.Legacy != charsetShiftJIS || !f.CRLF {
		t.Fatalf("format = %+v", f)
	}
	// An edit made with "\n" comes back as CRLF in the file's charset.
	edited := strings.ReplaceAll(text, "\r\n", "\n") + "三行目\n"
	want := append(append([]byte{}, raw...), encodeWith(t, japanese.ShiftJIS, "三行目\r\n")...)
	if got := EncodeText(edited, f); !bytes.Equal(got, want) {
		t.Errorf("EncodeText = % X, want % X", got, want)
	}
}

func TestDecodeFileTextUndecidableIsLossy(t *testing.T) {
	// 0x81 and 0x90 are unassigned in Windows-1252 and the pair is no
	// valid sequence of the CJK charsets either, so nothing round-trips.
	raw := []byte("ok \xFF\xFE\x80\x81 then \xC3\x28 end\x90")
	text, f := DecodeFileText(raw)
	if want := "ok \uFFFD\uFFFD\uFFFD\uFFFD then \uFFFD( end\uFFFD"; text != want {
		t.Errorf("text = %q, want %q", text, want)
	}
	if f.Legacy != "" || f.Charset() != "utf-8" {
		t.Errorf("format = %+v, want UTF-8", f)
	}
}

func TestDecodeFileTextLateNonASCII(t *testing.T) {
	// The only non-ASCII line comes after far more ASCII than the sample
	// holds; it must still decide the charset.
	head := strings.Repeat("plain ascii line\n", 8000)
	tail := "Ça coûte très cher, déjà vu à la crème brûlée.\n"
	raw := append([]byte(head), encodeWith(t, charmap.Windows1252, tail)...)
	text, f := DecodeFileText(raw)
	if f.Legacy != charsetWindows1252 || text != head+tail {
		t.Errorf("Legacy = %q, tail = %q", f.Legacy, text[len(text)-60:])
	}
}

func TestEncodeLegacyUnrepresentable(t *testing.T) {
	f := TextFormat{Legacy: charsetWindows1252}
	_, err := encodeTextStrict("snow ☃ man", f)
	var ue *unencodableError
	if !errors.As(err, &ue) || ue.Rune != '☃' || !strings.Contains(err.Error(), "U+2603") {
		t.Fatalf("encodeTextStrict error = %v", err)
	}
	if got := EncodeText("snow ☃ é", f); !bytes.Equal(got, []byte("snow ? \xE9")) {
		t.Errorf("EncodeText = %q", got)
	}
}

func TestReadTextDetectsCharset(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sjis.txt")
	raw := encodeWith(t, japanese.ShiftJIS, "こんにちは、世界！これはテストファイルです。\n")
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	w := &Workspace{Overlay: newOverlay()}
	s, err := w.ReadText(p)
	if err != nil {
		t.Fatal(err)
	}
	if s.Text != "こんにちは、世界！これはテストファイルです。\n" || s.Format.Legacy != charsetShiftJIS || !bytes.Equal(s.Raw, raw) {
		t.Errorf("snapshot = %q, %+v", s.Text, s.Format)
	}
	// Writing it back keeps the charset.
	if err := WriteText(p, s.Text+"追加\n", s.Format); err != nil {
		t.Fatal(err)
	}
	back, _ := os.ReadFile(p)
	if want := encodeWith(t, japanese.ShiftJIS, "こんにちは、世界！これはテストファイルです。\n追加\n"); !bytes.Equal(back, want) {
		t.Errorf("written % X, want % X", back, want)
	}
}

// FuzzDecodeFileText checks the properties every input must keep: no
// panic, valid UTF-8 out, and a legacy charset only when it round-trips.
func FuzzDecodeFileText(f *testing.F) {
	f.Add([]byte("caf\xE9"))
	f.Add([]byte("\x82\xB1\x82\xF1\x82\xC9\x82\xBF\x82\xCD"))
	f.Add([]byte("\xC4\xE3\xBA\xC3\xCA\xC0\xBD\xE7"))
	f.Add([]byte{0xFF, 0xFE, 0x00})
	f.Add([]byte("plain"))
	f.Fuzz(func(t *testing.T, data []byte) {
		text, tf := DecodeFileText(data)
		if !utf8.ValidString(text) {
			t.Fatalf("invalid UTF-8 out of % X", data)
		}
		if tf.Legacy != "" && !bytes.Equal(EncodeText(text, tf), data) {
			t.Fatalf("legacy %s does not round-trip % X", tf.Legacy, data)
		}
	})
}
