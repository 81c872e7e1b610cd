package tools_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/toolstest"
)

// editSchema is shaped like the edit tool's, with a few extra keywords so
// that every message shape is reachable.
const editSchema = `{
  "type": "object",
  "properties": {
    "file_path": {"type": "string"},
    "old_string": {"type": "string"},
    "new_string": {"type": "string"},
    "replace_all": {"type": "boolean"},
    "expected_replacements": {"type": "integer", "minimum": 1, "maximum": 100},
    "mode": {"type": "string", "enum": ["fast", "slow"]},
    "paths": {"type": "array", "items": {"type": "string"}, "minItems": 1},
    "options": {"type": "object", "properties": {"depth": {"type": "integer"}}, "required": ["depth"]},
    "label": {"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^[a-z]+$"},
    "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1.5}
  },
  "required": ["file_path", "old_string", "new_string"]
}`

func editTool() *toolstest.Fake {
	f := toolstest.NewFake("edit", editSchema)
	f.Spec.ParameterAliases = map[string]string{"absolute_path": "file_path", "path": "file_path"}
	return f
}

const base = `"file_path":"/w/a.txt","old_string":"x","new_string":"y"`

func TestPrepareArgsMessages(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want string
	}{
		{"broken JSON", `{"a":`, "Invalid JSON in tool call arguments: unexpected end of JSON input. Arguments must be a JSON object."},
		{"trailing garbage", `{} x`, "Invalid JSON in tool call arguments: invalid character 'x' after top-level value. Arguments must be a JSON object."},
		{"array", `[1,2]`, "The arguments must be a JSON object, not array."},
		{"string", `"hi"`, "The arguments must be a JSON object, not string."},
		{"number", `42`, "The arguments must be a JSON object, not number."},
		{"boolean", `true`, "The arguments must be a JSON object, not boolean."},
		{"empty means {} and the first required property is reported", ``, "params must have required property 'file_path'"},
		{"required in the order the schema lists them", `{"file_path":"/w/a"}`, "params must have required property 'old_string'"},
		{"null counts as omitted", `{"file_path":null,"old_string":"x","new_string":"y"}`, "params must have required property 'file_path'"},
		{"type", `{` + base + `,"expected_replacements":"many"}`, "params/expected_replacements must be integer"},
		{"integer needs a whole number", `{` + base + `,"expected_replacements":1.5}`, "params/expected_replacements must be integer"},
		{"enum", `{` + base + `,"mode":"medium"}`, "params/mode must be equal to one of the allowed values"},
		{"minimum", `{` + base + `,"expected_replacements":0}`, "params/expected_replacements must be >= 1"},
		{"maximum", `{` + base + `,"expected_replacements":101}`, "params/expected_replacements must be <= 100"},
		{"exclusive minimum", `{` + base + `,"ratio":0}`, "params/ratio must be > 0"},
		{"exclusive maximum with a fraction", `{` + base + `,"ratio":1.5}`, "params/ratio must be < 1.5"},
		{"min length", `{` + base + `,"label":"a"}`, "params/label must NOT have fewer than 2 characters"},
		{"max length", `{` + base + `,"label":"abcde"}`, "params/label must NOT have more than 4 characters"},
		{"pattern", `{` + base + `,"label":"AB"}`, `params/label must match pattern "^[a-z]+$"`},
		{"min items", `{` + base + `,"paths":[]}`, "params/paths must NOT have fewer than 1 items"},
		{"nested type", `{` + base + `,"paths":["a",3]}`, "params/paths/1 must be string"},
		{"nested required", `{` + base + `,"options":{}}`, "params/options must have required property 'depth'"},
		{"anyOf", `{` + base + `,"either":true}`, "params/either must match a schema in anyOf"},
		{"boolean type", `{` + base + `,"replace_all":"yes"}`, "params/replace_all must be boolean"},
		{"unrepairable JSON string", `{` + base + `,"paths":"[1,"}`, "params/paths must be array"},
		{
			"the first violation follows the schema's property order",
			`{` + base + `,"label":"A","mode":"x","expected_replacements":0}`,
			"params/expected_replacements must be >= 1",
		},
		{
			"required properties come before every other violation",
			`{"old_string":"x","new_string":"y","mode":"x"}`,
			"params must have required property 'file_path'",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params, terr := tools.PrepareArgs(editTool(), tt.raw)
			if terr == nil {
				t.Fatalf("no error; params %v", params)
			}
			if terr.Type != tools.ErrorInvalidToolParams {
				t.Errorf("type %q, want invalid_tool_params", terr.Type)
			}
			if terr.Message != tt.want {
				t.Errorf("message\n got: %s\nwant: %s", terr.Message, tt.want)
			}
		})
	}
}

func TestPrepareArgsFirstViolationIsStable(t *testing.T) {
	// Several violations: map iteration in the validator must never change
	// which one is reported.
	raw := `{"file_path":"/w/a","old_string":"x","new_string":"y","zeta":1,"ratio":9,"mode":"q","label":"ABCDEFG","paths":[1,2,3]}`
	want := "params/mode must be equal to one of the allowed values"
	for range 50 {
		_, terr := tools.PrepareArgs(editTool(), raw)
		if terr == nil || terr.Message != want {
			t.Fatalf("got %v, want %q", terr, want)
		}
	}
}

