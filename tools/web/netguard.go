package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Resolver looks up the addresses of a host name. *net.Resolver implements
// it; tests give a fake so that no name is ever looked up for real.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// DialFunc opens a connection. The guard only ever passes it an "ip:port"
// address it has already checked.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// maxRedirects is how many redirects one fetch follows (tools.md §3.9).
const maxRedirects = 10

// netGuard keeps HTTP requests away from the machine itself and from the
// networks around it (tools.md §3.9): every address a host name resolves to
// and every address actually dialled, on the first hop and after each
// redirect, must be public. The zero value uses the system's resolver and
// dialer and refuses private addresses.
//
// The check sits in the dialer, not only in front of the request, so that a
// name that resolves to a public address when checked and to a private one
// when connecting (DNS rebinding) is still refused: the dialer connects to
// the very addresses it checked, never to the name.
type netGuard struct {
	// Resolver looks up host names; nil means net.DefaultResolver.
	Resolver Resolver
	// Dial connects to a checked "ip:port"; nil means a net.Dialer that
	// checks the socket's address once more just before connecting.
	Dial DialFunc
	// AllowPrivate turns the address checks off
	// (tools.webFetch.allowPrivateAddresses).
	AllowPrivate bool
}

// refusedAddressError says that a host resolves to an address the guard
// does not connect to. URL is the request (first hop or redirect target)
// that was refused, when known.
type refusedAddressError struct {
	URL  string
	Host string
	IP   netip.Addr
}

func (e *refusedAddressError) Error() string {
	return fmt.Sprintf("%s resolves to a private or loopback address (%s)", e.Host, e.IP)
}

// cgnat is the shared address space of carrier-grade NAT (RFC 6598).
func cgnat() netip.Prefix { return netip.MustParsePrefix("100.64.0.0/10") }

// thisNetwork is 0.0.0.0/8: Linux connects 0.0.0.0 to the machine itself,
// so the whole block counts as unspecified.
func thisNetwork() netip.Prefix { return netip.MustParsePrefix("0.0.0.0/8") }

// blockedAddress reports whether ip is one the guard refuses: loopback,
// private (10/8, 172.16/12, 192.168/16, fc00::/7), link-local (169.254/16,
// fe80::/10), CGNAT (100.64/10) or unspecified (0.0.0.0/8, ::). An
// IPv4-mapped IPv6 address is judged by the IPv4 address inside it, and an
// invalid address is refused.
func blockedAddress(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	if !ip.IsValid() {
		return true
	}
	if v4, ok := embeddedIPv4(ip); ok && blockedAddress(v4) {
		return true
	}
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsUnspecified() || ip.IsLinkLocalUnicast() ||
		cgnat().Contains(ip) || thisNetwork().Contains(ip)
}

// IPv6 ranges that carry an IPv4 address: IPv4-compatible (::a.b.c.d,
// deprecated, still routed by some stacks), NAT64 (64:ff9b::/96, which a
// gateway connects to the IPv4 address) and 6to4 (2002:aabb:ccdd::/48).
// These and the prefixes above are functions, not variables, so that the
// package has no initialiser for every start of the server to run.
func v4Compatible() netip.Prefix { return netip.MustParsePrefix("::/96") }
func nat64() netip.Prefix        { return netip.MustParsePrefix("64:ff9b::/96") }
func sixToFour() netip.Prefix    { return netip.MustParsePrefix("2002::/16") }

// embeddedIPv4 returns the IPv4 address an IPv6 address carries, so that
// it is judged too.
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	if !ip.Is6() {
		return netip.Addr{}, false
	}
	b := ip.As16()
	switch {
	case v4Compatible().Contains(ip), nat64().Contains(ip):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour().Contains(ip):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}

