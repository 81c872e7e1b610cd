package rpc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// The keys of testdata/qwen-code-config/home/.qwen/.env.
const (
	fixtureDashScopeKey  = "sk-fixture-dashscope-0123456789abcdef"
	fixtureOpenRouterKey = "sk-or-v1-fixture-fedcba9876543210"
)

// qwenCodeHome copies the Qwen Code 0.24 configuration of testdata into
// base/home/.qwen, unchanged, and returns that folder.
func qwenCodeHome(t *testing.T, base string) string {
	t.Helper()
	qwenDir := filepath.Join(base, "home", ".qwen")
	os.MkdirAll(qwenDir, 0o755)
	for _, name := range []string{"settings.json", ".env"} {
		data, err := os.ReadFile(filepath.Join("..", "testdata", "qwen-code-config", "home", ".qwen", name))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(qwenDir, name), data, 0o600)
	}
	return qwenDir
}

// qwenCodeWorkspace is a workspace over that configuration, whose two
// OpenAI-compatible providers are the scripted models dash and or.
func qwenCodeWorkspace(t *testing.T, base string, dash, or *modeltest.Server) (*workspace.Workspace, string) {
	t.Helper()
	qwenDir := qwenCodeHome(t, base)
	env := map[string]string{
		"HOME":                        filepath.Dir(qwenDir),
		"QWEN_FIXTURE_DASHSCOPE_URL":  dash.URL,
		"QWEN_FIXTURE_OPENROUTER_URL": or.URL,
	}
	ws := workspace.New(workspace.Options{Settings: workspace.SettingsOptions{
		UserDir: qwenDir, SystemPath: filepath.Join(base, "none.json"),
		Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}})
	return ws, qwenDir
}

// lastRequest is the last request a scripted model received, checked to
// carry the model name and the key of its provider.
func lastRequest(t *testing.T, m *modeltest.Server, wantModel, wantKey string) {
	t.Helper()
	reqs := m.Requests()
	if len(reqs) == 0 {
		t.Fatalf("no request reached the %s endpoint", wantModel)
	}
	r := reqs[len(reqs)-1]
	if r.Model != wantModel || r.Header.Get("Authorization") != "Bearer "+wantKey {
		t.Fatalf("the request went out as model %q with %q; want %q with the key of its envKey", r.Model, r.Header.Get("Authorization"), wantModel)
	}
}

