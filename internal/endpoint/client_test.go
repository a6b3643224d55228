package endpoint

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"code.dny.dev/ssrf"
	"github.com/stretchr/testify/require"
)

// requireCallRefused asserts err is a policy refusal whose text repeats
// nothing but the requested URL: no resolved address, no guard detail.
func requireCallRefused(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, ErrRefused)
	var ce *CallError
	require.ErrorAs(t, err, &ce)
	for _, leak := range []string{"127.0.0.", "169.254", "10.0.0.2", "::1"} {
		require.NotContains(t, ce.Error(), leak)
	}
	for _, leak := range []string{"prohibited", "denied by", "dial tcp"} {
		require.NotContains(t, err.Error(), leak)
	}
}

func TestHTTPClientSettings(t *testing.T) {
	t.Parallel()
	c := (&Policy{}).HTTPClient(3 * time.Second)
	tr, ok := c.Transport.(*transport)
	require.True(t, ok)
	require.Nil(t, tr.base.Proxy, "proxy environment variables must be ignored")
	require.Equal(t, 3*time.Second, c.Timeout)
	require.Equal(t, 3*time.Second, tr.base.ResponseHeaderTimeout)
	require.Equal(t, 3*time.Second, tr.base.TLSHandshakeTimeout)
	require.Equal(t, uint16(tls.VersionTLS12), tr.base.TLSClientConfig.MinVersion)
	require.NotNil(t, c.CheckRedirect)
	require.Equal(t, 3*time.Second, tr.dialer.Timeout, "the overall time-out caps connecting")

	c = (&Policy{}).HTTPClient(0)
	tr = c.Transport.(*transport)
	require.Zero(t, c.Timeout)
	require.Zero(t, tr.base.ResponseHeaderTimeout)
	require.Equal(t, TLSHandshakeTimeout, tr.base.TLSHandshakeTimeout)
	require.Equal(t, ConnectTimeout, tr.dialer.Timeout)

	c = (&Policy{}).HTTPClient(15*time.Second, WithConnectTimeout(2*time.Second))
	require.Equal(t, 2*time.Second, c.Transport.(*transport).dialer.Timeout)
	c = (&Policy{}).HTTPClient(time.Second, WithConnectTimeout(2*time.Second))
	require.Equal(t, time.Second, c.Transport.(*transport).dialer.Timeout, "still capped by the overall time-out")
}

// TestDialRefusesReservedAddresses drives the dialer directly, as the
// transport would, so the connect-time guard is tested on its own: every
// spelling of row 23 is refused even if the URL rules were bypassed.
func TestDialRefusesReservedAddresses(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	port := strconv.Itoa(int(srv.port))
	p := &Policy{AllowHTTP: true, AllowedPorts: []uint16{srv.port}, Resolver: newResolver()}
	dial := p.dialContext(&net.Dialer{Timeout: time.Second, Control: p.guardian().Safe})
	for _, addr := range []string{
		"127.0.0.1:" + port,
		"[::ffff:127.0.0.1]:" + port,
		"0.0.0.0:" + port,
		"[::1]:" + port,
		"169.254.169.254:80",
		"2130706433:" + port, // as a libc resolver reads it
		"0x7f.1:" + port,
		"localhost:" + port,
		"private.test:443",
		"mapped.test:" + port,
		"127.0.0.1:22",
	} {
		t.Run(addr, func(t *testing.T) {
			t.Parallel()
			conn, err := dial(context.Background(), "tcp", addr)
			if conn != nil {
				_ = conn.Close()
			}
			requireCallRefused(t, err)
		})
	}
	require.Zero(t, srv.hits.Load())
}

func TestDialPortGuard(t *testing.T) {
	t.Parallel()
	p := &Policy{AllowedPrefixes: prefixes("127.0.0.0/8"), Resolver: newResolver()}
	dial := p.dialContext(&net.Dialer{Timeout: time.Second, Control: p.guardian().Safe})
	_, err := dial(context.Background(), "tcp", "127.0.0.1:22")
	requireCallRefused(t, err)
	require.ErrorIs(t, err, ssrf.ErrProhibitedPort)
	msg, _ := Refusal(err)
	require.Equal(t, "refused by the endpoint policy: the port is not allowed (add it to endpoint_policy.allowed_ports, or set endpoint_policy.allow_any_port = true)", msg)

	strict := &Policy{Resolver: newResolver()}
	_, err = strict.dialContext(&net.Dialer{Timeout: time.Second, Control: strict.guardian().Safe})(context.Background(), "tcp", "localhost:443")
	requireCallRefused(t, err)
	msg, _ = Refusal(err)
	require.Equal(t, "refused by the endpoint policy: the host's address is private or reserved (add a prefix that covers it to endpoint_policy.allowed_prefixes)", msg)
}

