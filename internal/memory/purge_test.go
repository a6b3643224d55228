package memory_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/memory"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/provider/probe"
	"github.com/svcdev/svc/internal/provider/probe/vendortest"
	"github.com/svcdev/svc/internal/testdb"
	"github.com/svcdev/svc/internal/testfactory"
)

// vendorKey is the key the stand-ins accept and the providers hold.
const vendorKey = "pc-key-0123456789abcdef"

// purgeTimeout bounds each vendor call of the purger under test. Only the
// test of a vendor that never answers waits for it.
const purgeTimeout = 3 * time.Second

type purgeBundle struct {
	pool      *pgxpool.Pool
	ring      *keyring.Ring
	reg       *catalog.Registry
	srv       *vendortest.Server
	policy    *endpoint.Policy
	providers *provider.Service
	memories  *memory.Service
	purger    *memory.Purger
	caller    *auth.Caller
}

// setupPurge starts the stand-in of the memory vendor typ with a database,
// a key ring and an endpoint policy that lets svc reach the stand-in.
func setupPurge(t *testing.T, typ string) *purgeBundle {
	t.Helper()
	pool := testdb.New(t)
	admin := testfactory.Bootstrap(t, pool)
	path := filepath.Join(t.TempDir(), "keyring.json")
	require.NoError(t, keyring.Generate(path))
	ring, err := keyring.Load(path)
	require.NoError(t, err)
	reg, err := catalog.New(catalog.Options{})
	require.NoError(t, err)
	v, ok := vendortest.VendorFor(typ)
	require.True(t, ok, typ)
	srv := vendortest.Start(t, v, vendorKey)
	policy := loopbackPolicy(t, srv.URL)
	return &purgeBundle{
		pool: pool, ring: ring, reg: reg, srv: srv, policy: policy,
		providers: provider.NewService(pool, ring, reg, policy, probe.New(policy, purgeTimeout)),
		memories:  memory.NewService(pool, reg, ring),
		purger:    memory.NewPurger(pool, ring, reg, policy, purgeTimeout),
		caller:    &auth.Caller{PrincipalID: admin.PrincipalID, WorkspaceID: admin.WorkspaceID, OrganizationID: admin.OrganizationID, Role: auth.RoleAdmin},
	}
}

