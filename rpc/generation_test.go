package rpc_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// model.generationConfig reaches the wire as Qwen Code sends it: sampling
// parameters and extra_body in the body, custom headers, maxRetries 0 as
// "no retry", and contextWindowSize as the window the session reports.
func TestGenerationConfigReachesTheRequest(t *testing.T) {
	m := modeltest.Start(t, modeltest.Response{Status: 503}, modeltest.Response{Text: "ok"})
	e := rpctest.Start(t, rpc.Options{Version: "test", Stderr: testLog{t}})
	e.Initialize(rpctest.InitParams{Roots: []string{t.TempDir()}, Rich: true, InitializationOptions: map[string]any{
		"settings": map[string]any{"model": map[string]any{
			"name": "scripted", "baseUrl": m.URL,
			"generationConfig": map[string]any{
				"samplingParams":    map[string]any{"temperature": 0.2, "top_p": 0.9},
				"extra_body":        map[string]any{"enable_thinking": false},
				"customHeaders":     map[string]any{"X-Team": "editor-tests"},
				"maxRetries":        0,
				"contextWindowSize": 6000,
			},
		}},
	}})
	res, err := e.Call("qwen/newSession", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var ns struct{ SessionID string }
	json.Unmarshal(res, &ns)
	prompt := func() error {
		_, err := e.Call("qwen/prompt", map[string]any{"sessionId": ns.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}})
		return err
	}
	if err := prompt(); err == nil || len(m.Requests()) != 1 {
		t.Fatalf("with maxRetries 0 a 503 fails at once: err %v after %d requests", err, len(m.Requests()))
	}
	if err := prompt(); err != nil {
		t.Fatal(err)
	}
	r := m.Requests()[1]
	var body map[string]any
	json.Unmarshal(r.Body, &body)
	if body["temperature"] != 0.2 || body["top_p"] != 0.9 || body["enable_thinking"] != false || r.Header.Get("X-Team") != "editor-tests" {
		t.Errorf("request body %s, X-Team %q", r.Body, r.Header.Get("X-Team"))
	}
	size := sessionWindow(e)
	if size != 6000 {
		t.Errorf("the session's window is %d, want contextWindowSize 6000", size)
	}
	if strings.Contains(string(r.Body), "customHeaders") {
		t.Errorf("settings leaked into the body: %s", r.Body)
	}
}

// sessionWindow is the context window the last usage_update reported.
func sessionWindow(e *rpctest.Editor) int {
	size := 0
	for _, n := range e.Notifications("qwen/sessionUpdate") {
		var p struct {
			Update struct {
				SessionUpdate string `json:"sessionUpdate"`
				Size          int    `json:"size"`
			} `json:"update"`
		}
		json.Unmarshal(n.Params, &p)
		if p.Update.SessionUpdate == "usage_update" {
			size = p.Update.Size
		}
	}
	return size
}

// A local server's own context window is used when the settings name
// none: vLLM's /v1/models tells max_model_len, found by the vllm profile
// (model.provider, for a server on another port than 8000) and by the
// profile of unknown local servers; model.contextWindow still wins.
func TestLocalServersContextWindowIsAsked(t *testing.T) {
	models, err := os.ReadFile(filepath.Join("..", "testdata", "providers", "vllm", "models.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		settings map[string]any
		want     int
	}{
		{"vllm profile", map[string]any{"provider": "vllm"}, 32768},
		{"unknown local server", map[string]any{}, 32768},
		{"the setting wins", map[string]any{"contextWindow": 9000}, 9000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := modeltest.Start(t, modeltest.Response{Text: "ok"})
			target, _ := url.Parse(m.URL)
			proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
			var asked atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
					asked.Add(1)
					w.Header().Set("Content-Type", "application/json")
					w.Write(models)
					return
				}
				proxy.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			model := map[string]any{"name": "Qwen/Qwen3-8B", "baseUrl": srv.URL + "/v1"}
			for k, v := range tc.settings {
				model[k] = v
			}
			e := rpctest.Start(t, rpc.Options{Version: "test", Stderr: testLog{t}})
			e.Initialize(rpctest.InitParams{Roots: []string{t.TempDir()}, Rich: true, InitializationOptions: map[string]any{
				"settings": map[string]any{"model": model}}})
			res, err := e.Call("qwen/newSession", map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			var ns struct{ SessionID string }
			json.Unmarshal(res, &ns)
			if _, err := e.Call("qwen/prompt", map[string]any{"sessionId": ns.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}}); err != nil {
				t.Fatal(err)
			}
			if got := sessionWindow(e); got != tc.want {
				t.Errorf("the session's window is %d, want %d (the server was asked %d times)", got, tc.want, asked.Load())
			}
			if tc.want == 32768 && asked.Load() != 1 {
				t.Errorf("the server was asked for its window %d times, want once", asked.Load())
			}
		})
	}
}

