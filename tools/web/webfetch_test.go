package web_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/toolstest"
	"github.com/qwen-ls/qwen-ls/tools/web"
)

var updateWeb = flag.Bool("update-web", false, "rewrite the golden files of web_fetch and web_search")

// fakeModel answers side requests with a fixed text (or error) and records
// what it was sent.
type fakeModel struct {
	answer string
	err    error

	mu    sync.Mutex
	calls []modelCall
}

type modelCall struct{ system, user string }

func (m *fakeModel) Complete(_ context.Context, system, user string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, modelCall{system, user})
	return m.answer, m.err
}

func (m *fakeModel) received() []modelCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]modelCall(nil), m.calls...)
}

// fakeResolver answers from a table and records every name looked up.
type fakeResolver struct {
	mu      sync.Mutex
	table   map[string][]string
	lookups []string
}

func (r *fakeResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups = append(r.lookups, host)
	ips, ok := r.table[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]net.IPAddr, 0, len(ips))
	for _, s := range ips {
		out = append(out, net.IPAddr{IP: net.ParseIP(s)})
	}
	return out, nil
}

func (r *fakeResolver) asked() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lookups...)
}

// fakeDialer records every dial. It connects the addresses in route (fake
// public ones) to loopback test servers, so that a test can fetch from a
// "public" host without leaving 127.0.0.1; other dials fail.
type fakeDialer struct {
	mu    sync.Mutex
	route map[string]string
	dials []string
}

func (d *fakeDialer) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.dials = append(d.dials, addr)
	to, ok := d.route[addr]
	d.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("fake dialer: no route to %s", addr)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, to)
}

func (d *fakeDialer) calls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.dials...)
}

// countingServer is a loopback test server that counts the requests it
// gets and answers them with h.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func portOf(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func fetchArgs(url, prompt string) string {
	return fmt.Sprintf(`{"url":%q,"prompt":%q}`, url, prompt)
}

func refusal(url, host, ip string) string {
	return "Refusing to fetch " + url + ": " + host + " resolves to a private or loopback address (" + ip +
		"). Set tools.webFetch.allowPrivateAddresses to true to allow this."
}

func TestWebFetchDeclarationGolden(t *testing.T) {
	e := newTestEnv(t, nil)
	toolstest.Golden(t, "declarations/web_fetch.json", declarationJSON(t, web.NewFetch(e.Env)), *updateWeb)
}

func TestWebFetchStatic(t *testing.T) {
	e := newTestEnv(t, nil)
	w := web.NewFetch(e.Env)
	if w.Name() != "web_fetch" || w.DisplayName() != "WebFetch" || w.Kind() != tools.KindFetch ||
		len(w.Aliases()) != 0 || w.Source() != tools.SourceBuiltin || w.StreamsOutput() {
		t.Errorf("static description is wrong")
	}
	long := strings.Repeat("é", 120)
	got := w.Describe(map[string]any{"url": "https://example.com/a", "prompt": long})
	if want := `Fetching content from https://example.com/a and processing with prompt: "` + strings.Repeat("é", 100) + `"`; got != want {
		t.Errorf("describe %q", got)
	}
}

func TestWebFetchValidation(t *testing.T) {
	e := newTestEnv(t, nil)
	w := web.NewFetch(e.Env)
	cases := []struct{ args, want string }{
		{`{"url":"","prompt":"p"}`, `Argument "url" must not be empty.`},
		{`{"url":"   ","prompt":"p"}`, `Argument "url" must not be empty.`},
		{`{"url":"ftp://example.com/x","prompt":"p"}`, `Argument "url" must be an http:// or https:// URL.`},
		{`{"url":"example.com","prompt":"p"}`, `Argument "url" must be an http:// or https:// URL.`},
		{`{"url":"http://","prompt":"p"}`, `Argument "url" must be an http:// or https:// URL.`},
		{`{"url":"https://example.com","prompt":"  "}`, `Argument "prompt" must not be empty.`},
		{`{"url":"https://example.com"}`, `params must have required property 'prompt'`},
		{`{"url":"https://example.com","prompt":"p"}`, ``},
		{`{"url":"HTTP://Example.com/","prompt":"p"}`, ``},
	}
	for _, c := range cases {
		_, terr := tools.PrepareArgs(w, c.args)
		got := ""
		if terr != nil {
			got = terr.Message
			if terr.Type != tools.ErrorInvalidToolParams {
				t.Errorf("%s: type %s", c.args, terr.Type)
			}
		}
		if got != c.want {
			t.Errorf("%s: got %q, want %q", c.args, got, c.want)
		}
	}
}

