package webhook_test

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/subscription"
	"github.com/svcdev/svc/internal/testdb"
	"github.com/svcdev/svc/internal/testfactory"
	"github.com/svcdev/svc/internal/webhook"
)

// testBundle is a fresh database with one workspace and its admin, and a
// key ring.
type testBundle struct {
	pool   *pgxpool.Pool
	ring   *keyring.Ring
	admin  testfactory.Admin
	caller *auth.Caller
}

func setup(t testing.TB) *testBundle {
	t.Helper()
	pool := testdb.New(t)
	admin := testfactory.Bootstrap(t, pool)
	path := filepath.Join(t.TempDir(), "keyring.json")
	require.NoError(t, keyring.Generate(path))
	ring, err := keyring.Load(path)
	require.NoError(t, err)
	return &testBundle{pool: pool, ring: ring, admin: admin, caller: &auth.Caller{
		PrincipalID: admin.PrincipalID, OrganizationID: admin.OrganizationID, WorkspaceID: admin.WorkspaceID,
		Role: auth.RoleAdmin, OrganizationRole: auth.OrgOwner,
	}}
}

// anywhere is a policy under which every address and the port of rawURL
// pass: it stands for an operator's earlier, looser policy, so that
// subscriptions to addresses the policy under test refuses can exist.
func anywhere(t testing.TB, rawURL string, r endpoint.Resolver) *endpoint.Policy {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	port := uint16(80)
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		require.NoError(t, err)
		port = uint16(n)
	}
	return &endpoint.Policy{
		AllowHTTP: true, AllowedPorts: []uint16{port}, Resolver: r,
		AllowedPrefixes: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")},
	}
}

// loopback is the policy of the tests' local receivers: plain HTTP to
// 127.0.0.0/8 on port.
func loopback(port uint16, r endpoint.Resolver) *endpoint.Policy {
	return &endpoint.Policy{
		AllowHTTP: true, AllowedPorts: []uint16{port}, Resolver: r,
		AllowedPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
	}
}

func prefixes(list ...string) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(list))
	for _, p := range list {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}

// subscribe creates a subscription of the workspace to rawURL for types,
// saved under policy (anywhere when nil), and returns its id and secret.
func (b *testBundle) subscribe(t testing.TB, policy *endpoint.Policy, rawURL string, types ...string) (string, string) {
	t.Helper()
	return b.subscribeAs(t, b.caller, policy, rawURL, types...)
}

func (b *testBundle) subscribeAs(t testing.TB, c *auth.Caller, policy *endpoint.Policy, rawURL string, types ...string) (string, string) {
	t.Helper()
	if policy == nil {
		policy = anywhere(t, rawURL, newResolver())
	}
	s, err := subscription.NewService(b.pool, b.ring, policy).Create(t.Context(), c, subscription.CreateInput{URL: rawURL, EventTypes: types})
	require.NoError(t, err)
	return s.Subscription.ID, s.Secret
}

// emit emits e in a transaction of its own and returns the ids of the
// deliveries it wrote, oldest first.
func (b *testBundle) emit(t testing.TB, workspaceID string, e webhook.Event) []string {
	t.Helper()
	since := b.deliveryIDs(t, workspaceID)
	require.NoError(t, dbx.WithTx(t.Context(), b.pool, func(ctx context.Context, tx pgx.Tx) error {
		return webhook.Emit(ctx, tx, workspaceID, e)
	}))
	var out []string
	for _, id := range b.deliveryIDs(t, workspaceID) {
		if !contains(since, id) {
			out = append(out, id)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// deliveryIDs lists the webhook deliveries of a workspace, oldest first.
func (b *testBundle) deliveryIDs(t testing.TB, workspaceID string) []string {
	t.Helper()
	rows, err := b.pool.Query(t.Context(), `SELECT id FROM outbox WHERE kind = 'webhook' AND workspace_id = $1 ORDER BY id`, workspaceID)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return ids
}

// claimed builds the claim of a delivery as the engine hands it over, with
// the database's time as the claim's.
func (b *testBundle) claimed(t testing.TB, deliveryID string) outbox.Claimed {
	t.Helper()
	var c outbox.Claimed
	var ws, sub, event *string
	err := b.pool.QueryRow(t.Context(), `SELECT id, kind, workspace_id, subscription_id, event_type, payload, attempts + 1, created_at, now()
		FROM outbox WHERE id = $1`, deliveryID).Scan(&c.ID, &c.Kind, &ws, &sub, &event, &c.Payload, &c.Attempt, &c.CreatedAt, &c.ClaimedAt)
	require.NoError(t, err)
	c.WorkspaceID, c.SubscriptionID, c.EventType = *ws, *sub, *event
	return c
}

// event is an agent.revision_published event with a recognisable payload.
func event(name string) webhook.Event {
	return webhook.Event{Type: webhook.AgentRevisionPublished, Data: map[string]any{"agent_id": "ap_x", "name": name}}
}

// subscriptionState reads a subscription's enabled flag and version.
func (b *testBundle) subscriptionState(t testing.TB, subID string) (bool, int32) {
	t.Helper()
	var enabled bool
	var version int32
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT enabled, version FROM subscription WHERE id = $1`, subID).Scan(&enabled, &version))
	return enabled, version
}

// payloadOf reads a delivery's stored payload.
func (b *testBundle) payloadOf(t testing.TB, deliveryID string) map[string]any {
	t.Helper()
	var raw []byte
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT payload FROM outbox WHERE id = $1`, deliveryID).Scan(&raw))
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}

// fakeResolver answers host names from a table; a name may have a sequence
// of answers, one per lookup, the last repeating (how tests rebind a name).
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	calls   map[string]int
}

func newResolver() *fakeResolver {
	r := &fakeResolver{answers: map[string][][]netip.Addr{}, calls: map[string]int{}}
	r.sequence("hooks.test", "127.0.0.1")
	r.sequence("private.test", "10.1.2.3")
	r.sequence("loopback.test", "127.0.0.1")
	r.sequence("metadata.test", "169.254.169.254")
	return r
}

// sequence gives host one answer per lookup, in turn, the last repeating.
func (r *fakeResolver) sequence(host string, answers ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq := make([][]netip.Addr, 0, len(answers))
	for _, a := range answers {
		seq = append(seq, []netip.Addr{netip.MustParseAddr(a)})
	}
	r.answers[host] = seq
	r.calls[host] = 0
}

func (r *fakeResolver) LookupNetIP(ctx context.Context, _, host string) ([]netip.Addr, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	seq, ok := r.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, Server: "10.0.0.2:53", IsNotFound: true}
	}
	answer := seq[min(r.calls[host], len(seq)-1)]
	r.calls[host]++
	return answer, nil
}

// waitCtx is a generous deadline for what a test awaits.
func waitCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
