package rpc_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// A client that knows only LSP (Helix, Kate, eglot, bare Neovim): no
// experimental.qwen, with showMessageRequest, and optionally showDocument
// and workspace/applyEdit.
type plainClient struct {
	*agent
	init json.RawMessage

	mu    sync.Mutex
	shown []map[string]any
	// opensShown makes the editor open a shown document it does not
	// have open (didOpen), as Neovim attached to Markdown does.
	opensShown bool
}

func startPlain(t *testing.T, showDocument, applyEdit bool) *plainClient {
	t.Helper()
	m := modeltest.Start(t)
	e := rpctest.Start(t, rpc.WithMethods(rpc.Options{Version: "test", Stderr: testLog{t}}, testMethods()))
	root, _ := filepath.EvalSymlinks(t.TempDir())
	ip := rpctest.InitParams{Roots: []string{root}, ShowMessage: true, ApplyEdit: applyEdit, DocumentChanges: applyEdit,
		InitializationOptions: map[string]any{"approvalMode": "default", "model": map[string]any{"name": "scripted", "baseUrl": m.URL}}}
	params := ip.Params()
	if showDocument {
		params["capabilities"].(map[string]any)["window"].(map[string]any)["showDocument"] = map[string]any{"support": true}
	}
	c := &plainClient{agent: &agent{e: e, model: m, root: root}}
	e.Handle("window/workDoneProgress/create", func(json.RawMessage) (any, error) { return nil, nil })
	e.Handle("window/showDocument", func(p json.RawMessage) (any, error) {
		var v map[string]any
		json.Unmarshal(p, &v)
		// What the file held when the editor was asked to show it.
		if uri, _ := v["uri"].(string); strings.HasPrefix(uri, "file://") {
			data, _ := os.ReadFile(strings.TrimPrefix(uri, "file://"))
			v["onDisk"] = string(data)
		}
		c.mu.Lock()
		c.shown = append(c.shown, v)
		opens := c.opensShown
		c.mu.Unlock()
		if path := strings.TrimPrefix(v["uri"].(string), "file://"); opens && c.e.Text(path) == "" {
			c.e.OpenTracked(path, v["onDisk"].(string))
			c.reloadOnProgress(path)
		}
		return map[string]any{"success": true}, nil
	})
	res, err := e.Call("initialize", params)
	if err != nil {
		t.Fatal(err)
	}
	e.Notify("initialized", map[string]any{})
	c.init = res
	return c
}

func (c *plainClient) shownDocs() []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]map[string]any(nil), c.shown...)
}

type codeAction struct {
	Title       string            `json:"title"`
	Kind        string            `json:"kind"`
	Diagnostics []json.RawMessage `json:"diagnostics"`
	Command     struct {
		Command   string            `json:"command"`
		Arguments []json.RawMessage `json:"arguments"`
	} `json:"command"`
}

func (c *plainClient) codeActions(t *testing.T, path string, l1, c1, l2, c2 int, diags ...any) []codeAction {
	t.Helper()
	if diags == nil {
		diags = []any{}
	}
	res, err := c.e.Call("textDocument/codeAction", map[string]any{
		"textDocument": map[string]any{"uri": rpctest.URI(path)},
		"range":        lspRange(l1, c1, l2, c2),
		"context":      map[string]any{"diagnostics": diags},
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []codeAction
	if err := json.Unmarshal(res, &out); err != nil {
		t.Fatalf("%s: %v", res, err)
	}
	return out
}

func lspRange(l1, c1, l2, c2 int) map[string]any {
	return map[string]any{"start": map[string]any{"line": l1, "character": c1}, "end": map[string]any{"line": l2, "character": c2}}
}

func (c *plainClient) run(a codeAction) (json.RawMessage, error) {
	return c.e.Call("workspace/executeCommand", map[string]any{"command": a.Command.Command, "arguments": a.Command.Arguments})
}

func find(t *testing.T, actions []codeAction, prefix string) codeAction {
	t.Helper()
	for _, a := range actions {
		if strings.HasPrefix(a.Title, prefix) {
			return a
		}
	}
	t.Fatalf("no code action %q among %+v", prefix, actions)
	return codeAction{}
}

// reloadOnProgress makes the editor read the open document at path again
// on each $/progress, as Neovim with the README's snippet does: it closes
// the document and opens it again.
func (c *plainClient) reloadOnProgress(path string) {
	c.e.OnNotification("$/progress", func(json.RawMessage) {
		if data, err := os.ReadFile(path); err == nil && string(data) != c.e.Text(path) {
			c.e.CloseDoc(path)
			c.e.OpenTracked(path, string(data))
		}
	})
}

// transcriptFile is the one transcript under the test's qwen home.
func (c *plainClient) transcriptFile(t *testing.T) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(c.e.Home, "transcripts", "*", "*.md"))
	if len(files) != 1 {
		t.Fatalf("transcripts = %v", files)
	}
	return files[0]
}

