package apitest

import (
	"bytes"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy is a TCP proxy a test can cut and restore, to take a dependency away from
// one process without touching the shared server behind it.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	// cutOn, when set, cuts the proxy as soon as a client sends it.
	cutOn []byte
}

// NewProxy proxies a free loopback port to target (host:port) until the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.accept()
	t.Cleanup(func() { _ = ln.Close(); p.Cut() })
	return p
}

// ProxyURL proxies the host of rawURL and returns the proxy and the URL through it.
func ProxyURL(t testing.TB, rawURL string) (*Proxy, string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	p := NewProxy(t, u.Host)
	u.Host = p.Addr()
	return p, u.String()
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every proxied connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// Restore lets connections through again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
	p.cutOn = nil
}

// CutOn cuts the proxy, as Cut does, the moment a client sends bytes that
// contain marker, before they reach the server: a test takes the database
// away in the middle of a request, at the statement whose text holds marker
// (sqlc's "-- name: X" line). A statement the connection already prepared is
// sent by name, not text, so marker must be one the process has not run yet.
func (p *Proxy) CutOn(marker string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutOn = []byte(marker)
}

// trips reports whether b holds the CutOn marker.
func (p *Proxy) trips(b []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.cutOn) > 0 && bytes.Contains(b, p.cutOn)
}

// forward copies what the client sends to the server, cutting the proxy
// instead when it holds the CutOn marker. The last keep bytes of each read
// are kept, so a marker split over two reads is still seen.
func (p *Proxy) forward(dst, src net.Conn) {
	const keep = 1 << 10 // longer than any marker
	buf := make([]byte, 32<<10)
	var tail []byte
	for {
		n, err := src.Read(buf)
		if n > 0 {
			seen := append(tail, buf[:n]...)
			if p.trips(seen) {
				p.Cut()
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			tail = append([]byte(nil), seen[max(0, len(seen)-keep):]...)
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(in)
	}
}

func (p *Proxy) serve(in net.Conn) {
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		_ = in.Close()
		return
	}
	p.mu.Unlock()
	out, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = in.Close()
		return
	}
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		_ = in.Close()
		_ = out.Close()
		return
	}
	p.conns[in], p.conns[out] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { p.forward(out, in); done <- struct{}{} }()
	go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
	<-done
	_ = in.Close()
	_ = out.Close()
	p.mu.Lock()
	delete(p.conns, in)
	delete(p.conns, out)
	p.mu.Unlock()
}