// A script's usage line with a third number is the prompt tokens the
// provider's cache served: it reaches the editor in the usage update and in
// the prompt's answer, summed over the turn's requests.
func TestScriptedCachedTokensReachTheEditor(t *testing.T) {
	root := t.TempDir()
	rs, err := modeltest.ParseScript([]byte("-- 01.response --\ncall: list_directory {\"path\":\"$ROOT\"}\nusage: 1000 20 0\n-- 02.response --\ntext: done\nusage: 1200 10 900\n"),
		map[string]string{"ROOT": root})
	if err != nil {
		t.Fatal(err)
	}
	m := modeltest.Start(t, rs...)
	e := rpctest.Start(t, rpc.Options{Version: "test", Stderr: testLog{t}})
	e.Initialize(rpctest.InitParams{Roots: []string{root}, Rich: true, InitializationOptions: map[string]any{
		"settings": map[string]any{"model": map[string]any{"name": "scripted", "baseUrl": m.URL}},
	}})
	res, err := e.Call("qwen/newSession", map[string]any{"approvalMode": "yolo"})
	if err != nil {
		t.Fatal(err)
	}
	var ns struct{ SessionID string }
	json.Unmarshal(res, &ns)
	res, err = e.Call("qwen/prompt", map[string]any{"sessionId": ns.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "look"}}})
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Usage struct{ InputTokens, CachedTokens int }
	}
	json.Unmarshal(res, &answer)
	if answer.Usage.InputTokens != 2200 || answer.Usage.CachedTokens != 900 {
		t.Errorf("prompt answer %s: want 2200 input tokens of which 900 cached", res)
	}
	var cached []int
	for _, n := range e.Notifications("qwen/sessionUpdate") {
		var p struct {
			Update struct {
				SessionUpdate string
				CachedTokens  *int
			}
		}
		json.Unmarshal(n.Params, &p)
		if p.Update.SessionUpdate == "usage_update" && p.Update.CachedTokens != nil {
			cached = append(cached, *p.Update.CachedTokens)
		}
	}
	if len(cached) != 2 || cached[0] != 0 || cached[1] != 900 {
		t.Errorf("usage updates' cachedTokens %v, want [0 900]", cached)
	}
}

// model.generationConfig.idleTimeout (milliseconds) bounds a silence inside
// an answer: a stream that stops after its first bytes fails after it, and
// with maxRetries 0 the editor gets the message naming the setting.
func TestIdleTimeoutSetting(t *testing.T) {
	stall := modeltest.Response{RawFile: filepath.Join("..", "testdata", "providers", "dashscope", "stream-text.sse"), StallAfter: 200, Stall: time.Minute}
	m := modeltest.Start(t, stall)
	e := rpctest.Start(t, rpc.Options{Version: "test", Stderr: testLog{t}})
	e.Initialize(rpctest.InitParams{Roots: []string{t.TempDir()}, Rich: true, InitializationOptions: map[string]any{
		"settings": map[string]any{"model": map[string]any{"name": "scripted", "baseUrl": m.URL,
			"generationConfig": map[string]any{"idleTimeout": 300, "maxRetries": 0}}},
	}})
	res, err := e.Call("qwen/newSession", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var ns struct{ SessionID string }
	json.Unmarshal(res, &ns)
	start := time.Now()
	_, err = e.Call("qwen/prompt", map[string]any{"sessionId": ns.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}})
	t.Logf("the stalled answer failed after %s", time.Since(start))
	if err == nil || !strings.Contains(err.Error(), "no data for 300ms") || !strings.Contains(err.Error(), "model.generationConfig.idleTimeout") {
		t.Fatalf("prompt error %v", err)
	}
}

// promptWith sends one prompt to a session whose model is m with
// model.generationConfig gen, and returns the prompt's error.
func promptWith(t *testing.T, m *modeltest.Server, gen map[string]any) error {
	t.Helper()
	e := rpctest.Start(t, rpc.Options{Version: "test", Stderr: testLog{t}})
	e.Initialize(rpctest.InitParams{Roots: []string{t.TempDir()}, Rich: true, InitializationOptions: map[string]any{
		"settings": map[string]any{"model": map[string]any{"name": "scripted", "baseUrl": m.URL, "generationConfig": gen}},
	}})
	res, err := e.Call("qwen/newSession", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var ns struct{ SessionID string }
	json.Unmarshal(res, &ns)
	_, err = e.Call("qwen/prompt", map[string]any{"sessionId": ns.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}})
	return err
}

// model.generationConfig.answerTimeout (milliseconds) bounds an answer's
// whole time: one that drips a few bytes every 50 ms, never idle, is
// stopped, not retried, and the editor gets the message naming the
// setting.
func TestAnswerTimeoutSetting(t *testing.T) {
	drip := modeltest.Response{Text: strings.Repeat("drip ", 100), ChunkSize: 5, ChunkDelay: 50 * time.Millisecond}
	m := modeltest.Start(t, drip, modeltest.Response{Text: "a retry"})
	err := promptWith(t, m, map[string]any{"idleTimeout": 300, "answerTimeout": 1000})
	if err == nil || !strings.Contains(err.Error(), "model.generationConfig.answerTimeout") {
		t.Fatalf("prompt error %v", err)
	}
	if n := len(m.Requests()); n != 1 {
		t.Fatalf("%d requests: the stopped answer was retried", n)
	}
}

// A stream of nothing but ": keepalive" comments is idle: the comments do
// not push the idle timeout back, and the turn ends with its message.
func TestKeepAliveCommentsDoNotHoldOffTheIdleTimeout(t *testing.T) {
	m := modeltest.Start(t, modeltest.Response{KeepAlive: 100 * time.Millisecond, Delay: 10 * time.Second, Text: "late"})
	err := promptWith(t, m, map[string]any{"idleTimeout": 500, "maxRetries": 0})
	if err == nil || !strings.Contains(err.Error(), "no data for 500ms") || !strings.Contains(err.Error(), "model.generationConfig.idleTimeout") {
		t.Fatalf("prompt error %v", err)
	}
}