func TestPrepareArgsRepairAndAliases(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want map[string]any
	}{
		{
			name: "string boolean, any case",
			raw:  `{` + base + `,"replace_all":"TRUE"}`,
			want: map[string]any{"file_path": "/w/a.txt", "old_string": "x", "new_string": "y", "replace_all": true},
		},
		{
			name: "string false",
			raw:  `{` + base + `,"replace_all":"False"}`,
			want: map[string]any{"file_path": "/w/a.txt", "old_string": "x", "new_string": "y", "replace_all": false},
		},
		{
			name: "string holding an array",
			raw:  `{` + base + `,"paths":"[\"a\",\"b\"]"}`,
			want: map[string]any{"file_path": "/w/a.txt", "old_string": "x", "new_string": "y", "paths": []any{"a", "b"}},
		},
		{
			name: "string holding an object",
			raw:  `{` + base + `,"options":" {\"depth\": 2} "}`,
			want: map[string]any{"file_path": "/w/a.txt", "old_string": "x", "new_string": "y", "options": map[string]any{"depth": json.Number("2")}},
		},
		{
			name: "a string property keeps its JSON-looking text",
			raw:  `{"file_path":"/w/a.txt","old_string":"[1]","new_string":"true"}`,
			want: map[string]any{"file_path": "/w/a.txt", "old_string": "[1]", "new_string": "true"},
		},
		{
			name: "alias renamed to the canonical property",
			raw:  `{"absolute_path":"/w/b.txt","old_string":"x","new_string":"y"}`,
			want: map[string]any{"file_path": "/w/b.txt", "old_string": "x", "new_string": "y"},
		},
		{
			name: "canonical wins over the alias",
			raw:  `{"path":"/w/alias.txt",` + base + `}`,
			want: map[string]any{"file_path": "/w/a.txt", "old_string": "x", "new_string": "y"},
		},
		{
			name: "a null canonical property gives way to the alias",
			raw:  `{"file_path":null,"path":"/w/alias.txt","old_string":"x","new_string":"y"}`,
			want: map[string]any{"file_path": "/w/alias.txt", "old_string": "x", "new_string": "y"},
		},
		{
			name: "of two aliases the first by name wins",
			raw:  `{"path":"/w/p.txt","absolute_path":"/w/abs.txt","old_string":"x","new_string":"y"}`,
			want: map[string]any{"file_path": "/w/abs.txt", "old_string": "x", "new_string": "y"},
		},
		{
			name: "unknown properties are kept and ignored",
			raw:  `{` + base + `,"extra":{"deep":[1]},"gone":null}`,
			want: map[string]any{"file_path": "/w/a.txt", "old_string": "x", "new_string": "y", "extra": map[string]any{"deep": []any{json.Number("1")}}},
		},
		{
			name: "numbers keep their text",
			raw:  `{` + base + `,"expected_replacements":3}`,
			want: map[string]any{"file_path": "/w/a.txt", "old_string": "x", "new_string": "y", "expected_replacements": json.Number("3")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, terr := tools.PrepareArgs(editTool(), tt.raw)
			if terr != nil {
				t.Fatalf("error %+v", terr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("params\n got: %#v\nwant: %#v", got, tt.want)
			}
		})
	}
}

func TestPrepareArgsRepairIsOnlyForFailures(t *testing.T) {
	// A property that takes a string or a boolean keeps the string.
	f := toolstest.NewFake("t", `{"type":"object","properties":{"flag":{"type":["string","boolean"]}}}`)
	got, terr := tools.PrepareArgs(f, `{"flag":"true"}`)
	if terr != nil || got["flag"] != "true" {
		t.Errorf("got %#v, %v; want the string kept", got, terr)
	}
}

func TestPrepareArgsNullArguments(t *testing.T) {
	f := toolstest.NewFake("t", "")
	got, terr := tools.PrepareArgs(f, "null")
	if terr != nil || len(got) != 0 || got == nil {
		t.Errorf("got %#v, %v; want an empty map", got, terr)
	}
}

func TestPrepareArgsAdditionalPropertiesFalseIsIgnoredAtTopLevel(t *testing.T) {
	f := toolstest.NewFake("t", `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`)
	if _, terr := tools.PrepareArgs(f, `{"a":"x","b":1}`); terr != nil {
		t.Errorf("unknown property rejected: %v", terr)
	}
	if _, terr := tools.PrepareArgs(f, `{"a":1,"b":1}`); terr == nil || terr.Message != "params/a must be string" {
		t.Errorf("got %v, want the type error of a", terr)
	}
}

