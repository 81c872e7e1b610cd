package session

import (
	"net/url"
	"sync"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// ModelFromSettings returns a model factory that reads the model fields
// from the settings (protocol.md §10) each time, so a settings change
// applies from the next request. With no key and no endpoint, or no model
// name, it returns a *NoModelError.
func ModelFromSettings(st *workspace.Settings, retry RetryPolicy) func() (Model, error) {
	// The client is kept while the configuration stays the same, so its
	// connections to the endpoint are reused across requests.
	var mu sync.Mutex
	var last ModelConfig
	var cached *OpenAIModel
	return func() (Model, error) {
		mc := st.Model()
		if mc.APIKey == "" && mc.BaseURL == "" {
			return nil, &NoModelError{Name: mc.Name}
		}
		if mc.Name == "" {
			if mc.BaseURL == workspace.DashScopeBaseURL {
				mc.Name = "qwen3-coder-plus"
			} else {
				return nil, &NoModelError{MissingName: true, BaseURL: mc.BaseURL}
			}
		}
		if mc.APIKey == "" && !isLoopback(mc.BaseURL) {
			return nil, &NoModelError{MissingKey: true, BaseURL: mc.BaseURL}
		}
		cfg := ModelConfig{Name: mc.Name, BaseURL: mc.BaseURL, APIKey: mc.APIKey}
		mu.Lock()
		defer mu.Unlock()
		if cached == nil || cfg != last {
			cached, last = NewOpenAIModel(cfg, retry), cfg
		}
		return cached, nil
	}
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
