package endpoint

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/config"
)

const field = "config.base_url"

// requireRefused asserts err is an invalid_argument naming field whose reason
// is want and repeats nothing of the URL's host or any address.
func requireRefused(t *testing.T, err error, want string) {
	t.Helper()
	require.Error(t, err)
	e, ok := apperr.As(err)
	require.True(t, ok, "not an apperr: %v", err)
	require.Equal(t, apperr.KindInvalidArgument, e.Kind)
	require.Len(t, e.Details, 1)
	require.Equal(t, field, e.Details[0].Field)
	require.Equal(t, want, e.Details[0].Reason)
	for _, leak := range []string{"127.", "10.", "192.168", "::", ".test", "53", "no such host"} {
		require.NotContains(t, e.Msg+e.Details[0].Reason, leak)
	}
}

func TestNewPolicy(t *testing.T) {
	t.Parallel()
	p, err := NewPolicy(config.EndpointPolicy{
		AllowHTTP:       true,
		AllowedPrefixes: []string{"10.1.2.3/8", "fd00::/8"},
		AllowedPorts:    []int{8443},
	})
	require.NoError(t, err)
	require.True(t, p.AllowHTTP)
	require.Equal(t, prefixes("10.0.0.0/8", "fd00::/8"), p.AllowedPrefixes)
	require.Equal(t, []uint16{8443}, p.AllowedPorts)
	require.Empty(t, p.AllowedHosts)

	p, err = NewPolicy(config.Default().EndpointPolicy)
	require.NoError(t, err)
	require.False(t, p.AllowHTTP)
	require.Empty(t, p.AllowedPrefixes)
	require.Empty(t, p.AllowedPorts)

	_, err = NewPolicy(config.EndpointPolicy{AllowedPrefixes: []string{"10.0.0.0/33"}})
	require.ErrorContains(t, err, "endpoint_policy.allowed_prefixes[0]")
	_, err = NewPolicy(config.EndpointPolicy{AllowedPorts: []int{443, 70000}})
	require.ErrorContains(t, err, "endpoint_policy.allowed_ports[1]")
}

func TestValidateHosts(t *testing.T) {
	t.Parallel()
	require.NoError(t, ValidateHosts([]string{"ollama.internal", "*.corp.example", "Host-1.example."}))
	for _, bad := range []string{"", "*", "*.", "http://x.example", "x.example:80", "10.0.0.1", "[::1]", "a..b", "bad host"} {
		require.Error(t, ValidateHosts([]string{bad}), bad)
	}
}

func TestCheckURLRefused(t *testing.T) {
	t.Parallel()
	addr := func(kind string) string {
		return "must not point to " + kind + " (add a prefix that covers it to endpoint_policy.allowed_prefixes)"
	}
	var (
		loopback    = addr("a loopback address")
		linkLocal   = addr("a link-local address")
		unspecified = addr("an unspecified address")
		privateAddr = addr("a private address")
		multicast   = addr("a multicast address")
		reserved    = addr("a reserved address")
		shared      = addr("a shared (carrier-grade NAT) address")
	)
	const (
		resolves = "host resolves to a private or reserved address (add a prefix that covers it to endpoint_policy.allowed_prefixes)"
		notation = "host must be a DNS name or an IP address in standard notation"
		https    = "must be an https URL"
		httpName = "must be an https URL (set endpoint_policy.allow_http = true, or list the host in endpoint_policy.allowed_hosts, to allow plain http)"
		port22   = "port 22 is not allowed (add it to endpoint_policy.allowed_ports, or set endpoint_policy.allow_any_port = true)"
		port8443 = "port 8443 is not allowed (add it to endpoint_policy.allowed_ports, or set endpoint_policy.allow_any_port = true)"
	)
	cases := []struct{ url, reason string }{
		// Loopback, private and link-local addresses, in every spelling.
		{"https://127.0.0.1/", loopback},
		{"https://127.0.0.1:443/v1", loopback},
		{"https://169.254.169.254/latest/meta-data/", linkLocal},
		{"https://[::ffff:127.0.0.1]/", loopback},
		{"https://[::ffff:7f00:1]/", loopback},
		{"https://[::ffff:169.254.169.254]/", linkLocal},
		{"https://0.0.0.0/", unspecified},
		{"https://2130706433/", notation},
		{"https://0x7f000001/", notation},
		{"https://0x7f.1/", notation},
		{"https://0x7F.0.0.1/", notation},
		{"https://0177.0.0.1/", notation},
		{"https://017700000001/", notation},
		{"https://127.1/", notation},
		{"https://0/", notation},
		{"https://private.test/", resolves},
		{"https://localhost/", resolves},
		{"https://mapped.test/", resolves},
		{"https://metadata.test/", resolves},
		{"https://cgnat.test/", resolves},
		{"https://v6private.test/", resolves},
		{"https://mixed.test/", resolves},
		{"http://public.test/", httpName},
		{"https://public.test:22/", port22},
		// The other reserved ranges.
		{"https://10.0.0.1/", privateAddr},
		{"https://172.16.0.1/", privateAddr},
		{"https://192.168.1.1/", privateAddr},
		{"https://100.64.0.1/", shared},
		{"https://224.0.0.1/", multicast},
		{"https://255.255.255.255/", reserved},
		{"https://[::]/", unspecified},
		{"https://[::1]/", loopback},
		{"https://[fe80::1]/", linkLocal},
		{"https://[fd00:ec2::254]/", privateAddr},
		{"https://[ff02::1]/", multicast},
		{"https://[64:ff9b::7f00:1]/", reserved},
		{"https://[2002:7f00:1::]/", reserved},
		{"https://[fe80::1%25eth0]/", "must not use an IPv6 zone"},
		// URL form.
		{"https://user:secret@public.test/", "must not contain user information"},
		{"https://user@public.test/", "must not contain user information"},
		{"https://@public.test/", "must not contain user information"},
		{"ftp://public.test/", https},
		{"file:///etc/passwd", https},
		{"gopher://public.test/", https},
		{"public.test/v1", https},
		{"//public.test/", https},
		{"https:public.test", "must include a host"},
		{"https:///v1", "must include a host"},
		{"https://:443/", "must include a host"},
		{"https://public.test:0/", "port is not valid"},
		{"https://public.test:65536/", "port is not valid"},
		{"https://public.test:8443/", port8443},
		{"https://exa mple.test/", "must be a valid URL"},
		{"https://bad_-.test-/", notation},
		{"https://bücher.test/", notation},
		{"https://public.test/" + strings.Repeat("a", maxURLLength), "must be at most 2048 characters"},
		{"https://nowhere.test/", "host could not be resolved"},
		{"https://empty.test/", "host could not be resolved"},
	}
	p := &Policy{Resolver: newResolver()}
	for _, tc := range cases {
		t.Run(tc.url, func(t *testing.T) {
			t.Parallel()
			requireRefused(t, p.CheckURL(context.Background(), field, tc.url), tc.reason)
		})
	}
}

