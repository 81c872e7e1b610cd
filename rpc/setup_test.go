package rpc_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// deadURL is a loopback endpoint where nothing listens: a port that was
// bound and released.
func deadURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/v1"
}

// startWithModel starts a rich editor whose initializationOptions.model is
// model (nil: none), and opens a session.
func startWithModel(t *testing.T, model map[string]any) (*rpctest.Editor, string) {
	t.Helper()
	e := rpctest.Start(t, rpc.Options{Version: "test", Stderr: testLog{t}})
	root, _ := filepath.EvalSymlinks(t.TempDir())
	io := map[string]any{}
	if model != nil {
		io["model"] = model
	}
	e.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true, UTF8: true, InitializationOptions: io})
	res, err := e.Call("qwen/newSession", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var ns struct{ SessionID string }
	json.Unmarshal(res, &ns)
	return e, ns.SessionID
}

type setupData struct {
	Reason   string   `json:"reason"`
	Settings []string `json:"settings"`
	Env      []string `json:"env"`
}

type setupCheck struct {
	OK        bool     `json:"ok"`
	Message   string   `json:"message"`
	Model     *string  `json:"model"`
	BaseURL   *string  `json:"baseUrl"`
	Reason    string   `json:"reason"`
	Settings  []string `json:"settings"`
	Env       []string `json:"env"`
	LatencyMs *int64   `json:"latencyMs"`
	Sandbox   string   `json:"sandbox"`
}