func TestWebFetchConfirmation(t *testing.T) {
	e := newTestEnv(t, nil)
	w := web.NewFetch(e.Env)
	params, terr := tools.PrepareArgs(w, fetchArgs("https://Docs.Example.com:8443/a?b=1", "List the flags"))
	if terr != nil {
		t.Fatal(terr)
	}
	conf, terr := w.ShouldConfirm(context.Background(), &tools.Call{}, params)
	if terr != nil {
		t.Fatal(terr)
	}
	info, ok := conf.Details.(*tools.InfoConfirmation)
	if !ok || conf.Title != "Confirm Web Fetch" ||
		info.Prompt != "Fetch content from https://Docs.Example.com:8443/a?b=1 and process with: List the flags" ||
		len(info.URLs) != 1 || info.URLs[0] != "https://Docs.Example.com:8443/a?b=1" ||
		len(info.PermissionRules) != 1 || info.PermissionRules[0] != "WebFetch(docs.example.com)" {
		t.Errorf("confirmation %+v %+v", conf, conf.Details)
	}
}

// TestWebFetchRefusesPrivateAddresses: literal addresses and names that
// resolve to private ones are refused before anything is dialled, and the
// model is never asked.
func TestWebFetchRefusesPrivateAddresses(t *testing.T) {
	srv, hits := countingServer(t, func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "secret") })
	port := portOf(t, srv)
	e := newTestEnv(t, nil)
	cases := []struct{ url, host, ip string }{
		{"http://127.0.0.1:" + port + "/", "127.0.0.1", "127.0.0.1"},
		{"http://[::1]:" + port + "/", "::1", "::1"},
		{"http://10.1.2.3/admin", "10.1.2.3", "10.1.2.3"},
		{"http://169.254.169.254/latest/meta-data/", "169.254.169.254", "169.254.169.254"},
		{"http://[::ffff:127.0.0.1]:" + port + "/", "::ffff:127.0.0.1", "127.0.0.1"},
		{"http://0.0.0.0:" + port + "/", "0.0.0.0", "0.0.0.0"},
		{"http://localhost.test:" + port + "/", "localhost.test", "127.0.0.1"},
		{"http://v6loop.test:" + port + "/", "v6loop.test", "::1"},
		{"http://intranet.test/wiki", "intranet.test", "10.20.30.40"},
		{"https://metadata.test/computeMetadata/v1/", "metadata.test", "169.254.169.254"},
		{"http://router.test/", "router.test", "192.168.0.1"},
		{"http://cgnat.test/", "cgnat.test", "100.64.1.1"},
		{"http://mixed.test/", "mixed.test", "172.16.5.4"},
		{"http://mapped.test/", "mapped.test", "10.0.0.1"},
	}
	for _, c := range cases {
		t.Run(c.url, func(t *testing.T) {
			r := &fakeResolver{table: map[string][]string{
				"localhost.test": {"127.0.0.1"},
				"v6loop.test":    {"::1"},
				"intranet.test":  {"10.20.30.40"},
				"metadata.test":  {"169.254.169.254"},
				"router.test":    {"192.168.0.1"},
				"cgnat.test":     {"100.64.1.1"},
				// One public address does not excuse a private one.
				"mixed.test":  {"203.0.113.9", "172.16.5.4"},
				"mapped.test": {"::ffff:10.0.0.1"},
			}}
			d := &fakeDialer{}
			w := web.NewFetch(e.Env)
			w.Resolver, w.Dial = r, d.Dial
			m := &fakeModel{answer: "should not be asked"}
			res := run(t, w, &tools.Call{Model: m}, fetchArgs(c.url, "what is here?"))
			if res.Error == nil || res.Error.Type != tools.ErrorExecutionDenied {
				t.Fatalf("result %+v", res)
			}
			if want := refusal(c.url, c.host, c.ip); res.Error.Message != want {
				t.Errorf("message\n got %s\nwant %s", res.Error.Message, want)
			}
			if got := d.calls(); len(got) != 0 {
				t.Errorf("dialled %v before refusing", got)
			}
			if len(m.received()) != 0 {
				t.Errorf("the model was asked")
			}
		})
	}
	if hits.Load() != 0 {
		t.Errorf("the loopback server got %d requests", hits.Load())
	}
}

