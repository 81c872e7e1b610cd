package main

import (
	"io"
	"net"
	"sync"
)

// connProxy forwards loopback TCP connections to target and can drop them
// all. The soak puts it between the server and the scripted model so that,
// before each sample, it can close the server's pooled keep-alive
// connection: its descriptor and its two goroutines would otherwise come
// and go with the pool and hide (or fake) a leak.
type connProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
}

func newConnProxy(target string) (*connProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &connProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.accept()
	return p, nil
}

func (p *connProxy) addr() string { return p.ln.Addr().String() }

func (p *connProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *connProxy) serve(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.track(c, up)
	go func() {
		_, _ = io.Copy(up, c)
		up.Close()
	}()
	_, _ = io.Copy(c, up)
	c.Close()
	p.untrack(c, up)
}

func (p *connProxy) track(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
}

func (p *connProxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
	}
}

// dropAll closes every open connection.
func (p *connProxy) dropAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

func (p *connProxy) close() {
	p.ln.Close()
	p.dropAll()
}
