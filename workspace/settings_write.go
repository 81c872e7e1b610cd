package workspace

import (
	"errors"
	"fmt"
	"slices"
)

// Scope names a settings file that qwen-ls writes to.
type Scope int

const (
	// ScopeProject is <primary root>/.qwen/settings.json.
	ScopeProject Scope = iota
	// ScopeUser is ~/.qwen/settings.json.
	ScopeUser
)

// AppendAllowRules adds rules to permissions.allow in the scope's settings
// file, creating the file when it is missing, keeping every other key and
// never duplicating a rule, then reloads the settings so the rules apply at
// once (tools.md §6.5). Comments in the file are not kept: the file is
// rewritten as plain JSON, in its canonical form (dotted keys nested), so
// that a rule added here is never hidden by another spelling of the key.
func (s *Settings) AppendAllowRules(scope Scope, rules []string) error {
	path := s.UserFile()
	if scope == ScopeProject {
		path = s.WorkspaceFile()
		if path == "" {
			return errors.New("save allow rules: there is no workspace folder to hold .qwen/settings.json")
		}
	}
	err := updateJSONFileWith(path, 0o644, 0o755, parseSettingsJSONC, func(doc map[string]any) error {
		perms, _ := doc["permissions"].(map[string]any)
		if perms == nil {
			perms = map[string]any{}
		}
		var allow []any
		if list, ok := perms["allow"].([]any); ok {
			allow = list
		}
		for _, r := range rules {
			if !slices.Contains(allow, any(r)) {
				allow = append(allow, r)
			}
		}
		perms["allow"] = allow
		doc["permissions"] = perms
		return nil
	})
	if err != nil {
		return fmt.Errorf("save allow rules: %w", err)
	}
	s.Load()
	return nil
}
