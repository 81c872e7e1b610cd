package web

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/qwen-ls/qwen-ls/tools"
)

//go:embed websearch.md
var webSearchDescription string

const webSearchSchema = `{
  "type": "object",
  "properties": {
    "query": {
      "type": "string",
      "description": "What to search the web for."
    },
    "provider": {
      "type": "string",
      "description": "The search service to use: tavily, google or dashscope. Leave it out for the default one."
    }
  },
  "required": ["query"]
}`

// Search provider types, as webSearch.provider entries name them.
const (
	providerTavily    = "tavily"
	providerGoogle    = "google"
	providerDashScope = "dashscope"
)

const (
	// webSearchTimeout bounds one search request.
	webSearchTimeout = 30 * time.Second
	// webSearchShown is how many results a listing shows.
	webSearchShown = 5
	// searchBodyLimit caps what is read of a provider's answer.
	searchBodyLimit = 4 << 20
)

// searchProvider is one usable entry of webSearch.provider.
type searchProvider struct {
	Type     string
	APIKey   string
	Endpoint string // "" means the public one

	// tavily
	SearchDepth   string
	IncludeAnswer bool
	// google
	SearchEngineID, SafeSearch, Language, Country string

	// MaxResults is how many results to ask for; 0 means the provider's
	// default here (tavily 5, google 10, dashscope 10).
	MaxResults int
}

// Name is how the model is told which provider answered.
func (p searchProvider) Name() string {
	switch p.Type {
	case providerTavily:
		return "Tavily"
	case providerGoogle:
		return "Google"
	case providerDashScope:
		return "DashScope"
	}
	return p.Type
}

// searchConfig is the webSearch setting resolved against the environment.
type searchConfig struct {
	// Available lists the usable providers: the entries of
	// webSearch.provider that have their keys, in order, then tavily when
	// only TAVILY_API_KEY names it.
	Available []searchProvider
	// Default is webSearch.default, lower-cased.
	Default string
}

// loadSearchConfig reads webSearch (tools.md §3.10). Entries of unknown
// types, entries without their keys and repeated types (the first one
// wins) are left out.
func loadSearchConfig(env *tools.Env, getenv func(string) (string, bool)) searchConfig {
	lookup := func(name string) string {
		v, _ := getenv(name)
		return strings.TrimSpace(v)
	}
	var cfg searchConfig
	ws, _ := env.Settings().Get("webSearch")
	m, _ := ws.(map[string]any)
	cfg.Default = strings.ToLower(strings.TrimSpace(settingString(m, "default")))

	var entries []any
	switch v := m["provider"].(type) {
	case []any:
		entries = v
	case map[string]any:
		entries = []any{v}
	}
	seen := map[string]bool{}
	for _, e := range entries {
		em, ok := e.(map[string]any)
		if !ok {
			continue
		}
		p := searchProvider{
			Type:     strings.ToLower(strings.TrimSpace(settingString(em, "type"))),
			APIKey:   strings.TrimSpace(settingString(em, "apiKey")),
			Endpoint: strings.TrimSpace(settingString(em, "endpoint")),
		}
		if seen[p.Type] {
			continue
		}
		p.MaxResults = settingInt(em, "maxResults")
		switch p.Type {
		case providerTavily:
			if p.APIKey == "" {
				p.APIKey = lookup("TAVILY_API_KEY")
			}
			p.SearchDepth = strings.TrimSpace(settingString(em, "searchDepth"))
			p.IncludeAnswer = true
			if b, ok := em["includeAnswer"].(bool); ok {
				p.IncludeAnswer = b
			}
		case providerGoogle:
			p.SearchEngineID = strings.TrimSpace(settingString(em, "searchEngineId"))
			p.SafeSearch = strings.TrimSpace(settingString(em, "safeSearch"))
			p.Language = strings.TrimSpace(settingString(em, "language"))
			p.Country = strings.TrimSpace(settingString(em, "country"))
			if p.SearchEngineID == "" {
				continue
			}
		case providerDashScope:
			if p.APIKey == "" {
				p.APIKey = lookup("DASHSCOPE_API_KEY")
			}
		default:
			continue
		}
		if p.APIKey == "" {
			continue
		}
		seen[p.Type] = true
		cfg.Available = append(cfg.Available, p)
	}
	if !seen[providerTavily] {
		if key := lookup("TAVILY_API_KEY"); key != "" {
			cfg.Available = append(cfg.Available, searchProvider{
				Type: providerTavily, APIKey: key, IncludeAnswer: true,
			})
		}
	}
	return cfg
}

