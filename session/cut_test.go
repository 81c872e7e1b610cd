package session

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Tool outputs need not be valid UTF-8 (a command that prints binary): a
// cut must still keep the text around it, not only whole characters.
func TestShortenKeepsTextAroundInvalidBytes(t *testing.T) {
	text := "\xff" + strings.Repeat("a", 5000) + "\xfe"
	got := shorten(text, 300)
	head, _, _ := strings.Cut(got, "\n[...")
	if len(head) != 200 {
		t.Fatalf("head is %d bytes, want 200: %q", len(head), head)
	}
	if !strings.HasSuffix(got, strings.Repeat("a", 99)+"\xfe") {
		t.Fatalf("tail lost: %q", got[len(got)-120:])
	}
}

func TestShortenCutsOnCharacterBoundaries(t *testing.T) {
	text := strings.Repeat("é", 3000) // two bytes each
	got := shorten(text, 301)
	if !utf8.ValidString(got) {
		t.Fatalf("cut inside a character: %q", got)
	}
	head, _, _ := strings.Cut(got, "\n[...")
	if head != strings.Repeat("é", 100) {
		t.Fatalf("head = %q", head)
	}
}

func TestRenderForSummaryKeepsLatestTextAfterInvalidBytes(t *testing.T) {
	msgs := []Message{{Role: "user", Text: "first prompt"}}
	for i := 0; i < 50; i++ {
		msgs = append(msgs, Message{Role: "tool", ToolCallID: "c", Text: "\xff" + strings.Repeat("x", 1500)})
	}
	msgs = append(msgs, Message{Role: "assistant", Text: "the latest answer"})
	got := renderForSummary(msgs, 20000)
	if len(got) > 20000+200 || !strings.Contains(got, "the latest answer") || !strings.Contains(got, "first prompt") {
		t.Fatalf("summary input of %d bytes lost its ends", len(got))
	}
}

// A prompt with an image holds its text in Text and again in its first
// part; the model is sent the parts only, so the text counts once.
func TestPromptWithImageCountsItsTextOnce(t *testing.T) {
	text := strings.Repeat("describe this picture ", 200)
	parts := []Part{{Type: "text", Text: text}, {Type: "image", MIME: "image/png", Data: "iVBORw0KGgo=", Name: "image"}}
	both := Message{Role: "user", Text: text, Parts: parts}
	if got, want := estimateMessage(both), estimateMessage(Message{Role: "user", Parts: parts}); got != want {
		t.Fatalf("estimate %d with the text in Text and Parts, %d with Parts only", got, want)
	}
	if n := strings.Count(renderForSummary([]Message{both}, 0), "describe this picture"); n != 200 {
		t.Fatalf("summary input holds the prompt's phrase %d times, want 200", n)
	}
}