// A Qwen Code 0.24 settings.json + .env works unchanged over LSP, and a
// session switches between its providers: qwen/listModels lists them,
// qwen/setModel changes the session's model (told as
// current_model_update), the next request goes to the chosen provider's
// endpoint with its own key, the choice survives qwen/loadSession in a
// new server, and an unknown id is -32602 naming the known ones.
func TestLSPChoosesAmongQwenCodeProviders(t *testing.T) {
	dash, or := modeltest.Start(t), modeltest.Start(t)
	base := t.TempDir()
	root := filepath.Join(base, "W")
	os.MkdirAll(root, 0o755)
	root, _ = filepath.EvalSymlinks(root)
	boot := func() *rpctest.Editor {
		ws, qwenDir := qwenCodeWorkspace(t, base, dash, or)
		t.Cleanup(func() { ws.Close() })
		e := rpctest.Start(t, rpc.Options{Workspace: ws, QwenHome: qwenDir, Stderr: testLog{t}})
		e.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true})
		return e
	}
	e := boot()
	call := func(method string, params any, out any) {
		t.Helper()
		res, err := e.Call(method, params)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		if out != nil {
			json.Unmarshal(res, out)
		}
	}
	type listed struct {
		Models []struct {
			ID, Name, Provider, BaseURL, Description string
		}
		Current string
	}
	var lm listed
	call("qwen/listModels", map[string]any{}, &lm)
	var got []string
	for _, m := range lm.Models {
		got = append(got, m.Provider+":"+m.ID+"@"+m.BaseURL)
	}
	want := []string{"openai:qwen3-coder-plus@" + dash.URL, "openai:qwen/qwen3-coder@" + or.URL, "anthropic:claude-sonnet-4-5@" + workspace.AnthropicOpenAIBaseURL}
	if lm.Current != "qwen3-coder-plus" || strings.Join(got, " ") != strings.Join(want, " ") || lm.Models[0].Name != "Qwen3 Coder Plus (DashScope)" || lm.Models[0].Description == "" {
		t.Fatalf("qwen/listModels = %+v\nwant %v", lm, want)
	}

	var ns struct {
		SessionID string
		Model     string
	}
	call("qwen/newSession", map[string]any{}, &ns)
	if ns.Model != "qwen3-coder-plus" {
		t.Fatalf("qwen/newSession model = %q", ns.Model)
	}
	prompt := func(e *rpctest.Editor, text string) {
		t.Helper()
		if _, err := e.Call("qwen/prompt", map[string]any{"sessionId": ns.SessionID, "prompt": []any{map[string]any{"type": "text", "text": text}}}); err != nil {
			t.Fatal(err)
		}
	}
	dash.Push(modeltest.Response{Text: "from DashScope"})
	prompt(e, "one")
	lastRequest(t, dash, "qwen3-coder-plus", fixtureDashScopeKey)

	var sm struct{ Model string }
	call("qwen/setModel", map[string]any{"sessionId": ns.SessionID, "modelId": "qwen/qwen3-coder"}, &sm)
	if sm.Model != "qwen/qwen3-coder" {
		t.Fatalf("qwen/setModel = %+v", sm)
	}
	e.WaitNotification("qwen/sessionUpdate", func(p json.RawMessage) bool {
		return strings.Contains(string(p), `"sessionUpdate":"current_model_update"`) && strings.Contains(string(p), `"modelId":"qwen/qwen3-coder"`)
	})
	call("qwen/listModels", map[string]any{"sessionId": ns.SessionID}, &lm)
	if lm.Current != "qwen/qwen3-coder" {
		t.Fatalf("the session's current model = %q", lm.Current)
	}
	call("qwen/listModels", nil, &lm)
	if lm.Current != "qwen3-coder-plus" {
		t.Fatalf("the default model became %q", lm.Current)
	}
	dashBefore := len(dash.Requests())
	or.Push(modeltest.Response{Text: "from OpenRouter"})
	prompt(e, "two")
	lastRequest(t, or, "qwen/qwen3-coder", fixtureOpenRouterKey)
	if len(dash.Requests()) != dashBefore {
		t.Fatal("a request still went to DashScope after the switch")
	}

	_, err := e.Call("qwen/setModel", map[string]any{"sessionId": ns.SessionID, "modelId": "gpt-5"})
	var re *rpctest.RPCError
	if !asRPCError(err, &re) || re.Code != -32602 || !strings.Contains(re.Message, "qwen/qwen3-coder") || !strings.Contains(re.Message, "claude-sonnet-4-5") {
		t.Fatalf("unknown model: %v", err)
	}

	// A new server loads the session with its model.
	if code := e.Shutdown(); code != 0 {
		t.Fatalf("shutdown: %d", code)
	}
	e = boot()
	if _, err := e.Call("qwen/loadSession", map[string]any{"sessionId": ns.SessionID}); err != nil {
		t.Fatal(err)
	}
	call("qwen/listModels", map[string]any{"sessionId": ns.SessionID}, &lm)
	if lm.Current != "qwen/qwen3-coder" {
		t.Fatalf("after qwen/loadSession the model is %q", lm.Current)
	}
	or.Push(modeltest.Response{Text: "again"})
	prompt(e, "three")
	lastRequest(t, or, "qwen/qwen3-coder", fixtureOpenRouterKey)

	// The keys of .env never reach the session file.
	files, _ := filepath.Glob(filepath.Join(base, "home", ".qwen", "projects", "*", "sessions", "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("session files: %v", files)
	}
	data, _ := os.ReadFile(files[0])
	if !strings.Contains(string(data), `"model":"qwen/qwen3-coder"`) || strings.Contains(string(data), fixtureOpenRouterKey) || strings.Contains(string(data), fixtureDashScopeKey) {
		t.Fatalf("session file:\n%s", data)
	}
}

