package rpc

import (
	"encoding/json"
	"maps"
)

// acpMCPServers turns session/new's mcpServers (ACP's McpServer: stdio
// {name, command, args, env: [{name, value}]}, or {type: "http"|"sse",
// name, url, headers: [{name, value}]}) into mcpServers settings entries by
// name, the shape the settings files use.
func acpMCPServers(raw []json.RawMessage) (map[string]any, error) {
	out := map[string]any{}
	for i, r := range raw {
		var m struct {
			Type    string         `json:"type"`
			Name    string         `json:"name"`
			Command string         `json:"command"`
			Args    []string       `json:"args"`
			URL     string         `json:"url"`
			Env     []acpNameValue `json:"env"`
			Headers []acpNameValue `json:"headers"`
		}
		if err := json.Unmarshal(r, &m); err != nil {
			return nil, rpcError(codeInvalidParams, "mcpServers[%d] is malformed: %v", i, err)
		}
		if m.Name == "" {
			return nil, rpcError(codeInvalidParams, "mcpServers[%d] has no name", i)
		}
		entry := map[string]any{}
		switch m.Type {
		case "", "stdio":
			if m.Command == "" {
				return nil, rpcError(codeInvalidParams, "MCP server %q has no command", m.Name)
			}
			args := make([]any, len(m.Args))
			for j, a := range m.Args {
				args[j] = a
			}
			entry["command"], entry["args"], entry["env"] = m.Command, args, nameValues(m.Env)
		case "http", "sse":
			if m.URL == "" {
				return nil, rpcError(codeInvalidParams, "MCP server %q has no url", m.Name)
			}
			key := "httpUrl"
			if m.Type == "sse" {
				key = "url"
			}
			entry[key] = m.URL
			if headers := nameValues(m.Headers); len(headers) > 0 {
				entry["headers"] = headers
			}
		default:
			return nil, rpcError(codeInvalidParams, "MCP server %q has transport %q; stdio, http and sse are supported", m.Name, m.Type)
		}
		out[m.Name] = entry
	}
	return out, nil
}

// acpNameValue is one of ACP's environment variables or HTTP headers.
type acpNameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// nameValues turns ACP's name/value list into the settings' object.
func nameValues(list []acpNameValue) map[string]any {
	out := make(map[string]any, len(list))
	for _, nv := range list {
		out[nv.Name] = nv.Value
	}
	return out
}

// addClientMCPServers merges the client's MCP servers into the settings,
// as the editor's layer of them: a server the client names replaces a
// settings server of the same name, the others stay. The tool sources
// pick the change up like any settings change; a session/new that names
// the same servers again changes nothing, as SetEditorLayer compares.
func (s *Server) addClientMCPServers(servers map[string]any) {
	if len(servers) == 0 {
		return
	}
	s.acpMu.Lock()
	defer s.acpMu.Unlock()
	if s.acpMCP == nil {
		s.acpMCP = map[string]any{}
	}
	maps.Copy(s.acpMCP, servers)
	s.ws.Settings.SetEditorLayer(map[string]any{"mcpServers": s.acpMCP})
}
