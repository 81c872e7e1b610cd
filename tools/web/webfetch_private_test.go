package web_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/web"
)

// countingListener accepts on an address and counts every connection that
// arrives, closing it at once.
type countingListener struct {
	ln    net.Listener
	count atomic.Int32
}

func listenCounting(t *testing.T, addr string) *countingListener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil
	}
	c := &countingListener{ln: ln}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.count.Add(1)
			conn.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return c
}

// recordingResolver answers nothing and records every name it is asked,
// so that no name is looked up on the network.
type recordingResolver struct {
	mu    sync.Mutex
	names []string
	table map[string][]string
}

func (r *recordingResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names = append(r.names, host)
	var out []net.IPAddr
	for _, s := range r.table[host] {
		out = append(out, net.IPAddr{IP: net.ParseIP(s)})
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return out, nil
}

func (r *recordingResolver) asked() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.names...)
}

// privateForms spell the machine itself, and the networks around it, in
// every way URL parsers and resolvers accept. {P} is the port of the
// counting listeners. lookup says the host is a name that may be looked
// up (through the test's resolver, which maps it to loopback).
var privateForms = []struct {
	url    string
	lookup bool
}{
	{"http://127.0.0.1:{P}/", false},
	{"http://127.1:{P}/", false},
	{"http://127.0.1:{P}/", false},
	{"http://2130706433:{P}/", false},
	{"http://017700000001:{P}/", false},
	{"http://0177.0.0.1:{P}/", false},
	{"http://0177.1:{P}/", false},
	{"http://0x7f000001:{P}/", false},
	{"http://0x7f.0x0.0x0.0x1:{P}/", false},
	{"http://0x7F.1:{P}/", false},
	{"http://127.000.000.001:{P}/", false},
	{"http://127.0.0.1.:{P}/", false},
	{"http://0:{P}/", false},
	{"http://0.0.0.0:{P}/", false},
	{"http://[::1]:{P}/", false},
	{"http://[::]:{P}/", false},
	{"http://[0:0:0:0:0:0:0:1]:{P}/", false},
	{"http://[::ffff:127.0.0.1]:{P}/", false},
	{"http://[::ffff:7f00:1]:{P}/", false},
	{"http://[0:0:0:0:0:ffff:127.0.0.1]:{P}/", false},
	{"http://[::127.0.0.1]:{P}/", false},
	{"http://[fe80::1%25lo]:{P}/", false},
	{"http://10.0.0.1/", false},
	{"http://012.0.0.1/", false},
	{"http://0xa000001/", false},
	{"http://167772161/", false},
	{"http://192.168.1.1/", false},
	{"http://0xc0a80101/", false},
	{"http://172.16.0.1/", false},
	{"http://169.254.169.254/latest/meta-data/", false},
	{"http://0xa9fea9fe/", false},
	{"http://2852039166/", false},
	{"http://100.64.0.1/", false},
	{"http://[fd00::1]/", false},
	{"http://user:pass@127.0.0.1:{P}/", false},
	{"http://example.com@127.0.0.1:{P}/", false},
	{"http://example.com:80@127.1:{P}/", false},
	{"http://127.0.0.1:{P}#@example.com/", false},
	{"http://127.0.0.1:{P}?@example.com/", false},
	{"http://localhost:{P}/", false},
	{"http://LOCALHOST:{P}/", false},
	{"http://localhost.:{P}/", false},
	{"http://foo.localhost:{P}/", false},
	{"http://loop.test:{P}/", true},
	{"http://loop6.test:{P}/", true},
	{"http://mapped.test:{P}/", true},
	{"http://both.test:{P}/", true},
}

func privateResolver() *recordingResolver {
	return &recordingResolver{table: map[string][]string{
		"localhost": {"127.0.0.1", "::1"}, "localhost.": {"127.0.0.1"}, "foo.localhost": {"127.0.0.1"},
		"loop.test": {"127.0.0.1"}, "loop6.test": {"::1"}, "mapped.test": {"::ffff:127.0.0.1"},
		"both.test": {"203.0.113.7", "127.0.0.1"},
	}}
}

// Every private form is refused with the execution_denied error before a
// connection is made: the listeners on 127.0.0.1 and ::1 see nothing, the
// system dialer (with its socket check) is the one in use, and numeric
// hosts are never handed to a resolver (which could send them to DNS).
func TestWebFetchRefusesEveryPrivateForm(t *testing.T) {
	v4 := listenCounting(t, "127.0.0.1:0")
	port := v4.ln.Addr().(*net.TCPAddr).Port
	v6 := listenCounting(t, fmt.Sprintf("[::1]:%d", port))
	e := newTestEnv(t, nil)
	for _, f := range privateForms {
		u := strings.ReplaceAll(f.url, "{P}", fmt.Sprint(port))
		r := privateResolver()
		w := web.NewFetch(e.Env)
		w.Resolver = r
		m := &fakeModel{answer: "should not be asked"}
		res := run(t, w, &tools.Call{Model: m}, fetchArgs(u, "what is here?"))
		if res.Error == nil {
			t.Errorf("%s was fetched: %s", u, res.Text())
			continue
		}
		if res.Error.Type != tools.ErrorExecutionDenied && res.Error.Type != tools.ErrorInvalidToolParams {
			t.Errorf("%s: error %s %q, want a refusal", u, res.Error.Type, res.Error.Message)
		}
		if !f.lookup && len(r.asked()) > 0 {
			t.Errorf("%s: looked up %v, a numeric host must not reach a resolver", u, r.asked())
		}
		if len(m.received()) != 0 {
			t.Errorf("%s: the model was asked", u)
		}
	}
	if n := v4.count.Load(); n != 0 {
		t.Errorf("127.0.0.1 got %d connections", n)
	}
	if v6 != nil && v6.count.Load() != 0 {
		t.Errorf("::1 got %d connections", v6.count.Load())
	}
}

