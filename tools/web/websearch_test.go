package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/toolstest"
	"github.com/qwen-ls/qwen-ls/tools/web"
)

// providerFake is a loopback stand-in for one search API: it records each
// request and answers with a fixed status and body.
type providerFake struct {
	*httptest.Server
	status int
	body   string

	mu   sync.Mutex
	reqs []recordedRequest
}

type recordedRequest struct {
	Method, Path, Auth, ContentType string
	Query                           url.Values
	Body                            map[string]any
}

func newProviderFake(t *testing.T, status int, body string) *providerFake {
	t.Helper()
	f := &providerFake{status: status, body: body}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		rec := recordedRequest{
			Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization"),
			ContentType: r.Header.Get("Content-Type"), Query: r.URL.Query(),
		}
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &rec.Body); err != nil {
				t.Errorf("request body is not JSON: %q", raw)
			}
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, rec)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.status)
		fmt.Fprint(w, f.body)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *providerFake) requests() []recordedRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recordedRequest(nil), f.reqs...)
}

// noEnv is a Getenv with nothing set.
func noEnv(string) (string, bool) { return "", false }

func envOf(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

func webSearchSettings(def string, entries ...map[string]any) map[string]any {
	list := make([]any, len(entries))
	for i, e := range entries {
		list[i] = e
	}
	ws := map[string]any{"provider": list}
	if def != "" {
		ws["default"] = def
	}
	return map[string]any{"webSearch": ws}
}

func newSearch(e *testEnv, getenv func(string) (string, bool)) *web.Search {
	w := web.NewSearch(e.Env)
	w.Getenv = getenv
	return w
}

const tavilyWithAnswer = `{
  "query": "q",
  "answer": "Go 1.26 is the newest release.",
  "results": [
    {"title": "Go 1.26 Release Notes", "url": "https://go.dev/doc/go1.26", "content": "Go 1.26 arrives...", "score": 0.91},
    {"title": "Downloads", "url": "https://go.dev/dl/", "content": "Get Go", "score": 0.5}
  ]
}`

const tavilyNoAnswer = `{
  "results": [
    {"title": "Go 1.26 Release Notes", "url": "https://go.dev/doc/go1.26", "content": "Go 1.26 arrives\nsix months after 1.25.", "score": 0.912, "published_date": "2026-02-10"},
    {"title": "", "url": "https://example.org/x", "content": ""}
  ]
}`

func TestWebSearchDeclarationGolden(t *testing.T) {
	e := newTestEnv(t, nil)
	toolstest.Golden(t, "declarations/web_search.json", declarationJSON(t, web.NewSearch(e.Env)), *updateWeb)
}

func TestWebSearchStaticAndConfirmation(t *testing.T) {
	e := newTestEnv(t, nil)
	w := web.NewSearch(e.Env)
	if w.Name() != "web_search" || w.DisplayName() != "WebSearch" || w.Kind() != tools.KindSearch ||
		len(w.Aliases()) != 0 || w.Source() != tools.SourceBuiltin {
		t.Errorf("static description is wrong")
	}
	params := map[string]any{"query": "go generics"}
	if got := w.Describe(params); got != `Searching the web for: "go generics"` {
		t.Errorf("describe %q", got)
	}
	conf, terr := w.ShouldConfirm(context.Background(), &tools.Call{}, params)
	if terr != nil {
		t.Fatal(terr)
	}
	info, ok := conf.Details.(*tools.InfoConfirmation)
	if !ok || conf.Title != "Confirm Web Search" || info.Prompt != `Search the web for: "go generics"` ||
		len(info.PermissionRules) != 1 || info.PermissionRules[0] != "WebSearch" || len(info.URLs) != 0 {
		t.Errorf("confirmation %+v %+v", conf, conf.Details)
	}
}

func TestWebSearchValidation(t *testing.T) {
	e := newTestEnv(t, webSearchSettings("",
		map[string]any{"type": "tavily", "apiKey": "t"},
		map[string]any{"type": "google", "apiKey": "g", "searchEngineId": "cx"},
	))
	w := newSearch(e, noEnv)
	cases := []struct{ args, want string }{
		{`{"query":""}`, `Argument "query" must not be empty.`},
		{`{"query":"  "}`, `Argument "query" must not be empty.`},
		{`{}`, `params must have required property 'query'`},
		{`{"query":"q","provider":""}`, `Argument "provider" must not be empty when given; leave it out for the default provider.`},
		{`{"query":"q","provider":"dashscope"}`, `Search provider "dashscope" is not configured; configured providers: tavily, google.`},
		{`{"query":"q","provider":"bing"}`, `Search provider "bing" is not configured; configured providers: tavily, google.`},
		{`{"query":"q","provider":null}`, ``},
		{`{"query":"q","provider":"Google"}`, ``},
		{`{"query":"q"}`, ``},
	}
	for _, c := range cases {
		_, terr := tools.PrepareArgs(w, c.args)
		got := ""
		if terr != nil {
			got = terr.Message
		}
		if got != c.want {
			t.Errorf("%s: got %q, want %q", c.args, got, c.want)
		}
	}
}

func TestWebSearchAvailable(t *testing.T) {
	t.Setenv("TAVILY_API_KEY", "")
	t.Setenv("DASHSCOPE_API_KEY", "")
	cases := []struct {
		name     string
		settings map[string]any
		env      map[string]string
		want     bool
	}{
		{"nothing", nil, nil, false},
		{"empty webSearch", map[string]any{"webSearch": map[string]any{}}, nil, false},
		{"tavily without a key", webSearchSettings("", map[string]any{"type": "tavily"}), nil, false},
		{"google without an engine", webSearchSettings("", map[string]any{"type": "google", "apiKey": "g"}), nil, false},
		{"dashscope without a key", webSearchSettings("", map[string]any{"type": "dashscope"}), nil, false},
		{"unknown type", webSearchSettings("", map[string]any{"type": "bing", "apiKey": "b"}), nil, false},
		{"DASHSCOPE_API_KEY alone", nil, map[string]string{"DASHSCOPE_API_KEY": "d"}, false},
		{"tavily with a key", webSearchSettings("", map[string]any{"type": "tavily", "apiKey": "t"}), nil, true},
		{"google complete", webSearchSettings("", map[string]any{"type": "google", "apiKey": "g", "searchEngineId": "cx"}), nil, true},
		{"dashscope with the env key", webSearchSettings("", map[string]any{"type": "dashscope"}), map[string]string{"DASHSCOPE_API_KEY": "d"}, true},
		{"TAVILY_API_KEY alone", nil, map[string]string{"TAVILY_API_KEY": "t"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			e := newTestEnv(t, c.settings)
			if got := web.SearchAvailable(e.Env); got != c.want {
				t.Errorf("SearchAvailable = %v, want %v", got, c.want)
			}
		})
	}
}

// TestWebSearchProviderSelection: the requested provider, else the default
// when available, else the first available; TAVILY_API_KEY alone brings
// tavily in.
func TestWebSearchProviderSelection(t *testing.T) {
	tavily := newProviderFake(t, 200, `{"answer":"from tavily","results":[]}`)
	google := newProviderFake(t, 200, `{"items":[{"title":"G","link":"https://g.example/","snippet":"from google"}]}`)
	dash := newProviderFake(t, 200, `{"status":0,"data":{"docs":[{"title":"D","url":"https://d.example/","snippet":"from dashscope"}]}}`)
	tavilyEntry := map[string]any{"type": "tavily", "apiKey": "tk", "endpoint": tavily.URL}
	googleEntry := map[string]any{"type": "google", "apiKey": "gk", "searchEngineId": "cx", "endpoint": google.URL}
	dashEntry := map[string]any{"type": "dashscope", "endpoint": dash.URL}
	cases := []struct {
		name     string
		settings map[string]any
		env      map[string]string
		args     string
		want     string
	}{
		{"first available", webSearchSettings("", googleEntry, tavilyEntry), nil, `{"query":"q"}`, "from google"},
		{"the default", webSearchSettings("tavily", googleEntry, tavilyEntry), nil, `{"query":"q"}`, "from tavily"},
		{"an unavailable default", webSearchSettings("dashscope", googleEntry, dashEntry, tavilyEntry), nil, `{"query":"q"}`, "from google"},
		{"the requested one", webSearchSettings("tavily", googleEntry, tavilyEntry), nil, `{"query":"q","provider":"google"}`, "from google"},
		{"dashscope by its env key", webSearchSettings("dashscope", googleEntry, dashEntry), map[string]string{"DASHSCOPE_API_KEY": "dk"}, `{"query":"q"}`, "from dashscope"},
		{"the first entry of a type wins", webSearchSettings("", tavilyEntry, map[string]any{"type": "tavily", "apiKey": "x", "endpoint": google.URL}), nil, `{"query":"q"}`, "from tavily"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newTestEnv(t, c.settings)
			res := run(t, newSearch(e, envOf(c.env)), &tools.Call{}, c.args)
			if res.Error != nil {
				t.Fatalf("error %+v", res.Error)
			}
			if !strings.Contains(res.Text(), c.want) {
				t.Errorf("result %q lacks %q", res.Text(), c.want)
			}
		})
	}

	// TAVILY_API_KEY alone: the implied tavily uses the public endpoint, so
	// only the choice is checked here, through the configured list.
	e := newTestEnv(t, webSearchSettings("", googleEntry))
	w := newSearch(e, envOf(map[string]string{"TAVILY_API_KEY": "tk"}))
	_, terr := tools.PrepareArgs(w, `{"query":"q","provider":"dashscope"}`)
	if terr == nil || terr.Message != `Search provider "dashscope" is not configured; configured providers: google, tavily.` {
		t.Errorf("configured list: %+v", terr)
	}
	if reqs := dash.requests(); len(reqs) != 1 || reqs[0].Auth != "Bearer dk" {
		t.Errorf("dashscope requests %+v", reqs)
	}
}

