package session

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Local servers, told by their default ports (or a host that names them).
// All four may leak <think> into the content (a model without a reasoning
// parser) and write Qwen's <tool_call> text instead of calls (a server
// started without a tool parser), so both are fixed up.

func portIs(u *url.URL, port string, names ...string) bool {
	if u.Port() == port {
		return true
	}
	h := strings.ToLower(u.Hostname())
	for _, n := range names {
		if strings.Contains(h, n) {
			return true
		}
	}
	return false
}

// ollama sends its thinking as "reasoning"; its OpenAI-compatible API has
// no field for thinking in the history, so none is sent back.
var ollama = &provider{
	name:         "ollama",
	window:       ollamaWindow,
	match:        func(u *url.URL, _ ModelConfig) bool { return portIs(u, "11434", "ollama") },
	reasoning:    reasoningNever,
	thinkTags:    true,
	toolCallText: true,
}

// lmStudio sends reasoning_content when its "separate reasoning" setting
// is on, and <think> in the content otherwise.
var lmStudio = &provider{
	name:         "lmstudio",
	window:       lmStudioWindow,
	match:        func(u *url.URL, _ ModelConfig) bool { return portIs(u, "1234", "lmstudio", "lm-studio") },
	reasoning:    reasoningNever,
	thinkTags:    true,
	toolCallText: true,
}

// llamaCpp is llama.cpp's llama-server: reasoning_content with its
// default reasoning format, and its Jinja templates read it back.
var llamaCpp = &provider{
	name:         "llamacpp",
	window:       llamaCppWindow,
	match:        func(u *url.URL, _ ModelConfig) bool { return portIs(u, "8080", "llama") },
	reasoning:    reasoningKept,
	thinkTags:    true,
	toolCallText: true,
}

// vLLM with a reasoning parser sends reasoning_content, and the Qwen3
// chat templates read it back from the history. Without max_tokens it
// bounds an answer by what the window leaves, and with one it refuses a
// request that would pass the window, so no default bound is sent.
var vLLM = &provider{
	name:         "vllm",
	window:       vllmWindow,
	windowBound:  true,
	match:        func(u *url.URL, _ ModelConfig) bool { return portIs(u, "8000", "vllm") },
	reasoning:    reasoningKept,
	thinkTags:    true,
	toolCallText: true,
}

// Context windows. A local server knows the window it was started with,
// and a request past it fails (or, on Ollama, is cut silently), so the
// profiles of local servers can ask. Each answers 0 when it cannot tell.

// windowProbe asks a server for its context window.
type windowProbe func(ctx context.Context, c *probeClient, model string) int

// probeClient makes the small JSON requests of the probes: to the
// server's root (the base URL without /v1), with the key when there is
// one.
type probeClient struct {
	root, key string
	http      *http.Client
}

func (c *probeClient) get(ctx context.Context, method, path string, body any, out any) bool {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return false
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.root+path, rd)
	if err != nil {
		return false
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(out) == nil
}

// vLLM lists max_model_len with each model.
func vllmWindow(ctx context.Context, c *probeClient, model string) int {
	var list struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if !c.get(ctx, http.MethodGet, "/v1/models", nil, &list) {
		return 0
	}
	for _, m := range list.Data {
		if m.ID == model || len(list.Data) == 1 {
			return m.MaxModelLen
		}
	}
	return 0
}

// llama-server tells the context it was started with (-c) in /props.
func llamaCppWindow(ctx context.Context, c *probeClient, _ string) int {
	var props struct {
		Settings struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	if !c.get(ctx, http.MethodGet, "/props", nil, &props) {
		return 0
	}
	return props.Settings.NCtx
}

// Ollama runs a model with its num_ctx parameter when the model sets one,
// and otherwise with a server default that /api/show does not tell (the
// model's own maximum would overstate it), so only num_ctx counts.
func ollamaWindow(ctx context.Context, c *probeClient, model string) int {
	var show struct {
		Parameters string `json:"parameters"`
	}
	if !c.get(ctx, http.MethodPost, "/api/show", map[string]string{"model": model}, &show) {
		return 0
	}
	for _, line := range strings.Split(show.Parameters, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "num_ctx" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// LM Studio's REST API tells the loaded context length of a model, or its
// maximum.
func lmStudioWindow(ctx context.Context, c *probeClient, model string) int {
	var m struct {
		Loaded int `json:"loaded_context_length"`
		Max    int `json:"max_context_length"`
	}
	if !c.get(ctx, http.MethodGet, "/api/v0/models/"+url.PathEscape(model), nil, &m) {
		return 0
	}
	if m.Loaded > 0 {
		return m.Loaded
	}
	return m.Max
}

// ContextWindow asks a local server for the context window the model runs
// with: vLLM's max_model_len, llama-server's n_ctx, Ollama's num_ctx, LM
// Studio's loaded context length. 0 when the provider cannot tell, or the
// server does not answer within 5 s.
func (m *OpenAIModel) ContextWindow(ctx context.Context) int {
	if m.provider.window == nil || m.cfg.BaseURL == "" {
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	root := strings.TrimSuffix(strings.TrimSuffix(m.cfg.BaseURL, "/"), "/v1")
	c := &probeClient{root: root, key: m.cfg.APIKey, http: &http.Client{}}
	return max(m.provider.window(ctx, c, m.cfg.Name), 0)
}
