package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/testdb"
)

// kind is the kind the engine tests deliver: one without built-in overrides
// (checkpoint_cleanup, say, delivers only 2 at once).
const kind = outbox.KindSubagentResult

func outboxConfig(ov config.OutboxOverride) config.Outbox {
	cfg := config.Default().Outbox
	cfg.ByKind = map[string]config.OutboxOverride{kind: ov}
	return cfg
}

func ptr(n int) *int { return &n }

func newEngine(pool *pgxpool.Pool, cfg config.Outbox, replica string, d outbox.Deliverer) *outbox.Engine {
	e := outbox.NewEngine(pool, cfg, replica, slog.New(slog.DiscardHandler), outbox.NewMetrics(prometheus.NewRegistry()))
	e.Register(kind, d)
	return e
}

func enqueue(t *testing.T, pool *pgxpool.Pool, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range n {
		id, err := outbox.Enqueue(t.Context(), pool, outbox.Delivery{Kind: kind, Payload: map[string]int{"n": i}})
		require.NoError(t, err)
		ids[i] = id
	}
	return ids
}

type row struct {
	Status        string
	Attempts      int
	AttemptNumber int
	LastError     *string
	DueIn         time.Duration
}

func readRow(t *testing.T, pool *pgxpool.Pool, id string) row {
	t.Helper()
	var r row
	var dueIn float64
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT status, attempts, attempt_number, last_error,
		extract(epoch FROM next_attempt_at - now())::float8 FROM outbox WHERE id = $1`, id).
		Scan(&r.Status, &r.Attempts, &r.AttemptNumber, &r.LastError, &dueIn))
	r.DueIn = time.Duration(dueIn * float64(time.Second))
	return r
}

func countStatus(t *testing.T, pool *pgxpool.Pool, status string) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM outbox WHERE status = $1`, status).Scan(&n))
	return n
}

// makeDue moves every pending row's next attempt (or lease end) to now.
func makeDue(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	_, err := pool.Exec(t.Context(), `UPDATE outbox SET next_attempt_at = now() - interval '1 millisecond' WHERE status = 'pending'`)
	require.NoError(t, err)
}

func counter(t *testing.T, e *outbox.Engine, result string) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, e.Metrics().Attempts.WithLabelValues(kind, result).Write(&m))
	return m.GetCounter().GetValue()
}

func gauge(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, g.Write(&m))
	return m.GetGauge().GetValue()
}