func asRPCError(err error, target **rpctest.RPCError) bool {
	re, ok := err.(*rpctest.RPCError)
	if ok {
		*target = re
	}
	return ok
}

// startACPWith starts an ACP server over ws.
func startACPWith(t *testing.T, ws *workspace.Workspace, qwenHome string) (*acpClient, func()) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	srv := rpc.NewServer(rpc.Options{Version: "test", ACP: true, Workspace: ws, QwenHome: qwenHome, Stderr: testLog{t}})
	c := &acpClient{t: t, w: inW, responses: map[string]chan json.RawMessage{}, done: make(chan int, 1), ws: ws}
	c.answer = func(string, json.RawMessage) any { return nil }
	go func() {
		code := srv.Serve(context.Background(), inR, outW)
		outW.Close()
		c.done <- code
	}()
	go c.read(outR)
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			inW.Close()
			<-c.done
			ws.Close()
		}
	}
	t.Cleanup(stop)
	return c, stop
}

// callError sends a request that must fail and returns its error object.
func (c *acpClient) callError(method string, params any) (code int, message string) {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := fmt.Sprint(c.nextID)
	ch := make(chan json.RawMessage, 1)
	c.responses[id] = ch
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.nextID, "method": method, "params": params})
	c.w.Write(append(b, '\n'))
	c.mu.Unlock()
	select {
	case line := <-ch:
		var m struct {
			Error *struct {
				Code    int
				Message string
			}
		}
		json.Unmarshal(line, &m)
		if m.Error == nil {
			c.t.Fatalf("%s succeeded: %s", method, line)
		}
		return m.Error.Code, m.Error.Message
	case <-time.After(20 * time.Second):
		c.t.Fatalf("no answer to %s", method)
	}
	return 0, ""
}

type acpConfigOption struct {
	ID, Name, Category, Type string
	CurrentValue             string
	Options                  []struct{ Value, Name, Description string }
}

func configOptions(t *testing.T, raw json.RawMessage) map[string]acpConfigOption {
	t.Helper()
	var list []acpConfigOption
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatalf("configOptions %s: %v", raw, err)
	}
	out := map[string]acpConfigOption{}
	for _, o := range list {
		out[o.ID] = o
	}
	return out
}

