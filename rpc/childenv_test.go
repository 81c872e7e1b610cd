package rpc_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// The processes the agent starts never see the model's key or a configured
// secret: a shell command, an MCP server, the tool discovery command and
// the tool call command each print their environment, which must keep PATH
// and HOME and lose the keys. The one way through is a server's own "env"
// setting, which names what that server receives.
func TestChildrenGetNoKeysOrConfiguredSecrets(t *testing.T) {
	const (
		modelKey   = "sk-model-key-0123456789"
		dashKey    = "sk-dashscope-key-abcdef"
		qwenKey    = "qwen-own-key-zyxwvu"
		configured = "configured-secret-5f3a9c"
	)
	t.Setenv("OPENAI_API_KEY", modelKey)
	t.Setenv("DASHSCOPE_API_KEY", dashKey)
	t.Setenv("QWEN_API_KEY", qwenKey)
	// A variable of the user's whose value the settings configure as a
	// key, under a name that says nothing.
	t.Setenv("DEPLOY_CREDENTIAL", configured)
	t.Setenv("PROVIDER_VAR", "provider-key-value-42")
	t.Setenv("ORDINARY_VALUE", "stays-with-every-child")

	dir := t.TempDir()
	discover := filepath.Join(dir, "discover.sh")
	call := filepath.Join(dir, "call.sh")
	discoverEnv := filepath.Join(dir, "discover.env")
	writeScript(t, discover, "#!/bin/sh\nenv > '"+discoverEnv+"'\n"+
		`printf '%s' '[{"name":"print_env","description":"prints its environment"}]'`+"\n")
	writeScript(t, call, "#!/bin/sh\nenv\n")

	bin := mcpServer(t)
	a := startAgentWith(t, "yolo", rpc.Options{}, func(p *rpctest.InitParams) {
		opts := p.InitializationOptions.(map[string]any)
		opts["settings"] = map[string]any{
			"tools": map[string]any{"discoveryCommand": discover, "callCommand": call},
			"mcpServers": map[string]any{
				"plain": map[string]any{"command": bin, "args": []any{"-name", "plain", "-tools", "environ"}},
				// This server is given the configured secret by name.
				"given": map[string]any{"command": bin, "args": []any{"-name", "given", "-tools", "environ"},
					"env": map[string]any{"DEPLOY_CREDENTIAL": configured}},
			},
			"webSearch": map[string]any{"provider": []any{map[string]any{"type": "tavily", "apiKey": configured}}},
			// Qwen Code's model providers name the variable of their key.
			"modelProviders": map[string]any{"openai": []any{map[string]any{"id": "m", "envKey": "PROVIDER_VAR"}}},
		}
	})
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{
			{ID: "shell", Name: "run_shell_command", Arguments: `{"command":"env"}`},
			{ID: "plain", Name: "plain__environ", Arguments: `{}`},
			{ID: "given", Name: "given__environ", Arguments: `{}`},
			{ID: "call", Name: "print_env", Arguments: `{}`},
		}},
		modeltest.Response{Text: "done"},
	)
	if _, err := a.prompt("print the environments"); err != nil {
		t.Fatal(err)
	}
	msgs := a.toolMessages(1)
	discovered, err := os.ReadFile(discoverEnv)
	if err != nil {
		t.Fatalf("the discovery command did not run: %v", err)
	}
	outputs := map[string]string{"discovery command": string(discovered)}
	for _, id := range []string{"shell", "plain", "given", "call"} {
		outputs[id] = msgs[id]
	}
	for who, env := range outputs {
		for _, want := range []string{"PATH=", "HOME=", "ORDINARY_VALUE=stays-with-every-child"} {
			if !strings.Contains(env, want) {
				t.Errorf("%s: %q missing from its environment:\n%s", who, want, env)
			}
		}
		for _, secret := range []string{modelKey, dashKey, qwenKey, "provider-key-value-42"} {
			if strings.Contains(env, secret) {
				t.Errorf("%s: a key reached its environment:\n%s", who, env)
			}
		}
		if got := strings.Contains(env, "DEPLOY_CREDENTIAL="+configured); got != (who == "given") {
			t.Errorf("%s: configured secret present = %v, want %v:\n%s", who, got, who == "given", env)
		}
	}
}

func writeScript(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
}