// loopbackPolicy allows plain HTTP to the loopback port of serverURL, as an
// operator would for a vendor on its own network.
func loopbackPolicy(t *testing.T, serverURL string) *endpoint.Policy {
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

// memoryProvider creates a memory provider of the stand-in's type calling it
// with key.
func (b *purgeBundle) memoryProvider(t *testing.T, key string) provider.Provider {
	t.Helper()
	p, err := b.providers.Create(t.Context(), b.caller, catalog.KindMemory, provider.CreateInput{
		Type: b.srv.Vendor.Type, Name: "vectors " + id.New("x"), Config: b.srv.ProviderConfig(),
		Credential: map[string]any{"api_key": key},
	})
	require.NoError(t, err)
	return p
}

// recordMemory creates a record memory on p whose namespace holds records at
// the vendor.
func (b *purgeBundle) recordMemory(t *testing.T, p provider.Provider) memory.Memory {
	t.Helper()
	m, err := b.memories.Create(t.Context(), b.caller, memory.CreateInput{Name: "notes", Kind: memory.KindRecord, ProviderID: &p.ID})
	require.NoError(t, err)
	require.NotNil(t, m.Namespace)
	b.srv.AddNamespace(*m.Namespace)
	return m
}

// deleteMemory deletes m through the service and returns the delivery it
// queued, as the engine would claim it.
func (b *purgeBundle) deleteMemory(t *testing.T, m memory.Memory) outbox.Claimed {
	t.Helper()
	etag := m.ETag()
	require.NoError(t, b.memories.Delete(t.Context(), b.caller, m.ID, &etag))
	return claimedPurge(t, b.pool, m.ID)
}

// claimedPurge reads the purge delivery of a memory from the outbox table.
func claimedPurge(t *testing.T, pool *pgxpool.Pool, memoryID string) outbox.Claimed {
	t.Helper()
	var (
		c  = outbox.Claimed{Attempt: 1}
		ws *string
	)
	err := pool.QueryRow(t.Context(), `
		SELECT id, kind, workspace_id, payload, created_at, now() FROM outbox
		WHERE kind = 'memory_namespace_purge' AND payload->>'memory_id' = $1`, memoryID).
		Scan(&c.ID, &c.Kind, &ws, &c.Payload, &c.CreatedAt, &c.ClaimedAt)
	require.NoError(t, err)
	require.NotNil(t, ws)
	c.WorkspaceID = *ws
	return c
}

// withPayload is d carrying another payload.
func withPayload(t *testing.T, d outbox.Claimed, p any) outbox.Claimed {
	t.Helper()
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	d.Payload = raw
	return d
}

func payloadOf(t *testing.T, d outbox.Claimed) memory.PurgePayload {
	t.Helper()
	var p memory.PurgePayload
	require.NoError(t, json.Unmarshal(d.Payload, &p))
	return p
}

func requireDelivered(t *testing.T, out outbox.Outcome, status int) {
	t.Helper()
	require.NoError(t, out.Err)
	require.False(t, out.Permanent)
	require.False(t, out.Cancel)
	require.Equal(t, status, out.StatusCode)
}

func requireFailed(t *testing.T, out outbox.Outcome, status int, msg string) {
	t.Helper()
	require.Error(t, out.Err)
	require.False(t, out.Permanent, "an operator or time can mend %v", out.Err)
	require.Equal(t, status, out.StatusCode)
	require.ErrorContains(t, out.Err, msg)
	require.NotContains(t, out.Err.Error(), vendorKey)
	require.NotContains(t, out.Err.Error(), "127.0.0.1")
}

func requirePermanent(t *testing.T, out outbox.Outcome, msg string) {
	t.Helper()
	require.Error(t, out.Err)
	require.True(t, out.Permanent, out.Err.Error())
	require.ErrorContains(t, out.Err, msg)
}

func TestPurgeDeletesTheNamespaceAtEachVendor(t *testing.T) {
	t.Parallel()
	for _, typ := range []string{"pinecone", "turbopuffer"} {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			b := setupPurge(t, typ)
			p := b.memoryProvider(t, vendorKey)
			kept := b.recordMemory(t, p)
			gone := b.recordMemory(t, p)
			d := b.deleteMemory(t, gone)
			require.Equal(t, outbox.KindMemoryNamespacePurge, d.Kind)
			require.Equal(t, memory.PurgePayload{ProviderID: p.ID, Namespace: *gone.Namespace, MemoryID: gone.ID}, payloadOf(t, d))

			requireDelivered(t, b.purger.Deliver(t.Context(), d), http.StatusOK)
			require.Empty(t, b.srv.Problems(), "the delete speaks the vendor's protocol")
			require.False(t, b.srv.HasNamespace(*gone.Namespace))
			require.True(t, b.srv.HasNamespace(*kept.Namespace), "only the deleted memory's namespace goes")

			// At least once: a repeated delivery finds nothing and is done.
			requireDelivered(t, b.purger.Deliver(t.Context(), d), http.StatusNotFound)
			require.Empty(t, b.srv.Problems())
			require.Equal(t, 2, b.srv.Deletes())
		})
	}
}

func TestPurgeOfADisabledProviderStillDeletes(t *testing.T) {
	t.Parallel()
	b := setupPurge(t, "pinecone")
	p := b.memoryProvider(t, vendorKey)
	m := b.recordMemory(t, p)
	d := b.deleteMemory(t, m)
	etag, off := p.ETag(), false
	_, err := b.providers.Update(t.Context(), b.caller, catalog.KindMemory, provider.UpdateInput{ID: p.ID, IfMatch: &etag, Enabled: &off})
	require.NoError(t, err)

	requireDelivered(t, b.purger.Deliver(t.Context(), d), http.StatusOK)
	require.False(t, b.srv.HasNamespace(*m.Namespace))
}

func TestPurgeVendorFailuresAreRetried(t *testing.T) {
	t.Parallel()
	for _, typ := range []string{"pinecone", "turbopuffer"} {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			b := setupPurge(t, typ)
			good := b.memoryProvider(t, vendorKey)
			m := b.recordMemory(t, good)
			d := b.deleteMemory(t, m)
			name := b.srv.Vendor.Type
			if name == "pinecone" {
				name = "Pinecone"
			}

			b.srv.FailNext(http.StatusTooManyRequests, `{"code":8,"message":"Too many requests","details":[]}`)
			requireFailed(t, b.purger.Deliver(t.Context(), d), http.StatusTooManyRequests, "rate limiting")
			b.srv.FailNext(http.StatusServiceUnavailable, `{"code":14,"message":"Unavailable","details":[]}`)
			requireFailed(t, b.purger.Deliver(t.Context(), d), http.StatusServiceUnavailable, "HTTP 503, a server error")
			// A 404 that is not the vendor's JSON error is a wrong address, not
			// a missing namespace.
			b.srv.FailNext(http.StatusNotFound, "404 page not found\n")
			requireFailed(t, b.purger.Deliver(t.Context(), d), http.StatusNotFound, "not as "+name+" does")
			b.srv.FailNext(http.StatusBadRequest, `{"code":3,"message":"bad request","details":[]}`)
			requireFailed(t, b.purger.Deliver(t.Context(), d), http.StatusBadRequest, "refused the namespace delete (HTTP 400)")
			require.True(t, b.srv.HasNamespace(*m.Namespace), "nothing was deleted yet")

			// The vendor recovers: the next attempt purges.
			requireDelivered(t, b.purger.Deliver(t.Context(), d), http.StatusOK)
			require.False(t, b.srv.HasNamespace(*m.Namespace))
			require.Empty(t, b.srv.Problems())
		})
	}
}

