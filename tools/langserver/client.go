package langserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/sourcegraph/jsonrpc2"
)

// handler answers what a server asks of its client.
type handler struct{ s *Server }

func (h handler) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	s := h.s
	var params json.RawMessage
	if req.Params != nil {
		params = *req.Params
	}
	if req.Notif {
		switch req.Method {
		case "textDocument/publishDiagnostics":
			s.publish(params)
		case "window/logMessage", "window/showMessage":
			var p struct {
				Type    int    `json:"type"`
				Message string `json:"message"`
			}
			if json.Unmarshal(params, &p) == nil && p.Type == 1 {
				s.m.logf("%s: %s", s.spec.Name, p.Message)
			}
		}
		return
	}
	var result any
	var rerr *jsonrpc2.Error
	switch req.Method {
	case "workspace/configuration":
		result = s.configuration(params)
	case "workspace/workspaceFolders":
		result = []map[string]string{{"uri": fileURI(s.root), "name": filepath.Base(s.root)}}
	case "window/workDoneProgress/create", "client/registerCapability", "client/unregisterCapability",
		"window/showMessageRequest", "workspace/diagnostic/refresh", "workspace/semanticTokens/refresh",
		"workspace/inlayHint/refresh", "workspace/codeLens/refresh", "workspace/inlineValue/refresh":
		result = nil
	case "window/showDocument":
		result = map[string]bool{"success": false}
	case "workspace/applyEdit":
		result = map[string]any{"applied": false, "failureReason": "qwen-ls applies no edits from its language servers"}
	default:
		rerr = &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "qwen-ls does not handle " + req.Method}
	}
	id := req.ID
	s.q.push(func() {
		if rerr != nil {
			_ = conn.ReplyWithError(context.Background(), id, rerr)
			return
		}
		_ = conn.Reply(context.Background(), id, result)
	})
}

// configuration answers workspace/configuration from Spec.Settings: each
// item's section looked up by its dotted path, null where there is none.
func (s *Server) configuration(params json.RawMessage) []any {
	var p struct {
		Items []struct {
			Section string `json:"section"`
		} `json:"items"`
	}
	_ = json.Unmarshal(params, &p)
	out := make([]any, len(p.Items))
	for i, it := range p.Items {
		out[i] = lookupSection(s.spec.Settings, it.Section)
	}
	return out
}

func lookupSection(settings json.RawMessage, section string) any {
	if settings == nil {
		return nil
	}
	var v any
	if json.Unmarshal(settings, &v) != nil {
		return nil
	}
	if section == "" {
		return v
	}
	for _, k := range strings.Split(section, ".") {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		if v, ok = obj[k]; !ok {
			return nil
		}
	}
	return v
}

// initializeParams are the client's side of initialize: the root as the
// one workspace folder, and the capabilities qwen-ls uses.
func initializeParams(spec Spec, root string) map[string]any {
	kinds := make([]int, 26)
	for i := range kinds {
		kinds[i] = i + 1
	}
	p := map[string]any{
		"processId":        os.Getpid(),
		"clientInfo":       map[string]string{"name": "qwen-ls"},
		"rootUri":          fileURI(root),
		"rootPath":         root,
		"workspaceFolders": []map[string]string{{"uri": fileURI(root), "name": filepath.Base(root)}},
		"capabilities": map[string]any{
			"general": map[string]any{"positionEncodings": []string{"utf-8", "utf-16"}},
			"window":  map[string]any{"workDoneProgress": true},
			"workspace": map[string]any{
				"configuration":          true,
				"workspaceFolders":       true,
				"didChangeConfiguration": map[string]any{},
				"didChangeWatchedFiles":  map[string]any{},
				"symbol":                 map[string]any{"symbolKind": map[string]any{"valueSet": kinds}},
			},
			"textDocument": map[string]any{
				"synchronization": map[string]any{"didSave": true},
				"publishDiagnostics": map[string]any{
					"versionSupport": true, "relatedInformation": true, "codeDescriptionSupport": true,
					"tagSupport": map[string]any{"valueSet": []int{1, 2}},
				},
				"definition":     map[string]any{},
				"typeDefinition": map[string]any{},
				"implementation": map[string]any{},
				"references":     map[string]any{},
				"hover":          map[string]any{"contentFormat": []string{"markdown", "plaintext"}},
				"documentSymbol": map[string]any{
					"hierarchicalDocumentSymbolSupport": true,
					"symbolKind":                        map[string]any{"valueSet": kinds},
				},
				"callHierarchy": map[string]any{},
				"codeAction": map[string]any{
					"isPreferredSupport": true, "disabledSupport": true,
					"codeActionLiteralSupport": map[string]any{"codeActionKind": map[string]any{"valueSet": []string{
						"", "quickfix", "refactor", "refactor.extract", "refactor.inline", "refactor.rewrite",
						"source", "source.organizeImports", "source.fixAll",
					}}},
				},
			},
		},
	}
	if spec.InitializationOptions != nil {
		p["initializationOptions"] = spec.InitializationOptions
	}
	return p
}