// The same forms as redirect targets: the first hop is a "public" host
// (a fake address routed to a loopback server); every redirect to a
// private form is refused before a connection.
func TestWebFetchRefusesRedirectsToEveryPrivateForm(t *testing.T) {
	v4 := listenCounting(t, "127.0.0.1:0")
	port := v4.ln.Addr().(*net.TCPAddr).Port
	v6 := listenCounting(t, fmt.Sprintf("[::1]:%d", port))
	var target atomic.Value
	srv, hits := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.Load().(string), http.StatusFound)
	})
	pubPort := portOf(t, srv)
	e := newTestEnv(t, nil)
	for _, f := range privateForms {
		u := strings.ReplaceAll(f.url, "{P}", fmt.Sprint(port))
		target.Store(u)
		r := privateResolver()
		r.table["docs.test"] = []string{"203.0.113.10"}
		d := &fakeDialer{route: map[string]string{"203.0.113.10:" + pubPort: "127.0.0.1:" + pubPort}}
		w := web.NewFetch(e.Env)
		w.Resolver, w.Dial = r, d.Dial
		m := &fakeModel{answer: "no"}
		before := hits.Load()
		res := run(t, w, &tools.Call{Model: m}, fetchArgs("http://docs.test:"+pubPort+"/start", "read it"))
		if res.Error == nil {
			t.Errorf("redirect to %s was followed: %s", u, res.Text())
		}
		if hits.Load() != before+1 {
			t.Errorf("redirect to %s: the first hop got %d requests", u, hits.Load()-before)
		}
		for _, a := range d.calls() {
			if a != "203.0.113.10:"+pubPort {
				t.Errorf("redirect to %s: dialled %s", u, a)
			}
		}
		if len(m.received()) != 0 {
			t.Errorf("redirect to %s: the model was asked", u)
		}
	}
	if n := v4.count.Load(); n != 0 {
		t.Errorf("127.0.0.1 got %d connections", n)
	}
	if v6 != nil && v6.count.Load() != 0 {
		t.Errorf("::1 got %d connections", v6.count.Load())
	}
}

// Numeric hosts are read as inet_aton reads them, without a resolver; a
// numeric host that is no address is an error, not a DNS query.
func TestNetGuardReadsEveryNumericForm(t *testing.T) {
	r := &recordingResolver{table: map[string][]string{"example.test": {"203.0.113.5"}}}
	g := &web.NetGuard{Resolver: r, AllowPrivate: true}
	for host, want := range map[string]string{
		"127.1": "127.0.0.1", "127.0.1": "127.0.0.1", "2130706433": "127.0.0.1", "017700000001": "127.0.0.1",
		"0177.0.0.1": "127.0.0.1", "0x7f000001": "127.0.0.1", "0X7F.1": "127.0.0.1", "127.000.000.001": "127.0.0.1",
		"127.0.0.1.": "127.0.0.1", "0": "0.0.0.0", "8.8.8.8": "8.8.8.8", "0x08.0x08.0x0808": "8.8.8.8",
		"1.2.3.4": "1.2.3.4", "4294967295": "255.255.255.255", "example.test": "203.0.113.5",
		"::1": "::1",
	} {
		ips, err := g.Resolve(context.Background(), host)
		if err != nil || len(ips) != 1 || ips[0].String() != want {
			t.Errorf("%s resolved to %v, %v; want %s", host, ips, err, want)
		}
	}
	for _, host := range []string{"999.1.1.1", "1.2.3.4.5", "4294967296", "0x", "1.0x100.1.1", "08.1.1.1", "1.2.3.1e", "1..2"} {
		if ips, err := g.Resolve(context.Background(), host); err == nil {
			t.Errorf("%s resolved to %v, want an error", host, ips)
		}
	}
	if got := r.asked(); len(got) != 1 || got[0] != "example.test" {
		t.Errorf("resolver asked %v; only the name should reach it", got)
	}
	for ip, blocked := range map[string]bool{
		"::7f00:1": true, "64:ff9b::7f00:1": true, "64:ff9b::a00:1": true, "2002:7f00:1::1": true,
		"2002:c0a8:101::": true, "64:ff9b::808:808": false, "2002:808:808::1": false,
	} {
		if got := web.BlockedAddress(netip.MustParseAddr(ip)); got != blocked {
			t.Errorf("BlockedAddress(%s) = %v, want %v", ip, got, blocked)
		}
	}
}
