package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/qwen-ls/qwen-ls/tools/diff"
)

var (
	//go:embed demo/greet.go.txt
	demoGreet string
	//go:embed demo/main.go.txt
	demoMain string
)

// demoTODO is the user's unsaved edit in the demo: it exists only in the
// editor buffer, never on disk.
const demoTODO = "// TODO(you): main should greet the team, not the world.\n"

// runDemo shows qwen-ls at work with no API key and no network: it starts
// the real server as a child process, drives it over JSON-RPC the way an
// editor does, and answers with its own scripted model on 127.0.0.1
// (demomodel.go).
func runDemo(stdout, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := demo(ctx, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "qwen-ls demo: %v\n", err)
		return 1
	}
	return 0
}

func demo(ctx context.Context, stdout, stderr io.Writer) error {
	tmp, err := os.MkdirTemp("", "qwen-ls-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	root := filepath.Join(tmp, "demo")
	files := map[string]string{
		"go.mod":         "module example.com/demo\n\ngo 1.22\n",
		"greet/greet.go": demoGreet,
		"main.go":        demoMain,
	}
	for rel, text := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			return err
		}
	}
	root, _ = filepath.EvalSymlinks(root)

	model, err := startDemoModel(demoScript(root))
	if err != nil {
		return err
	}
	defer model.Close()

	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, self, "--stdio")
	// A private home and no model variables: the demo never touches the
	// user's settings or a real model.
	cmd.Env = append(filteredEnv(), "QWEN_HOME="+filepath.Join(tmp, "home"), "QWEN_CODE_SYSTEM_SETTINGS_PATH="+filepath.Join(tmp, "none.json"))
	cmd.Stderr = io.Discard
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer cmd.Wait()

	pr := newPrinter(stdout, root)
	pr.line("qwen-ls demo: a real qwen-ls server (pid %d) driven over JSON-RPC like an editor.", cmd.Process.Pid)
	pr.line("The model is SCRIPTED: a fake OpenAI-compatible server on %s. No API key, no network.", strings.TrimSuffix(model.URL, "/v1"))
	pr.line("Workspace: %s (greet/greet.go, main.go, go.mod)", root)

	c := newClient(ctx, out, in)
	c.onUpdate = func(_ string, u json.RawMessage) { pr.update(u) }
	c.onRequest = func(method string, params json.RawMessage) (any, error) {
		return demoReview(pr, root, method, params)
	}
	sid, err := c.start(ctx, root, map[string]any{
		"approvalMode": "default",
		"model":        map[string]any{"name": "scripted-demo", "baseUrl": model.URL},
	})
	if err != nil {
		return err
	}
	defer c.stop(context.Background())

	greetPath := filepath.Join(root, "greet", "greet.go")
	unsaved := strings.Replace(demoGreet, "// Greet returns", demoTODO+"// Greet returns", 1)
	if err := c.conn.Notify(ctx, "textDocument/didOpen", map[string]any{"textDocument": map[string]any{
		"uri": "file://" + greetPath, "languageId": "go", "version": 1, "text": unsaved,
	}}); err != nil {
		return err
	}
	pr.line("\nEditor: greet/greet.go is open with an unsaved line the disk does not have:\n  %s", strings.TrimSpace(demoTODO))
	pr.line("Approval mode: default (every change is shown for review before anything is written).")

	prompt := "Do what the TODO I just typed in greet/greet.go says, and tell me who calls Greet."
	pr.line("\nYou: %s", prompt)
	var res struct {
		StopReason string `json:"stopReason"`
		Usage      struct {
			InputTokens, OutputTokens int
		} `json:"usage"`
	}
	if err := c.call(ctx, "qwen/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": prompt}}}, &res); err != nil {
		return err
	}
	pr.line("\n[turn ended: %s; %d input and %d output tokens, as the script reports them]", res.StopReason, res.Usage.InputTokens, res.Usage.OutputTokens)
	data, err := os.ReadFile(filepath.Join(root, "main.go"))
	if err != nil {
		return err
	}
	pr.line("On disk, main.go now reads: %s", strings.TrimSpace(lineWith(string(data), "Greet(")))
	reqs := model.Requests()
	if told := toolMessageFor(reqs, "edit"); told != "" {
		pr.line("\nWhat the model was told about the edit (its tool result):")
		for _, l := range firstLines(told, 12) {
			pr.line("  | %s", l)
		}
	}
	pr.line("\nThe scripted model answered %d requests; the first declared %d tools.", len(reqs), len(reqs[0].Tools))
	pr.line("\nTo use a real model, see README.md (DashScope, OpenAI, or a local server).")
	return nil
}

func lineWith(text, needle string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, needle) {
			return l
		}
	}
	return ""
}

// filteredEnv is the environment without model settings.
func filteredEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "DASHSCOPE_API_KEY", "QWEN_HOME", "QWEN_CODE_SYSTEM_SETTINGS_PATH":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// demoReview plays the user at the editor: it shows each proposal and
// accepts it, as a person clicking "Accept" would.
func demoReview(pr *printer, root, method string, params json.RawMessage) (any, error) {
	switch method {
	case "qwen/proposeEdit":
		var p struct {
			ToolCallID string `json:"toolCallId"`
			Title      string `json:"title"`
			OldText    string `json:"oldText"`
			NewText    string `json:"newText"`
			URI        string `json:"uri"`
			Edits      []any  `json:"edits"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.URI, "file://"), root+"/")
		pr.line("\n  Editor shows a proposal: %s (%d hunk(s), nothing written yet)", p.Title, len(p.Edits))
		for _, l := range strings.Split(strings.TrimRight(diff.Unified(rel, diff.Current, diff.Proposed, p.OldText, p.NewText), "\n"), "\n") {
			pr.line("      %s", l)
		}
		pr.line("  You (simulated): Accept")
		pr.markReviewed(p.ToolCallID)
		return map[string]any{"outcome": "accepted"}, nil
	case "qwen/requestPermission":
		pr.line("  You (simulated): Allow once")
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "proceed_once"}}, nil
	}
	return nil, fmt.Errorf("the demo editor does not handle %s", method)
}