func TestPrepareArgsSkipsSchemaValidation(t *testing.T) {
	f := toolstest.NewFake("todo_write", `{"type":"object","properties":{"todos":{"type":"array"}},"required":["todos"]}`)
	f.Spec.SkipSchemaValidation = true
	f.ValidateFunc = func(params map[string]any) *tools.ToolError {
		if _, ok := params["todos"].([]any); !ok {
			return &tools.ToolError{Message: `Argument "todos" must be an array of todo items.`}
		}
		return nil
	}
	_, terr := tools.PrepareArgs(f, `{"todos":"nope"}`)
	if terr == nil || terr.Message != `Argument "todos" must be an array of todo items.` {
		t.Fatalf("got %v, want the tool's own message", terr)
	}
	if terr.Type != tools.ErrorInvalidToolParams {
		t.Errorf("type %q, want the default invalid_tool_params", terr.Type)
	}
}

func TestPrepareArgsSchemaThatDoesNotCompileIsSkipped(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","properties":{"x":{"type":"strnig"}},"required":["x"]}`,
		`{"type":"object","properties":{"x":{"$ref":"http://example.invalid/s.json"}},"required":["x"]}`,
		`{"type":"object","properties":{"x":{"$ref":"/etc/hosts"}},"required":["x"]}`,
	} {
		f := toolstest.NewFake("mcp_tool", schema)
		if _, err := tools.CompileArgsSchema(f.Schema()); err == nil {
			t.Errorf("schema %s compiled", schema)
		}
		if _, terr := tools.PrepareArgs(f, `{}`); terr != nil {
			t.Errorf("schema %s: %v, want the schema step skipped", schema, terr)
		}
	}
}

func TestPrepareArgsToolValidateRunsLast(t *testing.T) {
	f := editTool()
	var seen map[string]any
	f.ValidateFunc = func(params map[string]any) *tools.ToolError {
		seen = params
		return tools.NewError(tools.ErrorPathNotInWorkspace, "outside")
	}
	_, terr := tools.PrepareArgs(f, `{"path":"/w/a","old_string":"x","new_string":"y","replace_all":"true"}`)
	if terr == nil || terr.Type != tools.ErrorPathNotInWorkspace || terr.Message != "outside" {
		t.Fatalf("got %v", terr)
	}
	if seen["file_path"] != "/w/a" || seen["replace_all"] != true {
		t.Errorf("Validate saw %v, want aliased and repaired params", seen)
	}

	// A schema failure stops before the tool's Validate.
	seen = nil
	if _, terr := tools.PrepareArgs(f, `{}`); terr == nil || seen != nil {
		t.Errorf("Validate ran after a schema failure (%v)", terr)
	}
}

func TestPrepareArgsValidatePanic(t *testing.T) {
	f := toolstest.NewFake("t", "")
	f.ValidateFunc = func(map[string]any) *tools.ToolError { panic("boom") }
	_, terr := tools.PrepareArgs(f, `{}`)
	if terr == nil || terr.Type != tools.ErrorUnhandledException || terr.Message != "The tool failed unexpectedly: boom" {
		t.Errorf("got %+v", terr)
	}
}

// plainTool hides Base's cached schema, so PrepareArgs compiles its schema
// on each call.
type plainTool struct{ *toolstest.Fake }

func (p *plainTool) ArgsSchema() {} // shadows Base.ArgsSchema with another signature

func TestPrepareArgsWithoutCachedSchema(t *testing.T) {
	p := &plainTool{Fake: toolstest.NewFake("t", `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)}
	_, terr := tools.PrepareArgs(p, `{}`)
	if terr == nil || terr.Message != "params must have required property 'n'" {
		t.Errorf("got %v", terr)
	}
}

func TestPrepareArgsConcurrent(t *testing.T) {
	f := editTool()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			raw := `{` + base + `,"replace_all":"true"}`
			if i%2 == 0 {
				raw = `{"file_path":"/w/a"}`
			}
			_, terr := tools.PrepareArgs(f, raw)
			if (terr == nil) != (i%2 == 1) {
				t.Errorf("call %d: %v", i, terr)
			}
		})
	}
	wg.Wait()
}

func TestPrepareArgsNeverPanics(t *testing.T) {
	f := editTool()
	inputs := []string{"", " ", "{", "}", "[]", "null", "0", "-", `"`, "{\"a\":\"\\u12\"}", "\xff", `{"paths":"{"}`,
		`{"file_path":{"x":[[[[[]]]]]}}`, strings.Repeat("[", 5000)}
	for _, in := range inputs {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("input %q panicked: %v", in, r)
				}
			}()
			tools.PrepareArgs(f, in)
		}()
	}
}

func FuzzPrepareArgs(f *testing.F) {
	for _, seed := range []string{"", "{}", `{"file_path":"/a","old_string":"","new_string":"","replace_all":"tRuE"}`, `{"paths":"[\"x\"]"}`, "[1]", "nul"} {
		f.Add(seed)
	}
	tool := editTool()
	f.Fuzz(func(t *testing.T, raw string) {
		params, terr := tools.PrepareArgs(tool, raw)
		if (params == nil) == (terr == nil) {
			t.Fatalf("params %v and error %v", params, terr)
		}
	})
}
