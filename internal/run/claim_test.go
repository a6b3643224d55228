package run_test

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/refcheck"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/skill"
	"github.com/svcdev/svc/internal/testfactory"
)

// tenant is a workspace with a runnable agent.
type tenant struct {
	caller  *auth.Caller
	agentID string
}

// addWorkspace makes another workspace of b's organization, with a model
// and an agent like b's.
func (b *bundle) addWorkspace(t *testing.T) tenant {
	t.Helper()
	ctx := t.Context()
	c := *b.caller
	c.WorkspaceID = testfactory.Workspace(t, b.pool, c.OrganizationID, c.PrincipalID, nil).ID
	testfactory.Model(t, b.pool, testfactory.OwnerOf(&c), &testfactory.ModelOpts{Provider: &testfactory.ProviderOpts{Type: "openai"}})
	reg, err := catalog.New(catalog.Options{})
	require.NoError(t, err)
	head, err := agent.NewService(b.pool, reg, refcheck.None{}).Create(ctx, &c, revision.CreateInput{Name: "helper", Config: json.RawMessage(`{"model":"main"}`)})
	require.NoError(t, err)
	return tenant{caller: &c, agentID: head.ID}
}

// withOptions is b's service built again with opts.
func (b *bundle) withOptions(t *testing.T, opts run.Options) *run.Service {
	t.Helper()
	reg, err := catalog.New(catalog.Options{})
	require.NoError(t, err)
	opts.MaxAttempts = 3
	return run.NewService(b.pool, agent.NewService(b.pool, reg, refcheck.None{}), skill.NewService(b.pool, refcheck.None{}), reg, opts)
}

func startRuns(t *testing.T, svc *run.Service, tn tenant, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		r, err := svc.Start(t.Context(), tn.caller, run.StartInput{AgentID: tn.agentID, Input: "go"})
		require.NoError(t, err)
		ids[i] = r.ID
	}
	return ids
}

func claimedIDs(cs []run.Claimed) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Lease.RunID
	}
	return out
}

// TestClaimIsFairAcrossWorkspaces: a workspace with many older waiting runs
// (the noisy one) does not hold back another's newer runs: each claim takes
// the oldest ready run of the workspace with the fewest running first. With
// the one global line (oldest first), the quiet workspace's runs came after
// every noisy one.
func TestClaimIsFairAcrossWorkspaces(t *testing.T) {
	t.Parallel()
	b := setup(t, 3)
	ctx := t.Context()
	noisy := tenant{caller: b.caller, agentID: b.agentID}
	quiet := b.addWorkspace(t)
	loud := startRuns(t, b.svc, noisy, 8)
	first, err := b.svc.Claim(ctx, "w1", 2, 30*time.Second)
	require.NoError(t, err)
	require.Equal(t, loud[:2], claimedIDs(first), "one workspace alone: oldest first")

	calm := startRuns(t, b.svc, quiet, 2)
	next, err := b.svc.Claim(ctx, "w1", 1, 30*time.Second)
	require.NoError(t, err)
	require.Equal(t, calm[:1], claimedIDs(next), "the workspace with none running goes first, though its run is newer")

	// Shares now: noisy has 2 running, quiet 1. Three more: quiet's second
	// (share 2), then noisy's next two (shares 3 and 4).
	more, err := b.svc.Claim(ctx, "w1", 3, 30*time.Second)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{calm[1], loud[2], loud[3]}, claimedIDs(more))

	// Every claim wrote its attempt and run.status event, and published it.
	var attempts, running int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM run_attempt WHERE status = 'running'`).Scan(&attempts))
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM thread_event WHERE type = 'run.status' AND data->>'status' = 'running'
		AND (data->>'attempt')::int = 1`).Scan(&running))
	require.Equal(t, 6, attempts)
	require.Equal(t, 6, running)
	for _, c := range append(append(first, next...), more...) {
		require.True(t, id.HasPrefix(c.Lease.AttemptID, id.Attempt), c.Lease.AttemptID)
		require.True(t, c.FirstAttempt)
		require.Equal(t, run.StatusRunning, c.Run.Status)
		evs, err := b.svc.EventsAfter(ctx, c.Lease.ThreadID, 0, 1000)
		require.NoError(t, err)
		last := evs[len(evs)-1]
		require.Equal(t, run.EventRunStatus, last.Type)
		require.JSONEq(t, `{"status":"running","attempt":1,"error":null}`, string(last.Data))
	}
	require.Eventually(t, func() bool {
		published := 0
		for _, e := range b.pub.snapshot() {
			var d run.RunStatusData
			require.NoError(t, json.Unmarshal(e.Data, &d))
			if e.Type == run.EventRunStatus && d.Status == run.StatusRunning && e.Seq > 0 && !e.At.IsZero() {
				published++
			}
		}
		return published == 6
	}, 5*time.Second, 10*time.Millisecond, "each claim's run.status event was published with its number")
}