// Every setup failure names the setting and the variable that fix it, in
// the message for a person and in error.data for the editor's "Open
// Settings"; qwen/checkSetup reports the same problem as its answer.
func TestSetupFailuresNameTheSettingToChange(t *testing.T) {
	m := modeltest.Start(t)
	cases := []struct {
		name   string
		model  map[string]any
		script []modeltest.Response
		code   int64
		reason string
		// words that the message must contain
		words    []string
		settings []string
	}{
		{"nothing configured", nil, nil, rpc.CodeNoModel, "no_model",
			[]string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "model.name"}, []string{"model.name", "model.baseUrl"}},
		{"name only", map[string]any{"name": "qwen3-coder-plus"}, nil, rpc.CodeNoModel, "no_endpoint",
			[]string{"qwen3-coder-plus", "model.baseUrl", "OPENAI_BASE_URL", "OPENAI_API_KEY"}, []string{"model.baseUrl", "model.apiKey"}},
		{"remote endpoint without a key", map[string]any{"name": "m", "baseUrl": "https://models.example.invalid/v1"}, nil, rpc.CodeNoModel, "no_api_key",
			[]string{"OPENAI_API_KEY", "model.apiKey", "models.example.invalid"}, []string{"model.apiKey"}},
		{"endpoint without a name", map[string]any{"baseUrl": m.URL}, nil, rpc.CodeNoModel, "no_model_name",
			[]string{"model.name", "OPENAI_MODEL"}, []string{"model.name"}},
		{"refused key", map[string]any{"name": "m", "baseUrl": m.URL}, []modeltest.Response{{Status: 401, Body: `{"error":{"message":"invalid api key"}}`}},
			rpc.CodeNoModel, "model_auth", []string{"invalid api key", "OPENAI_API_KEY", "model.apiKey"}, []string{"model.apiKey"}},
		{"unknown model", map[string]any{"name": "no-such-model", "baseUrl": m.URL}, []modeltest.Response{{Status: 404, Body: `{"error":{"message":"model not found"}}`}},
			rpc.CodeInternalError, "model_not_found", []string{"no-such-model", "model.name", "OPENAI_MODEL", "model.baseUrl"}, []string{"model.name", "model.baseUrl"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.script != nil {
				m.Push(tc.script...)
			}
			e, sid := startWithModel(t, tc.model)
			_, err := e.Call("qwen/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}})
			var re *rpctest.RPCError
			if !isCode(err, tc.code) || !errorAs(err, &re) {
				t.Fatalf("prompt: %v, want code %d", err, tc.code)
			}
			for _, w := range tc.words {
				if !strings.Contains(re.Message, w) {
					t.Errorf("message %q does not name %s", re.Message, w)
				}
			}
			var d setupData
			if err := json.Unmarshal(re.Data, &d); err != nil {
				t.Fatalf("error.data %s: %v", re.Data, err)
			}
			if d.Reason != tc.reason || !slices.Equal(d.Settings, tc.settings) || len(d.Env) == 0 {
				t.Errorf("error.data = %+v, want reason %s, settings %v and some variables", d, tc.reason, tc.settings)
			}

			if tc.script != nil {
				m.Push(tc.script...)
			}
			res, err := e.Call("qwen/checkSetup", map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			var c setupCheck
			json.Unmarshal(res, &c)
			if c.OK || c.Reason != tc.reason || !slices.Equal(c.Settings, tc.settings) || c.Message != re.Message || c.Sandbox == "" {
				t.Errorf("checkSetup = %s\nwant not ok, reason %s and the prompt's message %q", res, tc.reason, re.Message)
			}
		})
	}
}

// A refused connection on loopback is answered at once: no retries, no
// retry notices, and a message that names model.baseUrl.
func TestRefusedEndpointFailsAtOnceAndNamesBaseURL(t *testing.T) {
	url := deadURL(t)
	e, sid := startWithModel(t, map[string]any{"name": "m", "baseUrl": url})
	start := time.Now()
	_, err := e.Call("qwen/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}})
	t.Logf("the refused prompt ended after %s", time.Since(start))
	var re *rpctest.RPCError
	if !errorAs(err, &re) || re.Code != rpc.CodeInternalError {
		t.Fatalf("prompt: %v", err)
	}
	var d setupData
	json.Unmarshal(re.Data, &d)
	if d.Reason != "model_unreachable" || !slices.Equal(d.Settings, []string{"model.baseUrl"}) || !slices.Equal(d.Env, []string{"OPENAI_BASE_URL"}) {
		t.Errorf("error.data = %s", re.Data)
	}
	for _, w := range []string{url, "connection refused", "model.baseUrl", "OPENAI_BASE_URL"} {
		if !strings.Contains(re.Message, w) {
			t.Errorf("message %q does not say %s", re.Message, w)
		}
	}
	for _, n := range e.Notifications("qwen/sessionUpdate") {
		if strings.Contains(string(n.Params), "retry") {
			t.Errorf("a refused connection was retried: %s", n.Params)
		}
	}
}

// A configured model that answers: checkSetup sends one real request for
// one token and says so.
func TestCheckSetupSendsOneRealRequest(t *testing.T) {
	m := modeltest.Start(t, modeltest.Response{Text: "ok"})
	e, _ := startWithModel(t, map[string]any{"name": "scripted", "baseUrl": m.URL})
	res, err := e.Call("qwen/checkSetup", nil)
	if err != nil {
		t.Fatal(err)
	}
	var c setupCheck
	json.Unmarshal(res, &c)
	if !c.OK || c.Model == nil || *c.Model != "scripted" || c.BaseURL == nil || *c.BaseURL != m.URL || c.LatencyMs == nil ||
		!strings.Contains(c.Message, "scripted at "+m.URL+" answered in") {
		t.Fatalf("checkSetup = %s", res)
	}
	reqs := m.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests, want 1", len(reqs))
	}
	if !strings.Contains(string(reqs[0].Body), `"max_tokens":1`) || strings.Contains(string(reqs[0].Body), `"tools"`) {
		t.Errorf("the check's request = %s", reqs[0].Body)
	}
	// The same check as a command, for clients that know only LSP.
	m.Push(modeltest.Response{Text: "ok"})
	res, err = e.Call("workspace/executeCommand", map[string]any{"command": "qwen-ls.checkSetup"})
	if err != nil || !strings.Contains(string(res), `"ok":true`) {
		t.Fatalf("qwen-ls.checkSetup = %s, %v", res, err)
	}
}

// initialize says which model is in use, or null, so clients can say "no
// model" before the first prompt.
func TestInitializeNamesTheModel(t *testing.T) {
	m := modeltest.Start(t)
	for _, tc := range []struct {
		model map[string]any
		want  any
	}{{nil, nil}, {map[string]any{"name": "scripted", "baseUrl": m.URL}, "scripted"}} {
		// A subtest each: the leak check of one server must not see the
		// other's goroutines.
		t.Run(fmt.Sprint(tc.want), func(t *testing.T) {
			e := rpctest.Start(t, rpc.Options{Version: "test", Stderr: testLog{t}})
			io := map[string]any{}
			if tc.model != nil {
				io["model"] = tc.model
			}
			res := e.Initialize(rpctest.InitParams{Roots: []string{t.TempDir()}, Rich: true, InitializationOptions: io})
			var r struct {
				Capabilities struct {
					Experimental struct {
						Qwen map[string]any `json:"qwen"`
					} `json:"experimental"`
				} `json:"capabilities"`
			}
			json.Unmarshal(res, &r)
			got, ok := r.Capabilities.Experimental.Qwen["model"]
			if !ok || got != tc.want {
				t.Errorf("experimental.qwen.model = %v (present %v), want %v", got, ok, tc.want)
			}
		})
	}
}

// initialize also says what keeps a prompt from having a model, with the
// prompt error's reason, settings, variables and message, so that an
// editor says "no model" only when nothing is configured and otherwise
// names what is missing before the first prompt.
func TestInitializeSaysWhatIsMissing(t *testing.T) {
	m := modeltest.Start(t)
	for _, tc := range []struct {
		name   string
		model  map[string]any
		reason string
	}{
		{"nothing configured", nil, "no_model"},
		{"name only", map[string]any{"name": "qwen3-coder-plus"}, "no_endpoint"},
		{"remote endpoint without a key", map[string]any{"name": "m", "baseUrl": "https://models.example.invalid/v1"}, "no_api_key"},
		{"endpoint without a name", map[string]any{"baseUrl": m.URL}, "no_model_name"},
		{"configured", map[string]any{"name": "scripted", "baseUrl": m.URL}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := rpctest.Start(t, rpc.Options{Version: "test", Stderr: testLog{t}})
			io := map[string]any{}
			if tc.model != nil {
				io["model"] = tc.model
			}
			root, _ := filepath.EvalSymlinks(t.TempDir())
			res := e.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true, InitializationOptions: io})
			var r struct {
				Capabilities struct {
					Experimental struct {
						Qwen struct {
							Model *string `json:"model"`
							Setup *struct {
								setupData
								Message string `json:"message"`
							} `json:"setup"`
						} `json:"qwen"`
					} `json:"experimental"`
				} `json:"capabilities"`
			}
			json.Unmarshal(res, &r)
			q := r.Capabilities.Experimental.Qwen
			if tc.reason == "" {
				if q.Setup != nil || q.Model == nil {
					t.Fatalf("a configured model: experimental.qwen = %+v", q)
				}
				return
			}
			if q.Model != nil || q.Setup == nil || q.Setup.Reason != tc.reason || len(q.Setup.Settings) == 0 || len(q.Setup.Env) == 0 {
				t.Fatalf("experimental.qwen = %s", res)
			}
			ns, err := e.Call("qwen/newSession", map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			var sess struct{ SessionID string }
			json.Unmarshal(ns, &sess)
			_, err = e.Call("qwen/prompt", map[string]any{"sessionId": sess.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}})
			var re *rpctest.RPCError
			if !errorAs(err, &re) || re.Message != q.Setup.Message {
				t.Fatalf("the prompt failed with %v; initialize said %q", err, q.Setup.Message)
			}
			var d setupData
			json.Unmarshal(re.Data, &d)
			if d.Reason != q.Setup.Reason || !slices.Equal(d.Settings, q.Setup.Settings) || !slices.Equal(d.Env, q.Setup.Env) {
				t.Fatalf("error.data %+v, initialize %+v", d, q.Setup.setupData)
			}
		})
	}
}