// TestWebFetchRefusesRedirectToPrivate: the first hop goes to a host that
// resolves to a (fake) public address, which the fake dialer connects to a
// loopback server; that server then redirects to private addresses. The
// guard classifies addresses for real; only the route of the fake public
// address is faked.
func TestWebFetchRefusesRedirectToPrivate(t *testing.T) {
	var srv *httptest.Server
	srv, hits := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-loopback":
			http.Redirect(w, r, srv.URL+"/secret", http.StatusFound)
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusMovedPermanently)
		case "/to-name":
			http.Redirect(w, r, "http://intranet.test/secret", http.StatusTemporaryRedirect)
		case "/chain":
			// Two allowed hops on the public name, then a private one.
			http.Redirect(w, r, "/chain2", http.StatusFound)
		case "/chain2":
			http.Redirect(w, r, "http://[::1]:"+portOf(t, srv)+"/secret", http.StatusFound)
		case "/secret":
			t.Errorf("the private target was reached")
		}
	})
	port := portOf(t, srv)
	e := newTestEnv(t, nil)
	cases := []struct {
		path, url, host, ip string
		requests            int32
	}{
		{"/to-loopback", srv.URL + "/secret", "127.0.0.1", "127.0.0.1", 1},
		{"/to-metadata", "http://169.254.169.254/latest/meta-data/", "169.254.169.254", "169.254.169.254", 1},
		{"/to-name", "http://intranet.test/secret", "intranet.test", "10.9.9.9", 1},
		{"/chain", "http://[::1]:" + port + "/secret", "::1", "::1", 2},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			hits.Store(0)
			r := &fakeResolver{table: map[string][]string{
				"docs.test":     {"203.0.113.10"},
				"intranet.test": {"10.9.9.9"},
			}}
			d := &fakeDialer{route: map[string]string{"203.0.113.10:" + port: "127.0.0.1:" + port}}
			w := web.NewFetch(e.Env)
			w.Resolver, w.Dial = r, d.Dial
			m := &fakeModel{answer: "no"}
			start := "http://docs.test:" + port + c.path
			res := run(t, w, &tools.Call{Model: m}, fetchArgs(start, "read it"))
			if res.Error == nil || res.Error.Type != tools.ErrorExecutionDenied {
				t.Fatalf("result %+v", res)
			}
			if want := refusal(c.url, c.host, c.ip); res.Error.Message != want {
				t.Errorf("message\n got %s\nwant %s", res.Error.Message, want)
			}
			// Only the fake public address was dialled; the private
			// target was refused before any dial.
			for _, a := range d.calls() {
				if a != "203.0.113.10:"+port {
					t.Errorf("dialled %s", a)
				}
			}
			if len(d.calls()) == 0 {
				t.Errorf("the first hop was never dialled")
			}
			if hits.Load() != c.requests {
				t.Errorf("the server got %d requests, want %d", hits.Load(), c.requests)
			}
			if len(m.received()) != 0 {
				t.Errorf("the model was asked")
			}
		})
	}
}

// TestWebFetchRewritesGitHubBlobs shows the rewrite through the host that
// is looked up: the raw host is resolved (to a private fake address, so
// nothing is dialled), github.com is not.
func TestWebFetchRewritesGitHubBlobs(t *testing.T) {
	e := newTestEnv(t, nil)
	cases := []struct{ url, lookedUp string }{
		{"https://github.com/acme/tool/blob/main/docs/README.md", "raw.githubusercontent.com"},
		{"https://github.com/acme/tool/blob/v1.2/a%20b.md", "raw.githubusercontent.com"},
		{"https://github.com/acme/tool/tree/main/docs", "github.com"},
		{"https://github.com/acme/tool", "github.com"},
	}
	for _, c := range cases {
		r := &fakeResolver{table: map[string][]string{
			"github.com":                {"10.0.0.1"},
			"raw.githubusercontent.com": {"10.0.0.2"},
		}}
		d := &fakeDialer{}
		w := web.NewFetch(e.Env)
		w.Resolver, w.Dial = r, d.Dial
		res := run(t, w, &tools.Call{Model: &fakeModel{answer: "x"}}, fetchArgs(c.url, "p"))
		if res.Error == nil || res.Error.Type != tools.ErrorExecutionDenied {
			t.Fatalf("%s: %+v", c.url, res)
		}
		if got := r.asked(); len(got) != 1 || got[0] != c.lookedUp {
			t.Errorf("%s: looked up %v, want %s", c.url, got, c.lookedUp)
		}
		if !strings.HasPrefix(res.Error.Message, "Refusing to fetch "+c.url+": "+c.lookedUp+" resolves") {
			t.Errorf("%s: %s", c.url, res.Error.Message)
		}
		if len(d.calls()) != 0 {
			t.Errorf("dialled %v", d.calls())
		}
	}
}

