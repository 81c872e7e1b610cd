package codeintel

import (
	"reflect"
	"testing"
)

// Lines breaks where a language server counts lines: at "\n", "\r\n" and
// a lone "\r", and a text ending in a break has an empty last line.
func TestLinesBreakWhereLSPCounts(t *testing.T) {
	for _, c := range []struct {
		text string
		want []string
	}{
		{"", []string{""}},
		{"a", []string{"a"}},
		{"a\nb", []string{"a", "b"}},
		{"a\r\nb\r\n", []string{"a", "b", ""}},
		{"a\rb", []string{"a", "b"}},
		{"a\r\rb", []string{"a", "", "b"}},
		{"a\n\r\nb", []string{"a", "", "b"}},
		{"é\u2028x", []string{"é\u2028x"}},
	} {
		if got := Lines(c.text); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Lines(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}
