package session

import (
	"encoding/json"
	"net/url"
	"sync"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// ModelsFromSettings returns the model factories that read the model
// fields from the settings (protocol.md §10, "Model configuration") each
// time, so a settings change applies from the next request: the default
// factory, one for a model chosen by id (a modelProviders entry,
// qwen/setModel), and the check of an id (a *workspace.UnknownModelError
// naming the configured ones). The factories share their clients. With no
// key and no endpoint, or no model name, a factory returns a
// *NoModelError.
func ModelsFromSettings(st *workspace.Settings, retry RetryPolicy) (def func() (Model, error), byID func(string) (Model, error), known func(string) error) {
	c := newModelCache(retry)
	def = func() (Model, error) { return c.get(st.Model(), providerSetting(st)) }
	byID = func(id string) (Model, error) {
		mc, err := st.ModelFor(id)
		if err != nil {
			return nil, err
		}
		return c.get(mc, providerSetting(st))
	}
	known = func(id string) error {
		_, err := st.ModelFor(id)
		return err
	}
	return def, byID, known
}

// maxCachedModels bounds the clients kept: one per configuration in use.
const maxCachedModels = 16

// modelCache keeps a client per model configuration, so the connections
// to an endpoint are reused across requests and sessions.
type modelCache struct {
	retry RetryPolicy
	mu    sync.Mutex
	byKey map[string]*OpenAIModel
}

func newModelCache(retry RetryPolicy) *modelCache {
	return &modelCache{retry: retry, byKey: map[string]*OpenAIModel{}}
}

// get checks a resolved configuration and returns its client.
// providerSetting is model.provider: the provider profile to use when the
// base URL does not tell it (a vLLM or llama.cpp server on another port),
// "" to pick it from the URL.
func providerSetting(st *workspace.Settings) string {
	return st.String("model.provider", "")
}

func (c *modelCache) get(mc workspace.ModelConfig, provider string) (Model, error) {
	if mc.APIKey == "" && mc.BaseURL == "" {
		return nil, &NoModelError{Name: mc.Name, EnvKey: mc.EnvKey, MissingKey: mc.FromProvider && mc.Name != ""}
	}
	if mc.Name == "" {
		if mc.BaseURL == workspace.DashScopeBaseURL {
			mc.Name = "qwen3-coder-plus"
		} else {
			return nil, &NoModelError{MissingName: true, BaseURL: mc.BaseURL}
		}
	}
	if mc.APIKey == "" && !isLoopback(mc.BaseURL) {
		return nil, &NoModelError{MissingKey: true, BaseURL: mc.BaseURL, EnvKey: mc.EnvKey}
	}
	cfg := ModelConfig{Name: mc.Name, BaseURL: mc.BaseURL, APIKey: mc.APIKey, Provider: provider}
	applyGeneration(&cfg, mc.Generation)
	key := provider + "\x00" + cacheKey(mc)
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.byKey[key]; ok {
		return m, nil
	}
	if len(c.byKey) >= maxCachedModels {
		clear(c.byKey)
	}
	m := NewOpenAIModel(cfg, c.retry)
	c.byKey[key] = m
	return m, nil
}

// cacheKey identifies a configuration: every field that reaches the
// client. It holds the key, so it stays in memory only.
func cacheKey(mc workspace.ModelConfig) string {
	b, _ := json.Marshal(struct {
		Name, BaseURL, APIKey string
		G                     workspace.GenerationConfig
	}{mc.Name, mc.BaseURL, mc.APIKey, mc.Generation})
	return string(b)
}

// applyGeneration carries model.generationConfig (or a modelProviders
// entry's) over to the client's configuration: Qwen Code's timeout is in
// milliseconds and bounds the wait for the answer to start; qwen-ls's
// idleTimeout (milliseconds too) bounds a silence inside the answer, and
// its answerTimeout the whole answer; maxRetries 0 means none.
func applyGeneration(cfg *ModelConfig, g workspace.GenerationConfig) {
	cfg.Timeout = g.Timeout
	cfg.IdleTimeout = g.IdleTimeout
	cfg.AnswerTimeout = g.AnswerTimeout
	if g.MaxRetries != nil {
		cfg.MaxRetries = *g.MaxRetries
		if cfg.MaxRetries == 0 {
			cfg.MaxRetries = -1
		}
	}
	cfg.SamplingParams = g.SamplingParams
	cfg.ExtraBody = g.ExtraBody
	cfg.Headers = g.CustomHeaders
	cfg.ContextWindow = g.ContextWindowSize
}

// isLoopback reports whether an endpoint is on this machine, where local
// servers need no key.
func isLoopback(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	switch u.Hostname() {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}
