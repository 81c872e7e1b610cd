package session

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// SetupCheck is the answer of qwen/checkSetup (docs/protocol.md "Model and
// setup failures"): whether the configured model answers a real request,
// and, when not, what to change.
type SetupCheck struct {
	OK      bool    `json:"ok"`
	Message string  `json:"message"`
	Model   *string `json:"model"`
	BaseURL *string `json:"baseUrl"`
	// Reason, Settings and Env are those of the prompt error the same
	// problem would give.
	Reason    string   `json:"reason,omitempty"`
	Settings  []string `json:"settings,omitempty"`
	Env       []string `json:"env,omitempty"`
	LatencyMs *int64   `json:"latencyMs,omitempty"`
	Sandbox   string   `json:"sandbox,omitempty"`
	// LanguageServers are the language servers qwen-ls knows, and
	// LSPAllowed whether it may start them here (not in an untrusted
	// folder); the rpc layer fills them.
	LanguageServers []LanguageServer `json:"languageServers,omitempty"`
	LSPAllowed      *bool            `json:"lspAllowed,omitempty"`
}

// LanguageServer is one language server of qwen/checkSetup.
type LanguageServer struct {
	Name    string `json:"name"`
	Command string `json:"command"`
	// Languages are the languageIds it serves.
	Languages []string `json:"languages"`
	// Installed: its command is on PATH.
	Installed bool `json:"installed"`
	// ForFile: it covers the file the check was asked about.
	ForFile bool `json:"forFile"`
}

// setupCheckTimeout bounds the one request of a check.
const setupCheckTimeout = 15 * time.Second

// CheckSetup resolves the model as a prompt would and sends it one real
// request for a single token. A setup problem is the answer, not an error.
func (m *Manager) CheckSetup(ctx context.Context) SetupCheck {
	var out SetupCheck
	mc := m.opts.Env.Settings().Model()
	if mc.Name != "" {
		out.Model = &mc.Name
	}
	if ep := ShownEndpoint(mc.BaseURL); ep != "" {
		out.BaseURL = &ep
	}
	fill := func(s Setup, msg string) SetupCheck {
		out.Reason, out.Settings, out.Env, out.Message = s.Reason, s.Settings, s.Env, msg
		return out
	}
	if m.opts.NewModel == nil {
		return fill((&NoModelError{}).Setup(), (&NoModelError{}).Error())
	}
	model, err := m.opts.NewModel()
	var nm *NoModelError
	if errors.As(err, &nm) {
		return fill(nm.Setup(), nm.Error())
	}
	if err != nil {
		return fill(Setup{Reason: "model_error"}, err.Error())
	}
	name := model.Name()
	out.Model = &name
	if out.BaseURL == nil {
		ep := endpointLabel("")
		out.BaseURL = &ep
	}
	ctx, cancel := context.WithTimeout(ctx, setupCheckTimeout)
	defer cancel()
	start := time.Now()
	_, err = model.Complete(ctx, ModelRequest{
		Messages:  []Message{{Role: "user", Text: "Reply with the single word: ok"}},
		MaxTokens: 1,
	})
	ms := time.Since(start).Milliseconds()
	var me *ModelError
	switch {
	case err == nil:
		out.OK, out.LatencyMs = true, &ms
		out.Message = fmt.Sprintf("%s at %s answered in %d ms.", name, *out.BaseURL, ms)
		return out
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return fill(Setup{Reason: "model_unreachable", Settings: []string{"model.baseUrl"}, Env: []string{"OPENAI_BASE_URL"}},
			fmt.Sprintf("%s at %s did not answer within %s. Check that the model server runs and that model.baseUrl (or OPENAI_BASE_URL) points at it.", name, *out.BaseURL, setupCheckTimeout))
	case errors.As(err, &me):
		s, _ := me.Setup()
		return fill(s, me.Error())
	}
	return fill(Setup{Reason: "model_error"}, err.Error())
}
