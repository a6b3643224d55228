package webhook_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/webhook"
)

// endpointState reads a subscription's endpoint health: consecutive
// failures and seconds until its pause ends (negative or nil: not paused).
func (b *testBundle) endpointState(t testing.TB, subID string) (int, *float64) {
	t.Helper()
	var failures int
	var pausedFor *float64
	err := b.pool.QueryRow(t.Context(), `SELECT failures, extract(epoch FROM paused_until - now())::float8
		FROM outbox_endpoint WHERE subscription_id = $1`, subID).Scan(&failures, &pausedFor)
	require.NoError(t, err)
	return failures, pausedFor
}

type hookRow struct {
	status    string
	attempts  int
	lastError *string
	dueIn     time.Duration
}

func (b *testBundle) hookRows(t testing.TB, subID string) []hookRow {
	t.Helper()
	rows, err := b.pool.Query(t.Context(), `SELECT status, attempts, last_error, extract(epoch FROM next_attempt_at - now())::float8
		FROM outbox WHERE subscription_id = $1 ORDER BY id`, subID)
	require.NoError(t, err)
	defer rows.Close()
	var out []hookRow
	for rows.Next() {
		var r hookRow
		var due float64
		require.NoError(t, rows.Scan(&r.status, &r.attempts, &r.lastError, &due))
		r.dueIn = time.Duration(due * float64(time.Second))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestHungEndpointBackedOffThenDead: an endpoint that never answers has its
// deliveries retried with backoff (row by row) and, once its consecutive
// failures reach webhook_endpoint_failures, is backed off as a whole: its
// due rows are not claimed while a healthy subscription's go out in the same
// pass. Its deliveries still die after max_attempts (nothing is discarded
// before), and a delivered attempt makes the endpoint healthy again.
func TestHungEndpointBackedOffThenDead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := newFarm(t, 0)
	hung := b.subscribeMany(t, f, webhook.AgentRevisionPublished, "/hung/x")[0]
	b.subscribeMany(t, f, webhook.SkillRevisionPublished, "/ok")

	cfg := config.Default().Outbox
	cfg.ByKind = map[string]config.OutboxOverride{"webhook": {MaxAttempts: ptr(3)}}
	cfg.WebhookEndpointFailures = 2
	e := webhookEngine(b, cfg, "r1", b.deliverer(t, f.policy, webhook.WithResponseTimeout(200*time.Millisecond)))
	b.emit(t, b.admin.WorkspaceID, event("one"))
	b.emit(t, b.admin.WorkspaceID, event("two"))

	// First pass: both rows tried at once (the in-flight bound is 2), both
	// time out; each is retried after about 10 s, and the two failures pause
	// the endpoint for about as long.
	require.NoError(t, e.Deliver(waitCtx(t)))
	require.Len(t, f.arrived("/hung/x"), 2)
	for _, r := range b.hookRows(t, hung) {
		require.Equal(t, "pending", r.status)
		require.Equal(t, 1, r.attempts)
		require.Equal(t, "the endpoint did not answer within 200ms", *r.lastError)
		require.InDelta(t, 8.75, r.dueIn.Seconds(), 1.5, "row backoff after the first failure")
	}
	failures, paused := b.endpointState(t, hung)
	require.Equal(t, 2, failures)
	require.NotNil(t, paused)
	require.InDelta(t, 8.75, *paused, 1.5, "the endpoint's first pause")

	// Its rows due again, the endpoint still paused: a pass leaves them alone
	// and delivers the healthy subscription's event.
	_, err := b.pool.Exec(t.Context(), `UPDATE outbox SET next_attempt_at = now() WHERE status = 'pending'`)
	require.NoError(t, err)
	b.emit(t, b.admin.WorkspaceID, webhook.Event{Type: webhook.SkillRevisionPublished, Data: map[string]any{"skill_id": "sk_x"}})
	require.NoError(t, e.Deliver(waitCtx(t)))
	require.Len(t, f.arrived("/ok"), 1, "the healthy endpoint's delivery went out")
	require.Len(t, f.arrived("/hung/x"), 2, "the paused endpoint was not called")
	for _, r := range b.hookRows(t, hung) {
		require.Equal(t, 1, r.attempts, "a paused endpoint's rows are not charged")
	}

	// Pause over: the next failures pause it for longer (doubling per failure
	// beyond the threshold), and the rows die after max_attempts.
	for attempt := 2; attempt <= 3; attempt++ {
		_, err := b.pool.Exec(t.Context(), `UPDATE outbox SET next_attempt_at = now() WHERE status = 'pending'`)
		require.NoError(t, err)
		_, err = b.pool.Exec(t.Context(), `UPDATE outbox_endpoint SET paused_until = now()`)
		require.NoError(t, err)
		require.NoError(t, e.Deliver(waitCtx(t)))
		require.Len(t, f.arrived("/hung/x"), 2*attempt)
		failures, paused := b.endpointState(t, hung)
		require.Equal(t, 2*attempt, failures)
		require.InDelta(t, 10*float64(int(1)<<(2*attempt-2))*0.875, *paused, 10*float64(int(1)<<(2*attempt-2))*0.15)
	}
	for _, r := range b.hookRows(t, hung) {
		require.Equal(t, "dead", r.status)
		require.Equal(t, 3, r.attempts)
	}
	var attempts int
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT count(*) FROM outbox_attempt a JOIN outbox o ON o.id = a.delivery_id
		WHERE o.subscription_id = $1 AND a.result = 'failed'`, hung).Scan(&attempts))
	require.Equal(t, 6, attempts, "every attempt recorded")

	// The endpoint answers again: one delivered attempt makes it healthy.
	_, err = b.pool.Exec(t.Context(), `UPDATE subscription SET url = $2 WHERE id = $1`, hung, f.url("/ok2"))
	require.NoError(t, err)
	_, err = b.pool.Exec(t.Context(), `UPDATE outbox_endpoint SET paused_until = now()`)
	require.NoError(t, err)
	b.emit(t, b.admin.WorkspaceID, event("three"))
	require.NoError(t, e.Deliver(waitCtx(t)))
	require.Len(t, f.arrived("/ok2"), 1)
	var unhealthy int
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT count(*) FROM outbox_endpoint WHERE subscription_id = $1`, hung).Scan(&unhealthy))
	require.Zero(t, unhealthy, "the endpoint is healthy again")
}

func ptr(n int) *int { return &n }
