package workspace

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Qwen Code's model configuration (docs/protocol.md "Model
// configuration"): modelProviders lists models per auth type,
// security.auth.selectedType picks the auth type, model.name picks the
// entry, and the entry's envKey names the variable that holds its key.

// The auth types of modelProviders, in the order the model list shows
// them after the selected one.
var authTypes = []string{"openai", "anthropic", "gemini", "vertex-ai"}

// defaultEnvKey is the key variable of an entry that names none, as in
// Qwen Code.
var defaultEnvKey = map[string]string{
	"openai":    "OPENAI_API_KEY",
	"anthropic": "ANTHROPIC_API_KEY",
	"gemini":    "GEMINI_API_KEY",
	"vertex-ai": "GOOGLE_API_KEY",
}

// The OpenAI-compatible endpoints of Anthropic and Gemini: qwen-ls talks
// to every provider through one chat-completions client.
const (
	openAIBaseURL          = "https://api.openai.com/v1"
	AnthropicOpenAIBaseURL = "https://api.anthropic.com/v1/"
	geminiOpenAIBaseURL    = "https://generativelanguage.googleapis.com/v1beta/openai/"
)

// GenerationConfig is Qwen Code's generationConfig: of a provider entry,
// or model.generationConfig for a model no entry describes. Unset fields
// are zero (nil).
type GenerationConfig struct {
	// Timeout is the request timeout (timeout, in milliseconds).
	Timeout time.Duration
	// IdleTimeout is qwen-ls's idleTimeout (milliseconds): how long an
	// answer may stay silent once it has started.
	IdleTimeout time.Duration
	// AnswerTimeout is qwen-ls's answerTimeout (milliseconds): how long
	// one answer may take in all, however steadily it streams.
	AnswerTimeout time.Duration
	// MaxRetries is maxRetries; nil when unset.
	MaxRetries *int
	// ContextWindowSize is contextWindowSize in tokens.
	ContextWindowSize int
	// SamplingParams are sent as request fields (temperature, top_p,
	// max_tokens, ...).
	SamplingParams map[string]any
	// ExtraBody is extra_body (or extraBody): more request fields.
	ExtraBody map[string]any
	// CustomHeaders are extra HTTP headers.
	CustomHeaders map[string]string
}

// IsZero reports whether nothing is set.
func (g GenerationConfig) IsZero() bool {
	return g.Timeout == 0 && g.IdleTimeout == 0 && g.AnswerTimeout == 0 && g.MaxRetries == nil && g.ContextWindowSize == 0 &&
		len(g.SamplingParams) == 0 && len(g.ExtraBody) == 0 && len(g.CustomHeaders) == 0
}

// ModelEntry is one model of modelProviders.
type ModelEntry struct {
	// AuthType is the modelProviders key the entry is under.
	AuthType string
	// ID is the model name sent to the endpoint, and the id a client
	// chooses it by.
	ID          string
	Name        string
	Description string
	// BaseURL is the OpenAI-compatible endpoint (see openAICompatible).
	BaseURL string
	// EnvKey is the variable holding the key.
	EnvKey     string
	Generation GenerationConfig
}

// UnknownModelError is a model id that no model choice has.
type UnknownModelError struct {
	ID    string
	Known []string
}

func (e *UnknownModelError) Error() string {
	if len(e.Known) == 0 {
		return fmt.Sprintf("unknown model %q: no models are configured (modelProviders or model.name)", e.ID)
	}
	return fmt.Sprintf("unknown model %q: the configured models are %s", e.ID, strings.Join(e.Known, ", "))
}

// SelectedAuthType is security.auth.selectedType, or "" when unset.
func (s *Settings) SelectedAuthType() string {
	return strings.TrimSpace(s.String("security.auth.selectedType", ""))
}

