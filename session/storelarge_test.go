package session

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// An event with large texts is written in pieces; the line must be the
// one json.Marshal and redact would have written whole: the same escapes
// (HTML characters, U+2028, control characters, invalid UTF-8, characters
// cut by a piece's end) and every secret redacted, also one that spans two
// pieces.
func TestLargeTextLineIsTheLineWrittenWhole(t *testing.T) {
	const secret = "sk-0123456789abcdef"
	st := &Store{secrets: func() []string { return []string{secret, "short", `quote"and\back<>`} }}
	var sb strings.Builder
	for sb.Len() < 3*largeEventText {
		sb.WriteString("a <b> & \u2028 \x01 é世😀 \xff\xfe tab\t\"q\"\\ ")
		sb.WriteString(secret)
		sb.WriteString(` quote"and\back<> `)
	}
	text := sb.String()
	// Put a secret across the first piece's end, whatever it is.
	text = text[:64<<10-5] + secret + text[64<<10-5:]
	ev := event{Type: "message", Time: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC), Tokens: 7,
		Message: &storedMessage{Role: "assistant", Text: text, Reasoning: strings.Repeat("think ", largeEventText/5),
			ToolCalls: []ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"` + secret + `"}`}}}}

	whole, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	want := append(st.redact(whole), '\n')

	line, ok := splitLargeText(ev)
	if !ok || len(line.texts) != 2 {
		t.Fatalf("split: ok %v, %d texts", ok, len(line.texts))
	}
	var got bytes.Buffer
	secrets := st.escapedSecrets()
	for i, h := range line.head {
		got.Write(redactWith(h, secrets))
		if i < len(line.texts) {
			if err := writeJSONText(&got, line.texts[i], secrets); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !bytes.Equal(got.Bytes(), want) {
		i := 0
		for i < min(got.Len(), len(want)) && got.Bytes()[i] == want[i] {
			i++
		}
		t.Fatalf("lines differ at byte %d of %d/%d: %.60q vs %.60q", i, got.Len(), len(want), got.Bytes()[i:], want[i:])
	}
	if bytes.Contains(got.Bytes(), []byte(secret)) {
		t.Fatal("a secret was written")
	}
	if ev.Message.Text != text {
		t.Fatal("splitting changed the event's message")
	}
}

// A small event, or one whose other strings spell the placeholder, is
// written whole.
func TestSplitLargeTextLeavesOtherEventsWhole(t *testing.T) {
	if _, ok := splitLargeText(event{Type: "message", Message: &storedMessage{Role: "user", Text: "hi"}}); ok {
		t.Fatal("split a small event")
	}
	ev := event{Type: "message", Title: "\x00qwen-ls large text 0\x00", Message: &storedMessage{Role: "assistant", Text: strings.Repeat("x", largeEventText+1)}}
	if _, ok := splitLargeText(ev); ok {
		t.Fatal("split an event that spells the placeholder elsewhere")
	}
}