func (c *plainClient) messages(level int) []string {
	var out []string
	for _, n := range c.e.Notifications("window/showMessage") {
		var m struct {
			Type    int
			Message string
		}
		json.Unmarshal(n.Params, &m)
		if level == 0 || m.Type == level {
			out = append(out, m.Message)
		}
	}
	return out
}

func TestPlainClientIsOfferedCodeActionsRichIsNot(t *testing.T) {
	c := startPlain(t, false, false)
	if !strings.Contains(string(c.init), `"codeActionProvider":true`) {
		t.Fatalf("plain initialize result has no codeActionProvider: %s", c.init)
	}
	for _, cmd := range []string{"qwen-ls.prompt", "qwen-ls.cancel", "qwen-ls.checkSetup", "qwen-ls.ask"} {
		if !strings.Contains(string(c.init), `"`+cmd+`"`) {
			t.Errorf("executeCommandProvider lacks %s: %s", cmd, c.init)
		}
	}
}

func TestRichClientIsOfferedNoCodeActions(t *testing.T) {
	rich := rpctest.Start(t, rpc.Options{Version: "test", Stderr: testLog{t}})
	root := t.TempDir()
	res := rich.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true})
	if strings.Contains(string(res), "codeActionProvider") {
		t.Fatalf("a rich client was offered code actions: %s", res)
	}
	p := filepath.Join(root, "a.go")
	os.WriteFile(p, []byte("package a\n"), 0o644)
	out, err := rich.Call("textDocument/codeAction", map[string]any{
		"textDocument": map[string]any{"uri": rpctest.URI(p)}, "range": lspRange(0, 0, 0, 9), "context": map[string]any{"diagnostics": []any{}},
	})
	if err != nil || string(out) != "[]" {
		t.Fatalf("rich code actions = %s %v", out, err)
	}
}

// A prompt started from a code action: the prompt carries the selection,
// its path and lines; the transcript is written and shown (taking focus,
// inside the editor); the turn reports $/progress; the answer comes in
// window/showMessage and in the command's result.
func TestPlainExplainCodeActionRunsAPromptIntoTheTranscript(t *testing.T) {
	c := startPlain(t, true, false)
	c.opensShown = true
	p := filepath.Join(c.root, "calc.go")
	os.WriteFile(p, []byte("package calc\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n"), 0o644)
	actions := c.codeActions(t, p, 2, 0, 4, 1)
	var titles []string
	for _, a := range actions {
		titles = append(titles, a.Title)
	}
	if strings.Join(titles, "|") != "Qwen: explain|Qwen: fix this|Qwen: ask about selection…" {
		t.Fatalf("titles = %q", titles)
	}
	c.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "read", Name: "read_file", Arguments: jsonArgs("absolute_path", p)}}},
		modeltest.Response{Text: "Add subtracts: it returns a - b."},
	)
	res, err := c.run(find(t, actions, "Qwen: explain"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res), "Add subtracts") {
		t.Fatalf("result = %s", res)
	}
	first := c.model.Requests()[0]
	var user string
	for _, m := range first.Messages {
		if m.Role == "user" {
			user = m.Text()
		}
	}
	for _, want := range []string{"Explain this code from calc.go (lines 3-5)", "```go\nfunc Add(a, b int) int {\n\treturn a - b\n}\n```"} {
		if !strings.Contains(user, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, user)
		}
	}
	path := c.transcriptFile(t)
	data, _ := os.ReadFile(path)
	text := string(data)
	for _, want := range []string{"## You\n\nExplain this code from calc.go", "## qwen\n\n- ✓ ", "Add subtracts: it returns a - b.\n\n## You\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("transcript lacks %q:\n%s", want, text)
		}
	}
	// The transcript is shown beside the code, which keeps the focus: at
	// the start with the cursor on the prompt, at the end on the answer,
	// each time once the file holds what the cursor is put on (each
	// after a request on its last line, which brings the end into view).
	// The first request opens it: the editor's text is not known yet, so
	// it puts the cursor nowhere.
	shown := c.shownDocs()
	if len(shown) != 4 {
		t.Fatalf("showDocument = %v", shown)
	}
	for i, want := range []string{"none", "## You", "", "## qwen"} {
		d := shown[i]
		if d["uri"] != rpctest.URI(path) || d["takeFocus"] != false || d["external"] != false {
			t.Fatalf("showDocument %d = %v (transcript %s)", i, d, path)
		}
		if want == "none" {
			if d["selection"] != nil {
				t.Fatalf("showDocument %d of a document the editor has not opened has a selection: %v", i, d)
			}
			continue
		}
		lines := strings.Split(d["onDisk"].(string), "\n")
		line := int(d["selection"].(map[string]any)["start"].(map[string]any)["line"].(float64))
		if want == "" {
			// The last line of the file, the empty one below a heading.
			if line != len(lines)-2 {
				t.Fatalf("showDocument %d: line %d of %d lines", i, line, len(lines))
			}
			continue
		}
		if line >= len(lines) || lines[line] != want {
			t.Fatalf("showDocument %d: line %d is not %q in\n%s", i, line, want, d["onDisk"])
		}
	}
	if !strings.Contains(shown[1]["onDisk"].(string), "Explain this code") || !strings.Contains(shown[3]["onDisk"].(string), "Add subtracts") {
		t.Fatalf("shown before the file held the prompt or the answer: %v", shown)
	}
	if msgs := c.messages(3); len(msgs) != 1 || msgs[0] != "qwen: Add subtracts: it returns a - b." {
		t.Fatalf("showMessage = %q", msgs)
	}
	var kinds []string
	for _, n := range c.e.Notifications("$/progress") {
		var v struct {
			Value struct{ Kind, Title, Message string }
		}
		json.Unmarshal(n.Params, &v)
		if v.Value.Title == "qwen: working" || len(kinds) > 0 {
			kinds = append(kinds, v.Value.Kind+":"+v.Value.Message)
		}
	}
	if len(kinds) < 3 || kinds[0] != "begin:" || !strings.HasPrefix(kinds[1], "report:") || kinds[len(kinds)-1] != "end:end_turn" {
		t.Fatalf("progress = %q", kinds)
	}
}

