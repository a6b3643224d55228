package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/subscription"
	"github.com/svcdev/svc/internal/testdb"
	"github.com/svcdev/svc/internal/testfactory"
	"github.com/svcdev/svc/internal/webhook"
)

// A control process killed with SIGKILL in the middle of a webhook delivery
// holds the row's lease no longer than lease_seconds: another replica then
// delivers it again with the same webhook-id, so the receiver can deduplicate
// (at least once).
func TestAKilledSendersDeliveryIsDeliveredAgainByAnotherReplica(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	keyFile := newKeyRing(t)
	pool, err := pgxpool.New(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	// The receiver holds its first request open until the test ends, as a
	// receiver that got the body while the sender died; later ones succeed.
	var received atomic.Int64
	firstArrived := make(chan struct{})
	ids := make(chan string, 4)
	release := make(chan struct{})
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		ids <- r.Header.Get("webhook-id")
		if received.Add(1) == 1 {
			close(firstArrived)
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(func() { close(release); recv.Close() })
	port := recv.Listener.Addr().(*net.TCPAddr).Port

	policyCfg := config.EndpointPolicy{AllowHTTP: true, AllowedPrefixes: []string{"127.0.0.0/8"}, AllowedPorts: []int{port}}
	policy, err := endpoint.NewPolicy(policyCfg)
	require.NoError(t, err)
	ring, err := keyring.Load(keyFile)
	require.NoError(t, err)
	admin := testfactory.Bootstrap(t, pool)
	caller := &auth.Caller{PrincipalID: admin.PrincipalID, OrganizationID: admin.OrganizationID, WorkspaceID: admin.WorkspaceID,
		Role: auth.RoleAdmin, OrganizationRole: auth.OrgOwner}
	_, err = subscription.NewService(pool, ring, policy).Create(t.Context(), caller, subscription.CreateInput{
		URL: recv.URL + "/hooks", EventTypes: []string{webhook.AgentRevisionPublished},
	})
	require.NoError(t, err)

	vars := runVars(t, url, keyFile)
	vars["SVC_ENDPOINT_POLICY__ALLOW_HTTP"] = "true"
	vars["SVC_ENDPOINT_POLICY__ALLOWED_PREFIXES"] = `["127.0.0.0/8"]`
	vars["SVC_ENDPOINT_POLICY__ALLOWED_PORTS"] = strconv.Itoa(port)
	vars["SVC_OUTBOX__BY_KIND"] = `{"webhook": {"lease_seconds": 3}}`
	vars["SVC_CONTROL__SCAN_SECONDS"] = "1"

	first := startSvc(t, vars, "run", "--role", "control")
	first.waitReady()
	require.NoError(t, dbx.WithTx(t.Context(), pool, func(ctx context.Context, tx pgx.Tx) error {
		return webhook.Emit(ctx, tx, admin.WorkspaceID, webhook.Event{Type: webhook.AgentRevisionPublished, Data: map[string]any{"agent_id": "ag_1"}})
	}))
	select {
	case <-firstArrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the first process did not send the webhook")
	}
	firstID := <-ids
	first.signal(syscall.SIGKILL)
	first.wait(stopTimeout)

	second := startSvc(t, vars, "run", "--role", "control")
	second.waitReady()
	select {
	case again := <-ids:
		require.Equal(t, firstID, again, "the same webhook-id, so the receiver can deduplicate")
	case <-time.After(30 * time.Second):
		t.Fatal("no replica delivered the webhook again")
	}

	var status string
	var attemptNumber, attempts int
	require.Eventually(t, func() bool {
		require.NoError(t, pool.QueryRow(t.Context(), `SELECT status, attempt_number, (SELECT count(*) FROM outbox_attempt a WHERE a.delivery_id = o.id)
			FROM outbox o WHERE kind = 'webhook'`).Scan(&status, &attemptNumber, &attempts))
		return status == "delivered"
	}, 20*time.Second, 20*time.Millisecond)
	require.Equal(t, 2, attemptNumber, "the killed attempt was the first")
	require.Equal(t, 1, attempts, "the killed sender recorded nothing")
}
