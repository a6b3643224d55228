package probe_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/provider/probe"
	"github.com/svcdev/svc/internal/provider/probe/vendortest"
)

func registry(t *testing.T) *catalog.Registry {
	t.Helper()
	reg, err := catalog.New(catalog.Options{LocalEnabled: true})
	require.NoError(t, err)
	return reg
}

func lookup(t *testing.T, id string) catalog.Type {
	t.Helper()
	typ, ok := registry(t).Lookup(id)
	require.True(t, ok, id)
	return typ
}

// openPolicy allows plain HTTP to the loopback port of serverURL, as an
// operator would for a vendor on its own network.
func openPolicy(t *testing.T, serverURL string) *endpoint.Policy {
	t.Helper()
	u, err := url.Parse(serverURL)
	require.NoError(t, err)
	port, err := strconv.Atoi(u.Port())
	require.NoError(t, err)
	return &endpoint.Policy{
		AllowHTTP:       true,
		AllowedPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		AllowedPorts:    []uint16{uint16(port)},
	}
}

func TestEveryProbedTypeHasAVendorStandIn(t *testing.T) {
	t.Parallel()
	var probed []string
	for _, k := range catalog.Kinds {
		for _, typ := range registry(t).List(k) {
			if typ.Request != nil {
				probed = append(probed, typ.ID)
			}
		}
	}
	var standIns []string
	for _, v := range vendortest.Vendors() {
		standIns = append(standIns, v.Type)
	}
	slices.Sort(probed)
	slices.Sort(standIns)
	require.Equal(t, probed, standIns)
	require.Len(t, probed, 16+1+2, "16 model types, the connector and both memory types send a request")
}

// TestEveryMemoryTypeHasANamespaceDeleteStandIn keeps the stand-ins in step
// with the memory types, whose namespace delete the outbox's purge sends
// (internal/memory/purge_test.go drives it against them).
func TestEveryMemoryTypeHasANamespaceDeleteStandIn(t *testing.T) {
	t.Parallel()
	memoryTypes := registry(t).List(catalog.KindMemory)
	require.NotEmpty(t, memoryTypes)
	for _, typ := range memoryTypes {
		v, ok := vendortest.VendorFor(typ.ID)
		require.True(t, ok, typ.ID)
		require.NotEmpty(t, v.NamespaceDelete, typ.ID)
		require.NotEmpty(t, typ.NamespaceDelete, typ.ID)
	}
}

func TestProbeSpeaksEachVendorsProtocol(t *testing.T) {
	t.Parallel()
	for _, v := range vendortest.Vendors() {
		t.Run(v.Type, func(t *testing.T) {
			t.Parallel()
			key := "key-" + v.Type + "-0123456789abcdef"
			srv := vendortest.Start(t, v, key)
			p := probe.New(openPolicy(t, srv.URL), 5*time.Second)
			typ := lookup(t, v.Type)

			res := p.Probe(t.Context(), probe.Target{Type: typ, Config: srv.ProviderConfig(), Credential: map[string]any{"api_key": key}})
			require.Empty(t, srv.Problems())
			require.Equal(t, probe.Succeeded, res.Outcome, res.Message)
			require.Empty(t, res.Message)
			require.Positive(t, res.Duration)

			wrong := "key-wrong-fedcba9876543210"
			res = p.Probe(t.Context(), probe.Target{Type: typ, Config: srv.ProviderConfig(), Credential: map[string]any{"api_key": wrong}})
			require.Empty(t, srv.Problems())
			require.Equal(t, probe.Failed, res.Outcome)
			require.Contains(t, res.Message, "refused")
			require.Contains(t, res.Message, typ.DisplayName)
			require.NotContains(t, res.Message, wrong, "the vendor's error echoes the key; the message must not")
			require.NotContains(t, res.Message, "wrong")
			require.Len(t, srv.Requests(), 2, "one request per test")
		})
	}
}

func TestMemoryProbesListANamespaceNoMemoryUses(t *testing.T) {
	t.Parallel()
	for _, v := range vendortest.Vendors() {
		if lookup(t, v.Type).Kind != catalog.KindMemory {
			continue
		}
		srv := vendortest.Start(t, v, "k")
		p := probe.New(openPolicy(t, srv.URL), 5*time.Second)
		for range 2 {
			res := p.Probe(t.Context(), probe.Target{Type: lookup(t, v.Type), Config: srv.ProviderConfig(), Credential: map[string]any{"api_key": "k"}})
			require.Equal(t, probe.Succeeded, res.Outcome, res.Message)
		}
		var namespaces []string
		for _, r := range srv.Requests() {
			ns := r.URL.Query().Get("namespace") + r.URL.Query().Get("prefix")
			require.Regexp(t, `^svc-probe-[0-9a-z]{26}$`, ns)
			namespaces = append(namespaces, ns)
		}
		require.NotEqual(t, namespaces[0], namespaces[1], "each probe picks a fresh namespace")
	}
}