func TestPlainFixThisOnADiagnosticNamesTheProblem(t *testing.T) {
	c := startPlain(t, false, false)
	p := filepath.Join(c.root, "a.py")
	os.WriteFile(p, []byte("x = 1\nprint(y)\n"), 0o644)
	diag := map[string]any{"range": lspRange(1, 6, 1, 7), "message": "undefined name 'y'", "source": "pyflakes", "severity": 1}
	actions := c.codeActions(t, p, 1, 6, 1, 6, diag)
	fix := find(t, actions, "Qwen: fix this (undefined name 'y')")
	if fix.Kind != "quickfix" || len(fix.Diagnostics) != 1 {
		t.Fatalf("fix action = %+v", fix)
	}
	var text string
	json.Unmarshal(fix.Command.Arguments[0], &text)
	for _, want := range []string{"a.py at line 2: undefined name 'y' (pyflakes)", "print(y)"} {
		if !strings.Contains(text, want) {
			t.Errorf("prompt lacks %q: %s", want, text)
		}
	}
	// The empty range is the cursor's line.
	var explain string
	json.Unmarshal(find(t, actions, "Qwen: explain").Command.Arguments[0], &explain)
	if !strings.Contains(explain, "a.py (line 2)") || !strings.Contains(explain, "```py\nprint(y)\n```") {
		t.Fatalf("explain prompt = %s", explain)
	}
}

// The transcript open in the editor is written on disk, never changed
// through workspace/applyEdit (that would leave the editor's document
// unsaved, and the file behind it); a question written under the last
// "## You" and saved is sent as the next prompt, and the file then holds
// the whole conversation. Each write is followed by $/progress, the
// signal to reload on.
func TestPlainTranscriptOpenInTheEditorIsTheChat(t *testing.T) {
	c := startPlain(t, true, true)
	c.e.ApplyEditsLikeAnEditor(false)
	c.model.Push(modeltest.Response{Text: "hello there"})
	if _, err := c.execPrompt("hi"); err != nil {
		t.Fatal(err)
	}
	path := c.transcriptFile(t)
	onDisk, _ := os.ReadFile(path)
	// The editor opens the shown document, and reads it again on each
	// $/progress, as Neovim with the README's snippet does: it closes the
	// document and opens it again.
	c.e.OpenTracked(path, string(onDisk))
	c.reloadOnProgress(path)
	p := filepath.Join(c.root, "a.txt")
	os.WriteFile(p, []byte("alpha\n"), 0o644)
	c.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "read", Name: "read_file", Arguments: jsonArgs("absolute_path", p)}}},
		modeltest.Response{Text: "the second answer"},
	)
	question := string(onDisk) + "what is 2+2?\n"
	c.e.ReplaceTracked(path, question)
	// The editor saves what it holds.
	os.WriteFile(path, []byte(question), 0o600)
	shownBefore := len(c.shownDocs())
	progressBefore := len(c.e.Notifications("$/progress"))
	c.e.Notify("textDocument/didSave", map[string]any{"textDocument": map[string]any{"uri": rpctest.URI(path)}})
	c.e.WaitNotification("window/showMessage", func(p json.RawMessage) bool { return strings.Contains(string(p), "the second answer") })
	reqs := c.model.Requests()
	last := reqs[len(reqs)-1].Messages
	if got := last[len(last)-3].Text(); got != "what is 2+2?" {
		t.Fatalf("the saved question was sent as %q", got)
	}
	want := question + "\n## qwen\n\n- ✓ read a.txt\n\nthe second answer\n\n## You\n\n"
	if now, _ := os.ReadFile(path); string(now) != want {
		t.Fatalf("on disk =\n%q\nwant\n%q", now, want)
	}
	if len(c.e.AppliedEdits()) != 0 || len(c.e.Requests("workspace/applyEdit")) != 0 {
		t.Fatalf("the open transcript was changed through workspace/applyEdit: %v", c.e.AppliedEdits())
	}
	if got := c.e.Text(path); got != want {
		t.Fatalf("the editor's document, read again, is not the file: %q", got)
	}
	// The person is in the transcript: it is not shown at the start, and
	// at the end only to bring the answer into view, without focus; the
	// answer's message is one line.
	shown := c.shownDocs()[shownBefore:]
	if len(shown) != 2 || shown[0]["takeFocus"] != false || shown[1]["takeFocus"] != false ||
		shown[1]["selection"].(map[string]any)["start"].(map[string]any)["line"].(float64) != float64(strings.Count(question, "\n")+1) {
		t.Fatalf("a turn asked in the transcript showed it: %v", shown)
	}
	if msgs := c.messages(3); msgs[len(msgs)-1] != "qwen: the second answer" {
		t.Fatalf("showMessage = %q", msgs)
	}
	var kinds []string
	for _, n := range c.e.Notifications("$/progress")[progressBefore:] {
		var v struct {
			Value struct{ Kind, Message string }
		}
		json.Unmarshal(n.Params, &v)
		kinds = append(kinds, v.Value.Kind+":"+v.Value.Message)
	}
	if strings.Join(kinds, "|") != "begin:|report:a.txt|report:✓ read a.txt|end:end_turn" {
		t.Fatalf("progress = %q", kinds)
	}
	// Saving again sends nothing: the question was answered.
	n := len(c.model.Requests())
	c.e.ReplaceTracked(path, want)
	c.e.Notify("textDocument/didSave", map[string]any{"textDocument": map[string]any{"uri": rpctest.URI(path)}})
	if _, err := c.e.Call("workspace/executeCommand", map[string]any{"command": "qwen-ls.cancel"}); err != nil {
		t.Fatal(err)
	}
	if len(c.model.Requests()) != n {
		t.Fatal("an answered question was sent again")
	}
}

