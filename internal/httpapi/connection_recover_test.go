package httpapi_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/connection"
	"github.com/svcdev/svc/internal/connection/composiotest"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/sweep"
	"github.com/svcdev/svc/internal/testdb"
	"github.com/svcdev/svc/internal/testfactory"
)

const recoverSweep = "recover_connection_operations"

// quietSweeps keeps the process's own sweep ticks (the first comes at a random
// point of the interval) out of the way of a test that runs passes itself.
func quietSweeps(cfg *config.Config) { cfg.Providers.OperationScanSeconds = 3600 }

// opState is what the recovery tests look at in an operation row.
type opState struct {
	Status  string
	Owner   string
	Version int32
}

func (b *connectionsBundle) opState(t *testing.T, id string) opState {
	t.Helper()
	var s opState
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT status, owner, version FROM connection_operation WHERE id = $1`, id).Scan(&s.Status, &s.Owner, &s.Version))
	return s
}

// TestRecoverConnectionOperations: the sweep expires an operation whose owner
// disappeared past its deadline and records it, takes over one whose owner
// disappeared within its deadline, and leaves live owners' operations alone.
func TestRecoverConnectionOperations(t *testing.T) {
	t.Parallel()
	srv := composiotest.Start(t, secretKey)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	port, err := strconv.Atoi(u.Port())
	require.NoError(t, err)
	pb := setupProvidersWith(t, func(cfg *config.Config) {
		cfg.EndpointPolicy.AllowHTTP = true
		cfg.EndpointPolicy.AllowedPrefixes = []string{"127.0.0.0/8"}
		cfg.EndpointPolicy.AllowedPorts = []int{port}
		quietSweeps(cfg)
	})
	p := pb.create(t, "connector", map[string]any{"type": "composio", "name": "Composio",
		"config": map[string]any{"base_url": srv.URL}, "credential": map[string]any{"api_key": secretKey}})
	b := &connectionsBundle{providersBundle: pb, composio: srv, provider: p}
	require.Contains(t, b.h.App.Sweeps.Sweeps(), recoverSweep)

	start := func(name string) (conn, op map[string]any) {
		conn = b.createConnection(t, b.connectionBody(name))
		return conn, b.authorize(t, conn["id"].(string))
	}
	_, abandoned := start("abandoned")       // owner gone, past its deadline: expired
	_, busy := start("live owner, late")     // owner alive, past its deadline: its owner's to settle
	orphan, orphanOp := start("orphan")      // owner gone, within its deadline: taken over
	_, mine := start("live owner, in time")  // this process, within its deadline: untouched
	_, lost := start("owner gone, no state") // Begin never recorded, owner gone, past deadline: expired
	exec := func(sql string, args ...any) {
		_, err := b.h.App.Pool.Exec(t.Context(), sql, args...)
		require.NoError(t, err)
	}
	gone := "replica-that-died"
	exec(`UPDATE connection_operation SET owner = $2, lease_until = now() - interval '5 minutes', deadline = now() - interval '1 second' WHERE id = $1`, abandoned["id"], gone)
	exec(`UPDATE connection_operation SET owner = 'replica-alive', lease_until = now() + interval '1 hour', deadline = now() - interval '1 second' WHERE id = $1`, busy["id"])
	exec(`UPDATE connection_operation SET owner = $2, lease_until = now() - interval '5 minutes' WHERE id = $1`, orphanOp["id"], gone)
	exec(`UPDATE connection_operation SET owner = $2, lease_until = now() - interval '5 minutes', deadline = now() - interval '1 second', vendor_state = NULL WHERE id = $1`, lost["id"], gone)
	before := map[string]opState{}
	for _, op := range []map[string]any{abandoned, busy, orphanOp, mine, lost} {
		before[op["id"].(string)] = b.opState(t, op["id"].(string))
	}

	pass, err := b.h.App.Sweeps.RunOnce(t.Context(), recoverSweep)
	require.NoError(t, err)
	require.True(t, pass.Ran)
	require.NoError(t, pass.Err)

	for _, op := range []map[string]any{abandoned, lost} {
		got := b.operation(t, op["id"].(string))
		require.Equal(t, "expired", got["status"], op["id"])
		require.Equal(t, "the user did not complete the authorization before its deadline", got["error"])
		require.NotNil(t, got["settled_at"])
		require.Equal(t, before[op["id"].(string)].Version+1, b.opState(t, op["id"].(string)).Version)
		var actor *string
		var action string
		require.NoError(t, b.h.App.Pool.QueryRow(t.Context(),
			`SELECT action, actor_id FROM audit_event WHERE subject_id = $1 ORDER BY id DESC LIMIT 1`, op["id"]).Scan(&action, &actor))
		require.Equal(t, "connection_operation.expired", action)
		require.Nil(t, actor, "settled by the service itself")
	}
	require.Equal(t, before[busy["id"].(string)], b.opState(t, busy["id"].(string)), "a live owner's operation is left to it")
	require.Equal(t, before[mine["id"].(string)], b.opState(t, mine["id"].(string)))
	adopted := b.opState(t, orphanOp["id"].(string))
	require.Equal(t, "pending", adopted.Status)
	require.Equal(t, b.h.App.ReplicaID, adopted.Owner, "taken over by the sweeping process")

	// The new owner drives it: the user's consent still connects the account.
	b.composio.Complete(b.account(t, orphan["id"].(string)).ID)
	require.NoError(t, b.h.App.Connections.Drive(t.Context()))
	require.Equal(t, "succeeded", b.operation(t, orphanOp["id"].(string))["status"])
	require.Equal(t, true, b.connection(t, orphan["id"].(string))["credential_configured"])

	// A second pass finds nothing more to do.
	exec(`DELETE FROM sweep_claim WHERE name = $1`, recoverSweep)
	res, err := b.h.App.Connections.Recover(t.Context())
	require.NoError(t, err)
	require.Equal(t, connection.RecoverResult{}, res)

	// The owner settles its own operation once its deadline passes.
	exec(`UPDATE connection_operation SET deadline = now() - interval '1 second' WHERE id = $1`, mine["id"])
	require.NoError(t, b.h.App.Connections.Drive(t.Context()))
	require.Equal(t, "expired", b.operation(t, mine["id"].(string))["status"])
}

// TestRecoverConnectionOperationsTwoProcesses: two processes on one database
// sweep at the same time; every abandoned operation is settled exactly once.
func TestRecoverConnectionOperationsTwoProcesses(t *testing.T) {
	t.Parallel()
	dbURL := testdb.NewURL(t)
	h1 := apitest.Start(t, apitest.Options{DatabaseURL: dbURL, Configure: quietSweeps})
	h2 := apitest.Start(t, apitest.Options{DatabaseURL: dbURL, Configure: quietSweeps})
	require.NotEqual(t, h1.App.ReplicaID, h2.App.ReplicaID)
	admin := testfactory.Bootstrap(t, h1.App.Pool)
	ctx := t.Context()

	// Abandoned operations, more than one batch of them, written directly.
	abandon := func(n int) []string {
		t.Helper()
		pid := testfactory.Provider(t, h1.App.Pool, admin.Owner(), &testfactory.ProviderOpts{Kind: "connector", Type: "composio"}).ID
		ids := make([]string, n)
		for i := range n {
			// An operation whose owner died past its deadline is a state no
			// API makes: written here directly, with its connection.
			cid, oid := id.New(id.Connection), id.New(id.ConnectionOperation)
			_, err := h1.App.Pool.Exec(ctx, `INSERT INTO connection (id, workspace_id, provider_id, app, name, config, created_by_id, updated_by_id)
VALUES ($1, $2, $3, 'github', $4, '{"auth_config_id":"ac_oauth"}', $5, $5)`, cid, admin.WorkspaceID, pid, fmt.Sprintf("c%d", i), admin.PrincipalID)
			require.NoError(t, err)
			_, err = h1.App.Pool.Exec(ctx, `INSERT INTO connection_operation (id, workspace_id, connection_id, owner, lease_until, deadline, created_by_id)
VALUES ($1, $2, $3, 'replica-that-died', now() - interval '5 minutes', now() - interval '1 second', $4)`, oid, admin.WorkspaceID, cid, admin.PrincipalID)
			require.NoError(t, err)
			ids[i] = oid
		}
		return ids
	}
	settledOnce := func(ids []string) {
		t.Helper()
		var expired, events, maxVersion int
		require.NoError(t, h1.App.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'expired'), max(version) FROM connection_operation WHERE id = ANY($1)`, ids).Scan(&expired, &maxVersion))
		require.NoError(t, h1.App.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_event WHERE subject_id = ANY($1) AND action = 'connection_operation.expired'`, ids).Scan(&events))
		require.Equal(t, len(ids), expired)
		require.Equal(t, len(ids), events, "one record per operation: none settled twice")
		require.Equal(t, 2, maxVersion, "each settled by exactly one update")
	}

	// Through the sweep runners: the claim lets one process sweep per interval.
	ids := abandon(150)
	passes := make([]sweep.Pass, 2)
	var wg sync.WaitGroup
	for i, h := range []*apitest.Harness{h1, h2} {
		wg.Go(func() {
			p, err := h.App.Sweeps.RunOnce(ctx, recoverSweep)
			require.NoError(t, err)
			passes[i] = p
		})
	}
	wg.Wait()
	require.NoError(t, passes[0].Err)
	require.NoError(t, passes[1].Err)
	require.True(t, passes[0].Ran != passes[1].Ran, "exactly one process swept: %+v", passes)
	settledOnce(ids)

	// Passes that race without the claim (two runners whose claims both
	// lapsed, say) still settle each operation once: the rows are the fence.
	ids = abandon(250)
	results := make([]connection.RecoverResult, 2)
	for i, h := range []*apitest.Harness{h1, h2} {
		wg.Go(func() {
			r, err := h.App.Connections.Recover(ctx)
			require.NoError(t, err)
			results[i] = r
		})
	}
	wg.Wait()
	require.Equal(t, len(ids), results[0].Expired+results[1].Expired, "%+v", results)
	settledOnce(ids)

	// And the API shows them expired.
	api := h1.Client(t, admin.APIKey)
	resp, err := api.GetConnectionOperationWithResponse(ctx, ids[0])
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	require.Equal(t, "expired", string(resp.JSON200.Status))
}
