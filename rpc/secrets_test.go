package rpc_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// Secrets never reach the log (stderr) or the editor's log: not the model
// key echoed back in a provider's error, not what an MCP server prints
// about its token on stderr (threat "secrets in logs", docs/security.md).
// The model key has no "sk-" and the plain value is printed with no name,
// so only knowing the configured secrets keeps those two out.
func TestSecretsNeverReachTheLogs(t *testing.T) {
	const modelKey = "local-modelSECRET0123456789"
	const mcpToken = "mcpSECRETtoken42"
	const plain = "plainSECRETvalue77"
	stderr := &lockedLog{t: t}
	m := modeltest.Start(t,
		modeltest.Response{Status: 401, Body: fmt.Sprintf(`{"error":{"message":"Incorrect API key provided: %s"}}`, modelKey)},
	)
	e := rpctest.Start(t, rpc.Options{Version: "test", Stderr: stderr})
	script := fmt.Sprintf(`echo "starting with token=$TOKEN and key $KEY, then $PLAIN" >&2; exec '%s' -name s -tools hello`, mcpServer(t))
	e.Initialize(rpctest.InitParams{Roots: []string{t.TempDir()}, Rich: true, InitializationOptions: map[string]any{
		"model": map[string]any{"name": "scripted", "baseUrl": m.URL, "apiKey": modelKey},
		"settings": map[string]any{"mcpServers": map[string]any{"s": map[string]any{
			"command": "/bin/sh", "args": []any{"-c", script},
			"env": map[string]any{"TOKEN": mcpToken, "KEY": modelKey, "PLAIN": plain},
		}}},
	}})
	res, err := e.Call("qwen/newSession", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	sid := strings.Split(strings.Split(string(res), `"sessionId":"`)[1], `"`)[0]
	_, err = e.Call("qwen/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}})
	if err == nil {
		t.Fatal("the 401 did not fail the prompt")
	}
	// The MCP server's stderr line goes to the log (at debug level, so
	// stderr only) from its own reader.
	deadline := time.Now().Add(rpctest.DefaultTimeout)
	for !strings.Contains(stderr.String(), "starting with") {
		if time.Now().After(deadline) {
			t.Fatalf("the MCP server's stderr never reached the log:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	var seen strings.Builder
	seen.WriteString(stderr.String())
	seen.WriteString(err.Error())
	for _, method := range []string{"window/logMessage", "window/showMessage", "qwen/sessionUpdate"} {
		for _, n := range e.Notifications(method) {
			seen.Write(n.Params)
		}
	}
	for _, secret := range []string{modelKey, mcpToken, plain, "modelSECRET"} {
		if strings.Contains(seen.String(), secret) {
			t.Errorf("the secret %q reached a log:\n%s", secret, seen.String())
		}
	}
	if !strings.Contains(seen.String(), "[redacted]") {
		t.Errorf("nothing was redacted, so the test did not exercise the scrubber:\n%s", seen.String())
	}
}
