package rpc_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// optionsAsked records the options of each permission request and answers
// with the option the test chose.
type optionsAsked struct {
	mu     sync.Mutex
	asked  [][]struct{ OptionID, Name, Kind string }
	answer string
}

func (o *optionsAsked) handle(params json.RawMessage) (any, error) {
	var p struct {
		Options []struct{ OptionID, Name, Kind string }
	}
	json.Unmarshal(params, &p)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.asked = append(o.asked, p.Options)
	return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": o.answer}}, nil
}

func (o *optionsAsked) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.asked)
}

func (o *optionsAsked) last() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ids []string
	for _, opt := range o.asked[len(o.asked)-1] {
		ids = append(ids, opt.OptionID)
	}
	return ids
}

func (o *optionsAsked) set(answer string) {
	o.mu.Lock()
	o.answer = answer
	o.mu.Unlock()
}

// Issue 30: "always" for echo X >> log.txt asked again for the same
// command, because the rule it recorded, Bash(echo *), never covers a
// redirection. The answer now records the exact rule, which covers that
// command, redirection included, in every scope, across a restart for the
// settings-file scopes, and nothing wider.
func TestAlwaysAllowCoversTheExactRedirection(t *testing.T) {
	for _, tc := range []struct {
		option string
		file   func(root, home string) string
	}{
		{"proceed_always", nil},
		{"proceed_always_project", func(root, home string) string { return filepath.Join(root, ".qwen", "settings.json") }},
		{"proceed_always_user", func(root, home string) string { return filepath.Join(home, "settings.json") }},
	} {
		t.Run(tc.option, func(t *testing.T) {
			base := t.TempDir()
			root := filepath.Join(base, "W")
			home := filepath.Join(base, "home", ".qwen")
			os.MkdirAll(filepath.Join(root, "sub"), 0o755)
			os.MkdirAll(filepath.Join(root, "keep"), 0o755)
			root, _ = filepath.EvalSymlinks(root)
			m := modeltest.Start(t)
			opts := &optionsAsked{answer: tc.option}
			boot := func() (*rpctest.Editor, string) {
				ws := workspace.New(workspace.Options{Settings: workspace.SettingsOptions{UserDir: home, SystemPath: filepath.Join(base, "none.json"),
					Getenv: func(string) (string, bool) { return "", false }}})
				t.Cleanup(func() { ws.Close() })
				e := rpctest.Start(t, rpc.Options{Workspace: ws, QwenHome: home, Stderr: testLog{t}})
				e.Handle("qwen/requestPermission", opts.handle)
				e.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true, InitializationOptions: map[string]any{"model": map[string]any{"name": "s", "baseUrl": m.URL}, "workspaceTrusted": true}})
				res, err := e.Call("qwen/newSession", map[string]any{})
				if err != nil {
					t.Fatal(err)
				}
				var ns struct{ SessionID string }
				json.Unmarshal(res, &ns)
				return e, ns.SessionID
			}
			run := func(e *rpctest.Editor, sid, command string) {
				t.Helper()
				script := []modeltest.Response{{ToolCalls: []modeltest.ToolCall{{Name: "run_shell_command", Arguments: jsonArgs("command", command)}}}}
				if opts.answer != "cancel" {
					// A lone rejection ends the turn without asking the
					// model again.
					script = append(script, modeltest.Response{Text: "ok"})
				}
				m.Push(script...)
				if _, err := e.Call("qwen/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "go"}}}); err != nil {
					t.Fatal(err)
				}
			}
			logged := func() string {
				data, _ := os.ReadFile(filepath.Join(root, "log.txt"))
				return string(data)
			}
			e, sid := boot()
			run(e, sid, "echo X >> log.txt")
			if opts.count() != 1 || !slices.Contains(opts.last(), tc.option) {
				t.Fatalf("the first call: %d prompts, options %v", opts.count(), opts.asked)
			}
			run(e, sid, "echo X >>log.txt")
			if opts.count() != 1 {
				t.Fatalf("the same command asked again after %s: %d prompts, options %v", tc.option, opts.count(), opts.last())
			}
			if got := logged(); got != "X\nX\n" {
				t.Fatalf("log.txt = %q, want two lines", got)
			}
			if tc.file != nil {
				data, err := os.ReadFile(tc.file(root, home))
				var settings struct{ Permissions struct{ Allow []string } }
				json.Unmarshal(data, &settings)
				if err != nil || !slices.Equal(settings.Permissions.Allow, []string{"Bash(echo X >> log.txt)"}) {
					t.Fatalf("settings file: %s %v", data, err)
				}
			}
			// Nothing wider: each asks, and is rejected.
			opts.set("cancel")
			for _, c := range []string{"echo Y >> log.txt", "echo X >> other", "echo X >> log.txt; rm -rf keep", "cd sub && echo X >> log.txt"} {
				n := opts.count()
				run(e, sid, c)
				if opts.count() != n+1 {
					t.Errorf("%q ran without asking", c)
				}
			}
			if _, err := os.Stat(filepath.Join(root, "keep")); err != nil || logged() != "X\nX\n" {
				t.Fatalf("a rejected command ran: keep %v, log.txt %q", err, logged())
			}
			for _, f := range []string{"other", "sub/log.txt"} {
				if _, err := os.Stat(filepath.Join(root, f)); err == nil {
					t.Errorf("a rejected command wrote %s", f)
				}
			}
			if tc.file == nil {
				return
			}
			if code := e.Shutdown(); code != 0 {
				t.Fatalf("exit code %d", code)
			}
			e2, sid2 := boot()
			opts.set(tc.option)
			n := opts.count()
			run(e2, sid2, "echo X >> log.txt")
			if opts.count() != n || logged() != "X\nX\nX\n" {
				t.Fatalf("after a restart: %d prompts, log.txt %q", opts.count()-n, logged())
			}
		})
	}
}

