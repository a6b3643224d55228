package run_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/metrics/metricstest"
	"github.com/svcdev/svc/internal/run"
)

// Runs are counted by final status, and timed, once the transaction that
// ended them committed, whoever ended them: a worker (Finish), a cancel of
// a queued run, the lease sweep.
func TestRunMetricsCountEndedRuns(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	b := setupWith(t, run.Options{MaxAttempts: 1, Metrics: run.NewMetrics(reg)})
	ctx := t.Context()
	start := func() run.Run {
		r, err := b.svc.Start(ctx, b.caller, run.StartInput{AgentID: b.agentID, Input: "go"})
		require.NoError(t, err)
		return r
	}
	got := metricstest.Samples(t, reg)
	require.Equal(t, 0.0, got["svc_runs_finished_total{status=succeeded}"])
	require.Contains(t, got, "svc_runs_finished_total{status=failed}", "every final status is exported from the start")

	// A worker finishes one.
	start()
	claims, err := b.svc.Claim(ctx, "w1", 1, 30*time.Second)
	require.NoError(t, err)
	require.NoError(t, b.svc.Finish(ctx, claims[0].Lease, run.StatusSucceeded, nil, run.Usage{}, 1))
	// A queued one is cancelled.
	queued := start()
	_, err = b.svc.Cancel(ctx, b.caller, queued.ID)
	require.NoError(t, err)
	// One's worker disappears: the sweep ends its only attempt, and the run fails.
	lost := start()
	_, err = b.svc.Claim(ctx, "w2", 1, 30*time.Second)
	require.NoError(t, err)
	b.backdateLease(t, lost.ID)
	n, err := b.svc.ExpireLeases(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	// A stale write changes nothing, and counts nothing.
	require.ErrorIs(t, b.svc.Finish(ctx, claims[0].Lease, run.StatusSucceeded, nil, run.Usage{}, 1), run.ErrLeaseLost)

	got = metricstest.Samples(t, reg)
	require.Equal(t, 1.0, got["svc_runs_finished_total{status=succeeded}"])
	require.Equal(t, 1.0, got["svc_runs_finished_total{status=cancelled}"])
	require.Equal(t, 1.0, got["svc_runs_finished_total{status=failed}"])
	require.Equal(t, 1.0, got["svc_runs_duration_seconds{status=succeeded}"])
	require.Equal(t, 1.0, got["svc_runs_duration_seconds{status=failed}"])
	require.Equal(t, 1.0, got["svc_runs_lease_expiries_total"])
}

// The queue's gauges are read from the database at each scrape: the runs a
// worker may claim now, how long the oldest of them has waited, and the
// runs an attempt holds.
func TestQueueCollectorReadsTheQueue(t *testing.T) {
	t.Parallel()
	b := setup(t, 3)
	ctx := t.Context()
	reg := prometheus.NewRegistry()
	reg.MustRegister(b.svc.QueueCollector(time.Second, slog.New(slog.NewTextHandler(io.Discard, nil))))

	got := metricstest.Samples(t, reg)
	require.Equal(t, map[string]float64{"svc_runs_queued": 0, "svc_runs_queued_oldest_seconds": 0, "svc_runs_running": 0}, got)

	var ids []string
	for range 3 {
		r, err := b.svc.Start(ctx, b.caller, run.StartInput{AgentID: b.agentID, Input: "go"})
		require.NoError(t, err)
		ids = append(ids, r.ID)
	}
	// The first has waited a minute; the last is handed back for later.
	_, err := b.pool.Exec(ctx, `UPDATE run SET ready_at = now() - interval '60 seconds' WHERE id = $1`, ids[0])
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE run SET ready_at = now() + interval '1 hour' WHERE id = $1`, ids[2])
	require.NoError(t, err)
	got = metricstest.Samples(t, reg)
	require.Equal(t, 2.0, got["svc_runs_queued"])
	require.GreaterOrEqual(t, got["svc_runs_queued_oldest_seconds"], 60.0)
	require.Less(t, got["svc_runs_queued_oldest_seconds"], 3600.0)
	require.Equal(t, 0.0, got["svc_runs_running"])

	claims, err := b.svc.Claim(ctx, "w1", 1, 30*time.Second)
	require.NoError(t, err)
	require.Equal(t, ids[0], claims[0].Lease.RunID, "the oldest first")
	got = metricstest.Samples(t, reg)
	require.Equal(t, 1.0, got["svc_runs_queued"])
	require.Less(t, got["svc_runs_queued_oldest_seconds"], 60.0)
	require.Equal(t, 1.0, got["svc_runs_running"])
}
