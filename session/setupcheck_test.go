package session

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
)

// Only errors that retrying cannot fix within seconds count as
// unreachable: a refused connection and a host the resolver does not know.
func TestUnreachableCauses(t *testing.T) {
	refused := &url.Error{Op: "Post", URL: "http://127.0.0.1:9/v1", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	noHost := &url.Error{Op: "Post", URL: "http://nowhere.invalid/v1", Err: &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "nowhere.invalid", IsNotFound: true}}}
	dnsTimeout := &net.OpError{Op: "dial", Err: &net.DNSError{Err: "i/o timeout", Name: "slow.example", IsTimeout: true}}
	reset := fmt.Errorf("read: %w", syscall.ECONNRESET)
	for _, tc := range []struct {
		err  error
		want string
	}{{refused, "connection refused"}, {noHost, "no such host nowhere.invalid"}, {dnsTimeout, ""}, {reset, ""}} {
		got, ok := unreachableCause(tc.err)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("unreachableCause(%v) = %q, %v; want %q", tc.err, got, ok, tc.want)
		}
		me, isME := classify(t.Context(), tc.err).(*ModelError)
		if !isME || (me.Kind == ErrUnreachable) != (tc.want != "") {
			t.Errorf("classify(%v) = %+v", tc.err, me)
		}
	}
}
