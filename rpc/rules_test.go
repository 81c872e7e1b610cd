package rpc_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// rulesAgent is a rich editor whose settings carry permission rules; it
// records each permission request.
func rulesAgent(t *testing.T, mode string, perms map[string]any) (*agent, *[]json.RawMessage) {
	a := startAgentWith(t, mode, rpc.Options{}, func(p *rpctest.InitParams) {
		opts := p.InitializationOptions.(map[string]any)
		opts["settings"] = map[string]any{"permissions": perms}
	})
	var asked []json.RawMessage
	a.e.Handle("qwen/requestPermission", func(params json.RawMessage) (any, error) {
		asked = append(asked, params)
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "proceed_once"}}, nil
	})
	return a, &asked
}

func (a *agent) shell(t *testing.T, id, command string) string {
	t.Helper()
	a.model.Push(modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: id, Name: "run_shell_command", Arguments: jsonArgs("command", command)}}}, modeltest.Response{Text: "ok"})
	if _, err := a.prompt("run it"); err != nil {
		t.Fatal(err)
	}
	return a.toolMessage(t, id)
}

// Conformance case 34: an allow rule covers a compound command only when
// every part matches, and a command substitution always asks.
func TestCase34_AllowRulesCoverEveryPart(t *testing.T) {
	a, asked := rulesAgent(t, "default", map[string]any{"allow": []any{"Bash(npm run *)"}})
	a.shell(t, "c1", "npm run a && npm run b")
	if len(*asked) != 0 {
		t.Fatalf("npm run a && npm run b prompted: %s", (*asked)[0])
	}
	a.shell(t, "c2", "npm run a && rm -f x")
	if len(*asked) != 1 || !strings.Contains(string((*asked)[0]), `"Allow rm for this session"`) {
		t.Fatalf("prompts = %d: %s", len(*asked), *asked)
	}
	a.shell(t, "c3", "echo $(git rev-parse HEAD)")
	if len(*asked) != 2 {
		t.Fatalf("a command substitution did not prompt")
	}
}

// Conformance case 35: a deny rule matching any sub-command denies the call.
func TestCase35_DenyRule(t *testing.T) {
	a, asked := rulesAgent(t, "yolo", map[string]any{"deny": []any{"Bash(rm *)"}})
	os.MkdirAll(filepath.Join(a.root, "build"), 0o755)
	msg := a.shell(t, "c", "ls && rm -rf build")
	if msg != `The permission rule "Bash(rm *)" denies run_shell_command, so this call was not run.` {
		t.Fatalf("model told %q", msg)
	}
	if _, err := os.Stat(filepath.Join(a.root, "build")); err != nil || len(*asked) != 0 {
		t.Fatalf("build removed or asked: %v %d", err, len(*asked))
	}
}

// Conformance case 41: auto-edit still asks for commands; yolo does not.
func TestCase41_AutoEditAsksForCommandsYoloDoesNot(t *testing.T) {
	a, asked := rulesAgent(t, "auto-edit", nil)
	a.shell(t, "c", "touch t")
	if len(*asked) != 1 {
		t.Fatalf("auto-edit: %d prompts, want 1", len(*asked))
	}
	b, asked2 := rulesAgent(t, "yolo", nil)
	b.shell(t, "c", "touch t")
	if len(*asked2) != 0 {
		t.Fatalf("yolo: %d prompts", len(*asked2))
	}
	if _, err := os.Stat(filepath.Join(b.root, "t")); err != nil {
		t.Fatal("touch did not run in yolo")
	}
}

// An ask rule forces a prompt even in yolo, without the "always" options.
func TestAskRuleForcesAPrompt(t *testing.T) {
	a, asked := rulesAgent(t, "yolo", map[string]any{"ask": []any{"Bash(touch *)"}})
	a.shell(t, "c", "touch t")
	if len(*asked) != 1 {
		t.Fatalf("%d prompts, want 1", len(*asked))
	}
	if strings.Contains(string((*asked)[0]), "proceed_always") {
		t.Fatalf("a forced prompt offered always options: %s", (*asked)[0])
	}
}

// Path rules match the absolute path gitignore-style, and a deny rule
// without a specifier removes the tool from what the model is sent.
func TestPathRulesAndWholeToolDeny(t *testing.T) {
	a, _ := rulesAgent(t, "default", map[string]any{"deny": []any{"Read(./secret/**)", "WebFetch"}})
	os.MkdirAll(filepath.Join(a.root, "secret"), 0o755)
	os.WriteFile(filepath.Join(a.root, "secret", "k.txt"), []byte("key"), 0o644)
	os.WriteFile(filepath.Join(a.root, "open.txt"), []byte("fine"), 0o644)
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			{ID: "s", Name: "read_file", Arguments: jsonArgs("absolute_path", filepath.Join(a.root, "secret", "k.txt"))},
			{ID: "o", Name: "read_file", Arguments: jsonArgs("absolute_path", filepath.Join(a.root, "open.txt"))},
		}},
		modeltest.Response{Text: "ok"},
	)
	if _, err := a.prompt("read"); err != nil {
		t.Fatal(err)
	}
	if msg := a.toolMessage(t, "s"); msg != `The permission rule "Read(./secret/**)" denies read_file, so this call was not run.` {
		t.Fatalf("secret read: %q", msg)
	}
	if msg := a.toolMessage(t, "o"); msg != "fine" {
		t.Fatalf("open read: %q", msg)
	}
	if slices.Contains(a.model.Requests()[0].Tools, "web_fetch") {
		t.Fatal("web_fetch was declared although a deny rule names it")
	}
}

// A rule for a command never covers a redirection of its output to a
// file: an exact Bash(git status) let git status > ANY-FILE write
// unasked. Discarding output and duplicating descriptors stay covered.
func TestAllowRuleDoesNotCoverRedirections(t *testing.T) {
	a, asked := rulesAgent(t, "default", map[string]any{"allow": []any{"run_shell_command(git status)", "Bash(echo *)", "Bash(npm run *)"}})
	for _, c := range []string{"npm run a 2>/dev/null", "npm run a 2>&1 | npm run b", "echo hi >&2"} {
		n := len(*asked)
		a.shell(t, "ok", c)
		if len(*asked) != n {
			t.Errorf("%q asked", c)
		}
	}
	for _, c := range []string{"git status > out.txt", "git status >> log.txt", "echo x > notes.txt", "npm run a &> build.log", "{ npm run a; } > b.log",
		// Nor does it cover an expansion that bash evaluates as code.
		"x='a[$(touch m)]'; echo $((x))", "x='$(touch m)'; echo ${x@P}"} {
		n := len(*asked)
		a.shell(t, "w", c)
		if len(*asked) != n+1 {
			t.Errorf("%q ran without asking", c)
		}
	}
}