// An editor that has the transcript open and does not read it again
// after a write (Helix, or Neovim without the snippet's autocmd) is waited
// for once, and is never asked to show a line it does not have. The file
// on disk holds everything; the editor's document is never changed.
func TestPlainTranscriptIsShownAsTheEditorHasIt(t *testing.T) {
	c := startPlain(t, true, true)
	c.e.ApplyEditsLikeAnEditor(false)
	c.model.Push(modeltest.Response{Text: "first"})
	if _, err := c.execPrompt("one"); err != nil {
		t.Fatal(err)
	}
	path := c.transcriptFile(t)
	onDisk, _ := os.ReadFile(path)
	c.e.OpenTracked(path, string(onDisk))
	have := strings.Count(string(onDisk), "\n") - 1
	before := len(c.shownDocs())
	for _, answer := range []string{"second", "third"} {
		c.model.Push(modeltest.Response{Text: answer})
		if _, err := c.execPrompt("next"); err != nil {
			t.Fatal(err)
		}
	}
	shown := c.shownDocs()[before:]
	if len(shown) == 0 {
		t.Fatal("nothing shown")
	}
	for _, d := range shown {
		if line := d["selection"].(map[string]any)["start"].(map[string]any)["line"].(float64); line > float64(have) {
			t.Fatalf("asked to show line %v of an editor's document that ends at line %d", line, have)
		}
	}
	if got := c.e.Text(path); got != string(onDisk) || len(c.e.AppliedEdits()) != 0 {
		t.Fatalf("the editor's document was changed: %q", got)
	}
	data, _ := os.ReadFile(path)
	if !strings.HasSuffix(string(data), "## You\n\nnext\n\n## qwen\n\nsecond\n\n## You\n\nnext\n\n## qwen\n\nthird\n\n## You\n\n") {
		t.Fatalf("on disk:\n%s", data)
	}
}

