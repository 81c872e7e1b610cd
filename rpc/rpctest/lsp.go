package rpctest

import (
	"encoding/json"
	"net/url"
	"path/filepath"
)

// InitParams builds initialize params for a client with the given roots.
// Rich adds experimental.qwen; UTF8 offers the utf-8 position encoding.
type InitParams struct {
	Roots    []string
	UTF8     bool
	Rich     bool
	Deferred bool
	// LSP advertises experimental.qwen.lsp: the editor answers qwen/lsp.
	LSP bool
	// ApplyEdit and DocumentChanges set workspace capabilities.
	ApplyEdit       bool
	DocumentChanges bool
	ShowMessage     bool
	// InitializationOptions is sent as is when not nil.
	InitializationOptions any
}

// Params returns the JSON-ready initialize params.
func (p InitParams) Params() map[string]any {
	var folders []map[string]any
	for _, r := range p.Roots {
		folders = append(folders, map[string]any{"uri": URI(r), "name": filepath.Base(r)})
	}
	caps := map[string]any{
		"workspace": map[string]any{
			"applyEdit":        p.ApplyEdit,
			"workspaceEdit":    map[string]any{"documentChanges": p.DocumentChanges},
			"workspaceFolders": true,
		},
		"window": map[string]any{"workDoneProgress": true},
	}
	if p.ShowMessage {
		caps["window"].(map[string]any)["showMessage"] = map[string]any{}
	}
	if p.UTF8 {
		caps["general"] = map[string]any{"positionEncodings": []string{"utf-8", "utf-16"}}
	}
	if p.Rich {
		caps["experimental"] = map[string]any{"qwen": map[string]any{
			"sessionUpdates": true, "requestPermission": true, "proposeEdit": true, "deferredReview": p.Deferred,
		}}
	}
	if p.LSP {
		if caps["experimental"] == nil {
			caps["experimental"] = map[string]any{"qwen": map[string]any{}}
		}
		caps["experimental"].(map[string]any)["qwen"].(map[string]any)["lsp"] = true
	}
	params := map[string]any{"processId": nil, "capabilities": caps, "workspaceFolders": folders}
	if p.InitializationOptions != nil {
		params["initializationOptions"] = p.InitializationOptions
	}
	return params
}

// Initialize sends initialize and initialized and returns the result.
func (e *Editor) Initialize(p InitParams) json.RawMessage {
	e.t.Helper()
	res, err := e.Call("initialize", p.Params())
	if err != nil {
		e.t.Fatalf("rpctest: initialize: %v", err)
	}
	e.Notify("initialized", map[string]any{})
	return res
}

// Shutdown sends shutdown then exit and returns the server's exit code.
func (e *Editor) Shutdown() int {
	e.t.Helper()
	if _, err := e.Call("shutdown", nil); err != nil {
		e.t.Fatalf("rpctest: shutdown: %v", err)
	}
	e.Notify("exit", nil)
	return e.ExitCode()
}

// URI makes a file:// URI from an absolute path.
func URI(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

// Open opens a buffer at version 1.
func (e *Editor) Open(path, text string) {
	e.t.Helper()
	e.mu.Lock()
	e.versions[path] = 1
	e.mu.Unlock()
	e.Notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{
		"uri": URI(path), "languageId": "plaintext", "version": 1, "text": text,
	}})
}

// Edit is one incremental change in the negotiated encoding.
type Edit struct {
	StartLine, StartChar, EndLine, EndChar int
	Text                                   string
}

// Change sends incremental edits as one didChange and returns the new
// version.
func (e *Editor) Change(path string, edits ...Edit) int32 {
	e.t.Helper()
	var changes []map[string]any
	for _, ed := range edits {
		changes = append(changes, map[string]any{
			"range": map[string]any{
				"start": map[string]any{"line": ed.StartLine, "character": ed.StartChar},
				"end":   map[string]any{"line": ed.EndLine, "character": ed.EndChar},
			},
			"text": ed.Text,
		})
	}
	return e.sendChange(path, changes)
}

// Replace sends a full-text change and returns the new version.
func (e *Editor) Replace(path, text string) int32 {
	e.t.Helper()
	return e.sendChange(path, []map[string]any{{"text": text}})
}

func (e *Editor) sendChange(path string, changes []map[string]any) int32 {
	e.mu.Lock()
	e.versions[path]++
	v := e.versions[path]
	e.mu.Unlock()
	e.Notify("textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": URI(path), "version": v},
		"contentChanges": changes,
	})
	return v
}

// Save sends didSave.
func (e *Editor) Save(path string) {
	e.t.Helper()
	e.Notify("textDocument/didSave", map[string]any{"textDocument": map[string]any{"uri": URI(path)}})
}

// CloseDoc sends didClose.
func (e *Editor) CloseDoc(path string) {
	e.t.Helper()
	e.Notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": URI(path)}})
}
