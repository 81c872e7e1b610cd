package rpc

import "testing"

func TestTranscriptQuestion(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"", ""},
		{"## You\n\nhello\n", "hello"},
		{"# h\n\n## You\n\n", ""},
		{"## You\n\nold\n\n## qwen\n\nanswer\n\n## You\n\nnew one\n<!-- a\ncomment -->\nmore\n", "new one\n\nmore"},
		{"## You\n\nasked\n\n## qwen\n\n", ""},
		{"## You\n\nasked\n\n## qwen", ""},
		{"text ## You\n\nnot a heading\n", ""},
		{"## You\nno blank line\n", "no blank line"},
		{"## Youth\n\nnot mine\n", ""},
	} {
		if got := question(c.text); got != c.want {
			t.Errorf("question(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}

func TestTranscriptPlaceChunk(t *testing.T) {
	for _, c := range []struct {
		cur, written, chunk string
		at                  int
		insert              string
	}{
		// The person's text below the server's part stays below.
		{"A\nmine\n", "A\n", "B\n", 2, "B\n"},
		// An editor behind the disk gets the missing part too.
		{"A\n", "A\nB\n", "C\n", 2, "B\nC\n"},
		// The server's part was changed: at the end, on a new line.
		{"X", "A\n", "B\n", 1, "\nB\n"},
		{"", "", "H\n", 0, "H\n"},
	} {
		at, insert := placeChunk(c.cur, c.written, c.chunk)
		if at != c.at || insert != c.insert {
			t.Errorf("placeChunk(%q, %q, %q) = %d, %q; want %d, %q", c.cur, c.written, c.chunk, at, insert, c.at, c.insert)
		}
	}
}