// Over ACP the same configuration works unchanged, and the session's
// model and mode are the stable schema's config options: in session/new
// and session/load, set with session/set_config_option (or the older
// session/set_model), told with config_option_update.
func TestACPConfigOptionsChooseTheModel(t *testing.T) {
	dash, or := modeltest.Start(t), modeltest.Start(t)
	base := t.TempDir()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	ws, qwenDir := qwenCodeWorkspace(t, base, dash, or)
	c, stop := startACPWith(t, ws, qwenDir)
	c.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	ns := c.call("session/new", map[string]any{"cwd": root, "mcpServers": []any{}})
	var sid string
	json.Unmarshal(ns["sessionId"], &sid)
	opts := configOptions(t, ns["configOptions"])
	model, mode := opts["model"], opts["mode"]
	if model.Category != "model" || model.Type != "select" || model.CurrentValue != "qwen3-coder-plus" || len(model.Options) != 3 ||
		model.Options[1].Value != "qwen/qwen3-coder" || model.Options[1].Name != "Qwen3 Coder (OpenRouter)" {
		t.Fatalf("model option = %+v", model)
	}
	if mode.Category != "mode" || mode.CurrentValue != "default" || len(mode.Options) != 4 || ns["modes"] == nil {
		t.Fatalf("mode option = %+v, modes %s", mode, ns["modes"])
	}
	prompt := func(c *acpClient) {
		t.Helper()
		res := c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}})
		if string(res["stopReason"]) != `"end_turn"` {
			t.Fatalf("session/prompt = %v", res)
		}
	}
	dash.Push(modeltest.Response{Text: "dash"})
	prompt(c)
	lastRequest(t, dash, "qwen3-coder-plus", fixtureDashScopeKey)

	res := c.call("session/set_config_option", map[string]any{"sessionId": sid, "configId": "model", "value": "qwen/qwen3-coder"})
	if got := configOptions(t, res["configOptions"]); got["model"].CurrentValue != "qwen/qwen3-coder" || got["mode"].CurrentValue != "default" {
		t.Fatalf("session/set_config_option = %s", res["configOptions"])
	}
	sawUpdate := func(kind, text string) bool {
		for _, u := range c.updates() {
			if string(u["sessionUpdate"]) == `"`+kind+`"` && strings.Contains(string(u["configOptions"])+string(u["currentModeId"]), text) {
				return true
			}
		}
		return false
	}
	waitFor(t, "config_option_update", func() bool { return sawUpdate("config_option_update", `"currentValue":"qwen/qwen3-coder"`) })
	or.Push(modeltest.Response{Text: "or"})
	prompt(c)
	lastRequest(t, or, "qwen/qwen3-coder", fixtureOpenRouterKey)

	// The unstable session/set_model of earlier SDKs does the same.
	if res := c.call("session/set_model", map[string]any{"sessionId": sid, "modelId": "qwen3-coder-plus"}); res == nil {
		t.Fatal("session/set_model gave no result")
	}
	dash.Push(modeltest.Response{Text: "dash again"})
	prompt(c)
	lastRequest(t, dash, "qwen3-coder-plus", fixtureDashScopeKey)

	res = c.call("session/set_config_option", map[string]any{"sessionId": sid, "configId": "mode", "value": "plan"})
	if got := configOptions(t, res["configOptions"]); got["mode"].CurrentValue != "plan" {
		t.Fatalf("mode: %s", res["configOptions"])
	}
	waitFor(t, "mode updates", func() bool {
		return sawUpdate("current_mode_update", "plan") && sawUpdate("config_option_update", `"currentValue":"plan"`)
	})
	if code, msg := c.callError("session/set_config_option", map[string]any{"sessionId": sid, "configId": "model", "value": "gpt-5"}); code != -32602 || !strings.Contains(msg, "claude-sonnet-4-5") {
		t.Fatalf("unknown model: %d %s", code, msg)
	}
	if code, _ := c.callError("session/set_config_option", map[string]any{"sessionId": sid, "configId": "model", "value": 3}); code != -32602 {
		t.Fatalf("a number as value: %d", code)
	}
	if code, _ := c.callError("session/set_config_option", map[string]any{"sessionId": sid, "configId": "temperature", "value": "1"}); code != -32602 {
		t.Fatalf("unknown option: %d", code)
	}
	c.call("session/set_config_option", map[string]any{"sessionId": sid, "configId": "model", "value": "qwen/qwen3-coder"})
	stop()

	// session/load in a new server answers with the session's choices.
	ws2, _ := qwenCodeWorkspace(t, base, dash, or)
	c2, _ := startACPWith(t, ws2, qwenDir)
	c2.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	ld := c2.call("session/load", map[string]any{"sessionId": sid, "cwd": root, "mcpServers": []any{}})
	if got := configOptions(t, ld["configOptions"]); got["model"].CurrentValue != "qwen/qwen3-coder" || got["mode"].CurrentValue != "plan" {
		t.Fatalf("session/load configOptions = %s", ld["configOptions"])
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// qwen/newSession's model chooses among the configured models; an unknown
// one is -32602 and makes no session.
func TestLSPNewSessionChoosesTheModel(t *testing.T) {
	dash, or := modeltest.Start(t), modeltest.Start(t)
	base := t.TempDir()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	ws, qwenDir := qwenCodeWorkspace(t, base, dash, or)
	t.Cleanup(func() { ws.Close() })
	e := rpctest.Start(t, rpc.Options{Workspace: ws, QwenHome: qwenDir, Stderr: testLog{t}})
	e.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true})
	res, err := e.Call("qwen/newSession", map[string]any{"model": "qwen/qwen3-coder"})
	if err != nil {
		t.Fatal(err)
	}
	var ns struct{ SessionID, Model string }
	json.Unmarshal(res, &ns)
	if ns.Model != "qwen/qwen3-coder" {
		t.Fatalf("qwen/newSession = %s", res)
	}
	or.Push(modeltest.Response{Text: "or"})
	if _, err := e.Call("qwen/prompt", map[string]any{"sessionId": ns.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}}); err != nil {
		t.Fatal(err)
	}
	lastRequest(t, or, "qwen/qwen3-coder", fixtureOpenRouterKey)

	_, err = e.Call("qwen/newSession", map[string]any{"model": "gpt-5"})
	var re *rpctest.RPCError
	if !asRPCError(err, &re) || re.Code != -32602 || !strings.Contains(re.Message, "qwen3-coder-plus") {
		t.Fatalf("unknown model: %v", err)
	}
	res, _ = e.Call("qwen/listSessions", map[string]any{})
	if n := strings.Count(string(res), `"sessionId"`); n != 1 {
		t.Fatalf("%d sessions after the refused one: %s", n, res)
	}
}

