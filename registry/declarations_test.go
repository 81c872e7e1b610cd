package registry

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/toolstest"
)

// declTools are two fake tools whose declarations the golden file pins; the
// built-ins join it as they arrive.
func declTools() []tools.Tool {
	read := toolstest.NewFake("fake_read", `{
		"type": "object",
		"properties": {
			"absolute_path": {"type": "string", "description": "The absolute path of the file."},
			"offset": {"type": "integer", "minimum": 0},
			"limit": {"type": "integer", "minimum": 1}
		},
		"required": ["absolute_path"]
	}`)
	read.Spec.Description = "Reads a file.\n\nUse an absolute path."
	read.Spec.Kind = tools.KindRead
	think := toolstest.NewFake("fake_think", "")
	think.Spec.Description = `Notes a thought; "quotes" & <angles> stay as written.`
	return []tools.Tool{read, think}
}

func marshalDecls(t *testing.T, r *Registry) []byte {
	t.Helper()
	b, err := json.MarshalIndent(r.Declarations(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func TestDeclarationsGolden(t *testing.T) {
	toolstest.Golden(t, "declarations.golden", marshalDecls(t, New(declTools(), Filter{})), *update)
}

func TestDeclarationsAreStableBytes(t *testing.T) {
	build := func(reverse bool) *Registry {
		r := New(declTools(), Filter{})
		disc := fakes("d_zeta", "d_alpha", "d_mid")
		a, b := fakes("m_y", "m_x"), fakes("m_w")
		if reverse {
			disc = fakes("d_mid", "d_alpha", "d_zeta")
			r.SetMCP("b", b)
			r.SetMCP("a", a)
		} else {
			r.SetMCP("a", a)
			r.SetMCP("b", b)
		}
		r.SetDiscovered(disc)
		return r
	}
	r1 := build(false)
	first := marshalDecls(t, r1)
	if again := marshalDecls(t, r1); !bytes.Equal(first, again) {
		t.Error("two marshals of one registry differ")
	}
	if other := marshalDecls(t, build(true)); !bytes.Equal(first, other) {
		t.Errorf("registration order changed the bytes:\n%s\nvs\n%s", first, other)
	}
	// Removing and re-adding a server gives the same bytes again.
	r1.SetMCP("a", nil)
	r1.SetMCP("a", fakes("m_x", "m_y"))
	if again := marshalDecls(t, r1); !bytes.Equal(first, again) {
		t.Error("re-registration changed the bytes")
	}
	var names []string
	var decls []Declaration
	if err := json.Unmarshal(first, &decls); err != nil {
		t.Fatal(err)
	}
	for _, d := range decls {
		names = append(names, d.Name)
	}
	want := "fake_read fake_think d_alpha d_mid d_zeta m_w m_x m_y"
	if got := join(names); got != want {
		t.Errorf("order %s, want %s", got, want)
	}
}

func join(ss []string) string {
	var b bytes.Buffer
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s)
	}
	return b.String()
}

func TestDeclarationParameters(t *testing.T) {
	spaced := toolstest.NewFake("spaced", "{ \"type\" : \"object\",\n \"properties\": {\"b\": {}, \"a\": {}} }")
	broken := toolstest.NewFake("broken", `{"type":`)
	empty := toolstest.NewFake("empty", "")
	empty.Spec.Schema = nil
	decls := New([]tools.Tool{spaced, broken, empty}, Filter{}).Declarations()
	want := []string{
		`{"type":"object","properties":{"b":{},"a":{}}}`,
		`{"type":"object","properties":{}}`,
		`{"type":"object","properties":{}}`,
	}
	for i, d := range decls {
		if string(d.Parameters) != want[i] {
			t.Errorf("%s parameters %s, want %s", d.Name, d.Parameters, want[i])
		}
	}
	// A caller scribbling on a returned declaration must not reach the next.
	decls[1].Parameters[0] = 'X'
	if again := New([]tools.Tool{broken}, Filter{}).Declarations(); string(again[0].Parameters) != want[1] {
		t.Errorf("default schema was shared: %s", again[0].Parameters)
	}
}

func TestInfos(t *testing.T) {
	r := New(declTools(), Filter{})
	r.SetMCP("srv", fakes("m"))
	b, err := json.Marshal(r.Snapshot().Infos())
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"name":"fake_read","displayName":"fake_read","description":"Reads a file.\n\nUse an absolute path.","kind":"read","source":"builtin","parameters":{"type":"object","properties":{"absolute_path":{"type":"string","description":"The absolute path of the file."},"offset":{"type":"integer","minimum":0},"limit":{"type":"integer","minimum":1}},"required":["absolute_path"]}},` +
		`{"name":"fake_think","displayName":"fake_think","description":"Notes a thought; \"quotes\" \u0026 \u003cangles\u003e stay as written.","kind":"other","source":"builtin","parameters":{"type":"object","properties":{}}},` +
		`{"name":"m","displayName":"m","description":"A fake tool named m.","kind":"other","source":"mcp:srv","parameters":{"type":"object","properties":{}}}]`
	if string(b) != want {
		t.Errorf("infos\n got: %s\nwant: %s", b, want)
	}
}