func TestWebSearchTavily(t *testing.T) {
	f := newProviderFake(t, 200, tavilyWithAnswer)
	e := newTestEnv(t, webSearchSettings("", map[string]any{"type": "tavily", "endpoint": f.URL + "/search"}))
	res := run(t, newSearch(e, envOf(map[string]string{"TAVILY_API_KEY": "tvly-1"})), &tools.Call{}, `{"query":"latest go"}`)
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	want := "Results for \"latest go\" from Tavily:\n\n" +
		"Go 1.26 is the newest release.\n\n" +
		"Sources:\n" +
		"[1] Go 1.26 Release Notes (https://go.dev/doc/go1.26)\n" +
		"[2] Downloads (https://go.dev/dl/)"
	if res.Text() != want {
		t.Errorf("llmContent\n got %q\nwant %q", res.Text(), want)
	}
	if d, ok := res.Display.(tools.Markdown); !ok || d != `Searched Tavily for "latest go".` {
		t.Errorf("display %#v", res.Display)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Method != "POST" || r.Path != "/search" || r.Auth != "Bearer tvly-1" || r.ContentType != "application/json" {
		t.Errorf("request %+v", r)
	}
	if r.Body["query"] != "latest go" || r.Body["search_depth"] != "advanced" || r.Body["max_results"] != 5.0 ||
		r.Body["include_answer"] != true || len(r.Body) != 4 {
		t.Errorf("body %v", r.Body)
	}

	// The entry's own settings go into the request.
	e2 := newTestEnv(t, webSearchSettings("", map[string]any{
		"type": "tavily", "apiKey": "own", "endpoint": f.URL, "searchDepth": "basic", "maxResults": 3, "includeAnswer": false,
	}))
	run(t, newSearch(e2, envOf(map[string]string{"TAVILY_API_KEY": "env"})), &tools.Call{}, `{"query":"x"}`)
	r = f.requests()[1]
	if r.Auth != "Bearer own" || r.Body["search_depth"] != "basic" || r.Body["max_results"] != 3.0 || r.Body["include_answer"] != false {
		t.Errorf("request with settings %+v", r)
	}
}

func TestWebSearchListFormat(t *testing.T) {
	f := newProviderFake(t, 200, tavilyNoAnswer)
	e := newTestEnv(t, webSearchSettings("", map[string]any{"type": "tavily", "apiKey": "k", "endpoint": f.URL}))
	res := run(t, newSearch(e, noEnv), &tools.Call{}, `{"query":"go release"}`)
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	want := "Results for \"go release\" from Tavily:\n\n" +
		"1. **Go 1.26 Release Notes**\n" +
		"   Go 1.26 arrives six months after 1.25.\n" +
		"   Source: https://go.dev/doc/go1.26\n" +
		"   Relevance: 91%\n" +
		"   Published: 2026-02-10\n\n" +
		"2. **https://example.org/x**\n" +
		"   Source: https://example.org/x\n\n" +
		"To read a source in full, call web_fetch with its URL."
	if res.Text() != want {
		t.Errorf("llmContent\n got %q\nwant %q", res.Text(), want)
	}
}

func TestWebSearchShowsTopFive(t *testing.T) {
	var items []string
	for i := 1; i <= 8; i++ {
		items = append(items, fmt.Sprintf(`{"title":"T%d","link":"https://e.example/%d","snippet":"s%d"}`, i, i, i))
	}
	f := newProviderFake(t, 200, `{"items":[`+strings.Join(items, ",")+`]}`)
	e := newTestEnv(t, webSearchSettings("", map[string]any{"type": "google", "apiKey": "k", "searchEngineId": "cx", "endpoint": f.URL}))
	res := run(t, newSearch(e, noEnv), &tools.Call{}, `{"query":"q"}`)
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	if !strings.Contains(res.Text(), "5. **T5**") || strings.Contains(res.Text(), "T6") {
		t.Errorf("llmContent %q", res.Text())
	}
}

func TestWebSearchGoogle(t *testing.T) {
	f := newProviderFake(t, 200, `{"items":[
		{"title":"Effective Go","link":"https://go.dev/doc/effective_go","snippet":"Tips for writing\nclear Go."},
		{"title":"Go FAQ","link":"https://go.dev/doc/faq","snippet":"Answers."}]}`)
	e := newTestEnv(t, webSearchSettings("", map[string]any{
		"type": "google", "apiKey": "gkey", "searchEngineId": "engine", "endpoint": f.URL + "/customsearch/v1?alt=json",
		"maxResults": 4, "safeSearch": "active", "language": "en", "country": "de",
	}))
	res := run(t, newSearch(e, noEnv), &tools.Call{}, `{"query":"effective go"}`)
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	want := "Results for \"effective go\" from Google:\n\n" +
		"1. **Effective Go**\n   Tips for writing clear Go.\n   Source: https://go.dev/doc/effective_go\n\n" +
		"2. **Go FAQ**\n   Answers.\n   Source: https://go.dev/doc/faq\n\n" +
		"To read a source in full, call web_fetch with its URL."
	if res.Text() != want {
		t.Errorf("llmContent\n got %q\nwant %q", res.Text(), want)
	}
	r := f.requests()[0]
	q := r.Query
	if r.Method != "GET" || r.Path != "/customsearch/v1" || q.Get("key") != "gkey" || q.Get("cx") != "engine" ||
		q.Get("q") != "effective go" || q.Get("num") != "4" || q.Get("safe") != "active" || q.Get("lr") != "lang_en" ||
		q.Get("cr") != "countryDE" || q.Get("alt") != "json" || r.Auth != "" {
		t.Errorf("request %+v", r)
	}
}

func TestWebSearchDashScope(t *testing.T) {
	f := newProviderFake(t, 200, `{"status":0,"message":null,"data":{"total":1,"docs":[
		{"_id":"1","title":"通义千问","url":"https://qwen.example/","snippet":"A model family.","_score":0.734,"timestamp_format":"2025-07-01 10:00:00","hostname":"qwen.example"}]}}`)
	e := newTestEnv(t, webSearchSettings("", map[string]any{"type": "dashscope", "apiKey": "dkey", "endpoint": f.URL, "maxResults": 7}))
	res := run(t, newSearch(e, noEnv), &tools.Call{}, `{"query":"qwen"}`)
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	want := "Results for \"qwen\" from DashScope:\n\n" +
		"1. **通义千问**\n   A model family.\n   Source: https://qwen.example/\n   Relevance: 73%\n   Published: 2025-07-01 10:00:00\n\n" +
		"To read a source in full, call web_fetch with its URL."
	if res.Text() != want {
		t.Errorf("llmContent\n got %q\nwant %q", res.Text(), want)
	}
	r := f.requests()[0]
	if r.Method != "POST" || r.Auth != "Bearer dkey" || r.Body["uq"] != "qwen" || r.Body["page"] != 1.0 || r.Body["rows"] != 7.0 || len(r.Body) != 3 {
		t.Errorf("request %+v", r)
	}
}

func TestWebSearchNoResults(t *testing.T) {
	for _, c := range []struct {
		entry          map[string]any
		body, provider string
	}{
		{map[string]any{"type": "tavily", "apiKey": "k"}, `{"answer":"","results":[]}`, "Tavily"},
		{map[string]any{"type": "google", "apiKey": "k", "searchEngineId": "cx"}, `{"searchInformation":{"totalResults":"0"}}`, "Google"},
		{map[string]any{"type": "dashscope", "apiKey": "k"}, `{"status":0,"data":{"docs":[]}}`, "DashScope"},
	} {
		f := newProviderFake(t, 200, c.body)
		c.entry["endpoint"] = f.URL
		e := newTestEnv(t, webSearchSettings("", c.entry))
		res := run(t, newSearch(e, noEnv), &tools.Call{}, `{"query":"zzqx"}`)
		if res.Error != nil || res.Text() != c.provider+` found no results for "zzqx".` {
			t.Errorf("%s: %q %+v", c.provider, res.Text(), res.Error)
		}
	}
}

func TestWebSearchFailures(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close() // nothing listens there any more
	cases := []struct {
		name   string
		entry  map[string]any
		status int
		body   string
		want   string
	}{
		{"tavily refuses the key", map[string]any{"type": "tavily", "apiKey": "bad"}, 401, `{"detail":{"error":"Unauthorized: missing or invalid API key."}}`,
			`The web search failed: Tavily answered 401 Unauthorized: {"detail":{"error":"Unauthorized: missing or invalid API key."}}.`},
		{"google quota", map[string]any{"type": "google", "apiKey": "secret-key", "searchEngineId": "cx"}, 429, "",
			`The web search failed: Google answered 429 Too Many Requests.`},
		{"not json", map[string]any{"type": "tavily", "apiKey": "k"}, 200, `<html>oops</html>`,
			`The web search failed: Tavily sent an answer that is not the expected JSON: invalid character '<' looking for beginning of value.`},
		{"dashscope status", map[string]any{"type": "dashscope", "apiKey": "k"}, 200, `{"status":1001,"message":"quota exhausted"}`,
			`The web search failed: DashScope reported status 1001: quota exhausted.`},
		{"dashscope status without a message", map[string]any{"type": "dashscope", "apiKey": "k"}, 200, `{"status":7,"message":null}`,
			`The web search failed: DashScope reported status 7: no message.`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newProviderFake(t, c.status, c.body)
			c.entry["endpoint"] = f.URL
			e := newTestEnv(t, webSearchSettings("", c.entry))
			res := run(t, newSearch(e, noEnv), &tools.Call{}, `{"query":"q"}`)
			if res.Error == nil || res.Error.Type != tools.ErrorExecutionFailed || res.Error.Message != c.want {
				t.Errorf("got %+v\nwant %s", res.Error, c.want)
			}
		})
	}

	e := newTestEnv(t, webSearchSettings("", map[string]any{"type": "google", "apiKey": "secret-key", "searchEngineId": "cx", "endpoint": downURL}))
	res := run(t, newSearch(e, noEnv), &tools.Call{}, `{"query":"q"}`)
	if res.Error == nil || res.Error.Type != tools.ErrorExecutionFailed ||
		!strings.HasPrefix(res.Error.Message, "The web search failed: the request to Google failed: ") ||
		strings.Contains(res.Error.Message, "secret-key") {
		t.Errorf("unreachable endpoint: %+v", res.Error)
	}
}
