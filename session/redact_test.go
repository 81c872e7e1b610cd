package session

import (
	"os"
	"strings"
	"testing"
)

// json.Marshal escapes '&', '<', '>', '"' and '\' inside strings, so a
// secret holding one of them appears in the file escaped: it must be
// found and replaced in that form.
func TestSessionFileRedactsSecretsThatJSONEscapes(t *testing.T) {
	secrets := []string{`sk-a&b<c>d-123456`, `tok"quoted\slash-99`}
	st := NewStore(t.TempDir(), func() []string { return secrets })
	l, err := st.create("/some/root", event{ID: "s1", Cwd: "/some/root"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	text := "key " + secrets[0] + " and " + secrets[1]
	if err := l.write(event{Type: "message", Message: storeMessage(Message{Role: "user", Text: text})}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(l.path)
	if err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{"sk-a", "b<c", `b\u003cc`, "tok", "slash-99"} {
		if strings.Contains(string(b), frag) {
			t.Fatalf("the session file holds %q of a secret:\n%s", frag, b)
		}
	}
	if strings.Count(string(b), "[redacted]") != 2 {
		t.Fatalf("want two redactions:\n%s", b)
	}
}
