package registry

import (
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
)

func TestLookupByNameAndAlias(t *testing.T) {
	r := New(builtins(), Filter{})
	for alias, canonical := range map[string]string{
		"replace": "edit", "search_file_content": "grep_search", "agent": "task",
		"edit": "edit", "read_file": "read_file",
	} {
		e, terr := r.Lookup(alias)
		if terr != nil {
			t.Errorf("%s: %v", alias, terr)
			continue
		}
		if e.Name != canonical || e.Tool.Name() != canonical {
			t.Errorf("%s resolved to %q", alias, e.Name)
		}
	}
}

func TestLookupUnknown(t *testing.T) {
	all := New(builtins(), Filter{})
	tests := []struct {
		name  string
		reg   *Registry
		query string
		want  string
	}{
		{
			// Conformance case 1 of tools.md §8.
			name: "read_files", reg: all, query: "read_files",
			want: `There is no tool named "read_files"; call tools by their exact registered names. Did you mean "read_file", "read_many_files" or "write_file"?`,
		},
		{
			name: "ties broken by name", reg: all, query: "shell",
			want: `There is no tool named "shell"; call tools by their exact registered names. Did you mean "edit", "glob" or "task"?`,
		},
		{
			name: "aliases are not suggested", reg: all, query: "agnt",
			want: `There is no tool named "agnt"; call tools by their exact registered names. Did you mean "edit", "glob" or "task"?`,
		},
		{
			name: "two tools", reg: New(fakes("glob", "edit"), Filter{}), query: "grep",
			want: `There is no tool named "grep"; call tools by their exact registered names. Did you mean "glob" or "edit"?`,
		},
		{
			name: "one tool", reg: New(fakes("glob"), Filter{}), query: "grep",
			want: `There is no tool named "grep"; call tools by their exact registered names. Did you mean "glob"?`,
		},
		{
			name: "no tools", reg: New(nil, Filter{}), query: "grep",
			want: `There is no tool named "grep"; call tools by their exact registered names.`,
		},
		{
			name: "quotes in the name are escaped", reg: New(fakes("a"), Filter{}), query: `x"y`,
			want: `There is no tool named "x\"y"; call tools by their exact registered names. Did you mean "a"?`,
		},
		{
			name: "names are case-sensitive", reg: all, query: "Read_File",
			want: `There is no tool named "Read_File"; call tools by their exact registered names. Did you mean "read_file", "edit" or "write_file"?`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, terr := tt.reg.Lookup(tt.query)
			if terr == nil {
				t.Fatalf("found %+v", e)
			}
			if terr.Type != tools.ErrorToolNotRegistered {
				t.Errorf("type %q", terr.Type)
			}
			if terr.Message != tt.want {
				t.Errorf("message\n got: %s\nwant: %s", terr.Message, tt.want)
			}
		})
	}
}

func TestConformanceCase1Prefix(t *testing.T) {
	_, terr := New(builtins(), Filter{}).Lookup("read_files")
	prefix := `There is no tool named "read_files"; call tools by their exact registered names. Did you mean "read_file"`
	if terr == nil || !strings.HasPrefix(terr.Message, prefix) {
		t.Errorf("got %v", terr)
	}
}

func TestLevenshtein(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"kitten", "sitting", 3},
		{"read_files", "read_file", 1}, {"flaw", "lawn", 2}, {"héllo", "hello", 1}, {"same", "same", 0},
	}
	for _, tt := range tests {
		if got := levenshtein(tt.a, tt.b); got != tt.want {
			t.Errorf("levenshtein(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := levenshtein(tt.b, tt.a); got != tt.want {
			t.Errorf("levenshtein(%q, %q) = %d, want %d (symmetry)", tt.b, tt.a, got, tt.want)
		}
	}
}