// When the settings stop offering a session's chosen model, the session
// runs on the default model and the lists say so.
func TestVanishedModelChoiceFallsBackToTheDefault(t *testing.T) {
	dash, or := modeltest.Start(t), modeltest.Start(t)
	base := t.TempDir()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	ws, qwenDir := qwenCodeWorkspace(t, base, dash, or)
	t.Cleanup(func() { ws.Close() })
	e := rpctest.Start(t, rpc.Options{Workspace: ws, QwenHome: qwenDir, Stderr: testLog{t}})
	e.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true})
	res, err := e.Call("qwen/newSession", map[string]any{"model": "qwen/qwen3-coder"})
	if err != nil {
		t.Fatal(err)
	}
	var ns struct{ SessionID string }
	json.Unmarshal(res, &ns)

	// The user drops the OpenRouter entry.
	settings := filepath.Join(qwenDir, "settings.json")
	data, _ := os.ReadFile(settings)
	text := string(data)
	start := strings.Index(text, `      {
        "id": "qwen/qwen3-coder"`)
	end := strings.Index(text, `    ],
    "anthropic"`)
	if start < 0 || end < start {
		t.Fatal("the fixture changed shape")
	}
	text = strings.TrimSuffix(strings.TrimRight(text[:start], " \n"), ",") + "\n" + text[end:]
	os.WriteFile(settings, []byte(text), 0o600)
	ws.Settings.Load()

	res, _ = e.Call("qwen/listModels", map[string]any{"sessionId": ns.SessionID})
	if !strings.Contains(string(res), `"current":"qwen3-coder-plus"`) || strings.Contains(string(res), "qwen/qwen3-coder") {
		t.Fatalf("qwen/listModels = %s", res)
	}
	dash.Push(modeltest.Response{Text: "dash"})
	if _, err := e.Call("qwen/prompt", map[string]any{"sessionId": ns.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}}); err != nil {
		t.Fatal(err)
	}
	lastRequest(t, dash, "qwen3-coder-plus", fixtureDashScopeKey)
	if len(or.Requests()) != 0 {
		t.Fatal("a request went to the dropped provider")
	}
}