// ModelProviders returns the models of modelProviders, the selected auth
// type's first. modelProviders is taken whole from the highest layer that
// sets it (Qwen Code's replace merge): a project's list replaces the
// user's. Entries without an id, of an auth type qwen-ls cannot route, or
// repeating an earlier entry's auth type, id and baseUrl are skipped.
func (s *Settings) ModelProviders() []ModelEntry {
	s.mu.RLock()
	var mp map[string]any
	for _, i := range []int{layerSystem, layerEditor, layerWorkspace, layerUser} {
		if m, ok := s.effective[i]["modelProviders"].(map[string]any); ok {
			mp = deepCopy(m).(map[string]any)
			break
		}
	}
	s.mu.RUnlock()
	if mp == nil {
		return nil
	}
	order := authTypes
	if sel := s.SelectedAuthType(); slices.Contains(authTypes, sel) {
		order = append([]string{sel}, slices.DeleteFunc(slices.Clone(authTypes), func(t string) bool { return t == sel })...)
	}
	var out []ModelEntry
	seen := map[string]bool{}
	for _, at := range order {
		list, _ := mp[at].([]any)
		for _, item := range list {
			m, _ := item.(map[string]any)
			e, ok := parseEntry(at, m)
			if !ok {
				continue
			}
			k := at + "\x00" + e.ID + "\x00" + e.BaseURL
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, e)
		}
	}
	return out
}

func parseEntry(authType string, m map[string]any) (ModelEntry, bool) {
	str := func(k string) string {
		v, _ := m[k].(string)
		return strings.TrimSpace(v)
	}
	e := ModelEntry{AuthType: authType, ID: str("id"), Name: str("name"), Description: str("description"), EnvKey: str("envKey")}
	if e.ID == "" {
		return e, false
	}
	if e.Name == "" {
		e.Name = e.ID
	}
	if e.EnvKey == "" {
		e.EnvKey = defaultEnvKey[authType]
	}
	e.BaseURL = openAICompatible(authType, str("baseUrl"))
	gc, _ := m["generationConfig"].(map[string]any)
	e.Generation = parseGeneration(gc)
	return e, true
}

// openAICompatible maps an entry's baseUrl to the OpenAI-compatible
// endpoint of its provider: Anthropic's and Gemini's native endpoints (or
// none) become their OpenAI-compatible ones; any other URL is taken as
// given and must speak OpenAI's chat completions.
func openAICompatible(authType, raw string) string {
	u, err := url.Parse(raw)
	host, path := "", ""
	if err == nil {
		host, path = strings.ToLower(u.Hostname()), strings.Trim(u.Path, "/")
	}
	switch authType {
	case "anthropic":
		if raw == "" || host == "api.anthropic.com" && (path == "" || path == "v1") {
			return AnthropicOpenAIBaseURL
		}
	case "gemini":
		if raw == "" || host == "generativelanguage.googleapis.com" && !strings.HasSuffix(path, "openai") {
			return geminiOpenAIBaseURL
		}
	}
	return raw
}

// parseGeneration reads a generationConfig object; fields of the wrong
// type are left unset.
func parseGeneration(m map[string]any) GenerationConfig {
	var g GenerationConfig
	if m == nil {
		return g
	}
	if ms, ok := wholeNumber(m["timeout"]); ok && ms > 0 {
		g.Timeout = time.Duration(ms) * time.Millisecond
	}
	if ms, ok := wholeNumber(m["idleTimeout"]); ok && ms > 0 {
		g.IdleTimeout = time.Duration(ms) * time.Millisecond
	}
	if ms, ok := wholeNumber(m["answerTimeout"]); ok && ms > 0 {
		g.AnswerTimeout = time.Duration(ms) * time.Millisecond
	}
	if n, ok := wholeNumber(m["maxRetries"]); ok && n >= 0 {
		n := int(n)
		g.MaxRetries = &n
	}
	if n, ok := wholeNumber(m["contextWindowSize"]); ok && n > 0 {
		g.ContextWindowSize = int(n)
	}
	if sp, ok := m["samplingParams"].(map[string]any); ok && len(sp) > 0 {
		g.SamplingParams = sp
	}
	eb, ok := m["extra_body"].(map[string]any)
	if !ok {
		eb, ok = m["extraBody"].(map[string]any)
	}
	if ok && len(eb) > 0 {
		g.ExtraBody = eb
	}
	if h, ok := m["customHeaders"].(map[string]any); ok {
		for k, v := range h {
			if s, ok := v.(string); ok {
				if g.CustomHeaders == nil {
					g.CustomHeaders = map[string]string{}
				}
				g.CustomHeaders[k] = s
			}
		}
	}
	return g
}

