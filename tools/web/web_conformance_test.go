package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/web"
)

// TestCase43_WebFetchRefusesLoopbackUnlessAllowed is tools.md §8 case 43
// at the tool level: the tool exactly as the server builds it (system
// resolver and dialer), a loopback page, and a fake model standing in for
// the session's one.
func TestCase43_WebFetchRefusesLoopbackUnlessAllowed(t *testing.T) {
	srv, hits := countingServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><script>track()</script></head><body>`+
			`<h1>Changelog</h1><ul><li>Added <strong>dark mode</strong></li><li>Fixed <a href="/issues/7">#7</a></li></ul>`+
			`</body></html>`)
	})
	url := "http://127.0.0.1:" + portOf(t, srv) + "/"

	// Default settings: refused, and the server never hears of it.
	e := newTestEnv(t, nil)
	m := &fakeModel{answer: "unused"}
	res := run(t, web.NewFetch(e.Env), &tools.Call{Model: m}, fetchArgs(url, "What changed?"))
	if res.Error == nil || res.Error.Type != tools.ErrorExecutionDenied ||
		!strings.HasPrefix(res.Error.Message, "Refusing to fetch") {
		t.Fatalf("default settings: %+v", res)
	}
	if res.Error.Message != refusal(url, "127.0.0.1", "127.0.0.1") {
		t.Errorf("message %q", res.Error.Message)
	}
	if hits.Load() != 0 || len(m.received()) != 0 {
		t.Errorf("the server got %d requests, the model %d", hits.Load(), len(m.received()))
	}

	// With tools.webFetch.allowPrivateAddresses the page reaches the model
	// as Markdown in the side request, and the tool message is its answer.
	e = newTestEnv(t, allowPrivate)
	m = &fakeModel{answer: "Dark mode was added and issue #7 was fixed."}
	res = run(t, web.NewFetch(e.Env), &tools.Call{Model: m}, fetchArgs(url, "What changed?"))
	if res.Error != nil {
		t.Fatalf("allowed: %+v", res.Error)
	}
	if res.Text() != "Dark mode was added and issue #7 was fixed." {
		t.Errorf("tool message %q", res.Text())
	}
	calls := m.received()
	if len(calls) != 1 {
		t.Fatalf("the model got %d side requests", len(calls))
	}
	page := "# Changelog\n\n- Added **dark mode**\n- Fixed [#7](" + strings.TrimSuffix(url, "/") + "/issues/7)"
	if !strings.Contains(calls[0].user, "\n---\n"+page+"\n---\n") || !strings.Contains(calls[0].user, "What changed?") ||
		strings.Contains(calls[0].user, "track()") {
		t.Errorf("side request:\n%s", calls[0].user)
	}
	if hits.Load() != 1 {
		t.Errorf("the server got %d requests", hits.Load())
	}
}

// TestCase44_WebSearchDeclaredOnlyWithProvider is tools.md §8 case 44 at
// the tool level: without webSearch and TAVILY_API_KEY there is no
// provider, so web_search is not declared; a tavily entry whose endpoint is
// a local fake that answers gives the answer-and-sources format.
func TestCase44_WebSearchDeclaredOnlyWithProvider(t *testing.T) {
	t.Setenv("TAVILY_API_KEY", "")

	e := newTestEnv(t, nil)
	if web.SearchAvailable(e.Env) {
		t.Fatalf("web_search is available without a provider")
	}
	// The registry declares web_search only while this says true; the
	// rpc test TestWebSearchDeclaredOnlyWithAProvider checks the tools
	// the model is sent.

	fake := newProviderFake(t, 200, tavilyWithAnswer)
	e = newTestEnv(t, webSearchSettings("", map[string]any{"type": "tavily", "apiKey": "tvly-test", "endpoint": fake.URL}))
	if !web.SearchAvailable(e.Env) {
		t.Fatalf("web_search is not available with a tavily provider")
	}
	res := run(t, web.NewSearch(e.Env), &tools.Call{}, `{"query":"q"}`)
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	want := "Results for \"q\" from Tavily:\n\nGo 1.26 is the newest release.\n\nSources:\n[1] Go 1.26 Release Notes (https://go.dev/doc/go1.26)\n[2] Downloads (https://go.dev/dl/)"
	if res.Text() != want {
		t.Errorf("tool message\n got %q\nwant %q", res.Text(), want)
	}
	if reqs := fake.requests(); len(reqs) != 1 || reqs[0].Auth != "Bearer tvly-test" || reqs[0].Body["query"] != "q" {
		t.Errorf("requests %+v", reqs)
	}
}