func TestPurgeWithARefusedCredentialIsRetried(t *testing.T) {
	t.Parallel()
	b := setupPurge(t, "turbopuffer")
	const wrong = "tp-key-revoked-fedcba9876543210"
	p := b.memoryProvider(t, wrong)
	m := b.recordMemory(t, p)
	d := b.deleteMemory(t, m)

	out := b.purger.Deliver(t.Context(), d)
	requireFailed(t, out, http.StatusUnauthorized, "turbopuffer refused the provider's credential (HTTP 401)")
	require.NotContains(t, out.Err.Error(), wrong, "the vendor's answer is not repeated")
	require.Empty(t, out.Response, "no vendor answer is kept")
	require.True(t, b.srv.HasNamespace(*m.Namespace))
	require.Empty(t, b.srv.Problems(), "the credential travels as the vendor expects; only its value is wrong")

	// The operator sets the right credential; the retry purges.
	etag := p.ETag()
	_, err := b.providers.Update(t.Context(), b.caller, catalog.KindMemory, provider.UpdateInput{
		ID: p.ID, IfMatch: &etag, Credential: provider.Set(map[string]any{"api_key": vendorKey}),
	})
	require.NoError(t, err)
	requireDelivered(t, b.purger.Deliver(t.Context(), d), http.StatusOK)
	require.False(t, b.srv.HasNamespace(*m.Namespace))
}

func TestPurgeOfAVendorThatNeverAnswersTimesOut(t *testing.T) {
	t.Parallel()
	b := setupPurge(t, "pinecone")
	m := b.recordMemory(t, b.memoryProvider(t, vendorKey))
	d := b.deleteMemory(t, m)

	b.srv.HangNext()
	start := time.Now()
	out := b.purger.Deliver(t.Context(), d)
	requireFailed(t, out, 0, "no answer within "+purgeTimeout.String())
	require.Less(t, time.Since(start), purgeTimeout+30*time.Second, "the call is bounded by the time-out")
	require.True(t, b.srv.HasNamespace(*m.Namespace))

	requireDelivered(t, b.purger.Deliver(t.Context(), d), http.StatusOK)
}

func TestPurgeReturnsWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	b := setupPurge(t, "pinecone")
	m := b.recordMemory(t, b.memoryProvider(t, vendorKey))
	d := b.deleteMemory(t, m)

	b.srv.HangNext()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan outbox.Outcome, 1)
	go func() { done <- b.purger.Deliver(ctx, d) }()
	require.Eventually(t, func() bool { return b.srv.Deletes() == 1 }, 30*time.Second, 10*time.Millisecond)
	cancel()
	out := <-done
	require.ErrorIs(t, out.Err, context.Canceled)
	require.False(t, out.Permanent)
}

func TestPurgeWithAnUnreadableCredentialIsRetried(t *testing.T) {
	t.Parallel()
	b := setupPurge(t, "pinecone")
	p := b.memoryProvider(t, vendorKey)
	other := b.memoryProvider(t, vendorKey)
	m := b.recordMemory(t, p)
	d := b.deleteMemory(t, m)
	// A sealed credential moved from another row does not open.
	_, err := b.pool.Exec(t.Context(), `UPDATE provider SET credential = (SELECT credential FROM provider WHERE id = $1) WHERE id = $2`, other.ID, p.ID)
	require.NoError(t, err)

	requireFailed(t, b.purger.Deliver(t.Context(), d), 0, "the stored credential cannot be opened")
	require.Zero(t, b.srv.Deletes(), "nothing is sent without the credential")
	require.True(t, b.srv.HasNamespace(*m.Namespace))
}