// "Ask about selection…" puts the selection under the open "## You"
// heading; saved alone it is not sent; with a question below it, both go.
func TestPlainAskAboutSelection(t *testing.T) {
	c := startPlain(t, true, true)
	c.e.ApplyEditsLikeAnEditor(false)
	c.opensShown = true
	p := filepath.Join(c.root, "a.txt")
	os.WriteFile(p, []byte("alpha\nbeta\ngamma\n"), 0o644)
	res, err := c.run(find(t, c.codeActions(t, p, 1, 0, 2, 0), "Qwen: ask about selection"))
	if err != nil {
		t.Fatal(err)
	}
	path := c.transcriptFile(t)
	if !strings.Contains(string(res), path) {
		t.Fatalf("result = %s", res)
	}
	// Shown beside the code first, then focused, with the cursor below
	// the selection, where the question goes.
	if s := c.shownDocs(); len(s) != 2 || s[0]["takeFocus"] != false || s[1]["takeFocus"] != true ||
		!strings.HasSuffix(s[1]["onDisk"].(string), "-->\n\n") ||
		s[1]["selection"].(map[string]any)["start"].(map[string]any)["line"].(float64) != float64(strings.Count(s[1]["onDisk"].(string), "\n")-1) {
		t.Fatalf("shown = %v", s)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), "## You\n\nAbout a.txt (line 2):\n\n```txt\nbeta\n```") {
		t.Fatalf("transcript:\n%s", data)
	}
	// The write is told with $/progress, as a turn's are: an editor
	// that has the transcript open reloads it on that.
	var kinds []string
	for _, n := range c.e.Notifications("$/progress") {
		var v struct {
			Value struct{ Kind, Title string }
		}
		json.Unmarshal(n.Params, &v)
		kinds = append(kinds, v.Value.Kind+":"+v.Value.Title)
	}
	if strings.Join(kinds, "|") != "begin:qwen: transcript|end:" {
		t.Fatalf("progress = %q", kinds)
	}
	// The editor opened the shown document.
	save := func() {
		c.e.Notify("textDocument/didSave", map[string]any{"textDocument": map[string]any{"uri": rpctest.URI(path)}})
	}
	save()
	if _, err := c.e.Call("workspace/executeCommand", map[string]any{"command": "qwen-ls.cancel"}); err != nil {
		t.Fatal(err)
	}
	if len(c.model.Requests()) != 0 {
		t.Fatal("the selection alone was sent as a question")
	}
	c.model.Push(modeltest.Response{Text: "beta is the second letter"})
	c.e.ReplaceTracked(path, string(data)+"Why beta?\n")
	save()
	c.e.WaitNotification("window/showMessage", func(p json.RawMessage) bool { return strings.Contains(string(p), "second letter") })
	msgs := c.model.Requests()[0].Messages
	got := msgs[len(msgs)-1].Text()
	if !strings.Contains(got, "```txt\nbeta\n```") || !strings.HasSuffix(got, "Why beta?") || strings.Contains(got, "<!--") {
		t.Fatalf("question sent = %q", got)
	}
}

func TestPlainPromptWithoutTextSaysWhatToDo(t *testing.T) {
	c := startPlain(t, true, false)
	for _, args := range []any{nil, []any{}, []any{"  "}} {
		params := map[string]any{"command": "qwen-ls.prompt"}
		if args != nil {
			params["arguments"] = args
		}
		res, err := c.e.Call("workspace/executeCommand", params)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		var out struct{ Message, Transcript string }
		json.Unmarshal(res, &out)
		for _, want := range []string{`arguments: ["your prompt"]`, "Qwen: explain", "Qwen: ask about selection", `"## You"`, out.Transcript} {
			if out.Transcript == "" || !strings.Contains(out.Message, want) {
				t.Fatalf("%v: answer %s lacks %q", args, res, want)
			}
		}
	}
	if msgs := c.messages(3); len(msgs) != 3 || !strings.Contains(msgs[0], "qwen-ls.prompt needs the prompt text") {
		t.Fatalf("showMessage = %q", msgs)
	}
	data, _ := os.ReadFile(c.transcriptFile(t))
	if strings.Count(string(data), "\n## You\n") != 1 || !strings.HasSuffix(string(data), "## You\n\n") {
		t.Fatalf("transcript:\n%s", data)
	}
	if len(c.model.Requests()) != 0 {
		t.Fatal("an empty prompt reached the model")
	}
}

// The edit confirmation shows the diff, the path once; the accepted edit
// of a closed file is announced.
func TestPlainEditConfirmationShowsTheDiff(t *testing.T) {
	c := startPlain(t, false, false)
	p := filepath.Join(c.root, "notes.txt")
	var old, repl strings.Builder
	for i := 1; i <= 80; i++ {
		fmt.Fprintf(&old, "line %d\n", i)
		fmt.Fprintf(&repl, "LINE %d\n", i)
	}
	os.WriteFile(p, []byte("keep\n"+old.String()), 0o644)
	var asked []string
	c.e.Handle("window/showMessageRequest", func(params json.RawMessage) (any, error) {
		var m struct{ Message string }
		json.Unmarshal(params, &m)
		asked = append(asked, m.Message)
		return map[string]any{"title": "Allow"}, nil
	})
	c.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "read", Name: "read_file", Arguments: jsonArgs("absolute_path", p)}}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "w", Name: "write_file", Arguments: jsonArgs("file_path", p, "content", "keep\n"+repl.String())}}},
		modeltest.Response{Text: "done"},
	)
	if _, err := c.execPrompt("shout"); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 {
		t.Fatalf("asked %d times", len(asked))
	}
	msg := asked[0]
	lines := strings.Split(msg, "\n")
	if lines[0] != "qwen-ls wants to edit notes.txt (+80 -80):" || strings.Count(msg, "notes.txt") != 1 || strings.Contains(msg, c.root) {
		t.Fatalf("head = %q (path must appear once)", lines[0])
	}
	if !strings.Contains(msg, "\n keep\n-line 1\n-line 2\n") || !strings.HasSuffix(msg, "… 102 more lines") || len(lines) != 2+60+1 {
		t.Fatalf("message (%d lines):\n%s", len(lines), msg)
	}
	if msgs := c.messages(3); len(msgs) < 1 || msgs[0] != "qwen-ls wrote notes.txt (+80 -80)" {
		t.Fatalf("showMessage = %q", msgs)
	}
}

