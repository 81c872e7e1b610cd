package rpc_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// flavoredEditor is a rich editor on a server whose workspace plays
// another system's paths (workspace.PathSystem), with the scripted model
// and a client that answers workspace/applyEdit by applying nothing but
// recording the URI and sending the new text back under that URI.
type flavoredEditor struct {
	e     *rpctest.Editor
	model *modeltest.Server
	sid   string

	mu      sync.Mutex
	applied []string       // URIs of workspace/applyEdit, in order
	version map[string]int // by URI
	text    map[string]string
}

func startFlavored(t *testing.T, ps workspace.PathSystem, rootURI string) *flavoredEditor {
	t.Helper()
	m := modeltest.Start(t)
	dir := t.TempDir()
	ws := workspace.New(workspace.Options{Paths: ps, Settings: workspace.SettingsOptions{
		UserDir:    filepath.Join(dir, "home", ".qwen"),
		SystemPath: filepath.Join(dir, "etc", "settings.json"),
		Getenv:     func(string) (string, bool) { return "", false },
	}})
	t.Cleanup(func() { _ = ws.Close() })
	e := rpctest.Start(t, rpc.WithMethods(rpc.Options{Version: "test", Stderr: testLog{t}, Workspace: ws, QwenHome: filepath.Join(dir, "home", ".qwen")}, testMethods()))
	fe := &flavoredEditor{e: e, model: m, version: map[string]int{}, text: map[string]string{}}
	e.Handle("workspace/applyEdit", func(params json.RawMessage) (any, error) {
		var p struct {
			Edit struct {
				DocumentChanges []struct {
					TextDocument struct {
						URI string `json:"uri"`
					} `json:"textDocument"`
					Edits []rpctest.TextEdit `json:"edits"`
				} `json:"documentChanges"`
				Changes map[string][]rpctest.TextEdit `json:"changes"`
			} `json:"edit"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
		var uris []string
		for _, dc := range p.Edit.DocumentChanges {
			uris = append(uris, dc.TextDocument.URI)
		}
		for u := range p.Edit.Changes {
			uris = append(uris, u)
		}
		fe.mu.Lock()
		fe.applied = append(fe.applied, uris...)
		fe.mu.Unlock()
		// The client applies the edits to its buffer and sends the new
		// text under the document's URI, as an editor does.
		for _, dc := range p.Edit.DocumentChanges {
			fe.mu.Lock()
			text, ok := fe.text[dc.TextDocument.URI]
			fe.mu.Unlock()
			if !ok {
				return map[string]any{"applied": false, "failureReason": "no buffer for " + dc.TextDocument.URI}, nil
			}
			next, err := applyUTF8Edits(text, dc.Edits)
			if err != nil {
				return map[string]any{"applied": false, "failureReason": err.Error()}, nil
			}
			go fe.change(dc.TextDocument.URI, next)
		}
		return map[string]any{"applied": true}, nil
	})
	params := rpctest.InitParams{Rich: true, UTF8: true, ApplyEdit: true, DocumentChanges: true, InitializationOptions: map[string]any{
		"approvalMode": "yolo",
		"model":        map[string]any{"name": "scripted", "baseUrl": m.URL},
	}}.Params()
	params["workspaceFolders"] = []map[string]any{{"uri": rootURI, "name": "Proj"}}
	if _, err := e.Call("initialize", params); err != nil {
		t.Fatal(err)
	}
	e.Notify("initialized", map[string]any{})
	res, err := e.Call("qwen/newSession", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var ns struct{ SessionID string }
	json.Unmarshal(res, &ns)
	fe.sid = ns.SessionID
	return fe
}

func (fe *flavoredEditor) open(uri, text string) {
	fe.mu.Lock()
	fe.version[uri] = 1
	fe.text[uri] = text
	fe.mu.Unlock()
	fe.e.Notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{
		"uri": uri, "languageId": "plaintext", "version": 1, "text": text,
	}})
}

// change sets the text of the document opened as uri and sends it as a
// full-text didChange under sendAs (uri when empty).
func (fe *flavoredEditor) change(uri, text string, sendAs ...string) {
	fe.mu.Lock()
	fe.version[uri]++
	v := fe.version[uri]
	fe.text[uri] = text
	fe.mu.Unlock()
	u := uri
	if len(sendAs) > 0 {
		u = sendAs[0]
	}
	fe.e.Notify("textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": u, "version": v},
		"contentChanges": []any{map[string]any{"text": text}},
	})
}

// applyUTF8Edits applies LSP text edits with UTF-8 columns to text.
func applyUTF8Edits(text string, edits []rpctest.TextEdit) (string, error) {
	offset := func(line, char int) (int, error) {
		off := 0
		for i := 0; i < line; i++ {
			j := strings.IndexByte(text[off:], '\n')
			if j < 0 {
				return 0, fmt.Errorf("line %d is past the end", line)
			}
			off += j + 1
		}
		if off+char > len(text) {
			return 0, fmt.Errorf("column %d is past the end", char)
		}
		return off + char, nil
	}
	type span struct {
		from, to int
		text     string
	}
	var spans []span
	for _, e := range edits {
		from, err := offset(e.Range.Start.Line, e.Range.Start.Character)
		if err != nil {
			return "", err
		}
		to, err := offset(e.Range.End.Line, e.Range.End.Character)
		if err != nil {
			return "", err
		}
		spans = append(spans, span{from, to, e.NewText})
	}
	// From the end, so earlier offsets stay valid.
	for i := len(spans) - 1; i >= 0; i-- {
		s := spans[i]
		text = text[:s.from] + s.text + text[s.to:]
	}
	return text, nil
}

func (fe *flavoredEditor) appliedURIs() []string {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	return append([]string(nil), fe.applied...)
}

// run has the model call the tools in calls, then stop, and returns the
// tool results by call id.
func (fe *flavoredEditor) run(t *testing.T, calls ...modeltest.ToolCall) map[string]string {
	t.Helper()
	before := len(fe.model.Requests())
	fe.model.Push(modeltest.Response{ToolCalls: calls}, modeltest.Response{Text: "done"})
	if _, err := fe.e.Call("qwen/prompt", map[string]any{"sessionId": fe.sid, "prompt": []any{map[string]any{"type": "text", "text": "go"}}}); err != nil {
		t.Fatal(err)
	}
	reqs := fe.model.Requests()
	if len(reqs) != before+2 {
		t.Fatalf("%d model requests, want %d", len(reqs), before+2)
	}
	out := map[string]string{}
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "tool" {
			out[m.ToolCallID] = m.Text()
		}
	}
	return out
}

func args(kv ...string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// Windows paths played on this machine: drive C: is a temp folder. A root
// and a document named in VS Code's form ("file:///c%3A/...") and a
// document in Neovim's form ("file:///C:/...") are read and edited by the
// tools under case-only-different names, and every workspace/applyEdit
// names the document exactly as the client did (issue 21, acceptance 2).
func TestDriveLetterURIsRoundTripInTheClientsForm(t *testing.T) {
	drive := t.TempDir()
	proj := filepath.Join(drive, "Users", "Me", "Proj")
	os.MkdirAll(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("disk a\n"), 0o644)
	os.WriteFile(filepath.Join(proj, "b.txt"), []byte("disk b\n"), 0o644)
	ps := workspace.PathSystem{Flavor: workspace.WindowsPaths, Volumes: map[string]string{"C:": drive}}
	fe := startFlavored(t, ps, "file:///c%3A/Users/Me/Proj")

	vscodeURI := "file:///c%3A/Users/Me/Proj/a.txt"
	neovimURI := "file:///C:/Users/Me/Proj/b.txt"
	fe.open(vscodeURI, "unsaved a\n")
	fe.open(neovimURI, "unsaved b\n")
	// The same document under the other encoding is the same buffer: a
	// change sent in Neovim's form reaches the buffer opened in VS Code's.
	fe.change(vscodeURI, "unsaved a, changed\n", "file:///C:/users/me/proj/A.TXT")

	// The tools see native paths; the model names them with another case.
	aOther := filepath.Join(drive, "Users", "me", "PROJ", "A.txt")
	bOther := filepath.Join(drive, "users", "ME", "proj", "B.TXT")
	got := fe.run(t,
		modeltest.ToolCall{ID: "ra", Name: "read_file", Arguments: args("absolute_path", aOther)},
		modeltest.ToolCall{ID: "rb", Name: "read_file", Arguments: args("absolute_path", bOther)},
	)
	if got["ra"] != "unsaved a, changed\n" || got["rb"] != "unsaved b\n" {
		t.Fatalf("read_file under other cases = %q, %q; want the open buffers", got["ra"], got["rb"])
	}
	got = fe.run(t,
		modeltest.ToolCall{ID: "ea", Name: "edit", Arguments: args("file_path", aOther, "old_string", "unsaved a, changed", "new_string", "edited a")},
		modeltest.ToolCall{ID: "eb", Name: "edit", Arguments: args("file_path", bOther, "old_string", "unsaved b", "new_string", "edited b")},
	)
	applied := fe.appliedURIs()
	if len(applied) != 2 || applied[0] != vscodeURI || applied[1] != neovimURI {
		t.Fatalf("workspace/applyEdit URIs = %q, want [%q %q] (results %q)", applied, vscodeURI, neovimURI, got)
	}
	// The edits landed in the buffers, and the disk is untouched.
	fe.mu.Lock()
	ta, tb := fe.text[vscodeURI], fe.text[neovimURI]
	fe.mu.Unlock()
	if ta != "edited a\n" || tb != "edited b\n" {
		t.Errorf("buffers after the edits = %q, %q (results %q)", ta, tb, got)
	}
	if data, _ := os.ReadFile(filepath.Join(proj, "a.txt")); string(data) != "disk a\n" {
		t.Errorf("a.txt on disk = %q", data)
	}
}

// macOS and Linux flavours over one real folder: a case-only-different
// name is the open document (inside the root) on macOS's case-insensitive
// file system, and outside the workspace on Linux's.
func TestCaseOnlyDifferentPathsFollowTheFlavor(t *testing.T) {
	for _, f := range []workspace.PathFlavor{workspace.DarwinPaths, workspace.LinuxPaths} {
		t.Run(f.Name, func(t *testing.T) {
			root, _ := filepath.EvalSymlinks(t.TempDir())
			proj := filepath.Join(root, "Proj")
			os.MkdirAll(proj, 0o755)
			os.WriteFile(filepath.Join(proj, "a.txt"), []byte("disk\n"), 0o644)
			rootURI := workspace.NativePaths().URIFromPath(proj, workspace.URIForm{})
			fe := startFlavored(t, workspace.PathSystem{Flavor: f}, rootURI)
			docURI := rootURI + "/a.txt"
			fe.open(docURI, "unsaved\n")
			other := filepath.Join(root, "PROJ", "A.TXT")
			got := fe.run(t, modeltest.ToolCall{ID: "r", Name: "read_file", Arguments: args("absolute_path", other)})
			got2 := fe.run(t, modeltest.ToolCall{ID: "e", Name: "edit", Arguments: args("file_path", other, "old_string", "unsaved", "new_string", "edited")})
			applied := fe.appliedURIs()
			if f.CaseInsensitive {
				if got["r"] != "unsaved\n" || len(applied) != 1 || applied[0] != docURI {
					t.Fatalf("read = %q, applyEdit URIs = %q (edit: %q); want the buffer and %q", got["r"], applied, got2["e"], docURI)
				}
				return
			}
			if !strings.Contains(got["r"], "outside the workspace") || len(applied) != 0 {
				t.Fatalf("read = %q, applyEdit URIs = %q; want outside the workspace and no edit", got["r"], applied)
			}
		})
	}
}
