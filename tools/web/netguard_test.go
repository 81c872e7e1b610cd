package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// guardResolver answers from a table and records every name asked for.
type guardResolver struct {
	mu      sync.Mutex
	table   map[string][]string
	lookups []string
}

func (r *guardResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups = append(r.lookups, host)
	ips, ok := r.table[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []net.IPAddr
	for _, s := range ips {
		ip, zone, _ := strings.Cut(s, "%")
		out = append(out, net.IPAddr{IP: net.ParseIP(ip), Zone: zone})
	}
	return out, nil
}

// guardDialer records every address it is asked to dial and connects the
// ones in route to the given loopback listener; any other dial fails.
type guardDialer struct {
	mu    sync.Mutex
	route map[string]string
	dials []string
}

func (d *guardDialer) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.dials = append(d.dials, addr)
	to, ok := d.route[addr]
	d.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("test dialer: no route to %s", addr)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, to)
}

func (d *guardDialer) calls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.dials...)
}

func TestBlockedAddress(t *testing.T) {
	blocked := []string{
		"127.0.0.1", "127.255.0.9", "::1",
		"10.0.0.1", "10.255.255.255", "172.16.0.1", "172.31.255.254", "192.168.0.1", "192.168.255.255",
		"fc00::1", "fd12:3456::1",
		"169.254.169.254", "169.254.0.1", "fe80::1", "fe80::1%eth0",
		"100.64.0.1", "100.127.255.254",
		"0.0.0.0", "0.1.2.3", "::",
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::ffff:100.64.0.1", "::ffff:0.0.0.0",
	}
	allowed := []string{
		"8.8.8.8", "1.1.1.1", "93.184.216.34", "172.15.255.255", "172.32.0.1", "192.169.0.1",
		"100.63.255.255", "100.128.0.1", "169.253.255.255", "11.0.0.1",
		"2001:4860:4860::8888", "2606:4700::1111", "fbff::1", "fec0::1", "::ffff:8.8.8.8",
	}
	for _, s := range blocked {
		if !blockedAddress(netip.MustParseAddr(s)) {
			t.Errorf("%s is not blocked", s)
		}
	}
	for _, s := range allowed {
		if blockedAddress(netip.MustParseAddr(s)) {
			t.Errorf("%s is blocked", s)
		}
	}
	if !blockedAddress(netip.Addr{}) {
		t.Errorf("the invalid address is not blocked")
	}
}

func TestNetGuardResolveChecksEveryAddress(t *testing.T) {
	r := &guardResolver{table: map[string][]string{
		"public.test": {"203.0.113.7", "2001:db8::7"},
		"mixed.test":  {"203.0.113.7", "10.9.8.7"},
		"mapped.test": {"::ffff:127.0.0.1"},
		"zoned.test":  {"fe80::1%eth0"},
	}}
	g := &netGuard{Resolver: r}
	ctx := context.Background()

	ips, err := g.Resolve(ctx, "public.test")
	if err != nil || len(ips) != 2 || ips[0].String() != "203.0.113.7" {
		t.Fatalf("public.test: %v, %v", ips, err)
	}
	for host, ip := range map[string]string{
		"mixed.test": "10.9.8.7", "mapped.test": "127.0.0.1", "zoned.test": "fe80::1",
		"127.0.0.1": "127.0.0.1", "::1": "::1", "169.254.169.254": "169.254.169.254",
	} {
		_, err := g.Resolve(ctx, host)
		var refused *refusedAddressError
		if !errors.As(err, &refused) || refused.Host != host || refused.IP.String() != ip {
			t.Errorf("%s: %v (%+v)", host, err, refused)
		}
	}
	if _, err := g.Resolve(ctx, "nowhere.test"); err == nil || !strings.Contains(err.Error(), "look up nowhere.test") {
		t.Errorf("unknown host: %v", err)
	}
	// IP literals are not looked up.
	if got := strings.Join(r.lookups, ","); strings.Contains(got, "127.0.0.1") || strings.Contains(got, "::1") {
		t.Errorf("literal addresses were looked up: %s", got)
	}

	open := &netGuard{Resolver: r, AllowPrivate: true}
	if ips, err := open.Resolve(ctx, "mixed.test"); err != nil || len(ips) != 2 {
		t.Errorf("allowed: %v, %v", ips, err)
	}
}