// allowPrivate is the settings layer that lets web_fetch reach the loopback
// test servers.
var allowPrivate = map[string]any{"tools": map[string]any{"webFetch": map[string]any{"allowPrivateAddresses": true}}}

const samplePage = `<!doctype html>
<html><head><title>Widget docs</title><style>body{color:red}</style>
<script>var secret = "tracking";</script></head>
<body>
<h1>Widget</h1>
<p>Install it with <code>go install widget@latest</code>. See the <a href="/guide">guide</a>.</p>
<noscript>Enable JavaScript</noscript>
<svg><text>vector text</text></svg>
<iframe src="https://ads.example/"></iframe>
<img src="logo.png" alt="logo">
<h2>Flags</h2>
<ul><li><code>--depth</code> sets the depth</li><li><code>--fast</code> skips checks</li></ul>
<table><tr><th>Flag</th><th>Default</th></tr><tr><td>depth</td><td>3</td></tr></table>
<pre><code>widget --depth 2
</code></pre>
</body></html>`

// TestWebFetchReadsHTMLAsMarkdown covers the whole path on a loopback
// server with tools.webFetch.allowPrivateAddresses: the request's Accept
// header, the conversion, the side request and the result.
func TestWebFetchReadsHTMLAsMarkdown(t *testing.T) {
	var accept atomic.Value
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		accept.Store(r.Header.Get("Accept"))
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, samplePage)
	})
	e := newTestEnv(t, allowPrivate)
	m := &fakeModel{answer: "  The flags are --depth and --fast.\n"}
	url := srv.URL + "/docs"
	res := run(t, web.NewFetch(e.Env), &tools.Call{Model: m}, fetchArgs(url, "Which flags exist?"))
	if res.Error != nil {
		t.Fatalf("error %+v", res.Error)
	}
	if res.Text() != "The flags are --depth and --fast." {
		t.Errorf("llmContent %q", res.Text())
	}
	if d, ok := res.Display.(tools.Markdown); !ok || string(d) != "Fetched "+url+"." {
		t.Errorf("display %#v", res.Display)
	}
	if got := accept.Load(); got != "text/markdown, text/html, text/plain" {
		t.Errorf("Accept %q", got)
	}
	calls := m.received()
	if len(calls) != 1 {
		t.Fatalf("the model got %d requests", len(calls))
	}
	user := calls[0].user
	for _, want := range []string{
		"Which flags exist?", url,
		"\n---\n# Widget\n",
		"Install it with `go install widget@latest`. See the [guide](" + srv.URL + "/guide).",
		"## Flags", "- `--depth` sets the depth", "| Flag  | Default |", "| depth | 3       |",
		"```\nwidget --depth 2\n```",
	} {
		if !strings.Contains(user, want) {
			t.Errorf("the side request lacks %q:\n%s", want, user)
		}
	}
	for _, banned := range []string{"tracking", "color:red", "Enable JavaScript", "vector text", "ads.example", "logo", "<"} {
		if strings.Contains(user, banned) {
			t.Errorf("the side request has %q:\n%s", banned, user)
		}
	}
	if !strings.HasSuffix(user, "\n---\n") {
		t.Errorf("the page does not end with a --- line:\n%s", user)
	}
}