func TestPurgeRefusals(t *testing.T) {
	t.Parallel()
	b := setupPurge(t, "pinecone")
	p := b.memoryProvider(t, vendorKey)
	live := b.recordMemory(t, p)
	m := b.recordMemory(t, p)
	d := b.deleteMemory(t, m)
	pl := payloadOf(t, d)

	model, err := b.providers.Create(t.Context(), b.caller, catalog.KindModel, provider.CreateInput{
		Type: "openai_compatible", Name: "models", Config: map[string]any{"base_url": b.srv.URL + "/v1"},
	})
	require.NoError(t, err)

	liveNS := *live.Namespace
	cases := map[string]struct {
		d   outbox.Claimed
		msg string
	}{
		"not JSON":     {d: withPayload(t, d, "not a purge"), msg: "not a namespace purge"},
		"no workspace": {d: func() outbox.Claimed { c := d; c.WorkspaceID = ""; return c }(), msg: "names no workspace"},
		"a namespace svc did not make": {
			d: withPayload(t, d, memory.PurgePayload{ProviderID: p.ID, Namespace: "customer-data", MemoryID: m.ID}), msg: "svc purges only the namespaces it made",
		},
		"another memory's namespace": {
			d: withPayload(t, d, memory.PurgePayload{ProviderID: p.ID, Namespace: liveNS, MemoryID: m.ID}), msg: "is not the namespace of memory",
		},
		"a memory that still exists": {
			d: withPayload(t, d, memory.PurgePayload{ProviderID: p.ID, Namespace: liveNS, MemoryID: live.ID}), msg: "still exists",
		},
		"a provider that does not exist": {
			d: withPayload(t, d, memory.PurgePayload{ProviderID: id.New(id.Provider), Namespace: pl.Namespace, MemoryID: pl.MemoryID}), msg: "is not a memory provider of workspace",
		},
		"a provider of another kind": {
			d: withPayload(t, d, memory.PurgePayload{ProviderID: model.ID, Namespace: pl.Namespace, MemoryID: pl.MemoryID}), msg: "is not a memory provider of workspace",
		},
		"a provider of another workspace": {
			d: func() outbox.Claimed { c := d; c.WorkspaceID = id.New(id.Workspace); return c }(), msg: "is not a memory provider of workspace",
		},
		"not a provider id": {
			d: withPayload(t, d, memory.PurgePayload{ProviderID: "../../admin", Namespace: pl.Namespace, MemoryID: pl.MemoryID}), msg: "is not a provider id",
		},
	}
	for name, c := range cases {
		requirePermanent(t, b.purger.Deliver(t.Context(), c.d), c.msg)
		require.Zero(t, b.srv.Deletes(), "%s: nothing is sent", name)
	}
	require.True(t, b.srv.HasNamespace(liveNS))
	require.True(t, b.srv.HasNamespace(pl.Namespace))

	// The real delivery is untouched by all that.
	requireDelivered(t, b.purger.Deliver(t.Context(), d), http.StatusOK)
	require.False(t, b.srv.HasNamespace(pl.Namespace))
	require.True(t, b.srv.HasNamespace(liveNS))
}

// TestPurgeGoesThroughTheEndpointPolicy: a turbopuffer provider without a
// base URL is purged at https://{region}.turbopuffer.com, and the policy
// refuses the private address that name resolves to at dial time.
func TestPurgeGoesThroughTheEndpointPolicy(t *testing.T) {
	t.Parallel()
	b := setupPurge(t, "turbopuffer")
	p, err := b.providers.Create(t.Context(), b.caller, catalog.KindMemory, provider.CreateInput{
		Type: "turbopuffer", Name: "regional", Config: map[string]any{"region": "aws-eu-central-1"},
		Credential: map[string]any{"api_key": vendorKey},
	})
	require.NoError(t, err)
	m, err := b.memories.Create(t.Context(), b.caller, memory.CreateInput{Name: "notes", Kind: memory.KindRecord, ProviderID: &p.ID})
	require.NoError(t, err)
	d := b.deleteMemory(t, m)

	resolver := &privateResolver{}
	purger := memory.NewPurger(b.pool, b.ring, b.reg, &endpoint.Policy{Resolver: resolver}, purgeTimeout)
	requireFailed(t, purger.Deliver(t.Context(), d), 0, "the call was refused by the endpoint policy: the host's address is private or reserved (add a prefix that covers it to endpoint_policy.allowed_prefixes)")
	require.Equal(t, "aws-eu-central-1.turbopuffer.com", resolver.asked.Load())
}

// privateResolver answers every name with a private address and records the
// last name asked.
type privateResolver struct{ asked atomic.Value }

func (r *privateResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.asked.Store(host)
	return []netip.Addr{netip.MustParseAddr("10.1.2.3")}, nil
}