// An edit of a buffer open in the editor is no disk write: no notice.
func TestPlainEditOfAnOpenBufferIsNotAnnounced(t *testing.T) {
	c := startPlain(t, false, true)
	c.e.ApplyEditsLikeAnEditor(false)
	p := filepath.Join(c.root, "a.txt")
	os.WriteFile(p, []byte("old\n"), 0o644)
	c.e.OpenTracked(p, "old\n")
	c.e.Handle("window/showMessageRequest", func(json.RawMessage) (any, error) { return map[string]any{"title": "Allow"}, nil })
	c.readThenEdit(p, "old", "new")
	if _, err := c.execPrompt("change it"); err != nil {
		t.Fatal(err)
	}
	if c.e.Text(p) != "new\n" {
		t.Fatalf("buffer = %q", c.e.Text(p))
	}
	// Without a label, which Neovim would print as a message.
	for _, r := range c.e.Requests("workspace/applyEdit") {
		if strings.Contains(string(r.Params), `"label"`) {
			t.Fatalf("workspace/applyEdit with a label: %s", r.Params)
		}
	}
	for _, m := range c.messages(0) {
		if strings.Contains(m, "wrote") {
			t.Fatalf("announced a buffer edit: %q", m)
		}
	}
}

func TestPlainLongAnswerIsCutInTheMessage(t *testing.T) {
	c := startPlain(t, false, false)
	long := strings.Repeat("word ", 400)
	c.model.Push(modeltest.Response{Text: long})
	if _, err := c.execPrompt("talk"); err != nil {
		t.Fatal(err)
	}
	path := c.transcriptFile(t)
	msgs := c.messages(3)
	if len(msgs) != 1 || !strings.HasSuffix(msgs[0], "… (full text in the transcript "+path+")") || len([]rune(msgs[0])) > 800 {
		t.Fatalf("showMessage = %q", msgs)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), strings.TrimSpace(long)) {
		t.Fatal("the transcript lacks the full answer")
	}
	// Without showDocument nothing was asked to be shown.
	if len(c.shownDocs()) != 0 {
		t.Fatal("showDocument sent to a client without it")
	}
}

// When the editor shows the transcript, the answer's message is one line:
// a longer one would stop Neovim (press Enter) to show what the
// transcript shows. The transcript holds it all.
func TestPlainAnswerMessageIsOneLineWhenTheTranscriptIsShown(t *testing.T) {
	c := startPlain(t, true, false)
	answer := "## Summary\n\n" + strings.Repeat("The package adds and scales numbers. ", 3) + "\n\n- one\n- two"
	c.model.Push(modeltest.Response{Text: answer})
	if _, err := c.execPrompt("summarise"); err != nil {
		t.Fatal(err)
	}
	if msgs := c.messages(3); len(msgs) != 1 || msgs[0] != "qwen: Summary …" {
		t.Fatalf("showMessage = %q", msgs)
	}
	// The editor never told the server it opened the transcript: it may
	// hold an older copy, so no request puts the cursor on a line.
	for _, d := range c.shownDocs() {
		if d["selection"] != nil {
			t.Fatalf("a selection in a document the editor has not opened: %v", d)
		}
	}
	c.model.Push(modeltest.Response{Text: strings.Repeat("word ", 40)})
	if _, err := c.execPrompt("talk"); err != nil {
		t.Fatal(err)
	}
	msgs := c.messages(3)
	if got := msgs[len(msgs)-1]; len([]rune(got)) != answerLine || !strings.HasSuffix(got, "…") || strings.Contains(got, "\n") {
		t.Fatalf("showMessage = %q", got)
	}
	data, _ := os.ReadFile(c.transcriptFile(t))
	if !strings.Contains(string(data), "## qwen\n\n"+answer+"\n\n## You\n") || !strings.Contains(string(data), strings.TrimSpace(strings.Repeat("word ", 40))) {
		t.Fatalf("transcript:\n%s", data)
	}
}

// answerLine is the length of the one-line answer message
// (docs/protocol.md, "Plain LSP clients").
const answerLine = 60

// A failed turn is told in the transcript and with an error message.
func TestPlainFailedTurnIsShown(t *testing.T) {
	c := startPlain(t, false, false)
	c.model.Push(modeltest.Response{Status: 404}, modeltest.Response{Status: 404}, modeltest.Response{Status: 404})
	if _, err := c.execPrompt("hi"); err == nil {
		t.Fatal("a failed turn answered no error")
	}
	if msgs := c.messages(1); len(msgs) != 1 || !strings.HasPrefix(msgs[0], "qwen: ") || strings.Contains(msgs[0], "jsonrpc2") || !strings.Contains(msgs[0], "model.name") {
		t.Fatalf("error messages = %q", msgs)
	}
	data, _ := os.ReadFile(c.transcriptFile(t))
	if !strings.Contains(string(data), "**Error:** ") || strings.Contains(string(data), "jsonrpc2") || !strings.HasSuffix(string(data), "## You\n\n") {
		t.Fatalf("transcript:\n%s", data)
	}
}