func TestDeliversEveryDueRowAndRecordsItsAttempt(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	ids := enqueue(t, pool, 75) // more than two batches of 32
	var seen sync.Map
	e := newEngine(pool, outboxConfig(config.OutboxOverride{}), "replica-a", outbox.DelivererFunc(func(_ context.Context, c outbox.Claimed) outbox.Outcome {
		seen.Store(c.ID, c)
		return outbox.Outcome{StatusCode: 204, Response: "ok"}
	}))
	require.NoError(t, e.Deliver(t.Context()))

	require.Equal(t, 75, countStatus(t, pool, outbox.StatusDelivered))
	c, ok := seen.Load(ids[0])
	require.True(t, ok)
	require.Equal(t, 1, c.(outbox.Claimed).Attempt)
	require.JSONEq(t, `{"n": 0}`, string(c.(outbox.Claimed).Payload))
	require.False(t, c.(outbox.Claimed).ClaimedAt.IsZero())

	var replica, result string
	var code int
	var response string
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT replica, result, status_code, response FROM outbox_attempt WHERE delivery_id = $1 AND number = 1`, ids[0]).
		Scan(&replica, &result, &code, &response))
	require.Equal(t, []any{"replica-a", "delivered", 204, "ok"}, []any{replica, result, code, response})
	require.Equal(t, float64(75), counter(t, e, "delivered"))

	// Nothing is due any more: a second pass claims nothing.
	require.NoError(t, e.Deliver(t.Context()))
	require.Equal(t, float64(75), counter(t, e, "delivered"))
}

func TestFailedDeliveriesBackOffThenDie(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	id := enqueue(t, pool, 1)[0]
	e := newEngine(pool, outboxConfig(config.OutboxOverride{MaxAttempts: ptr(3)}), "replica-a", outbox.DelivererFunc(func(context.Context, outbox.Claimed) outbox.Outcome {
		return outbox.Outcome{Err: errors.New("receiver answered 500"), StatusCode: 500, Response: "boom"}
	}))

	require.NoError(t, e.Deliver(t.Context()))
	r := readRow(t, pool, id)
	require.Equal(t, outbox.StatusPending, r.Status)
	require.Equal(t, 1, r.Attempts)
	require.Equal(t, "receiver answered 500", *r.LastError)
	// The first retry waits 10 s less up to a quarter of jitter.
	require.InDelta(t, 8.75*float64(time.Second), float64(r.DueIn), 1.5*float64(time.Second))

	// Not due yet: another pass leaves it alone.
	require.NoError(t, e.Deliver(t.Context()))
	require.Equal(t, 1, readRow(t, pool, id).Attempts)

	makeDue(t, pool)
	require.NoError(t, e.Deliver(t.Context()))
	r = readRow(t, pool, id)
	require.Equal(t, 2, r.Attempts)
	require.InDelta(t, 17.5*float64(time.Second), float64(r.DueIn), 3*float64(time.Second))

	makeDue(t, pool)
	require.NoError(t, e.Deliver(t.Context()))
	r = readRow(t, pool, id)
	require.Equal(t, outbox.StatusDead, r.Status, "the third of max_attempts 3 failed")
	require.Equal(t, 3, r.Attempts)
	require.Equal(t, float64(1), counter(t, e, "dead"))
	require.Equal(t, float64(2), counter(t, e, "failed"))

	var n int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM outbox_attempt WHERE delivery_id = $1 AND result = 'failed' AND status_code = 500 AND response = 'boom'`, id).Scan(&n))
	require.Equal(t, 3, n)

	// A dead row is never claimed again.
	makeDue(t, pool)
	require.NoError(t, e.Deliver(t.Context()))
	require.Equal(t, 3, readRow(t, pool, id).Attempts)
}

func TestBackoffGrowsAndIsCappedAtOneHour(t *testing.T) {
	t.Parallel()
	prev := time.Duration(0)
	for attempt := 1; attempt <= 9; attempt++ {
		want := outbox.BackoffBase << (attempt - 1)
		for range 50 {
			d := outbox.Backoff(outbox.BackoffBase, attempt)
			require.LessOrEqual(t, d, want)
			require.GreaterOrEqual(t, d, want*3/4)
		}
		require.Greater(t, want, prev)
		prev = want
	}
	for _, attempt := range []int{10, 12, 40, 64, 1000} {
		for range 50 {
			d := outbox.Backoff(outbox.BackoffBase, attempt)
			require.LessOrEqual(t, d, time.Hour, "attempt %d", attempt)
			require.GreaterOrEqual(t, d, 45*time.Minute, "attempt %d", attempt)
		}
	}
}

func TestPermanentFailuresDieAndCancellationsSettle(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	ids := enqueue(t, pool, 2)
	e := newEngine(pool, outboxConfig(config.OutboxOverride{}), "replica-a", outbox.DelivererFunc(func(_ context.Context, c outbox.Claimed) outbox.Outcome {
		if c.ID == ids[0] {
			return outbox.Outcome{Err: errors.New("endpoint is gone"), Permanent: true, StatusCode: 410}
		}
		return outbox.Cancelled("subscription disabled")
	}))
	require.NoError(t, e.Deliver(t.Context()))
	r := readRow(t, pool, ids[0])
	require.Equal(t, outbox.StatusDead, r.Status)
	require.Equal(t, 1, r.Attempts)
	r = readRow(t, pool, ids[1])
	require.Equal(t, outbox.StatusCancelled, r.Status)
	require.Equal(t, "subscription disabled", *r.LastError)
}

