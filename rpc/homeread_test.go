package rpc_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// A read-only command that reads a secret under the home folder, outside
// the workspace, asks in default mode, and the question says why;
// rejected, the secret is not in the next model request. A system file
// is still read unasked. Both with the sandbox and with the parser alone
// (tools.sandbox: off), where the question is all that stands between the
// key and the model.
func TestShellReadUnderHomeAsks(t *testing.T) {
	const secret = "BEGIN-FAKE-PRIVATE-KEY-6f1d2c"
	for _, sandbox := range []string{"", "off"} {
		t.Run("sandbox="+sandbox, func(t *testing.T) {
			home, _ := filepath.EvalSymlinks(t.TempDir())
			t.Setenv("HOME", home)
			if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(home, ".ssh", "id_rsa"), []byte(secret+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			settings := map[string]any{}
			if sandbox != "" {
				settings["tools"] = map[string]any{"sandbox": sandbox}
			}
			a := startAgentWith(t, "default", rpc.Options{QwenHome: filepath.Join(home, ".qwen")}, func(p *rpctest.InitParams) {
				p.InitializationOptions.(map[string]any)["settings"] = settings
			})
			var mu sync.Mutex
			asked := map[string]string{} // tool call id -> title
			a.e.Handle("qwen/requestPermission", func(params json.RawMessage) (any, error) {
				var p struct {
					ToolCall struct {
						ToolCallID string `json:"toolCallId"`
						Title      string `json:"title"`
					} `json:"toolCall"`
				}
				_ = json.Unmarshal(params, &p)
				mu.Lock()
				asked[p.ToolCall.ToolCallID] = string(params)
				mu.Unlock()
				return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "cancel"}}, nil
			})

			// After a call's result the model says "ok". Rejected, the
			// turn ends; the next prompt's request carries the history.
			a.model.SetSide(func(r modeltest.Request) (modeltest.Response, bool) {
				if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == "tool" {
					return modeltest.Response{Text: "ok"}, true
				}
				return modeltest.Response{}, false
			})
			a.rejectedShell(t, "secret", "cat ~/.ssh/id_rsa")
			a.model.Push(modeltest.Response{Text: "ok"})
			if _, err := a.prompt("go on"); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			q, ok := asked["secret"]
			mu.Unlock()
			if !ok {
				t.Fatalf("cat ~/.ssh/id_rsa ran without asking; the model was told: %s", a.toolMessage(t, "secret"))
			}
			if !strings.Contains(q, "reads ~/.ssh/id_rsa under your home folder, outside the workspace") {
				t.Errorf("the question does not say why: %s", q)
			}
			reqs := a.model.Requests()
			sawCall := false
			for _, m := range reqs[len(reqs)-1].Messages {
				sawCall = sawCall || m.ToolCallID == "secret"
				if strings.Contains(string(m.Content), secret) {
					t.Fatalf("the key reached the model in a %s message: %s", m.Role, m.Content)
				}
			}
			if !sawCall {
				t.Fatal("the next request does not carry the call's result: the check above proves nothing")
			}

			if _, err := os.Stat("/etc/os-release"); err != nil {
				t.Skip("no /etc/os-release")
			}
			want, _ := os.ReadFile("/etc/os-release")
			first, _, _ := strings.Cut(string(want), "\n")
			told := a.shell(t, "system", "cat /etc/os-release")
			mu.Lock()
			_, ok = asked["system"]
			mu.Unlock()
			if ok {
				t.Errorf("cat /etc/os-release asked")
			}
			if !strings.Contains(told, first) {
				t.Errorf("cat /etc/os-release did not run unasked: %s", told)
			}
		})
	}
}
