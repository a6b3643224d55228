package rekey_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/invitation"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/rekey"
	"github.com/svcdev/svc/internal/testdb"
	"github.com/svcdev/svc/internal/testfactory"
)

// stored is a sealed value the test put in the database.
type stored struct {
	column string
	table  string
	col    string
	id     string
	aad    []byte
	plain  []byte
}

func newRing(t *testing.T) (string, *keyring.Ring) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keyring.json")
	require.NoError(t, keyring.Generate(path))
	r, err := keyring.Load(path)
	require.NoError(t, err)
	return path, r
}

func seal(t *testing.T, r *keyring.Ring, plain, aad []byte) []byte {
	t.Helper()
	s, err := r.Seal(plain, aad)
	require.NoError(t, err)
	return s
}

func read(t *testing.T, pool *pgxpool.Pool, v stored) []byte {
	t.Helper()
	var b []byte
	require.NoError(t, pool.QueryRow(context.Background(),
		fmt.Sprintf("SELECT %s FROM %s WHERE id = $1", v.col, v.table), v.id).Scan(&b))
	return b
}

func TestResealEndToEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	admin := testfactory.Bootstrap(t, pool)
	path, old := newRing(t)
	_, lost := newRing(t) // a key that will never be in the ring

	var values []stored
	// Providers: credentials (aad = provider id) and a model provider's extra headers.
	for i := range 5 {
		pid := id.New(id.Provider)
		cred := []byte(fmt.Sprintf(`{"api_key":"sk-%d"}`, i))
		hdrs := []byte(fmt.Sprintf(`{"X-Org":"o%d"}`, i))
		testfactory.Provider(t, pool, admin.Owner(), &testfactory.ProviderOpts{ID: pid, Type: "openai", Name: fmt.Sprintf("p%d", i),
			Credential: seal(t, old, cred, []byte(pid)), ExtraHeaders: seal(t, old, hdrs, []byte(pid)), ExtraHeaderNames: []string{"X-Org"}})
		values = append(values,
			stored{rekey.ProviderCredential, "provider", "credential", pid, []byte(pid), cred},
			stored{rekey.ProviderExtraHeaders, "provider", "extra_headers", pid, []byte(pid), hdrs})
	}
	// Outbox identity mails: an invitation's and a password reset's.
	for _, p := range []struct{ field, prefix string }{{"invitation_id", id.Invitation}, {"mail_link_id", id.MailLink}} {
		did, ref := id.New(id.Delivery), id.New(p.prefix)
		aad := []byte("identity_mail:" + ref)
		plain := []byte(`{"url":"https://example.com/t?token=` + ref + `"}`)
		payload, err := json.Marshal(map[string]string{"template": "x", p.field: ref})
		require.NoError(t, err)
		testfactory.Delivery(t, pool, &testfactory.DeliveryOpts{ID: did, Kind: "identity_mail", Payload: payload, Sealed: seal(t, old, plain, aad)})
		values = append(values, stored{rekey.OutboxSealed, "outbox", "sealed", did, aad, plain})
	}
	// The two mails of an acceptance waiting for the address's owner: they name
	// the invitation too, but are sealed under their mail_id.
	for _, template := range []string{invitation.ConfirmationMailTemplate, invitation.AttemptMailTemplate} {
		did, inv, mail := id.New(id.Delivery), id.New(id.Invitation), id.New(id.MailLink)
		aad := invitation.ConfirmationMailAAD(mail)
		plain := []byte(`{"link":"https://example.com/t?token=` + mail + `"}`)
		payload, err := json.Marshal(map[string]string{"template": template, "invitation_id": inv, "mail_id": mail})
		require.NoError(t, err)
		testfactory.Delivery(t, pool, &testfactory.DeliveryOpts{ID: did, Kind: "identity_mail", Payload: payload, Sealed: seal(t, old, plain, aad)})
		values = append(values, stored{rekey.OutboxSealed, "outbox", "sealed", did, aad, plain})
	}
	// A completed idempotency record (aad = record id), written directly:
	// the middleware completes records only around a request.
	rid := id.New("idk")
	resp := []byte(`{"status":201,"body":"token"}`)
	_, err := pool.Exec(ctx, `INSERT INTO idempotency_key (id, workspace_id, principal_id, method, route, key_hash, fingerprint, state, status, response, expires_at)
VALUES ($1, $2, $3, 'POST', '/x', '\x01', '\x02', 'completed', 201, $4, now() + interval '1 day')`, rid, admin.WorkspaceID, admin.PrincipalID, seal(t, old, resp, []byte(rid)))
	require.NoError(t, err)
	values = append(values, stored{rekey.IdempotencyResponse, "idempotency_key", "response", rid, []byte(rid), resp})
	// A webhook subscription's signing secret (aad = subscription id).
	sid := id.New(id.Subscription)
	whsec := []byte("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	testfactory.Subscription(t, pool, admin.Owner(), &testfactory.SubscriptionOpts{ID: sid, URL: "https://93.184.216.34/hook",
		EventTypes: []string{"run.failed"}, Secret: seal(t, old, whsec, []byte(sid))})
	values = append(values, stored{rekey.SubscriptionSecret, "subscription", "secret", sid, []byte(sid), whsec})

	// A connection's credential and its authorization's vendor state (aad =
	// row id), written directly: only a vendor's answers make them.
	cpid := testfactory.Provider(t, pool, admin.Owner(), &testfactory.ProviderOpts{Kind: "connector", Type: "composio"}).ID
	cid, oid := id.New(id.Connection), id.New(id.ConnectionOperation)
	ccred, vstate := []byte(`{"connected_account_id":"ca_1"}`), []byte(`{"connected_account_id":"ca_2","user_id":"u"}`)
	_, err = pool.Exec(ctx, `INSERT INTO connection (id, workspace_id, provider_id, app, name, credential, created_by_id, updated_by_id)
VALUES ($1, $2, $3, 'github', 'gh', $4, $5, $5)`, cid, admin.WorkspaceID, cpid, seal(t, old, ccred, []byte(cid)), admin.PrincipalID)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO connection_operation (id, workspace_id, connection_id, vendor_state, owner, lease_until, deadline, created_by_id)
VALUES ($1, $2, $3, $4, 'r', now(), now() + interval '1 hour', $5)`, oid, admin.WorkspaceID, cid, seal(t, old, vstate, []byte(oid)), admin.PrincipalID)
	require.NoError(t, err)
	values = append(values,
		stored{rekey.ConnectionCredential, "connection", "credential", cid, []byte(cid), ccred},
		stored{rekey.OperationVendorState, "connection_operation", "vendor_state", oid, []byte(oid), vstate})

	// A credential sealed under a key that is not in the ring.
	lostID := id.New(id.Provider)
	lostSealed := seal(t, lost, []byte(`{"api_key":"gone"}`), []byte(lostID))
	testfactory.Provider(t, pool, admin.Owner(), &testfactory.ProviderOpts{ID: lostID, Kind: "web", Type: "search", Name: "lost", Credential: lostSealed})

	// Nothing to do while the old key is primary, except report the lost value.
	res, err := rekey.Run(ctx, pool, old, 2)
	require.NoError(t, err)
	require.Equal(t, map[string]int{rekey.ProviderCredential: 0, rekey.ProviderExtraHeaders: 0, rekey.OutboxSealed: 0, rekey.IdempotencyResponse: 0,
		rekey.ConnectionCredential: 0, rekey.OperationVendorState: 0, rekey.SubscriptionSecret: 0}, res.Resealed)
	require.Len(t, res.Unreadable, 1)

	// Rotate: add, promote, reseal in batches of 2.
	newID, err := keyring.AddKey(path)
	require.NoError(t, err)
	require.NoError(t, keyring.Promote(path, newID))
	ring, err := keyring.Load(path)
	require.NoError(t, err)
	res, err = rekey.Run(ctx, pool, ring, 2)
	require.NoError(t, err)
	require.Equal(t, map[string]int{rekey.ProviderCredential: 5, rekey.ProviderExtraHeaders: 5, rekey.OutboxSealed: 4, rekey.IdempotencyResponse: 1,
		rekey.ConnectionCredential: 1, rekey.OperationVendorState: 1, rekey.SubscriptionSecret: 1}, res.Resealed)
	require.Equal(t, []rekey.Unreadable{{Column: rekey.ProviderCredential, ID: lostID, Reason: res.Unreadable[0].Reason}}, res.Unreadable)
	require.Contains(t, res.Unreadable[0].Reason, "unknown key")

	for _, v := range values {
		b := read(t, pool, v)
		kid, err := keyring.SealedKeyID(b)
		require.NoError(t, err)
		require.Equal(t, newID, kid, "%s %s", v.column, v.id)
		plain, err := ring.Open(b, v.aad)
		require.NoError(t, err, "%s %s", v.column, v.id)
		require.Equal(t, v.plain, plain)
	}
	// The lost value is left exactly as it was.
	require.True(t, bytes.Equal(lostSealed, read(t, pool, stored{table: "provider", col: "credential", id: lostID})))

	// A second run re-seals nothing and changes nothing.
	before := map[string][]byte{}
	for _, v := range values {
		before[v.column+v.id] = read(t, pool, v)
	}
	res, err = rekey.Run(ctx, pool, ring, 500)
	require.NoError(t, err)
	require.Equal(t, map[string]int{rekey.ProviderCredential: 0, rekey.ProviderExtraHeaders: 0, rekey.OutboxSealed: 0, rekey.IdempotencyResponse: 0,
		rekey.ConnectionCredential: 0, rekey.OperationVendorState: 0, rekey.SubscriptionSecret: 0}, res.Resealed)
	require.Len(t, res.Unreadable, 1)
	for _, v := range values {
		require.Equal(t, before[v.column+v.id], read(t, pool, v))
	}
}

func TestResealReportsUnknownContext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	_, old := newRing(t)
	_, ring := newRing(t)
	// A sealed subagent_result delivery: no known sealing context, so it is reported, not touched.
	did := id.New(id.Delivery)
	sealed := seal(t, old, []byte("x"), []byte(did))
	testfactory.Delivery(t, pool, &testfactory.DeliveryOpts{ID: did, Kind: "subagent_result", Sealed: sealed})
	res, err := rekey.Run(ctx, pool, ring, 0)
	require.NoError(t, err)
	require.Len(t, res.Unreadable, 1)
	require.Equal(t, did, res.Unreadable[0].ID)
	require.Contains(t, res.Unreadable[0].Reason, "subagent_result")
	require.Equal(t, 0, res.Resealed[rekey.OutboxSealed])
}