// TestWebFetchSideRequestGolden pins both texts of the side request.
func TestWebFetchSideRequestGolden(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<h1>Release 2.0</h1><p>Adds <em>streaming</em> and drops Go 1.20.</p>`)
	})
	e := newTestEnv(t, allowPrivate)
	m := &fakeModel{answer: "Streaming."}
	url := srv.URL + "/releases/2.0"
	res := run(t, web.NewFetch(e.Env), &tools.Call{Model: m}, fetchArgs(url, "What is new?"))
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	calls := m.received()
	if len(calls) != 1 {
		t.Fatalf("%d model requests", len(calls))
	}
	// The port changes between runs; the golden file says <url>.
	user := strings.ReplaceAll(calls[0].user, url, "<url>")
	got := "=== system\n" + calls[0].system + "\n=== user\n" + user
	toolstest.Golden(t, "web_fetch_side_request.golden", []byte(got), *updateWeb)
}

func TestWebFetchContentTypes(t *testing.T) {
	e := newTestEnv(t, allowPrivate)
	body := map[string]string{
		"/md":       "# Title\n\n<b>kept as written</b>\n",
		"/plain":    "plain <i>text</i> stays",
		"/sniff":    "<html><body><h2>Sniffed</h2></body></html>",
		"/xhtml":    `<html xmlns="http://www.w3.org/1999/xhtml"><body><p>x<b>y</b></p></body></html>`,
		"/latin1":   "<p>caf\xe9</p>",
		"/pdf":      "%PDF-1.7",
		"/json":     `{"a":1}`,
		"/unsniffy": "\x00\x01\x02binary",
	}
	types := map[string]string{
		"/md":     "text/markdown; charset=utf-8",
		"/plain":  "text/plain",
		"/xhtml":  "application/xhtml+xml",
		"/latin1": "text/html; charset=ISO-8859-1",
		"/pdf":    "application/pdf",
		"/json":   "application/json; charset=utf-8",
	}
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if ct, ok := types[r.URL.Path]; ok {
			w.Header().Set("Content-Type", ct)
		} else {
			w.Header()["Content-Type"] = nil // no type: the body is sniffed
		}
		fmt.Fprint(w, body[r.URL.Path])
	})
	for path, wantPage := range map[string]string{
		"/md":     body["/md"],
		"/plain":  body["/plain"],
		"/sniff":  "## Sniffed",
		"/xhtml":  "x**y**",
		"/latin1": "café",
	} {
		m := &fakeModel{answer: "ok"}
		res := run(t, web.NewFetch(e.Env), &tools.Call{Model: m}, fetchArgs(srv.URL+path, "p"))
		if res.Error != nil {
			t.Errorf("%s: %+v", path, res.Error)
			continue
		}
		calls := m.received()
		if len(calls) != 1 || !strings.Contains(calls[0].user, "\n---\n"+wantPage+"\n---\n") {
			t.Errorf("%s: side request %q", path, calls)
		}
	}
	for path, typ := range map[string]string{
		"/pdf": "application/pdf", "/json": "application/json", "/unsniffy": "application/octet-stream",
	} {
		m := &fakeModel{answer: "ok"}
		url := srv.URL + path
		res := run(t, web.NewFetch(e.Env), &tools.Call{Model: m}, fetchArgs(url, "p"))
		if res.Error == nil || res.Error.Type != tools.ErrorWebFetchProcessing ||
			res.Error.Message != "Unsupported content type "+typ+" at "+url+"." {
			t.Errorf("%s: %+v", path, res.Error)
		}
		if len(m.received()) != 0 {
			t.Errorf("%s: the model was asked", path)
		}
	}
}

func TestWebFetchFailures(t *testing.T) {
	var srv *httptest.Server
	srv, _ = countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/missing":
			http.NotFound(w, r)
		case "/teapot":
			w.WriteHeader(http.StatusTeapot)
		case "/odd":
			w.WriteHeader(599)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "fine")
		}
	})
	e := newTestEnv(t, allowPrivate)
	cases := []struct {
		path   string
		model  tools.Model
		reason string
	}{
		{"/missing", &fakeModel{answer: "x"}, "The server answered 404 Not Found."},
		{"/teapot", &fakeModel{answer: "x"}, "The server answered 418 I'm a teapot."},
		{"/odd", &fakeModel{answer: "x"}, "The server answered 599."},
		{"/loop", &fakeModel{answer: "x"}, "It redirected more than 10 times."},
		{"/ok", &fakeModel{err: errors.New("rate limited")}, "The model request failed: rate limited."},
		{"/ok", &fakeModel{answer: " \n "}, "The model gave an empty answer."},
		{"/ok", nil, "No model is configured to read the page."},
	}
	for _, c := range cases {
		url := srv.URL + c.path
		res := run(t, web.NewFetch(e.Env), &tools.Call{Model: c.model}, fetchArgs(url, "p"))
		want := "Could not fetch " + url + ": " + c.reason
		if res.Error == nil || res.Error.Type != tools.ErrorWebFetchFallbackFailed || res.Error.Message != want {
			t.Errorf("%s: got %+v, want %s", c.path, res.Error, want)
		}
	}

	// A host that does not resolve.
	w := web.NewFetch(e.Env)
	w.Resolver = &fakeResolver{}
	res := run(t, w, &tools.Call{Model: &fakeModel{answer: "x"}}, fetchArgs("http://nowhere.test/", "p"))
	if res.Error == nil || res.Error.Type != tools.ErrorWebFetchFallbackFailed ||
		!strings.HasPrefix(res.Error.Message, "Could not fetch http://nowhere.test/: The request failed: look up nowhere.test:") {
		t.Errorf("unresolvable host: %+v", res.Error)
	}
}

// TestWebFetchNoModelFetchesNothing: without a model the tool stops before
// looking anything up.
func TestWebFetchNoModelFetchesNothing(t *testing.T) {
	e := newTestEnv(t, nil)
	r, d := &fakeResolver{table: map[string][]string{"docs.test": {"203.0.113.1"}}}, &fakeDialer{}
	w := web.NewFetch(e.Env)
	w.Resolver, w.Dial = r, d.Dial
	res := run(t, w, &tools.Call{}, fetchArgs("http://docs.test/", "p"))
	if res.Error == nil || res.Error.Type != tools.ErrorWebFetchFallbackFailed {
		t.Fatalf("%+v", res)
	}
	if len(r.asked()) != 0 || len(d.calls()) != 0 {
		t.Errorf("looked up %v, dialled %v", r.asked(), d.calls())
	}
}

// TestWebFetchCutsThePage: the model gets the first 100,000 characters
// (not bytes) of the page.
func TestWebFetchCutsThePage(t *testing.T) {
	page := strings.Repeat("ü", 99_990) + strings.Repeat("x", 20) + "TAIL"
	srv, _ := countingServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, page)
	})
	e := newTestEnv(t, allowPrivate)
	m := &fakeModel{answer: "ok"}
	if res := run(t, web.NewFetch(e.Env), &tools.Call{Model: m}, fetchArgs(srv.URL, "p")); res.Error != nil {
		t.Fatal(res.Error)
	}
	user := m.received()[0].user
	_, got, _ := strings.Cut(user, "\n---\n")
	got = strings.TrimSuffix(got, "\n---\n")
	if n := utf8.RuneCountInString(got); n != 100_000 || !strings.HasSuffix(got, strings.Repeat("x", 10)) || strings.Contains(got, "TAIL") {
		t.Errorf("the page sent has %d characters, ending %q", n, got[len(got)-20:])
	}
}

// TestWebFetchReadsAtMostTenMiB: the server sends more than 10 MiB and
// then never ends the body; the fetch still finishes, because it stops
// reading at 10 MiB.
func TestWebFetchReadsAtMostTenMiB(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		chunk := []byte(strings.Repeat("a", 1<<20))
		for range 11 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	e := newTestEnv(t, allowPrivate)
	m := &fakeModel{answer: "ok"}
	// The body never ends, so a fetch that waited for it would never
	// return; returning at all shows it stopped at the size cap.
	res := run(t, web.NewFetch(e.Env), &tools.Call{Model: m}, fetchArgs(srv.URL, "p"))
	if res.Error != nil {
		t.Fatal(res.Error)
	}
}

// TestWebFetchCancellation: cancelling the call ends the turn (a Go error),
// rather than becoming a result.
func TestWebFetchCancellation(t *testing.T) {
	release := make(chan struct{})
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	e := newTestEnv(t, allowPrivate)
	w := web.NewFetch(e.Env)
	params, terr := tools.PrepareArgs(w, fetchArgs(srv.URL, "p"))
	if terr != nil {
		t.Fatal(terr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := tools.Guard(ctx, w, &tools.Call{Model: &fakeModel{answer: "x"}}, params, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the call's own deadline", err)
	}
}

// RunSubagent completes tools.Model; web_fetch never runs subagents.
func (m *fakeModel) RunSubagent(context.Context, tools.SubagentRequest, func(tools.SubagentRun)) (tools.SubagentResult, error) {
	return tools.SubagentResult{}, errors.New("web_fetch must not run subagents")
}