// When an "always" answer could not spare the next prompt, its options
// are not offered: a here-document, a group's redirection, a command
// substitution or a command outside the primary root. A rule with "$"
// would come back from a settings file with the variable expanded, so
// only the session option stays. The options a client did not get are
// never an allow.
func TestAlwaysIsOfferedOnlyWhenItCanBeHonoured(t *testing.T) {
	a := startAgentWith(t, "default", rpc.Options{}, func(p *rpctest.InitParams) {
		p.InitializationOptions.(map[string]any)["workspaceTrusted"] = true
	})
	os.MkdirAll(filepath.Join(a.root, "sub"), 0o755)
	opts := &optionsAsked{answer: "proceed_once"}
	a.e.Handle("qwen/requestPermission", opts.handle)
	once := "proceed_once,cancel"
	all := "proceed_once,proceed_always,proceed_always_project,proceed_always_user,cancel"
	for _, c := range []struct{ command, want string }{
		{"echo X >> log.txt", all},
		{"cat > notes.txt <<EOF\nx\nEOF", once},
		{"{ echo X; } > grouped.txt", once},
		{"echo $(date) > date.txt", once},
		{"cd sub && echo X >> log.txt", once},
		{"echo $HOME >> log.txt", "proceed_once,proceed_always,cancel"},
		{"touch t", all},
	} {
		n := opts.count()
		a.shell(t, "c", c.command)
		if opts.count() != n+1 {
			t.Errorf("%q did not ask", c.command)
			continue
		}
		if got := strings.Join(opts.last(), ","); got != c.want {
			t.Errorf("%q: options %s, want %s", c.command, got, c.want)
		}
	}
	// An "always" that was not offered is a rejection and records nothing.
	opts.set("proceed_always")
	a.model.Push(modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "h", Name: "run_shell_command", Arguments: jsonArgs("command", "cat > notes.txt <<EOF\ny\nEOF")}}})
	if _, err := a.prompt("run it"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(a.root, "notes.txt")); string(data) != "x\n" {
		t.Fatalf("an always that was not offered ran the command: notes.txt = %q", data)
	}
}

// Rich LSP, ACP and plain LSP clients get the same options for a command
// with a redirection, the session one naming the exact rule, and
// answering it spares the next prompt for that command on each.
func TestAlwaysForARedirectionOnEveryClient(t *testing.T) {
	const command = "echo X >> log.txt"
	want := []string{"Allow", "Allow for this session: Bash(echo X >> log.txt)", "Always allow for this user: Bash(echo X >> log.txt)", "Reject"}
	check := func(t *testing.T, client string, names [][]string, root string) {
		t.Helper()
		if len(names) != 1 {
			t.Fatalf("%s: %d prompts for the same command, want 1: %q", client, len(names), names)
		}
		if !slices.Equal(names[0], want) {
			t.Errorf("%s: options %q, want %q", client, names[0], want)
		}
		if data, _ := os.ReadFile(filepath.Join(root, "log.txt")); string(data) != "X\nX\n" {
			t.Errorf("%s: log.txt = %q", client, data)
		}
	}
	t.Run("rich", func(t *testing.T) {
		a := startAgent(t, "default")
		var names [][]string
		a.e.Handle("qwen/requestPermission", func(params json.RawMessage) (any, error) {
			var p struct {
				Options []struct{ OptionID, Name string }
			}
			json.Unmarshal(params, &p)
			var n []string
			for _, o := range p.Options {
				n = append(n, o.Name)
			}
			names = append(names, n)
			return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "proceed_always"}}, nil
		})
		a.shell(t, "a", command)
		a.shell(t, "b", command)
		check(t, "rich", names, a.root)
	})
	t.Run("plain", func(t *testing.T) {
		c := startPlain(t, false, false)
		var mu sync.Mutex
		var names [][]string
		c.e.Handle("window/showMessageRequest", func(params json.RawMessage) (any, error) {
			var p struct{ Actions []struct{ Title string } }
			json.Unmarshal(params, &p)
			var n []string
			for _, o := range p.Actions {
				n = append(n, o.Title)
			}
			mu.Lock()
			names = append(names, n)
			mu.Unlock()
			return map[string]any{"title": "Allow for this session: Bash(echo X >> log.txt)"}, nil
		})
		for _, id := range []string{"a", "b"} {
			c.model.Push(modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: id, Name: "run_shell_command", Arguments: jsonArgs("command", command)}}}, modeltest.Response{Text: "ok"})
			if _, err := c.execPrompt("run it"); err != nil {
				t.Fatal(err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		check(t, "plain", names, c.root)
	})
	t.Run("acp", func(t *testing.T) {
		m := modeltest.Start(t)
		c := startACP(t, m.URL)
		var mu sync.Mutex
		var names [][]string
		c.answer = func(method string, params json.RawMessage) any {
			if method != "session/request_permission" {
				return nil
			}
			var p struct {
				Options []struct{ OptionID, Name string }
			}
			json.Unmarshal(params, &p)
			var n []string
			for _, o := range p.Options {
				n = append(n, o.Name)
			}
			mu.Lock()
			names = append(names, n)
			mu.Unlock()
			return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "proceed_always"}}
		}
		sid, root := acpSession(t, c, map[string]any{})
		for _, id := range []string{"a", "b"} {
			m.Push(modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: id, Name: "run_shell_command", Arguments: jsonArgs("command", command)}}}, modeltest.Response{Text: "ok"})
			c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "run"}}})
		}
		mu.Lock()
		defer mu.Unlock()
		check(t, "acp", names, root)
	})
}
