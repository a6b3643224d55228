package endpoint

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeResolver answers from a table. A host may have a sequence of answers,
// one per lookup, the last repeating: that is how tests rebind a name.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	calls   map[string]int
}

func newResolver() *fakeResolver {
	r := &fakeResolver{answers: map[string][][]netip.Addr{}, calls: map[string]int{}}
	r.set("public.test", "93.184.216.34")
	r.set("public6.test", "2606:4700::6810:84e5")
	r.set("private.test", "10.1.2.3")
	r.set("localhost", "127.0.0.1", "::1")
	r.set("mixed.test", "93.184.216.34", "192.168.1.1")
	r.set("v6private.test", "fd00::1")
	r.set("mapped.test", "::ffff:127.0.0.1")
	r.set("metadata.test", "169.254.169.254")
	r.set("cgnat.test", "100.100.100.200")
	r.set("ollama.test", "93.184.216.35")
	r.set("a.corp.test", "93.184.216.36")
	r.set("corp.test", "93.184.216.37")
	r.set("api.test", "127.0.0.1")
	r.set("empty.test")
	// A libc resolver would read these as 127.0.0.1 (inet_aton); the dialer
	// must refuse them even if the URL rules were bypassed.
	r.set("2130706433", "127.0.0.1")
	r.set("0x7f.1", "127.0.0.1")
	return r
}

// set gives host one answer of the listed addresses.
func (r *fakeResolver) set(host string, addrs ...string) {
	r.sequence(host, addrs)
}

// sequence gives host one answer per lookup, the last repeating.
func (r *fakeResolver) sequence(host string, answers ...[]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq := make([][]netip.Addr, 0, len(answers))
	for _, a := range answers {
		seq = append(seq, ips(a...))
	}
	r.answers[host] = seq
	r.calls[host] = 0
}

func (r *fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	r.mu.Lock()
	defer r.mu.Unlock()
	seq, ok := r.answers[host]
	if !ok || len(seq) == 0 {
		// What a real resolver says, internal server address included.
		return nil, &net.DNSError{Err: "no such host", Name: host, Server: "10.0.0.2:53", IsNotFound: true}
	}
	answer := seq[min(r.calls[host], len(seq)-1)]
	r.calls[host]++
	var out []netip.Addr
	for _, a := range answer {
		if network == "ip" || network == "ip4" && a.Unmap().Is4() || network == "ip6" && a.Is6() && !a.Is4In6() {
			out = append(out, a)
		}
	}
	return out, nil
}

// blockingResolver never answers before its context ends.
type blockingResolver struct{}

func (blockingResolver) LookupNetIP(ctx context.Context, _, _ string) ([]netip.Addr, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func ips(list ...string) []netip.Addr {
	out := make([]netip.Addr, 0, len(list))
	for _, s := range list {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func prefixes(list ...string) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(list))
	for _, s := range list {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

// server is an httptest server that counts the requests it receives.
type server struct {
	*httptest.Server
	port uint16
	hits atomic.Int64
}

// newServer starts a plain HTTP server on 127.0.0.1 answering with h (200
// "ok" when h is nil).
func newServer(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	return startServer(t, httptest.NewUnstartedServer(nil), h, false)
}

// newServerOn starts a plain HTTP server on addr ("127.0.0.2:0").
func newServerOn(t *testing.T, addr string, h http.HandlerFunc) *server {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	ts := httptest.NewUnstartedServer(nil)
	require.NoError(t, ts.Listener.Close())
	ts.Listener = l
	return startServer(t, ts, h, false)
}

// newTLSServer starts an HTTPS server on 127.0.0.1.
func newTLSServer(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	return startServer(t, httptest.NewUnstartedServer(nil), h, true)
}

func startServer(t *testing.T, ts *httptest.Server, h http.HandlerFunc, tls bool) *server {
	t.Helper()
	s := &server{Server: ts}
	ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		if h == nil {
			_, _ = w.Write([]byte("ok"))
			return
		}
		h(w, r)
	})
	if tls {
		ts.StartTLS()
	} else {
		ts.Start()
	}
	t.Cleanup(ts.Close)
	_, portText, err := net.SplitHostPort(ts.Listener.Addr().String())
	require.NoError(t, err)
	port, err := strconv.ParseUint(portText, 10, 16)
	require.NoError(t, err)
	s.port = uint16(port)
	return s
}

// url is the server's URL with host in place of its address.
func (s *server) url(scheme, host, path string) string {
	return scheme + "://" + net.JoinHostPort(host, strconv.Itoa(int(s.port))) + path
}

// client returns p's client, closing its idle connections after the test.
func client(t *testing.T, p *Policy, opts ...ClientOption) *http.Client {
	t.Helper()
	c := p.HTTPClient(5*time.Second, opts...)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// get performs a GET, returning the status and closing the body.
func get(c *http.Client, rawURL string) (int, error) {
	resp, err := c.Get(rawURL)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}