func TestNetGuardDialsTheCheckedAddressesNotTheName(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "hello")
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	r := &guardResolver{table: map[string][]string{
		"public.test":  {"203.0.113.7", "203.0.113.8"},
		"private.test": {"192.168.1.1"},
	}}
	// The first address does not answer, the second leads to the server.
	d := &guardDialer{route: map[string]string{"203.0.113.8:" + port: srv.Listener.Addr().String()}}
	g := &netGuard{Resolver: r, Dial: d.Dial}

	conn, err := g.DialContext(context.Background(), "tcp", "public.test:"+port)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	conn.Close()
	if got := d.calls(); len(got) != 2 || got[0] != "203.0.113.7:"+port || got[1] != "203.0.113.8:"+port {
		t.Errorf("dialled %v", got)
	}

	_, err = g.DialContext(context.Background(), "tcp", "private.test:"+port)
	var refused *refusedAddressError
	if !errors.As(err, &refused) || refused.IP.String() != "192.168.1.1" {
		t.Fatalf("private.test: %v", err)
	}
	if got := d.calls(); len(got) != 2 {
		t.Errorf("a refused host was dialled: %v", got)
	}
}

// TestNetGuardSystemDialerChecksTheSocket shows the last line of defence:
// the default dialer refuses a private address handed to it directly, from
// the socket's own address, before connecting.
func TestNetGuardSystemDialerChecksTheSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()

	_, err = (&netGuard{}).systemDialer().DialContext(context.Background(), "tcp", ln.Addr().String())
	var refused *refusedAddressError
	if !errors.As(err, &refused) || refused.IP.String() != "127.0.0.1" {
		t.Fatalf("system dialer: %v", err)
	}

	// A connection the guard allows, read until the server closes it: then
	// it has been accepted, and any earlier connection would have been
	// accepted before it.
	conn, err := (&netGuard{AllowPrivate: true}).systemDialer().DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("allowed dial: %v", err)
	}
	conn.Read(make([]byte, 1))
	conn.Close()
	if n := accepted.Load(); n != 1 {
		t.Errorf("the listener accepted %d connections, want only the allowed one", n)
	}
}

func TestNetGuardClientFollowsAtMostTenRedirects(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := hits.Add(1)
		http.Redirect(w, r, fmt.Sprintf("/hop%d", n), http.StatusFound)
	}))
	defer srv.Close()

	c := (&netGuard{AllowPrivate: true}).Client(0)
	defer c.CloseIdleConnections()
	resp, err := c.Get(srv.URL + "/")
	if resp != nil {
		resp.Body.Close()
	}
	var tooMany *tooManyRedirectsError
	if !errors.As(err, &tooMany) {
		t.Fatalf("endless redirects: %v", err)
	}
	// The first request and ten redirects were sent; the eleventh redirect
	// was not followed.
	if n := hits.Load(); n != 11 {
		t.Errorf("the server saw %d requests, want 11", n)
	}

	// Ten redirects are fine.
	hits.Store(0)
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := hits.Add(1); n <= 10 {
			http.Redirect(w, r, fmt.Sprintf("/hop%d", n), http.StatusFound)
			return
		}
		fmt.Fprint(w, "arrived")
	}))
	defer srv2.Close()
	resp, err = c.Get(srv2.URL + "/")
	if err != nil {
		t.Fatalf("ten redirects: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/hop10" {
		t.Errorf("ended at %s with %d", resp.Request.URL, resp.StatusCode)
	}
}

func TestNetGuardClientNamesTheRefusedRedirect(t *testing.T) {
	var secret atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/start":
			http.Redirect(w, r, "http://inside.test/secret", http.StatusMovedPermanently)
		case "/ftp":
			http.Redirect(w, r, "ftp://public.test/file", http.StatusFound)
		default:
			secret.Add(1)
		}
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	r := &guardResolver{table: map[string][]string{
		"public.test": {"203.0.113.7"},
		"inside.test": {"10.0.0.5"},
	}}
	d := &guardDialer{route: map[string]string{"203.0.113.7:" + port: srv.Listener.Addr().String()}}
	c := (&netGuard{Resolver: r, Dial: d.Dial}).Client(0)
	defer c.CloseIdleConnections()

	_, err := c.Get("http://public.test:" + port + "/start")
	var refused *refusedAddressError
	if !errors.As(err, &refused) || refused.URL != "http://inside.test/secret" || refused.Host != "inside.test" ||
		refused.IP.String() != "10.0.0.5" {
		t.Fatalf("redirect to a private host: %v (%+v)", err, refused)
	}
	if got := d.calls(); len(got) != 1 {
		t.Errorf("dialled %v, want only the first hop", got)
	}
	if secret.Load() != 0 {
		t.Errorf("the redirect target was reached")
	}

	_, err = c.Get("http://public.test:" + port + "/ftp")
	if err == nil || !strings.Contains(err.Error(), "only http and https are followed") {
		t.Errorf("redirect to ftp: %v", err)
	}
}