func TestTurbopufferDefaultsToItsRegionalHost(t *testing.T) {
	t.Parallel()
	// Without base_url the probe goes to https://{region}.turbopuffer.com, which
	// the default policy lets through to the resolver; a fake resolver answers
	// with a private address, which the policy then refuses at dial time.
	resolver := &fixedResolver{addr: netip.MustParseAddr("10.1.2.3")}
	policy := &endpoint.Policy{Resolver: resolver}
	res := probe.New(policy, time.Second).Probe(t.Context(), probe.Target{
		Type: lookup(t, "turbopuffer"), Config: map[string]any{"region": "gcp-us-central1"}, Credential: map[string]any{"api_key": "k"},
	})
	require.Equal(t, probe.Failed, res.Outcome)
	require.Equal(t, "the call was refused by the endpoint policy: the host's address is private or reserved (add a prefix that covers it to endpoint_policy.allowed_prefixes)", res.Message)
	require.Equal(t, []string{"gcp-us-central1.turbopuffer.com"}, resolver.asked())
}

func TestProbeFailures(t *testing.T) {
	t.Parallel()
	openai := lookup(t, "openai")
	compatible := lookup(t, "openai_compatible")
	cases := []struct {
		name    string
		typ     catalog.Type
		handler http.HandlerFunc
		cred    map[string]any
		want    string
	}{
		{"no credential stored", compatible, func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
		}, nil, "OpenAI-compatible server requires a credential (HTTP 401); none is stored"},
		{"not the vendor", openai, func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte("<html><body>Welcome to nginx!</body></html>"))
		}, nil, "the endpoint answered, but not as OpenAI does; check the base URL"},
		{"JSON of another shape", openai, func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"status":"ok"}`))
		}, nil, "the endpoint answered, but not as OpenAI does; check the base URL"},
		{"server error", openai, func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, `{"error":{"message":"The server had an error while processing your request. secret-internal-detail"}}`, http.StatusServiceUnavailable)
		}, nil, "OpenAI answered HTTP 503, a server error"},
		{"rate limited", openai, func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusTooManyRequests)
		}, nil, "OpenAI is rate limiting this credential (HTTP 429); try again later"},
		{"wrong base path", openai, http.NotFound, nil, "the endpoint answered HTTP 404 Not Found; check the base URL"},
		{"redirect", openai, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		}, nil, "the endpoint redirected (HTTP 302); configure the address it redirects to"},
		{"slow", openai, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, nil, "no answer within 300ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			timeout := 5 * time.Second
			if tc.name == "slow" {
				timeout = 300 * time.Millisecond
			}
			res := probe.New(openPolicy(t, srv.URL), timeout).Probe(t.Context(), probe.Target{
				Type: tc.typ, Config: map[string]any{"base_url": srv.URL + "/v1"}, Credential: tc.cred,
			})
			require.Equal(t, probe.Failed, res.Outcome)
			require.Equal(t, tc.want, res.Message)
		})
	}
}

func TestProbeFollowsTheEndpointPolicy(t *testing.T) {
	t.Parallel()
	srv := vendortest.Start(t, vendortest.Vendors()[0], "k")
	// The default policy: loopback and plain HTTP are refused, and nothing is sent.
	res := probe.New(&endpoint.Policy{}, time.Second).Probe(t.Context(), probe.Target{
		Type: lookup(t, "openai"), Config: srv.ProviderConfig(), Credential: map[string]any{"api_key": "k"},
	})
	require.Equal(t, probe.Failed, res.Outcome)
	require.Regexp(t, `^the call was refused by the endpoint policy: must be an https URL \(set endpoint_policy.allow_http = true to allow plain http\); `+
		`port [0-9]+ is not allowed \(add it to endpoint_policy.allowed_ports, or set endpoint_policy.allow_any_port = true\); `+
		`must not point to a loopback address \(add a prefix that covers it to endpoint_policy.allowed_prefixes\)$`, res.Message)
	require.Empty(t, srv.Requests())
}

func TestProbeSendsExtraHeadersButNeverOverTheCredential(t *testing.T) {
	t.Parallel()
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		_, _ = w.Write([]byte(`{"object":"list","data":[]}`))
	}))
	defer srv.Close()
	res := probe.New(openPolicy(t, srv.URL), time.Second).Probe(t.Context(), probe.Target{
		Type: lookup(t, "openai_compatible"), Config: map[string]any{"base_url": srv.URL},
		Credential:   map[string]any{"api_key": "real"},
		ExtraHeaders: map[string]string{"X-Gateway-Team": "research", "Authorization": "Bearer other"},
	})
	require.Equal(t, probe.Succeeded, res.Outcome, res.Message)
	require.Equal(t, "research", got.Get("X-Gateway-Team"))
	require.Equal(t, "Bearer real", got.Get("Authorization"))
}

func TestUnsupportedTypesSendNothing(t *testing.T) {
	t.Parallel()
	p := probe.New(&endpoint.Policy{}, time.Second)
	for _, id := range []string{"tavily", "claude_subscription", "aws_bedrock", "google_vertex", "openrouter", "portkey", "e2b", "kubernetes", "local"} {
		res := p.Probe(t.Context(), probe.Target{Type: lookup(t, id), Config: map[string]any{}})
		require.Equal(t, probe.Unsupported, res.Outcome, id)
		require.Empty(t, res.Message, id)
	}
}

// fixedResolver answers every name with addr and records the names asked.
type fixedResolver struct {
	addr  netip.Addr
	mu    sync.Mutex
	names []string
}

func (r *fixedResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names = append(r.names, host)
	return []netip.Addr{r.addr}, nil
}

func (r *fixedResolver) asked() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.names)
}