// names lists the available provider types, "none" when there are none.
func (c searchConfig) names() string {
	if len(c.Available) == 0 {
		return "none"
	}
	out := make([]string, len(c.Available))
	for i, p := range c.Available {
		out[i] = p.Type
	}
	return strings.Join(out, ", ")
}

// pick chooses the provider of a call: the requested one, else the default
// when available, else the first available one.
func (c searchConfig) pick(requested string) (searchProvider, *tools.ToolError) {
	want := strings.ToLower(strings.TrimSpace(requested))
	find := func(t string) (searchProvider, bool) {
		for _, p := range c.Available {
			if p.Type == t {
				return p, true
			}
		}
		return searchProvider{}, false
	}
	if want != "" {
		if p, ok := find(want); ok {
			return p, nil
		}
		return searchProvider{}, tools.InvalidParams(fmt.Sprintf(
			`Search provider "%s" is not configured; configured providers: %s.`, strings.TrimSpace(requested), c.names()))
	}
	if p, ok := find(c.Default); ok {
		return p, nil
	}
	if len(c.Available) == 0 {
		return searchProvider{}, tools.NewError(tools.ErrorExecutionFailed, "The web search failed: no search provider is configured.")
	}
	return c.Available[0], nil
}

func settingString(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// settingInt reads a whole number that settings hold as a float64, a
// json.Number or a string (filled in from an environment variable); 0 when
// it is none of these.
func settingInt(m map[string]any, key string) int {
	var f float64
	switch v := m[key].(type) {
	case float64:
		f = v
	case json.Number:
		f, _ = v.Float64()
	case int:
		return v
	case string:
		n, _ := strconv.Atoi(strings.TrimSpace(v))
		return n
	}
	if f != math.Trunc(f) || f < 0 || f > 1000 {
		return 0
	}
	return int(f)
}

// SearchAvailable reports whether web_search has a provider and so is
// declared (tools.md §3.10): an entry of webSearch.provider with its key,
// or TAVILY_API_KEY in the process environment. Settings changes can turn
// it on or off, so the registry asks again when the settings change.
func SearchAvailable(env *tools.Env) bool {
	return len(loadSearchConfig(env, os.LookupEnv).Available) > 0
}

// Search is the web_search tool (tools.md §3.10).
type Search struct {
	tools.Base
	env *tools.Env

	// Getenv looks up TAVILY_API_KEY and DASHSCOPE_API_KEY; nil means
	// os.LookupEnv. Client sends the requests; nil means a client with a
	// 30 s timeout. Set them before the first call.
	Getenv func(string) (string, bool)
	Client *http.Client
}

// NewSearch returns the web_search tool working in env.
func NewSearch(env *tools.Env) *Search {
	return &Search{env: env, Base: tools.Base{Spec: tools.Spec{
		Name:        "web_search",
		DisplayName: "WebSearch",
		Description: webSearchDescription,
		Schema:      []byte(webSearchSchema),
		Kind:        tools.KindSearch,
	}}}
}

func (w *Search) config() searchConfig {
	getenv := w.Getenv
	if getenv == nil {
		getenv = os.LookupEnv
	}
	return loadSearchConfig(w.env, getenv)
}

// Validate checks the query and the provider, which must be configured when
// given.
func (w *Search) Validate(params map[string]any) *tools.ToolError {
	if q, _ := tools.String(params, "query"); strings.TrimSpace(q) == "" {
		return tools.InvalidParams(`Argument "query" must not be empty.`)
	}
	if _, given := params["provider"]; given {
		p, _ := tools.String(params, "provider")
		if strings.TrimSpace(p) == "" {
			return tools.InvalidParams(`Argument "provider" must not be empty when given; leave it out for the default provider.`)
		}
		if _, terr := w.config().pick(p); terr != nil {
			return terr
		}
	}
	return nil
}

// Describe quotes the query.
func (w *Search) Describe(params map[string]any) string {
	q, _ := tools.String(params, "query")
	return `Searching the web for: "` + strings.TrimSpace(q) + `"`
}

// ShouldConfirm asks before every search.
func (w *Search) ShouldConfirm(_ context.Context, _ *tools.Call, params map[string]any) (*tools.Confirmation, *tools.ToolError) {
	q, _ := tools.String(params, "query")
	return &tools.Confirmation{
		Title: "Confirm Web Search",
		Details: &tools.InfoConfirmation{
			Prompt:          `Search the web for: "` + strings.TrimSpace(q) + `"`,
			PermissionRules: []string{"WebSearch"},
		},
	}, nil
}

// searchItem is one result, whatever the provider.
type searchItem struct {
	Title, URL, Snippet string
	// Score is the provider's relevance in [0, 1], nil when unknown.
	Score     *float64
	Published string
}

// searchOutcome is what a provider found.
type searchOutcome struct {
	Answer string
	Items  []searchItem
}

// Execute runs the search with the chosen provider.
func (w *Search) Execute(ctx context.Context, _ *tools.Call, params map[string]any, _ func(tools.Output)) (tools.Result, error) {
	query, _ := tools.String(params, "query")
	query = strings.TrimSpace(query)
	requested, _ := tools.String(params, "provider")
	p, terr := w.config().pick(requested)
	if terr != nil {
		return tools.Result{Error: terr}, nil
	}
	client := w.Client
	if client == nil {
		client = &http.Client{Timeout: webSearchTimeout}
	}
	out, err := searchWith(ctx, client, p, query)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		return tools.ErrorResult(tools.ErrorExecutionFailed, "The web search failed: "+sentenceEnd(err.Error())), nil
	}
	llm, n := formatSearch(p.Name(), query, out)
	display := fmt.Sprintf(`No results for "%s" from %s.`, query, p.Name())
	if n > 0 || out.Answer != "" {
		display = fmt.Sprintf(`Searched %s for "%s".`, p.Name(), query)
	}
	return tools.TextResult(llm, tools.Markdown(display)), nil
}