// Malformed code action and command arguments are answered, never fatal.
func TestPlainBadArgumentsAreAnswered(t *testing.T) {
	c := startPlain(t, true, true)
	p := filepath.Join(c.root, "a.txt")
	os.WriteFile(p, []byte("one\ntwo\n"), 0o644)
	for _, params := range []any{
		map[string]any{},
		map[string]any{"textDocument": map[string]any{"uri": "not a uri"}, "range": lspRange(0, 0, 0, 0)},
		map[string]any{"textDocument": map[string]any{"uri": rpctest.URI(p)}, "range": lspRange(-5, -1, 99, 1e6)},
		map[string]any{"textDocument": map[string]any{"uri": rpctest.URI(p)}, "range": lspRange(1, 3, 0, 0),
			"context": map[string]any{"diagnostics": []any{42, map[string]any{"message": ""}, map[string]any{"message": "x", "range": "no"}}}},
		map[string]any{"textDocument": map[string]any{"uri": rpctest.URI(filepath.Join(c.root, "missing.txt"))}, "range": lspRange(0, 0, 0, 0)},
		[]any{1, 2},
	} {
		_, err := c.e.Call("textDocument/codeAction", params)
		t.Logf("codeAction %v: %v", params, err)
	}
	for _, args := range []any{nil, []any{42}, []any{map[string]any{"uri": 7}}, []any{map[string]any{"uri": rpctest.URI(p), "range": "x"}}} {
		_, err := c.e.Call("workspace/executeCommand", map[string]any{"command": "qwen-ls.ask", "arguments": args})
		if !isCode(err, rpc.CodeInvalidParams) {
			t.Errorf("qwen-ls.ask %v: %v", args, err)
		}
	}
	// Reversed and out-of-range ranges still quote the file's text.
	acts := c.codeActions(t, p, 9, 0, 1, 0)
	var text string
	json.Unmarshal(find(t, acts, "Qwen: explain").Command.Arguments[0], &text)
	if !strings.Contains(text, "```txt\ntwo\n```") {
		t.Fatalf("explain = %s", text)
	}
	// The server still serves.
	c.model.Push(modeltest.Response{Text: "fine"})
	if res, err := c.execPrompt("still there?"); err != nil || !strings.Contains(string(res), "fine") {
		t.Fatalf("%s %v", res, err)
	}
}

// Each finished call's line says how it ended: a rejected edit, a failed
// read and a completed one read differently.
func TestPlainTranscriptToolLinesSayHowCallsEnded(t *testing.T) {
	c := startPlain(t, false, false)
	p := filepath.Join(c.root, "a.txt")
	os.WriteFile(p, []byte("old\n"), 0o644)
	c.e.Handle("window/showMessageRequest", func(json.RawMessage) (any, error) { return map[string]any{"title": "Reject"}, nil })
	c.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			{ID: "r1", Name: "read_file", Arguments: jsonArgs("absolute_path", p)},
			{ID: "r2", Name: "read_file", Arguments: jsonArgs("absolute_path", filepath.Join(c.root, "missing.txt"))},
		}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "ed", Name: "edit", Arguments: jsonArgs("file_path", p, "old_string", "old", "new_string", "new")}}},
		modeltest.Response{Text: "ok"},
	)
	if _, err := c.execPrompt("try"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(c.transcriptFile(t))
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "- ") {
			lines = append(lines, l)
		}
	}
	// The two reads run together and finish in either order.
	sort.Strings(lines[:min(2, len(lines))])
	if len(lines) != 3 || lines[0] != "- ✓ read a.txt" || lines[1] != "- ✗ read missing.txt (failed)" ||
		lines[2] != "- ✗ edit a.txt: old... => new... (rejected)" {
		t.Fatalf("tool lines = %q", lines)
	}
}

// qwen-ls.checkSetup from a plain client is also shown: its result would
// be dropped.
func TestPlainCheckSetupIsShown(t *testing.T) {
	c := startPlain(t, false, false)
	c.model.Push(modeltest.Response{Text: "x"})
	res, err := c.e.Call("workspace/executeCommand", map[string]any{"command": "qwen-ls.checkSetup"})
	if err != nil || !strings.Contains(string(res), `"ok":true`) {
		t.Fatalf("%s %v", res, err)
	}
	if msgs := c.messages(3); len(msgs) != 1 || !strings.HasPrefix(msgs[0], "qwen: scripted at ") {
		t.Fatalf("showMessage = %q", msgs)
	}
}