func TestCheckURLAccepted(t *testing.T) {
	t.Parallel()
	p := &Policy{Resolver: newResolver()}
	for _, u := range []string{
		"https://public.test",
		"https://public.test/v1/chat?x=1#f",
		"https://PUBLIC.test.:443/v1",
		"HTTPS://public.test:0443/",
		"https://public.test:80/",
		"https://public6.test/",
		"https://93.184.216.34/",
		"https://[2606:4700::6810:84e5]/",
		"https://[::ffff:93.184.216.34]/",
	} {
		require.NoError(t, p.CheckURL(context.Background(), field, u), u)
	}
}

// TestCheckURLAllowances checks that each operator allowance opens only what
// it lists.
func TestCheckURLAllowances(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		policy Policy
		ok     []string
		denied []string
	}{
		{
			name:   "Prefix",
			policy: Policy{AllowedPrefixes: prefixes("10.0.0.0/8")},
			ok:     []string{"https://10.1.2.3/", "https://private.test/", "https://[::ffff:10.9.9.9]/"},
			denied: []string{"https://192.168.1.1/", "https://127.0.0.1/", "https://mixed.test/", "http://10.1.2.3/", "https://10.1.2.3:8080/"},
		},
		{
			name:   "MappedPrefix",
			policy: Policy{AllowedPrefixes: prefixes("::ffff:127.0.0.0/104")},
			ok:     []string{"https://127.0.0.1/", "https://mapped.test/"},
			denied: []string{"https://[::1]/", "https://10.0.0.1/"},
		},
		{
			name:   "V6Prefix",
			policy: Policy{AllowedPrefixes: prefixes("fd00::/8")},
			ok:     []string{"https://[fd00::1]/", "https://v6private.test/"},
			denied: []string{"https://[::1]/", "https://[fe80::1]/", "https://10.1.2.3/"},
		},
		{
			name:   "HTTP",
			policy: Policy{AllowHTTP: true},
			ok:     []string{"http://public.test/", "https://public.test/"},
			denied: []string{"http://127.0.0.1/", "http://private.test/", "ftp://public.test/", "http://public.test:22/"},
		},
		{
			name:   "Hosts",
			policy: Policy{AllowedHosts: []string{"Ollama.test", "*.corp.test"}},
			ok:     []string{"http://ollama.test/", "http://OLLAMA.test./", "http://a.corp.test/", "https://public.test/"},
			denied: []string{"http://public.test/", "http://corp.test/", "http://private.test/", "http://ollama.test:11434/"},
		},
		{
			name:   "HostNeedsPrefixForPrivate",
			policy: Policy{AllowedHosts: []string{"private.test"}, AllowedPrefixes: prefixes("10.1.2.3/32")},
			ok:     []string{"http://private.test/", "https://private.test/"},
			denied: []string{"http://10.1.2.3/", "https://10.1.2.4/"},
		},
		{
			name:   "Port",
			policy: Policy{AllowedPorts: []uint16{8443}},
			ok:     []string{"https://public.test:8443/", "https://public.test:443/"},
			denied: []string{"https://public.test:22/", "https://public.test:8444/", "https://127.0.0.1:8443/"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := tc.policy
			p.Resolver = newResolver()
			for _, u := range tc.ok {
				require.NoError(t, p.CheckURL(context.Background(), field, u), u)
			}
			for _, u := range tc.denied {
				require.Error(t, p.CheckURL(context.Background(), field, u), u)
			}
		})
	}
}