// A provider key that lives only in ~/.qwen/.env, has no key-like shape
// and belongs to a model other than the default is still kept out of
// error replies and the log when the endpoint echoes it.
func TestDotEnvKeyIsScrubbedFromReplies(t *testing.T) {
	const key = "plainvalue0123456789xyz"
	m := modeltest.Start(t, modeltest.Response{Status: 400, Body: `{"error": {"message": "bad request for credential ` + key + `"}}`})
	base := t.TempDir()
	qwenDir := filepath.Join(base, "home", ".qwen")
	os.MkdirAll(qwenDir, 0o755)
	os.WriteFile(filepath.Join(qwenDir, "settings.json"), []byte(`{"model": {"name": "local"}, "modelProviders": {"openai": [
		{"id": "local", "envKey": "UNSET_KEY", "baseUrl": "http://127.0.0.1:9/v1"},
		{"id": "p", "envKey": "PLAIN_PROVIDER_KEY", "baseUrl": "`+m.URL+`"}]}}`), 0o600)
	os.WriteFile(filepath.Join(qwenDir, ".env"), []byte("PLAIN_PROVIDER_KEY="+key+"\n"), 0o600)
	ws := workspace.New(workspace.Options{Settings: workspace.SettingsOptions{UserDir: qwenDir, SystemPath: filepath.Join(base, "none.json"),
		Getenv: func(string) (string, bool) { return "", false }}})
	t.Cleanup(func() { ws.Close() })
	var log strings.Builder
	var logMu sync.Mutex
	e := rpctest.Start(t, rpc.Options{Workspace: ws, QwenHome: qwenDir, Stderr: writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return log.Write(p)
	})})
	root, _ := filepath.EvalSymlinks(t.TempDir())
	e.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true})
	res, err := e.Call("qwen/newSession", map[string]any{"model": "p"})
	if err != nil {
		t.Fatal(err)
	}
	var ns struct{ SessionID string }
	json.Unmarshal(res, &ns)
	_, err = e.Call("qwen/prompt", map[string]any{"sessionId": ns.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}})
	if err == nil || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "[redacted]") {
		t.Fatalf("the error reply: %v", err)
	}
	if got := m.Requests(); len(got) == 0 || got[0].Header.Get("Authorization") != "Bearer "+key {
		t.Fatal("the key did not reach its endpoint")
	}
	logMu.Lock()
	defer logMu.Unlock()
	if strings.Contains(log.String(), key) {
		t.Fatalf("the log holds the key:\n%s", log.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// A model chosen while a turn runs takes over from the turn's next model
// request.
func TestModelSwitchMidTurnAppliesToTheNextRequest(t *testing.T) {
	dash, or := modeltest.Start(t), modeltest.Start(t)
	base := t.TempDir()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	ws, qwenDir := qwenCodeWorkspace(t, base, dash, or)
	t.Cleanup(func() { ws.Close() })
	e := rpctest.Start(t, rpc.Options{Workspace: ws, QwenHome: qwenDir, Stderr: testLog{t}})
	e.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true})
	res, err := e.Call("qwen/newSession", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var ns struct{ SessionID string }
	json.Unmarshal(res, &ns)
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello\n"), 0o644)
	hold := make(chan struct{})
	// The first request asks for a read; its answer waits until the
	// switch is made.
	dash.Push(modeltest.Response{Hold: hold, ToolCalls: []modeltest.ToolCall{{ID: "r", Name: "read_file", Arguments: jsonArgs("absolute_path", filepath.Join(root, "a.txt"))}}})
	or.Push(modeltest.Response{Text: "done on OpenRouter"})
	id, ch := e.Send("qwen/prompt", map[string]any{"sessionId": ns.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "read a.txt"}}})
	dash.WaitRequests(1, 10*time.Second)
	if _, err := e.Call("qwen/setModel", map[string]any{"sessionId": ns.SessionID, "modelId": "qwen/qwen3-coder"}); err != nil {
		t.Fatal(err)
	}
	close(hold)
	if _, err := e.Wait(id, ch); err != nil {
		t.Fatal(err)
	}
	if len(dash.Requests()) != 1 {
		t.Fatalf("DashScope got %d requests", len(dash.Requests()))
	}
	lastRequest(t, or, "qwen/qwen3-coder", fixtureOpenRouterKey)
}

// Methods whose params may be left out take an empty array too: Lua
// clients (Neovim) send an empty table as [].
func TestOptionalParamsAcceptAnEmptyArray(t *testing.T) {
	a := startAgent(t, "default")
	for _, method := range []string{"qwen/listModels", "qwen/newSession", "qwen/listSessions"} {
		if _, err := a.e.Call(method, []any{}); err != nil {
			t.Errorf("%s with []: %v", method, err)
		}
	}
	if _, err := a.e.Call("qwen/listModels", []any{1}); !isCode(err, rpc.CodeInvalidParams) {
		t.Errorf("qwen/listModels with [1]: %v, want -32602", err)
	}
}