// formatSearch renders the llmContent of tools.md §3.10, and how many
// results it shows.
func formatSearch(provider, query string, out searchOutcome) (string, int) {
	items := out.Items
	if len(items) > webSearchShown {
		items = items[:webSearchShown]
	}
	answer := strings.TrimSpace(out.Answer)
	if answer == "" && len(items) == 0 {
		return fmt.Sprintf(`%s found no results for "%s".`, provider, query), 0
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Results for \"%s\" from %s:\n\n", query, provider)
	if answer != "" {
		b.WriteString(answer)
		if len(items) > 0 {
			b.WriteString("\n\nSources:")
			for i, it := range items {
				fmt.Fprintf(&b, "\n[%d] %s (%s)", i+1, it.Title, it.URL)
			}
		}
		return b.String(), len(items)
	}
	for i, it := range items {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "%d. **%s**", i+1, it.Title)
		if it.Snippet != "" {
			b.WriteString("\n   " + it.Snippet)
		}
		b.WriteString("\n   Source: " + it.URL)
		if it.Score != nil {
			fmt.Fprintf(&b, "\n   Relevance: %d%%", int(math.Round(*it.Score*100)))
		}
		if it.Published != "" {
			b.WriteString("\n   Published: " + it.Published)
		}
	}
	b.WriteString("\n\nTo read a source in full, call web_fetch with its URL.")
	return b.String(), len(items)
}

// oneLine folds the whitespace of a title or snippet into single spaces,
// so that it keeps to the line the format gives it.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
