package outbox_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/testdb"
)

// settle marks n fresh rows with status, settled age ago.
func settle(t *testing.T, pool *pgxpool.Pool, n int, status string, age time.Duration) []string {
	t.Helper()
	ids := enqueue(t, pool, n)
	_, err := pool.Exec(t.Context(), `UPDATE outbox SET status = $2, settled_at = now() - make_interval(secs => $3)
		WHERE id = ANY($1)`, ids, status, age.Seconds())
	require.NoError(t, err)
	return ids
}

func exists(t *testing.T, pool *pgxpool.Pool, ids []string) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM outbox WHERE id = ANY($1)`, ids).Scan(&n))
	return n
}

func TestPurgeRemovesSettledRowsPastRetentionInBatches(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	cfg := outboxConfig(config.OutboxOverride{DeliveredRetentionSeconds: ptr(3600), DeadRetentionSeconds: ptr(7200)})
	cfg.PurgeBatch = 10

	oldDelivered := settle(t, pool, 35, outbox.StatusDelivered, 2*time.Hour)
	oldCancelled := settle(t, pool, 3, outbox.StatusCancelled, 2*time.Hour)
	youngDelivered := settle(t, pool, 4, outbox.StatusDelivered, 30*time.Minute)
	deadWithinRetention := settle(t, pool, 5, outbox.StatusDead, 90*time.Minute)
	oldDead := settle(t, pool, 6, outbox.StatusDead, 3*time.Hour)
	oldPending := enqueue(t, pool, 7)
	_, err := pool.Exec(t.Context(), `UPDATE outbox SET created_at = now() - interval '30 days' WHERE id = ANY($1)`, oldPending)
	require.NoError(t, err)

	n, err := outbox.Purge(t.Context(), pool, cfg)
	require.NoError(t, err)
	require.Equal(t, int64(35+3+6), n)
	require.Zero(t, exists(t, pool, oldDelivered))
	require.Zero(t, exists(t, pool, oldCancelled))
	require.Zero(t, exists(t, pool, oldDead))
	require.Equal(t, 4, exists(t, pool, youngDelivered))
	require.Equal(t, 5, exists(t, pool, deadWithinRetention))
	require.Equal(t, 7, exists(t, pool, oldPending), "pending work is never purged")
}

func TestPurgeStopsAtItsBudget(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	cfg := outboxConfig(config.OutboxOverride{DeliveredRetentionSeconds: ptr(60)})
	cfg.PurgeBatch = 1
	cfg.PurgeBudgetSeconds = 1
	ids := settle(t, pool, 2000, outbox.StatusDelivered, time.Hour)
	start := time.Now()
	n, err := outbox.Purge(t.Context(), pool, cfg)
	require.NoError(t, err)
	// One row per statement, 15 statements a round: a second is not enough
	// for 2,000 rows, and the pass returns soon after its budget.
	require.Less(t, time.Since(start), 1500*time.Millisecond+time.Second)
	require.Positive(t, n)
	require.Less(t, n, int64(2000))
	require.Equal(t, 2000-int(n), exists(t, pool, ids))
}

func TestObserveRaisesTheBacklogAlertOnlyAfterItHeld(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	cfg := outboxConfig(config.OutboxOverride{BacklogCount: ptr(5), BacklogAgeSeconds: ptr(3600), BacklogAlertSeconds: ptr(300)})
	// Two replicas observe the same database.
	ma, mb := outbox.NewMetrics(prometheus.NewRegistry()), outbox.NewMetrics(prometheus.NewRegistry())

	ids := enqueue(t, pool, 5)
	st, err := outbox.Observe(t.Context(), pool, cfg, ma)
	require.NoError(t, err)
	require.Equal(t, int64(5), st[kind].Pending)
	require.False(t, st[kind].Breached, "5 is not more than backlog_count 5")

	ids = append(ids, enqueue(t, pool, 1)...)
	st, err = outbox.Observe(t.Context(), pool, cfg, ma)
	require.NoError(t, err)
	require.True(t, st[kind].Breached)
	require.False(t, st[kind].Alert, "the condition has not held for backlog_alert_seconds yet")
	require.Zero(t, gauge(t, ma.BacklogAlert))

	// 301 seconds later (on the database's clock) it still holds.
	_, err = pool.Exec(t.Context(), `UPDATE outbox_backlog SET breached_since = breached_since - interval '301 seconds' WHERE kind = $1`, kind)
	require.NoError(t, err)
	for _, m := range []*outbox.Metrics{ma, mb} {
		st, err = outbox.Observe(t.Context(), pool, cfg, m)
		require.NoError(t, err)
		require.True(t, st[kind].Alert)
		require.Equal(t, float64(1), gauge(t, m.BacklogAlert))
		require.Equal(t, float64(6), gauge(t, m.Pending.WithLabelValues(kind)))
	}

	// The backlog drains: the alert clears, and a new breach starts its clock again.
	_, err = pool.Exec(t.Context(), `UPDATE outbox SET status = 'delivered', settled_at = now() WHERE id = ANY($1)`, ids[:3])
	require.NoError(t, err)
	for _, m := range []*outbox.Metrics{ma, mb} {
		st, err = outbox.Observe(t.Context(), pool, cfg, m)
		require.NoError(t, err)
		require.False(t, st[kind].Alert)
		require.Zero(t, gauge(t, m.BacklogAlert))
	}
	enqueue(t, pool, 3)
	st, err = outbox.Observe(t.Context(), pool, cfg, mb)
	require.NoError(t, err)
	require.True(t, st[kind].Breached)
	require.False(t, st[kind].Alert)
}

func TestObserveAgeOfTheOldestDueRowAndDeadGauge(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	cfg := outboxConfig(config.OutboxOverride{BacklogAgeSeconds: ptr(300), BacklogAlertSeconds: ptr(1)})
	m := outbox.NewMetrics(prometheus.NewRegistry())

	ids := enqueue(t, pool, 2)
	// One row is old but not due (waiting for its retry); the other is due and 400 s old.
	_, err := pool.Exec(t.Context(), `UPDATE outbox SET created_at = now() - interval '2 hours', next_attempt_at = now() + interval '1 hour' WHERE id = $1`, ids[0])
	require.NoError(t, err)
	_, err = pool.Exec(t.Context(), `UPDATE outbox SET created_at = now() - interval '400 seconds' WHERE id = $1`, ids[1])
	require.NoError(t, err)
	st, err := outbox.Observe(t.Context(), pool, cfg, m)
	require.NoError(t, err)
	require.InDelta(t, 400, st[kind].OldestDueSeconds, 5)
	require.True(t, st[kind].Breached)
	require.Zero(t, gauge(t, m.Dead))

	settle(t, pool, 1, outbox.StatusDead, time.Minute)
	_, err = outbox.Observe(t.Context(), pool, cfg, m)
	require.NoError(t, err)
	require.Equal(t, float64(1), gauge(t, m.Dead))
	require.Equal(t, float64(1), gauge(t, m.DeadByKind.WithLabelValues(kind)))
}