// A second prompt while a turn runs is refused and leaves the running
// turn's transcript alone.
func TestPlainSecondPromptWhileATurnRunsIsRefused(t *testing.T) {
	c := startPlain(t, false, false)
	c.model.Push(modeltest.Response{Text: "slow answer", Delay: 60e9})
	id, ch := c.e.Send("workspace/executeCommand", map[string]any{"command": "qwen-ls.prompt", "arguments": []any{"first"}})
	c.model.WaitRequests(1, rpctest.DefaultTimeout)
	_, err := c.execPrompt("second")
	if !isCode(err, rpc.CodeRequestFailed) || !strings.Contains(err.Error(), "already running a prompt; cancel it or wait for it to end (the command qwen-ls.cancel cancels it)") {
		t.Fatalf("second prompt: %v", err)
	}
	if _, err := c.e.Call("workspace/executeCommand", map[string]any{"command": "qwen-ls.cancel"}); err != nil {
		t.Fatal(err)
	}
	if res, err := c.e.Wait(id, ch); err != nil || !strings.Contains(string(res), "cancelled") {
		t.Fatalf("%s %v", res, err)
	}
	data, _ := os.ReadFile(c.transcriptFile(t))
	if strings.Contains(string(data), "second") || !strings.Contains(string(data), "## You\n\nfirst\n\n## qwen\n") {
		t.Fatalf("transcript:\n%s", data)
	}
	if msgs := c.messages(2); len(msgs) != 1 || !strings.Contains(msgs[0], "already running a prompt") {
		t.Fatalf("warnings = %q", msgs)
	}
}

// A command's permission request offers a plain client the server's own
// options, by name and in order (the same set a rich client gets), and
// the chosen name is answered as its option.
func TestPlainPermissionOffersTheServersOptions(t *testing.T) {
	c := startPlain(t, false, false)
	var mu sync.Mutex
	var asked []struct {
		Message string
		Actions []struct{ Title string }
	}
	answer := "Allow"
	c.e.Handle("window/showMessageRequest", func(params json.RawMessage) (any, error) {
		var m struct {
			Message string
			Actions []struct{ Title string }
		}
		json.Unmarshal(params, &m)
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, m)
		if answer == "" {
			return nil, nil
		}
		return map[string]any{"title": answer}, nil
	})
	out := filepath.Join(c.root, "out.txt")
	run := func(id string) {
		args, _ := json.Marshal(map[string]any{"command": "echo " + id + " > out.txt"})
		c.model.Push(modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: id, Name: "run_shell_command", Arguments: string(args)}}}, modeltest.Response{Text: "ok"})
		if _, err := c.execPrompt("run it"); err != nil {
			t.Fatal(err)
		}
	}
	run("one")
	mu.Lock()
	if len(asked) != 1 || !strings.Contains(asked[0].Message, "echo one > out.txt") {
		t.Fatalf("asked = %+v", asked)
	}
	var titles []string
	for _, a := range asked[0].Actions {
		titles = append(titles, a.Title)
	}
	mu.Unlock()
	// An untrusted folder: no project-rule option. A redirection to a
	// file is allowed by its exact rule, which the session option names.
	if len(titles) != 4 || titles[0] != "Allow" || titles[1] != "Allow for this session: Bash(echo one > out.txt)" ||
		!strings.HasPrefix(titles[2], "Always allow for this user: ") || titles[3] != "Reject" {
		t.Fatalf("actions = %q", titles)
	}
	for _, ti := range titles {
		if strings.Contains(ti, "proceed_") || strings.Contains(ti, "cancel") {
			t.Fatalf("an option id is shown: %q", titles)
		}
	}
	if data, _ := os.ReadFile(out); string(data) != "one\n" {
		t.Fatalf("out.txt = %q", data)
	}
	for _, ans := range []string{"Reject", "", "Allow proceed_once"} {
		mu.Lock()
		answer = ans
		mu.Unlock()
		run("two")
		if data, _ := os.ReadFile(out); string(data) != "one\n" {
			t.Fatalf("answer %q ran the command: out.txt = %q", ans, data)
		}
	}
}

// A project keeps its 50 most recent transcripts.
func TestPlainOldTranscriptsArePruned(t *testing.T) {
	c := startPlain(t, false, false)
	sum := sha256.Sum256([]byte(c.root))
	dir := filepath.Join(c.e.Home, "transcripts", filepath.Base(c.root)+"-"+hex.EncodeToString(sum[:4]))
	os.MkdirAll(dir, 0o700)
	old := time.Now().Add(-time.Hour)
	for i := 0; i < 60; i++ {
		p := filepath.Join(dir, fmt.Sprintf("old-%02d.md", i))
		os.WriteFile(p, []byte("# old\n"), 0o600)
		at := old.Add(time.Duration(i) * time.Second)
		os.Chtimes(p, at, at)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a transcript"), 0o600)
	c.model.Push(modeltest.Response{Text: "first"})
	if _, err := c.execPrompt("hi"); err != nil {
		t.Fatal(err)
	}
	mds, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	olds, _ := filepath.Glob(filepath.Join(dir, "old-*.md"))
	if len(mds) != 50 || len(olds) != 49 {
		t.Fatalf("%d transcripts, %d old ones", len(mds), len(olds))
	}
	if _, err := os.Stat(filepath.Join(dir, "old-11.md")); err != nil {
		t.Fatal("a recent old transcript was removed")
	}
	if _, err := os.Stat(filepath.Join(dir, "old-10.md")); err == nil {
		t.Fatal("the oldest beyond 50 was kept")
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.txt")); err != nil {
		t.Fatal("a file that is no transcript was removed")
	}
}