func errorAs(err error, re **rpctest.RPCError) bool {
	return errors.As(err, re)
}

// A base URL may carry a token in its user info or query; messages and
// error.data show the endpoint without them.
func TestSetupMessagesHideTheURLsCredentials(t *testing.T) {
	dead := deadURL(t)
	withToken := strings.Replace(dead, "http://", "http://user:tok-in-userinfo@", 1) + "?key=tok-in-query"
	for _, model := range []map[string]any{
		{"name": "m", "baseUrl": withToken},
		{"baseUrl": withToken},
		{"name": "m", "baseUrl": "https://user:tok-in-userinfo@models.example.invalid/v1?key=tok-in-query"},
	} {
		e, sid := startWithModel(t, model)
		_, err := e.Call("qwen/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}})
		var re *rpctest.RPCError
		if !errorAs(err, &re) {
			t.Fatalf("prompt: %v", err)
		}
		res, _ := e.Call("qwen/checkSetup", nil)
		for _, shown := range []string{re.Message, string(re.Data), string(res)} {
			if strings.Contains(shown, "tok-in-") {
				t.Errorf("a credential of the base URL is shown: %s", shown)
			}
		}
		if !strings.Contains(re.Message, "/v1") {
			t.Errorf("the message does not name the endpoint: %s", re.Message)
		}
	}
}
