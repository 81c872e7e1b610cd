package rpc

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/qwen-ls/qwen-ls/session"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// Choosing the model (docs/protocol.md "Choosing the model"): the models
// the settings configure, and a per-session choice among them.

// modelInfo is one model of qwen/listModels.
type modelInfo struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Provider    string `json:"provider"`
	BaseURL     string `json:"baseUrl"`
	Description string `json:"description,omitempty"`
}

// modelChoices returns the configured models and the one a session uses
// (the default when the session chose none or sessionID is "").
func (s *Server) modelChoices(sessionID string) ([]modelInfo, string, error) {
	entries, current := s.ws.Settings.ModelChoices()
	if sessionID != "" {
		sess, err := s.sessions.Session(sessionID)
		if err != nil {
			return nil, "", sessionError(err)
		}
		// A chosen model the settings no longer offer is not used: the
		// session is on the default.
		if id := sess.ModelID(); id != "" && slices.ContainsFunc(entries, func(e workspace.ModelEntry) bool { return e.ID == id }) {
			current = id
		}
	}
	out := make([]modelInfo, 0, len(entries))
	for _, e := range entries {
		out = append(out, modelInfo{ID: e.ID, Name: e.Name, Provider: e.AuthType, BaseURL: session.ShownEndpoint(e.BaseURL), Description: e.Description})
	}
	return out, current, nil
}

func (s *Server) listModels(ctx context.Context, req *request) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if err := optionalParams(req, &p); err != nil {
		return nil, err
	}
	models, current, err := s.modelChoices(p.SessionID)
	if err != nil {
		return nil, err
	}
	var cur any
	if current != "" {
		cur = current
	}
	return map[string]any{"models": models, "current": cur}, nil
}

func (s *Server) setModel(ctx context.Context, req *request) (any, error) {
	id, err := s.setModelParams(req)
	if err != nil {
		return nil, err
	}
	return map[string]any{"model": id}, nil
}

// setModelParams reads {sessionId, modelId} (qwen/setModel and ACP's
// session/set_model) and sets the session's model; it returns the id.
func (s *Server) setModelParams(req *request) (string, error) {
	var p struct {
		SessionID string `json:"sessionId"`
		ModelID   string `json:"modelId"`
	}
	if err := unmarshalParams(req, &p); err != nil {
		return "", err
	}
	if p.ModelID == "" {
		return "", rpcError(codeInvalidParams, "%s needs modelId", req.Method)
	}
	return p.ModelID, s.chooseModel(p.SessionID, p.ModelID)
}

// chooseModel sets a session's model (qwen/setModel, ACP's
// session/set_config_option and session/set_model).
func (s *Server) chooseModel(sessionID, modelID string) error {
	sess, err := s.sessions.Session(sessionID)
	if err != nil {
		return sessionError(err)
	}
	return sessionError(sess.SetModel(modelID))
}

// acpConfigOptions are ACP's session config options: the approval mode
// and the model, each a select with its current value.
func (s *Server) acpConfigOptions(sess *session.Session) []map[string]any {
	modeOpts := make([]map[string]any, 0, len(session.Modes))
	for _, m := range session.Modes {
		modeOpts = append(modeOpts, map[string]any{"value": m, "name": m})
	}
	opts := []map[string]any{{
		"id": "mode", "name": "Approval mode", "category": "mode", "type": "select",
		"description":  "When the agent asks before editing files or running commands",
		"currentValue": sess.Mode(), "options": modeOpts,
	}}
	models, current, err := s.modelChoices(sess.ID())
	if err != nil || current == "" {
		return opts
	}
	modelOpts := make([]map[string]any, 0, len(models))
	for _, m := range models {
		o := map[string]any{"value": m.ID, "name": m.Name}
		if m.Description != "" {
			o["description"] = m.Description
		}
		modelOpts = append(modelOpts, o)
	}
	return append(opts, map[string]any{
		"id": "model", "name": "Model", "category": "model", "type": "select",
		"currentValue": current, "options": modelOpts,
	})
}

// acpConfigUpdate turns a model update into ACP's config_option_update,
// and after a mode update (current_mode_update, kept for clients of the
// older modes API) adds one, so both views stay in step.
func (s *Server) acpConfigUpdate(sessionID string, u session.Update) (session.Update, *session.Update) {
	if u.Kind != session.UpdateModel && u.Kind != session.UpdateMode {
		return u, nil
	}
	sess, err := s.sessions.Session(sessionID)
	if err != nil {
		// A subagent's sub-session is not listed; its parent reports.
		return u, nil
	}
	cu := session.Update{Kind: session.UpdateConfigOptions, ConfigOptions: s.acpConfigOptions(sess)}
	if u.Kind == session.UpdateModel {
		return cu, nil
	}
	return u, &cu
}

// acpSetConfigOption is session/set_config_option: mode or model. The
// answer holds every option with its current value.
func (s *Server) acpSetConfigOption(ctx context.Context, req *request) (any, error) {
	var p struct {
		SessionID string          `json:"sessionId"`
		ConfigID  string          `json:"configId"`
		Value     json.RawMessage `json:"value"`
	}
	if err := unmarshalParams(req, &p); err != nil {
		return nil, err
	}
	var value string
	if err := json.Unmarshal(p.Value, &value); err != nil {
		return nil, rpcError(codeInvalidParams, "session/set_config_option: value must be a string")
	}
	sess, err := s.sessions.Session(p.SessionID)
	if err != nil {
		return nil, sessionError(err)
	}
	switch p.ConfigID {
	case "mode":
		if _, err := s.setMode(p.SessionID, value); err != nil {
			return nil, err
		}
	case "model":
		if err := s.chooseModel(p.SessionID, value); err != nil {
			return nil, err
		}
	default:
		return nil, rpcError(codeInvalidParams, "unknown config option %q: this agent has mode and model", p.ConfigID)
	}
	return map[string]any{"configOptions": s.acpConfigOptions(sess)}, nil
}

// acpSetModel is the unstable session/set_model {sessionId, modelId}.
func (s *Server) acpSetModel(ctx context.Context, req *request) (any, error) {
	if _, err := s.setModelParams(req); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}