// TestClaimStartsWebhookDeliveries: a first attempt's claim writes one
// run.started delivery per subscription that wants it, with the run's ids,
// in the claim's statement; a later attempt writes none.
func TestClaimStartsWebhookDeliveries(t *testing.T) {
	t.Parallel()
	b := setup(t, 3)
	ctx := t.Context()
	for _, types := range [][]string{{"run.started"}, {"run.started", "run.succeeded"}, {"run.failed"}} {
		testfactory.Subscription(t, b.pool, testfactory.OwnerOf(b.caller), &testfactory.SubscriptionOpts{EventTypes: types})
	}
	ids := startRuns(t, b.svc, tenant{caller: b.caller, agentID: b.agentID}, 1)
	cs, err := b.svc.Claim(ctx, "w1", 5, 30*time.Second)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	rows, err := b.pool.Query(ctx, `SELECT id, payload FROM outbox WHERE event_type = 'run.started'`)
	require.NoError(t, err)
	var n int
	for rows.Next() {
		var dlv string
		var payload json.RawMessage
		require.NoError(t, rows.Scan(&dlv, &payload))
		require.True(t, id.HasPrefix(dlv, id.Delivery), dlv)
		var body struct {
			Type      string         `json:"type"`
			Timestamp time.Time      `json:"timestamp"`
			Data      map[string]any `json:"data"`
		}
		require.NoError(t, json.Unmarshal(payload, &body))
		require.Equal(t, "run.started", body.Type)
		require.WithinDuration(t, time.Now(), body.Timestamp, time.Minute)
		require.Equal(t, ids[0], body.Data["run_id"])
		require.Equal(t, cs[0].Lease.ThreadID, body.Data["thread_id"])
		require.Equal(t, "running", body.Data["status"])
		n++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, 2, n, "one delivery per subscription that wants run.started")

	b.backdateLease(t, ids[0])
	_, err = b.svc.ExpireLeases(ctx)
	require.NoError(t, err)
	again, err := b.svc.Claim(ctx, "w1", 5, 30*time.Second)
	require.NoError(t, err)
	require.Len(t, again, 1)
	require.False(t, again[0].FirstAttempt)
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE event_type = 'run.started'`).Scan(&n))
	require.Equal(t, 2, n, "a second attempt is no new start")
}

// TestRunningLimitHoldsAcrossWorkers: with worker.workspace_max_running 3,
// many workers claiming at the same moment never lease more than 3 runs of
// a workspace together (the count is the database's, under the claim
// lock); the workspace's other runs stay accepted, another workspace is not
// held back, and a finished run frees a place.
func TestRunningLimitHoldsAcrossWorkers(t *testing.T) {
	t.Parallel()
	b := setup(t, 3)
	ctx := t.Context()
	svc := b.withOptions(t, run.Options{MaxRunning: 3})
	noisy := tenant{caller: b.caller, agentID: b.agentID}
	quiet := b.addWorkspace(t)
	startRuns(t, svc, noisy, 12)
	startRuns(t, svc, quiet, 2)

	// Each claim statement takes a moment (a slow attempt insert), so the
	// workers' claims overlap as they do under load.
	_, err := b.pool.Exec(ctx, `CREATE FUNCTION slow_attempt() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_sleep(0.1); RETURN NEW; END $$;
		CREATE TRIGGER slow_attempt BEFORE INSERT ON run_attempt FOR EACH STATEMENT EXECUTE FUNCTION slow_attempt();`)
	require.NoError(t, err)

	const workers = 8
	var wg sync.WaitGroup
	gate := make(chan struct{})
	claimed := make([][]run.Claimed, workers)
	errs := make([]error, workers)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			claimed[i], errs[i] = svc.Claim(ctx, "w"+string(rune('a'+i)), 3, 30*time.Second)
		}()
	}
	close(gate)
	wg.Wait()
	perWorkspace := map[string]int{}
	for i := range workers {
		require.NoError(t, errs[i])
		for _, c := range claimed[i] {
			perWorkspace[c.Lease.WorkspaceID]++
		}
	}
	require.Equal(t, 3, perWorkspace[noisy.caller.WorkspaceID], "the limit holds over every worker")
	require.Equal(t, 2, perWorkspace[quiet.caller.WorkspaceID])
	leased := func(ws string) (n int) {
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM run WHERE workspace_id = $1 AND lease_expires_at IS NOT NULL`, ws).Scan(&n))
		return n
	}
	require.Equal(t, 3, leased(noisy.caller.WorkspaceID))
	var accepted int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM run WHERE workspace_id = $1 AND status = 'accepted'`, noisy.caller.WorkspaceID).Scan(&accepted))
	require.Equal(t, 9, accepted, "runs over the limit stay accepted")

	none, err := svc.Claim(ctx, "w1", 5, 30*time.Second)
	require.NoError(t, err)
	require.Empty(t, none, "a workspace at its limit is skipped")

	var done run.Claimed
	for _, cs := range claimed {
		for _, c := range cs {
			if c.Lease.WorkspaceID == noisy.caller.WorkspaceID {
				done = c
			}
		}
	}
	require.NoError(t, svc.Finish(ctx, done.Lease, run.StatusSucceeded, nil, run.Usage{}, 0))
	one, err := svc.Claim(ctx, "w1", 5, 30*time.Second)
	require.NoError(t, err)
	require.Len(t, one, 1, "a finished run frees one place")
	require.Equal(t, 3, leased(noisy.caller.WorkspaceID))
}

// TestWaitingLimitRefusesWithNothingWritten: with
// limits.workspace_max_waiting_runs 2, a request that would start a third
// waiting run is refused with rate_limited and a Retry-After, naming the
// limit, and writes nothing (no thread, input or run); an input that only
// queues on a busy thread is accepted; a run that leaves the line (it is
// claimed) makes room; another workspace is not affected.
func TestWaitingLimitRefusesWithNothingWritten(t *testing.T) {
	t.Parallel()
	b := setup(t, 3)
	ctx := t.Context()
	svc := b.withOptions(t, run.Options{MaxWaitingRuns: 2})
	tn := tenant{caller: b.caller, agentID: b.agentID}
	idle, err := svc.CreateThread(ctx, b.caller, run.CreateThreadInput{AgentID: b.agentID})
	require.NoError(t, err)
	started := startRuns(t, svc, tn, 2)
	busy, err := svc.GetRun(ctx, b.caller, started[0])
	require.NoError(t, err)

	count := func() (n int) {
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM thread) + (SELECT count(*) FROM thread_input)
			+ (SELECT count(*) FROM run) + (SELECT count(*) FROM thread_event) + (SELECT count(*) FROM outbox)`).Scan(&n))
		return n
	}
	before := count()
	refused := func(err error) {
		t.Helper()
		var ae *apperr.Error
		require.ErrorAs(t, err, &ae)
		require.Equal(t, apperr.KindRateLimited, ae.Kind)
		require.Equal(t, run.WaitingRetryAfter, ae.RetryAfter)
		require.Contains(t, ae.Msg, "2 runs waiting")
		require.Contains(t, ae.Msg, "limits.workspace_max_waiting_runs")
	}
	_, err = svc.Start(ctx, b.caller, run.StartInput{AgentID: b.agentID, Input: "one more"})
	refused(err)
	_, err = svc.Start(ctx, b.caller, run.StartInput{AgentID: b.agentID, Input: "one more", ThreadID: &idle.ID})
	refused(err)
	_, err = svc.PostInput(ctx, b.caller, idle.ID, "one more", "")
	refused(err)
	require.Equal(t, before, count(), "nothing was written by the refused requests")

	queued, err := svc.PostInput(ctx, b.caller, busy.ThreadID, "after that", run.OnBusyEnqueue)
	require.NoError(t, err)
	require.Nil(t, queued.Run, "an input queued on a busy thread starts no run, and is accepted")

	other := b.addWorkspace(t)
	startRuns(t, svc, other, 2)

	cs, err := svc.Claim(ctx, "w1", 1, 30*time.Second)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	p, err := svc.PostInput(ctx, b.caller, idle.ID, "now there is room", "")
	require.NoError(t, err)
	require.NotNil(t, p.Run)
}

func (r *recorder) snapshot() []run.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]run.Event(nil), r.evs...)
}