// TestCallRefusedByDefault sends real requests to a loopback server with the
// port allowed, so only the address rules can refuse them.
func TestCallRefusedByDefault(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	p := &Policy{AllowHTTP: true, AllowedPorts: []uint16{srv.port}, Resolver: newResolver()}
	c := client(t, p)
	for _, host := range []string{"127.0.0.1", "::ffff:127.0.0.1", "0.0.0.0", "::1", "2130706433", "0x7f.1", "0177.0.0.1", "localhost", "api.test", "mapped.test"} {
		_, err := get(c, srv.url("http", host, "/"))
		requireCallRefused(t, err)
	}
	_, err := get(c, "http://169.254.169.254/latest/meta-data/")
	requireCallRefused(t, err)
	require.Zero(t, srv.hits.Load())
}

func TestCallAllowedPrefix(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	p := &Policy{AllowHTTP: true, AllowedPrefixes: prefixes("127.0.0.0/8"), AllowedPorts: []uint16{srv.port}, Resolver: newResolver()}
	c := client(t, p)
	for _, u := range []string{srv.url("http", "127.0.0.1", "/"), srv.url("http", "api.test", "/"), srv.url("http", "::ffff:127.0.0.1", "/")} {
		require.NoError(t, p.CheckURL(context.Background(), field, u))
		status, err := get(c, u)
		require.NoError(t, err, u)
		require.Equal(t, http.StatusOK, status)
	}

	// The port is still checked.
	p = &Policy{AllowHTTP: true, AllowedPrefixes: prefixes("127.0.0.0/8"), Resolver: newResolver()}
	_, err := get(client(t, p), srv.url("http", "127.0.0.1", "/"))
	requireCallRefused(t, err)
	require.EqualValues(t, 3, srv.hits.Load())
}

func TestCallHTTPS(t *testing.T) {
	t.Parallel()
	srv := newTLSServer(t, nil)
	p := &Policy{AllowedPrefixes: prefixes("127.0.0.1/32"), AllowedPorts: []uint16{srv.port}, Resolver: newResolver()}
	c := client(t, p)
	c.Transport.(*transport).base.TLSClientConfig.RootCAs = srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	status, err := get(c, srv.URL)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)

	// Plain HTTP to the same, allowed, address needs the allowance.
	_, err = get(c, srv.url("http", "127.0.0.1", "/"))
	requireCallRefused(t, err)
}

func TestCallPlainHTTPNeedsAllowance(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	base := Policy{AllowedPrefixes: prefixes("127.0.0.0/8"), AllowedPorts: []uint16{srv.port}, Resolver: newResolver()}

	_, err := get(client(t, &base), srv.url("http", "api.test", "/"))
	requireCallRefused(t, err)
	require.Zero(t, srv.hits.Load())

	hosts := base
	hosts.AllowedHosts = []string{"api.test"}
	status, err := get(client(t, &hosts), srv.url("http", "api.test", "/"))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	_, err = get(client(t, &hosts), srv.url("http", "127.0.0.1", "/"))
	requireCallRefused(t, err)
	require.EqualValues(t, 1, srv.hits.Load())
}

func TestCallUserinfoRefused(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	p := &Policy{AllowHTTP: true, AllowedPrefixes: prefixes("127.0.0.0/8"), AllowedPorts: []uint16{srv.port}, Resolver: newResolver()}
	_, err := get(client(t, p), "http://user:secret@api.test:"+strconv.Itoa(int(srv.port))+"/")
	requireCallRefused(t, err)
	require.NotContains(t, err.Error(), "secret")
	require.Zero(t, srv.hits.Load())
}

// TestDNSRebinding: the name is public when saved and loopback when dialled.
func TestDNSRebinding(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	r := newResolver()
	r.sequence("rebind.test", []string{"93.184.216.34"}, []string{"127.0.0.1"})
	p := &Policy{AllowHTTP: true, AllowedPorts: []uint16{srv.port}, Resolver: r}
	u := srv.url("http", "rebind.test", "/")
	require.NoError(t, p.CheckURL(context.Background(), field, u))
	_, err := get(client(t, p), u)
	requireCallRefused(t, err)
	require.ErrorIs(t, err, ssrf.ErrProhibitedIP, "refused by the connect-time guard")
	require.Zero(t, srv.hits.Load())
}