func TestCheckURLResolutionIsBounded(t *testing.T) {
	t.Parallel()
	p := &Policy{Resolver: blockingResolver{}}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := p.CheckURL(ctx, field, "https://slow.test/")
	requireRefused(t, err, "host could not be resolved")
	require.Less(t, time.Since(start), ResolveTimeout)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the cause is kept for logs")
}

func TestGuardianMapsPolicy(t *testing.T) {
	t.Parallel()
	p := &Policy{AllowedPrefixes: prefixes("127.0.0.0/8", "::1/128"), AllowedPorts: []uint16{8080}}
	g := p.guardian()
	require.NoError(t, g.SafeAddrPort(netip.MustParseAddrPort("127.0.0.1:8080")))
	require.NoError(t, g.SafeAddrPort(netip.MustParseAddrPort("[::1]:443")))
	require.Error(t, g.SafeAddrPort(netip.MustParseAddrPort("127.0.0.1:22")))
	require.Error(t, g.SafeAddrPort(netip.MustParseAddrPort("10.0.0.1:80")))
}

// TestRefusalsNameEveryKey: a URL that breaks several of the policy's rules is
// refused once, naming every key that would allow it, so an operator needs no
// second try; the refusal matches ErrRefused, and a malformed URL does not.
func TestRefusalsNameEveryKey(t *testing.T) {
	t.Parallel()
	p := &Policy{Resolver: newResolver()}
	cases := []struct {
		url  string
		keys []string
	}{
		{"http://127.0.0.1:11434/v1", []string{"endpoint_policy.allow_http = true", "port 11434 is not allowed", "endpoint_policy.allowed_ports",
			"endpoint_policy.allow_any_port = true", "must not point to a loopback address", "endpoint_policy.allowed_prefixes"}},
		{"http://localhost:8090/v1", []string{"endpoint_policy.allow_http = true", "endpoint_policy.allowed_hosts", "port 8090 is not allowed",
			"host resolves to a private or reserved address", "endpoint_policy.allowed_prefixes"}},
		{"http://public.test:8090/", []string{"endpoint_policy.allow_http = true", "endpoint_policy.allowed_hosts", "port 8090 is not allowed"}},
	}
	for _, tc := range cases {
		err := p.CheckURL(context.Background(), field, tc.url)
		e, ok := apperr.As(err)
		require.True(t, ok, "%s: %v", tc.url, err)
		require.Len(t, e.Details, 1)
		for _, k := range tc.keys {
			require.Contains(t, e.Details[0].Reason, k, tc.url)
		}
		require.ErrorIs(t, err, ErrRefused, tc.url)
		msg, ok := Refusal(err)
		require.True(t, ok)
		require.Equal(t, "refused by the endpoint policy: "+e.Details[0].Reason, msg)
	}
	// The IP literal's reason leaves allowed_hosts out: it lists names only.
	e, _ := apperr.As(p.CheckURL(context.Background(), field, "http://127.0.0.1:11434/v1"))
	require.NotContains(t, e.Details[0].Reason, "allowed_hosts")

	err := p.CheckURL(context.Background(), field, "ftp://public.test/")
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrRefused, "a malformed URL is no allowance's business")
}

// TestDevelopmentPolicy: the policy `make run` writes (plain http, loopback
// prefixes, any port) lets a model server on this machine be saved and called
// at any port, by address or as localhost; the default policy refuses it.
func TestDevelopmentPolicy(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	dev, err := NewPolicy(config.EndpointPolicy{AllowHTTP: true, AllowedPrefixes: []string{"127.0.0.0/8", "::1/128"}, AllowAnyPort: true})
	require.NoError(t, err)
	dev.Resolver = newResolver()
	for _, host := range []string{"127.0.0.1", "localhost"} {
		u := srv.url("http", host, "/v1/models")
		require.NoError(t, dev.CheckURL(context.Background(), field, u), u)
		status, err := get(client(t, dev), u)
		require.NoError(t, err, u)
		require.Equal(t, http.StatusOK, status)
	}
	require.Error(t, dev.CheckURL(context.Background(), field, "http://10.1.2.3/"), "only loopback is opened")

	strict, err := NewPolicy(config.Default().EndpointPolicy)
	require.NoError(t, err)
	strict.Resolver = newResolver()
	require.ErrorIs(t, strict.CheckURL(context.Background(), field, srv.url("http", "127.0.0.1", "/v1")), ErrRefused)
	_, err = get(client(t, strict), srv.url("http", "127.0.0.1", "/v1"))
	requireCallRefused(t, err)
	msg, _ := Refusal(err)
	for _, k := range []string{"endpoint_policy.allow_http", "endpoint_policy.allow_any_port", "endpoint_policy.allowed_prefixes"} {
		require.Contains(t, msg, k)
	}
	require.EqualValues(t, 2, srv.hits.Load())
}
