package registry

import (
	"bytes"
	"encoding/json"

	"github.com/qwen-ls/qwen-ls/tools"
)

// Declaration is the function declaration the model receives for one tool
// (tools.md §4.1). Marshalled, the same set of tools always gives the same
// bytes, which prompt caching relies on.
type Declaration struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Declarations returns one declaration per registered tool in declaration
// order (built-ins, discovered by name, MCP by registered name). Parameters
// are the tool's schema in compact form, key order kept; an empty or invalid
// schema is declared as an empty object schema.
func (s *Snapshot) Declarations() []Declaration {
	s.paramsOnce.Do(func() {
		s.params = make([]json.RawMessage, len(s.entries))
		for i, e := range s.entries {
			s.params[i] = compactSchema(e.Tool.Schema())
		}
	})
	out := make([]Declaration, len(s.entries))
	for i, e := range s.entries {
		// Descriptions are asked for each time: task's lists the
		// subagent definitions, which may change.
		out[i] = Declaration{Name: e.Name, Description: e.Tool.Description(), Parameters: s.params[i]}
	}
	return out
}

func compactSchema(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if len(bytes.TrimSpace(raw)) == 0 || json.Compact(&buf, raw) != nil {
		return json.RawMessage(defaultParameters)
	}
	return buf.Bytes()
}

// Info describes one registered tool as qwen/listTools reports it
// (protocol.md §4).
type Info struct {
	Name        string          `json:"name"`
	DisplayName string          `json:"displayName"`
	Description string          `json:"description"`
	Kind        tools.Kind      `json:"kind"`
	Source      string          `json:"source"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Infos returns the Info of every registered tool in declaration order.
func (s *Snapshot) Infos() []Info {
	out := make([]Info, len(s.entries))
	for i, e := range s.entries {
		out[i] = Info{
			Name:        e.Name,
			DisplayName: e.Tool.DisplayName(),
			Description: e.Tool.Description(),
			Kind:        e.Tool.Kind(),
			Source:      e.Source,
			Parameters:  compactSchema(e.Tool.Schema()),
		}
	}
	return out
}