// A sender that dies after claiming (here: claims and never records an
// outcome) loses its rows when their lease ends; another replica then delivers
// them again, and the dead sender's late result is refused.
func TestLeaseExpiryRedeliversAndFencesTheLostSender(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	ids := enqueue(t, pool, 3)
	claimed, err := db.New().OutboxClaim(t.Context(), pool, db.OutboxClaimParams{Kind: kind, Batch: 32, LeaseSeconds: 60})
	require.NoError(t, err)
	require.Len(t, claimed, 3)

	var deliveries atomic.Int64
	e := newEngine(pool, outboxConfig(config.OutboxOverride{}), "replica-b", outbox.DelivererFunc(func(_ context.Context, c outbox.Claimed) outbox.Outcome {
		deliveries.Add(1)
		if c.Attempt != 2 {
			return outbox.Failed(fmt.Errorf("attempt %d, want 2", c.Attempt))
		}
		return outbox.Delivered()
	}))
	// While the lease holds, nobody else attempts the rows.
	require.NoError(t, e.Deliver(t.Context()))
	require.Zero(t, deliveries.Load())

	makeDue(t, pool) // the lease ends
	require.NoError(t, e.Deliver(t.Context()))
	require.Equal(t, int64(3), deliveries.Load())
	for _, id := range ids {
		r := readRow(t, pool, id)
		require.Equal(t, outbox.StatusDelivered, r.Status)
		require.Equal(t, 2, r.AttemptNumber)
	}

	// The first sender comes back and reports a failure of attempt 1: refused.
	recorded, err := db.New().OutboxSettle(t.Context(), pool, db.OutboxSettleParams{
		Ids: []string{ids[0]}, Numbers: []int32{1}, Statuses: []string{outbox.StatusDead}, RetrySeconds: []float64{0},
		Charged: []bool{true}, StartedAt: []time.Time{time.Now()}, DurationMs: []int32{1}, Results: []string{"failed"},
		StatusCodes: []int32{0}, Responses: []string{""}, Errors: []string{"late"}, Replica: "replica-a",
	})
	require.NoError(t, err)
	require.Empty(t, recorded)
	require.Equal(t, outbox.StatusDelivered, readRow(t, pool, ids[0]).Status)
	var attempts int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM outbox_attempt WHERE delivery_id = $1`, ids[0]).Scan(&attempts))
	require.Equal(t, 1, attempts, "only the attempt that was recorded in time is kept")
}

// A sender that lost its lease on the last allowed attempt used that attempt:
// the next claim finds the row out of attempts and settles it dead unsent.
func TestALostLastAttemptIsDead(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	id := enqueue(t, pool, 1)[0]
	_, err := pool.Exec(t.Context(), `UPDATE outbox SET attempts = 2, attempt_number = 2 WHERE id = $1`, id)
	require.NoError(t, err)
	_, err = db.New().OutboxClaim(t.Context(), pool, db.OutboxClaimParams{Kind: kind, Batch: 1, LeaseSeconds: 60})
	require.NoError(t, err)
	makeDue(t, pool)

	var called atomic.Bool
	e := newEngine(pool, outboxConfig(config.OutboxOverride{MaxAttempts: ptr(3)}), "replica-b", outbox.DelivererFunc(func(context.Context, outbox.Claimed) outbox.Outcome {
		called.Store(true)
		return outbox.Delivered()
	}))
	require.NoError(t, e.Deliver(t.Context()))
	require.False(t, called.Load())
	r := readRow(t, pool, id)
	require.Equal(t, outbox.StatusDead, r.Status)
	require.Contains(t, *r.LastError, "lease")
}

// Stopping the sender mid-delivery gives its rows back, due at once and
// uncharged.
func TestAStoppingSenderGivesItsRowsBack(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	ids := enqueue(t, pool, 4)
	started := make(chan struct{}, 4)
	e := newEngine(pool, outboxConfig(config.OutboxOverride{}), "replica-a", outbox.DelivererFunc(func(ctx context.Context, _ outbox.Claimed) outbox.Outcome {
		started <- struct{}{}
		<-ctx.Done()
		return outbox.Failed(ctx.Err())
	}))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.Deliver(ctx) }()
	for range 4 {
		<-started
	}
	cancel()
	require.NoError(t, <-done)
	for _, id := range ids {
		r := readRow(t, pool, id)
		require.Equal(t, outbox.StatusPending, r.Status)
		require.Equal(t, 0, r.Attempts, "a given-back attempt is not charged")
		require.LessOrEqual(t, r.DueIn, time.Duration(0))
		require.Nil(t, r.LastError)
	}
	require.Equal(t, float64(4), counter(t, e, "given_back"))
}

func TestParallelAndBatchFollowTheKindsPolicy(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	enqueue(t, pool, 40)
	var inFlight, most atomic.Int64
	e := newEngine(pool, outboxConfig(config.OutboxOverride{Parallel: ptr(3), Batch: ptr(5)}), "replica-a", outbox.DelivererFunc(func(context.Context, outbox.Claimed) outbox.Outcome {
		n := inFlight.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond) // long enough for deliveries to overlap
		inFlight.Add(-1)
		return outbox.Delivered()
	}))
	require.NoError(t, e.Deliver(t.Context()))
	require.Equal(t, 40, countStatus(t, pool, outbox.StatusDelivered))
	require.LessOrEqual(t, most.Load(), int64(3))
	require.GreaterOrEqual(t, most.Load(), int64(2))
}

// Two replicas deliver side by side: no row is ever attempted by both at once,
// and each row is attempted exactly once while no lease runs out.
func TestTwoReplicasNeverAttemptTheSameRowAtOnce(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	const n = 1500
	enqueue(t, pool, n)
	var inFlight sync.Map
	var overlaps, attempts atomic.Int64
	perReplica := map[string]*atomic.Int64{"a": {}, "b": {}}
	deliverer := func(replica string) outbox.Deliverer {
		return outbox.DelivererFunc(func(_ context.Context, c outbox.Claimed) outbox.Outcome {
			if _, loaded := inFlight.LoadOrStore(c.ID, replica); loaded {
				overlaps.Add(1)
			}
			attempts.Add(1)
			perReplica[replica].Add(1)
			time.Sleep(200 * time.Microsecond)
			inFlight.Delete(c.ID)
			return outbox.Delivered()
		})
	}
	cfg := outboxConfig(config.OutboxOverride{Batch: ptr(16)})
	a := newEngine(pool, cfg, "a", deliverer("a"))
	b := newEngine(pool, cfg, "b", deliverer("b"))
	var wg sync.WaitGroup
	for _, e := range []*outbox.Engine{a, b} {
		wg.Go(func() { require.NoError(t, e.Deliver(t.Context())) })
	}
	wg.Wait()
	require.Zero(t, overlaps.Load())
	require.Equal(t, int64(n), attempts.Load())
	require.Equal(t, n, countStatus(t, pool, outbox.StatusDelivered))
	require.Positive(t, perReplica["a"].Load())
	require.Positive(t, perReplica["b"].Load())
}

func TestAPanickingDelivererFailsTheAttempt(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	id := enqueue(t, pool, 1)[0]
	e := newEngine(pool, outboxConfig(config.OutboxOverride{}), "replica-a", outbox.DelivererFunc(func(context.Context, outbox.Claimed) outbox.Outcome {
		panic("bug")
	}))
	require.NoError(t, e.Deliver(t.Context()))
	r := readRow(t, pool, id)
	require.Equal(t, outbox.StatusPending, r.Status)
	require.Equal(t, 1, r.Attempts)
	require.Equal(t, "the deliverer failed unexpectedly", *r.LastError)
}
