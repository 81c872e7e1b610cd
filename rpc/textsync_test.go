package rpc_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
)

func assertText(t *testing.T, e *rpctest.Editor, path, want string, version int32) {
	t.Helper()
	res, err := e.Call("test/text", map[string]any{"path": path})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Text    string
		Version int32
	}
	if err := json.Unmarshal(res, &got); err != nil {
		t.Fatalf("decode %s: %v", res, err)
	}
	if got.Text != want || got.Version != version {
		t.Fatalf("buffer = %q@%d, want %q@%d", got.Text, got.Version, want, version)
	}
}

func TestTextSyncInBothEncodings(t *testing.T) {
	// "a😀b": the emoji is 2 UTF-16 units and 4 bytes, so the same edit
	// (replace "b") has different columns in each encoding.
	for _, tc := range []struct {
		name string
		utf8 bool
		col  int
	}{{"utf-16", false, 3}, {"utf-8", true, 5}} {
		t.Run(tc.name, func(t *testing.T) {
			e := start(t)
			root := t.TempDir()
			e.Initialize(rpctest.InitParams{Roots: []string{root}, UTF8: tc.utf8})
			path := filepath.Join(root, "a.txt")
			e.Open(path, "a😀b\r\n漢字\n")
			v := e.Change(path, rpctest.Edit{StartLine: 0, StartChar: tc.col, EndLine: 0, EndChar: tc.col + 1, Text: "B"})
			assertText(t, e, path, "a😀B\r\n漢字\n", v)
			v = e.Replace(path, "whole new text")
			assertText(t, e, path, "whole new text", v)
			e.Save(path)
			e.CloseDoc(path)
			res, err := e.Call("test/text", map[string]any{"path": path})
			if err != nil || string(res) != "null" {
				t.Fatalf("closed buffer still tracked: %s %v", res, err)
			}
		})
	}
}

// Notifications are applied in arrival order, and a request sees every
// change sent before it, even with hundreds of changes in flight.
func TestChangesAreAppliedInOrderBeforeLaterRequests(t *testing.T) {
	e := start(t)
	root := t.TempDir()
	e.Initialize(rpctest.InitParams{Roots: []string{root}})
	path := filepath.Join(root, "typing.txt")
	e.Open(path, "")
	var want strings.Builder
	var v int32
	for i := 0; i < 500; i++ {
		ch := string(rune('a' + i%26))
		v = e.Change(path, rpctest.Edit{StartLine: 0, StartChar: i, EndLine: 0, EndChar: i, Text: ch})
		want.WriteString(ch)
	}
	assertText(t, e, path, want.String(), v)
}

func TestOutOfRangeChangeIsLoggedAndLeavesBufferIntact(t *testing.T) {
	e := start(t)
	root := t.TempDir()
	e.Initialize(rpctest.InitParams{Roots: []string{root}})
	path := filepath.Join(root, "a.txt")
	e.Open(path, "one\ntwo")
	e.Change(path, rpctest.Edit{StartLine: 5, StartChar: 0, EndLine: 5, EndChar: 1, Text: "x"})
	e.WaitNotification("window/logMessage", func(p json.RawMessage) bool {
		return strings.Contains(string(p), "out of range")
	})
	assertText(t, e, path, "one\ntwo", 1)
}

func TestWorkspaceFoldersChangeAtRuntime(t *testing.T) {
	e := start(t)
	a, b := t.TempDir(), t.TempDir()
	e.Initialize(rpctest.InitParams{Roots: []string{a}})
	e.Notify("workspace/didChangeWorkspaceFolders", map[string]any{"event": map[string]any{
		"added":   []any{map[string]any{"uri": rpctest.URI(b), "name": "b"}},
		"removed": []any{map[string]any{"uri": rpctest.URI(a), "name": "a"}},
	}})
	// A request after the notification sees its effect.
	if _, err := e.Call("test/text", map[string]any{"path": "/x"}); err != nil {
		t.Fatal(err)
	}
	roots := e.Server.Workspace().Roots.List()
	realB, _ := filepath.EvalSymlinks(b)
	if len(roots) != 1 || roots[0] != realB {
		t.Fatalf("roots = %v, want [%s]", roots, realB)
	}
	if _, err := os.Stat(realB); err != nil {
		t.Fatal(err)
	}
}

func TestSettingsFromInitializationOptionsAndConfigurationChanges(t *testing.T) {
	e := start(t)
	root := t.TempDir()
	e.Initialize(rpctest.InitParams{Roots: []string{root}, InitializationOptions: map[string]any{
		"approvalMode": "plan",
		"model":        map[string]any{"name": "from-model-alias"},
		"settings":     map[string]any{"model": map[string]any{"name": "from-settings", "baseUrl": "http://127.0.0.1:9/v1"}, "tools": map[string]any{"approvalMode": "yolo"}},
	}})
	st := e.Server.Workspace().Settings
	if m := st.Model(); m.Name != "from-model-alias" || m.BaseURL != "http://127.0.0.1:9/v1" {
		t.Fatalf("model = %+v; initializationOptions.model wins over settings.model field by field", m)
	}
	e.Notify("workspace/didChangeConfiguration", map[string]any{"settings": map[string]any{"tools": map[string]any{"approvalMode": "auto-edit"}}})
	if _, err := e.Call("test/text", map[string]any{"path": "/x"}); err != nil {
		t.Fatal(err)
	}
	if got := st.String("tools.approvalMode", ""); got != "auto-edit" {
		t.Errorf("after didChangeConfiguration: tools.approvalMode = %q", got)
	}
	if m := st.Model(); m.Name != "" {
		t.Errorf("didChangeConfiguration replaces the editor layer, yet the model name %q survived", m.Name)
	}
}

func TestInvalidApprovalModeIsRefused(t *testing.T) {
	e := start(t)
	_, err := e.Call("initialize", rpctest.InitParams{Roots: []string{t.TempDir()}, InitializationOptions: map[string]any{"approvalMode": "reckless"}}.Params())
	if !isCode(err, -32602) || !strings.Contains(err.Error(), "reckless") {
		t.Fatalf("got %v, want -32602 naming the mode", err)
	}
}

func TestBrokenWorkspaceSettingsWarnTheUser(t *testing.T) {
	e := start(t)
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".qwen"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".qwen", "settings.json"), []byte(`{"tools": {`), 0o644); err != nil {
		t.Fatal(err)
	}
	e.Initialize(rpctest.InitParams{Roots: []string{root}})
	e.WaitNotification("window/showMessage", func(p json.RawMessage) bool {
		return strings.Contains(string(p), "settings.json") && strings.Contains(string(p), `"type":2`)
	})
}