func TestRedirectNotFollowedByDefault(t *testing.T) {
	t.Parallel()
	target := newServerOn(t, "127.0.0.2:0", nil)
	origin := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.url("http", "127.0.0.2", "/"), http.StatusFound)
	})
	p := &Policy{AllowHTTP: true, AllowedPrefixes: prefixes("127.0.0.0/8"), AllowedPorts: []uint16{origin.port, target.port}, Resolver: newResolver()}
	status, err := get(client(t, p), origin.url("http", "api.test", "/"))
	require.NoError(t, err)
	require.Equal(t, http.StatusFound, status, "the 3xx is returned, not followed")
	require.Zero(t, target.hits.Load())
}

func TestRedirectFollowed(t *testing.T) {
	t.Parallel()
	target := newServerOn(t, "127.0.0.2:0", nil)
	var origin *server
	origin = newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/ok", http.StatusFound)
		case "/ok":
			_, _ = w.Write([]byte("ok"))
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/rebind": // same name, other port: a new dial, which resolves to 127.0.0.2
			http.Redirect(w, r, target.url("http", "hop.test", "/"), http.StatusTemporaryRedirect)
		case "/other":
			http.Redirect(w, r, target.url("http", "127.0.0.2", "/"), http.StatusFound)
		case "/metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		}
	})
	r := newResolver()
	r.sequence("hop.test", []string{"127.0.0.1"}, []string{"127.0.0.2"}, []string{"127.0.0.1"})
	p := &Policy{AllowHTTP: true, AllowedPrefixes: prefixes("127.0.0.1/32"), AllowedPorts: []uint16{origin.port, target.port}, Resolver: r}
	c := client(t, p, FollowRedirects(true))

	status, err := get(c, origin.url("http", "hop.test", "/same"))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)

	_, err = get(c, origin.url("http", "hop.test", "/rebind"))
	requireCallRefused(t, err)
	require.ErrorIs(t, err, ssrf.ErrProhibitedIP, "the hop's new address is refused at connect time")

	for _, path := range []string{"/other", "/metadata", "/loop"} {
		_, err := get(c, origin.url("http", "hop.test", path))
		requireCallRefused(t, err)
	}
	require.Zero(t, target.hits.Load())
}

func TestRedirectDowngradeRefused(t *testing.T) {
	t.Parallel()
	var srv *server
	srv = newTLSServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, srv.url("http", "127.0.0.1", "/"), http.StatusFound)
	})
	p := &Policy{AllowHTTP: true, AllowedPrefixes: prefixes("127.0.0.1/32"), AllowedPorts: []uint16{srv.port}, Resolver: newResolver()}
	c := client(t, p, FollowRedirects(true))
	c.Transport.(*transport).base.TLSClientConfig.RootCAs = srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	_, err := get(c, srv.URL)
	requireCallRefused(t, err)
}

// TestProxyEnvironmentIgnored sets every proxy variable; the request must
// still go straight to the server. Not parallel: it sets the environment.
func TestProxyEnvironmentIgnored(t *testing.T) {
	proxy := newServer(t, nil)
	srv := newServer(t, nil)
	for _, v := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"} {
		t.Setenv(v, proxy.URL)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	p := &Policy{AllowHTTP: true, AllowedPrefixes: prefixes("127.0.0.0/8"), AllowedPorts: []uint16{srv.port}, Resolver: newResolver()}
	status, err := get(client(t, p), srv.url("http", "api.test", "/"))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.EqualValues(t, 1, srv.hits.Load())
	require.Zero(t, proxy.hits.Load())
}

func TestCallErrorsDoNotLeak(t *testing.T) {
	t.Parallel()
	p := &Policy{Resolver: newResolver()}
	_, err := get(client(t, p), "https://nowhere.test/")
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrRefused)
	require.NotContains(t, err.Error(), "10.0.0.2")
	require.Contains(t, err.Error(), "endpoint host could not be resolved")

	srv := newServer(t, nil)
	srv.Close() // nothing listens on the port any more
	p = &Policy{AllowHTTP: true, AllowedPrefixes: prefixes("127.0.0.0/8"), AllowedPorts: []uint16{srv.port}, Resolver: newResolver()}
	_, err = get(client(t, p), srv.url("http", "api.test", "/"))
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrRefused)
	require.Contains(t, err.Error(), "could not connect to the endpoint")
	require.NotContains(t, err.Error(), "127.0.0.1")
}

func TestCallTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := newServer(t, func(http.ResponseWriter, *http.Request) { <-release })
	defer close(release)
	p := &Policy{AllowHTTP: true, AllowedPrefixes: prefixes("127.0.0.0/8"), AllowedPorts: []uint16{srv.port}, Resolver: newResolver()}
	c := p.HTTPClient(100 * time.Millisecond)
	t.Cleanup(c.CloseIdleConnections)
	_, err := get(c, srv.url("http", "api.test", "/"))
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout())
}