func wholeNumber(v any) (int64, bool) {
	switch v := v.(type) {
	case float64:
		if v == math.Trunc(v) && v >= -1e15 && v <= 1e15 {
			return int64(v), true
		}
	case string:
		var n int64
		if _, err := fmt.Sscan(strings.TrimSpace(v), &n); err == nil {
			return n, true
		}
	}
	return 0, false
}

// Model resolves the model a session uses by default (protocol.md §10 and
// "Model configuration"): the modelProviders entry that model.name names
// (in the selected auth type; in any when none is selected), else the
// first entry of the selected auth type when no name is set, else the
// model of model.name, model.baseUrl and model.apiKey and the
// environment, with model.generationConfig.
func (s *Settings) Model() ModelConfig {
	l := s.newEnvLookup()
	mc := s.rawModel(l)
	entries := s.ModelProviders()
	sel := s.SelectedAuthType()
	for _, e := range entries {
		if sel != "" && e.AuthType != sel {
			continue
		}
		if mc.Name == "" || e.ID == mc.Name {
			return s.entryModel(e, l, mc.Source["name"])
		}
	}
	gc, _ := s.Get("model.generationConfig")
	m, _ := gc.(map[string]any)
	mc.Generation = parseGeneration(m)
	return mc
}

// ModelFor resolves the model a client chose by id (qwen/setModel): a
// modelProviders entry, the selected auth type's first, or the model
// Model resolves. "" is Model. An id neither has is an
// *UnknownModelError.
func (s *Settings) ModelFor(id string) (ModelConfig, error) {
	if id == "" {
		return s.Model(), nil
	}
	for _, e := range s.ModelProviders() {
		if e.ID == id {
			return s.entryModel(e, s.newEnvLookup(), "the model chosen for the session"), nil
		}
	}
	if mc := s.Model(); mc.Name == id {
		return mc, nil
	}
	choices, _ := s.ModelChoices()
	known := make([]string, len(choices))
	for i, c := range choices {
		known[i] = c.ID
	}
	return ModelConfig{}, &UnknownModelError{ID: id, Known: known}
}

// ModelChoices returns the models a client may choose from
// (qwen/listModels): the modelProviders entries, with the default model
// first when no entry describes it, and the default model's id ("" when
// none is configured).
func (s *Settings) ModelChoices() (choices []ModelEntry, current string) {
	entries := s.ModelProviders()
	mc := s.Model()
	current = mc.Name
	if mc.Name != "" && !mc.FromProvider {
		base := mc.BaseURL
		if base == "" {
			// The client's default endpoint.
			base = openAIBaseURL
		}
		choices = append(choices, ModelEntry{AuthType: "openai", ID: mc.Name, Name: mc.Name, BaseURL: base})
	}
	for _, e := range entries {
		if slices.ContainsFunc(choices, func(c ModelEntry) bool { return c.ID == e.ID }) {
			// A choice is named by its id: the first entry of an id
			// is the one chosen.
			continue
		}
		choices = append(choices, e)
	}
	return choices, current
}

// entryModel is the model of a modelProviders entry. Its generationConfig
// applies whole: model.generationConfig does not fill in what it leaves
// out (Qwen Code's impermeable provider layer). The key comes only from
// the entry's envKey, never from model.apiKey or another provider's
// variable, so no key is sent to an endpoint it was not meant for.
func (s *Settings) entryModel(e ModelEntry, l *envLookup, nameSource string) ModelConfig {
	where := "modelProviders." + e.AuthType + " entry " + e.ID
	if nameSource == "" {
		nameSource = "the first modelProviders." + e.AuthType + " entry"
	}
	mc := ModelConfig{
		Name: e.ID, BaseURL: e.BaseURL, AuthType: e.AuthType, EnvKey: e.EnvKey,
		Generation: e.Generation, FromProvider: true,
		Source: map[string]string{"name": nameSource, "baseUrl": where},
	}
	if mc.BaseURL == "" && e.AuthType == "openai" {
		if v, src, ok := l.lookup("OPENAI_BASE_URL"); ok {
			mc.BaseURL, mc.Source["baseUrl"] = v, src
		} else {
			mc.BaseURL, mc.Source["baseUrl"] = openAIBaseURL, "default for modelProviders.openai"
		}
	}
	if v, src, ok := l.lookup(e.EnvKey); ok {
		mc.APIKey, mc.Source["apiKey"] = v, src+" (envKey of "+where+")"
	}
	return mc
}
