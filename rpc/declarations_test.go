package rpc_test

import (
	"encoding/json"
	"testing"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

func TestDeclarationsReachTheModelVerbatim(t *testing.T) {
	a := startAgent(t, "default", modeltest.Response{Text: "ok"})
	if _, err := a.prompt("hi"); err != nil {
		t.Fatal(err)
	}
	var sent []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(a.model.Requests()[0].ToolsRaw, &sent); err != nil {
		t.Fatal(err)
	}
	res, _ := a.e.Call("qwen/listTools", map[string]any{})
	var lt struct {
		Tools []struct {
			Name       string
			Parameters json.RawMessage
		}
	}
	json.Unmarshal(res, &lt)
	if len(sent) != len(lt.Tools) {
		t.Fatalf("%d tools sent, %d registered", len(sent), len(lt.Tools))
	}
	for i, s := range sent {
		var got, want any
		json.Unmarshal(s.Function.Parameters, &got)
		json.Unmarshal(lt.Tools[i].Parameters, &want)
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if s.Type != "function" || s.Function.Name != lt.Tools[i].Name || string(gb) != string(wb) {
			t.Errorf("tool %d sent as %s %s\nregistered %s", i, s.Function.Name, gb, wb)
		}
	}
}