// hostIP reads host as an IP address in every form that resolvers and
// browsers accept: the usual literals, a trailing dot, and the IPv4 forms
// of inet_aton (127.1, 2130706433, 0177.0.0.1, 0x7f000001). isIP is true
// when the host is numeric (its last label starts with a digit, which no
// top-level domain does); a numeric host that is not a valid address gives
// an error, so that it is never handed to a resolver (or to DNS).
func hostIP(host string) (ip netip.Addr, isIP bool, err error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip, true, nil
	}
	h := strings.TrimSuffix(host, ".")
	labels := strings.Split(h, ".")
	last := labels[len(labels)-1]
	if last == "" || last[0] < '0' || last[0] > '9' {
		return netip.Addr{}, false, nil
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		return ip, true, nil
	}
	if len(labels) > 4 {
		return netip.Addr{}, true, fmt.Errorf("%s is not a valid IP address", host)
	}
	var parts []uint64
	for _, l := range labels {
		base, digits := 10, l
		switch {
		case len(l) > 1 && (l[:2] == "0x" || l[:2] == "0X"):
			base, digits = 16, l[2:]
		case len(l) > 1 && l[0] == '0':
			base, digits = 8, l[1:]
		}
		n, perr := strconv.ParseUint(digits, base, 32)
		if perr != nil || digits == "" {
			return netip.Addr{}, true, fmt.Errorf("%s is not a valid IP address", host)
		}
		parts = append(parts, n)
	}
	// All but the last part are single bytes; the last fills the rest.
	var v uint64
	for i, n := range parts[:len(parts)-1] {
		if n > 0xff {
			return netip.Addr{}, true, fmt.Errorf("%s is not a valid IP address", host)
		}
		v |= n << (24 - 8*i)
	}
	rest := parts[len(parts)-1]
	if bits := 8 * (5 - len(parts)); bits < 32 && rest >= 1<<bits {
		return netip.Addr{}, true, fmt.Errorf("%s is not a valid IP address", host)
	}
	v |= rest
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true, nil
}

// Resolve returns the addresses of host (an IP literal is its own only
// address), and a *refusedAddressError naming the first blocked one unless
// AllowPrivate is set. Every address must pass, not just one: a name with
// one public and one private address could otherwise be steered to the
// private one.
func (g *netGuard) Resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	var ips []netip.Addr
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if ip, isIP, err := hostIP(host); err != nil {
		return nil, err
	} else if isIP {
		ips = []netip.Addr{ip}
	} else if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		// RFC 6761: always the machine itself, whatever a resolver says.
		ips = []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1})}
	} else {
		r := g.Resolver
		if r == nil {
			r = net.DefaultResolver
		}
		addrs, err := r.LookupIPAddr(ctx, host)
		if err != nil {
			return nil, fmt.Errorf("look up %s: %w", host, err)
		}
		for _, a := range addrs {
			ip, ok := netip.AddrFromSlice(a.IP)
			if !ok {
				continue
			}
			ips = append(ips, ip.Unmap().WithZone(a.Zone))
		}
		if len(ips) == 0 {
			return nil, fmt.Errorf("look up %s: no addresses", host)
		}
	}
	if !g.AllowPrivate {
		for _, ip := range ips {
			if blockedAddress(ip) {
				return nil, &refusedAddressError{Host: host, IP: ip.Unmap().WithZone("")}
			}
		}
	}
	return ips, nil
}

// DialContext resolves and checks the host of addr, then connects to its
// addresses in order until one answers. Nothing is dialled when a check
// fails.
func (g *netGuard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	ips, err := g.Resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	dial := g.Dial
	if dial == nil {
		dial = g.systemDialer().DialContext
	}
	var errs []error
	for _, ip := range ips {
		conn, err := dial(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return conn, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// systemDialer is the default dialer. Its Control hook sees the address of
// the socket about to connect, the last word on where the request goes.
func (g *netGuard) systemDialer() *net.Dialer {
	d := &net.Dialer{Timeout: 10 * time.Second}
	if !g.AllowPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("check address %s: %w", address, err)
			}
			if blockedAddress(ap.Addr()) {
				return &refusedAddressError{Host: ap.Addr().String(), IP: ap.Addr().Unmap().WithZone("")}
			}
			return nil
		}
	}
	return d
}

// Client returns an HTTP client whose connections all go through the guard,
// that follows at most 10 redirects (http and https only), ignores proxy
// settings (a proxy would hide where a request really goes), and gives up
// after timeout (0: no limit besides the request's context). Call
// CloseIdleConnections on it when done: each client has its own transport.
func (g *netGuard) Client(timeout time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           g.DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
		MaxIdleConns:          4,
		IdleConnTimeout:       30 * time.Second,
	}
	return &http.Client{
		Transport: &guardTransport{base: tr},
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return &tooManyRedirectsError{}
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("redirect to %s: only http and https are followed", req.URL.Redacted())
			}
			return nil
		},
	}
}

// tooManyRedirectsError ends a fetch that keeps redirecting.
type tooManyRedirectsError struct{}

func (*tooManyRedirectsError) Error() string {
	return fmt.Sprintf("stopped after %d redirects", maxRedirects)
}

// guardTransport names the request in a refusal, which the dialer cannot
// know: every hop, the first and each redirect, passes through RoundTrip.
type guardTransport struct {
	base *http.Transport
}

func (t *guardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	var refused *refusedAddressError
	if err != nil && errors.As(err, &refused) && refused.URL == "" {
		refused.URL = req.URL.String()
	}
	return resp, err
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// transport underneath.
func (t *guardTransport) CloseIdleConnections() { t.base.CloseIdleConnections() }
