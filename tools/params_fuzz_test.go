package tools_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/toolset"
)

// FuzzPrepareArgsAllTools runs argument preparation (tools.md §2.1) for
// every built-in tool: no input makes a tool's Validate or Describe panic
// (which the model would see as unhandled_exception), prepared params hold
// no null, and preparing them again changes nothing (a repair yields
// values the schema and the tool accept).
func FuzzPrepareArgsAllTools(f *testing.F) {
	e := newTestEnv(f, nil)
	builtins := toolset.Builtins(e.Env)
	for i := range builtins {
		for _, seed := range []string{
			"", "{}", "null", `{"absolute_path":"/x","offset":"3","limit":1e30}`, `{"file_path":"rel","content":null}`,
			`{"command":"ls","is_background":"TRUE","timeout":-1,"directory":"../x"}`, `{"pattern":"[","path":7}`,
			`{"paths":"[\"a\",1]","include":"[]"}`, `{"todos":[{"id":1,"content":"","status":"x"}]}`,
			`{"url":"http://127.1/","prompt":""}`, `{"old_string":"","new_string":"x","replace_all":"yes"}`,
			`{"fact":{"a":1}}`, `{"plan":123}`, `{"query":"x","subagent_type":null}`, `{"offset":-1e400}`,
		} {
			f.Add(uint8(i), seed)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, raw string) {
		if len(raw) > 2048 {
			t.Skip()
		}
		tool := builtins[int(which)%len(builtins)]
		params, terr := tools.PrepareArgs(tool, raw)
		if (params == nil) == (terr == nil) {
			t.Fatalf("%s: params %v and error %v", tool.Name(), params, terr)
		}
		if terr != nil {
			if terr.Type == tools.ErrorUnhandledException {
				t.Fatalf("%s: Validate panicked on %q: %s", tool.Name(), raw, terr.Message)
			}
			return
		}
		for k, v := range params {
			if v == nil {
				t.Fatalf("%s: %s is null after preparation", tool.Name(), k)
			}
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("%s: Describe panicked on %q: %v", tool.Name(), raw, r)
				}
			}()
			tool.Describe(params)
		}()
		again, err := json.Marshal(params)
		if err != nil {
			t.Fatalf("%s: params do not encode: %v", tool.Name(), err)
		}
		params2, terr2 := tools.PrepareArgs(tool, string(again))
		if terr2 != nil {
			t.Fatalf("%s: prepared %q as %s, which is refused the second time: %s", tool.Name(), raw, again, terr2.Message)
		}
		if !reflect.DeepEqual(params, params2) {
			t.Fatalf("%s: preparing again changed %v into %v", tool.Name(), params, params2)
		}
	})
}
