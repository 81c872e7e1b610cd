package rpc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

var jsonSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, `{}`, `[]`, `[1,2,[3]]`, `"a"`, `0`, `-0.5e+3`,
	`1.`, `01`, `-`, `.5`, `1e`, `1E+`, `true`, `tru`, `nul`, `false `, ` null`, `{"a":1,}`, `[1,]`, `{"a" 1}`,
	`{"a":1 "b":2}`, `{1:2}`, "\"a\tb\"", `"\u00e9\ud83d\ude00"`, `"\uZZZZ"`, `"\x"`, `"\/\b\f\n\r\t\"\\"`,
	"\"\xff\xfe\"", `{"\u006dethod":"x","id":"a"}`, `{"id":1,"id":2}`, `{"a":{"b":[{"c":"d"}]}}`, `"abc`,
	`"abcdefghijklmnopqrstuvwxyz"`, `"abcdefgh\"ijklmnop"`, `"abcdefghij\u0041klmnop"`, "\"abcdefg\x01hijklmnop\"",
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	`{"a":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`, `{"a":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
	"", " ", "{} {}", "\ufeff{}",
}

// FuzzScanEnvelope checks the one-pass scanner against encoding/json: it
// calls valid exactly what json.Valid does, and it finds the envelope's
// members where a decoder into a map finds them.
func FuzzScanEnvelope(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		env, ok := scanEnvelope(b)
		if want := json.Valid(b); ok != want {
			t.Fatalf("scanEnvelope(%q) valid = %v, json.Valid = %v", b, ok, want)
		}
		if !ok {
			return
		}
		trimmed := bytes.TrimLeft(b, " \t\r\n")
		if isObject := trimmed[0] == '{'; env.object != isObject || env.first != trimmed[0] {
			t.Fatalf("%q: object = %v, first %q", b, env.object, env.first)
		}
		if !env.object {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		for name, got := range map[string][]byte{"jsonrpc": env.jsonrpc, "id": env.id, "method": env.method, "params": env.params, "result": env.result, "error": env.errv} {
			want, present := m[name]
			if present != (got != nil) || !bytes.Equal(got, want) {
				t.Fatalf("%q: member %s = %q, want %q (present %v)", b, name, got, want, present)
			}
		}
	})
}

func TestMemberAndElements(t *testing.T) {
	long := strings.Repeat("ab\\\"cd", longString/6+1)
	body := []byte(`{"params": { "a" : 1 , "b":{"c":[1,2.5e3,true,null]}, "\u0061":"last", "d" : [ {"x":1} , "` + long + `", -2 ], "e":"` + long + `"} }`)
	env, ok := scanEnvelope(body)
	if !ok || len(env.long) != 2 {
		t.Fatalf("scan: ok %v, long strings %v", ok, env.long)
	}
	at := cap(body) - cap(env.params)
	for name, v := range map[string]jsonValue{"noted": (jsonValue{raw: body, long: env.long}).sub(at, at+len(env.params)), "unnoted": {raw: env.params}} {
		for key, want := range map[string]string{"a": `"last"`, "b": `{"c":[1,2.5e3,true,null]}`, "d": `[ {"x":1} , "` + long + `", -2 ]`, "e": `"` + long + `"`} {
			s, e, ok := v.member(key)
			if !ok || string(v.raw[s:e]) != want {
				t.Errorf("%s: member %q = %.40q (%v), want %.40q", name, key, v.raw[s:e], ok, want)
			}
		}
		if _, _, ok := v.member("z"); ok {
			t.Errorf("%s: member z found", name)
		}
		s, e, _ := v.member("d")
		arr := v.sub(s, e)
		var got []string
		for _, sp := range arr.elements() {
			got = append(got, string(arr.raw[sp[0]:sp[1]]))
		}
		if strings.Join(got, "|") != `{"x":1}|"`+long+`"|-2` {
			t.Errorf("%s: elements = %.80q", name, got)
		}
	}
}
