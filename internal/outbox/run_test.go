package outbox_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/testdb"
)

// wait bounds every wait for something Run does.
const wait = 30 * time.Second

// startRun runs e until the test ends, or until the returned stop, which
// answers what Run returned. Every pass Run reports goes to passes.
func startRun(t *testing.T, e *outbox.Engine, scan time.Duration) (passes <-chan outbox.Pass, stop func() error) {
	t.Helper()
	ch := make(chan outbox.Pass, 64)
	e.Scan = scan
	e.PassFunc = func(p outbox.Pass) {
		select {
		case ch <- p:
		default: // the test stopped looking
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	var result error
	stopped := false
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			select {
			case result = <-done:
			case <-time.After(wait):
				t.Fatal("Run did not return after its context ended")
			}
		}
		return result
	}
	t.Cleanup(func() { _ = stop() })
	return ch, stop
}

// nextPass waits for Run's next pass named name.
func nextPass(t *testing.T, passes <-chan outbox.Pass, name string) outbox.Pass {
	t.Helper()
	timeout := time.After(wait)
	for {
		select {
		case p := <-passes:
			if p.Name == name {
				return p
			}
		case <-timeout:
			t.Fatalf("no %s pass", name)
		}
	}
}

func TestRunDeliversWhatACommitEnqueuedWithoutWaitingForTheScan(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	delivered := make(chan string, 1)
	e := newEngine(pool, outboxConfig(config.OutboxOverride{}), "replica-a", outbox.DelivererFunc(func(_ context.Context, c outbox.Claimed) outbox.Outcome {
		delivered <- c.ID
		return outbox.Delivered()
	}))
	passes, _ := startRun(t, e, time.Hour)
	// Run passes as soon as it listens, for what was enqueued before.
	require.NoError(t, nextPass(t, passes, outbox.DeliverPass).Err)

	tx, err := pool.Begin(t.Context())
	require.NoError(t, err)
	id, err := outbox.Enqueue(t.Context(), tx, outbox.Delivery{Kind: kind, Payload: map[string]string{}})
	require.NoError(t, err)
	require.NoError(t, tx.Commit(t.Context()))
	select {
	case got := <-delivered:
		require.Equal(t, id, got)
	case <-time.After(wait):
		t.Fatal("a committed enqueue was not delivered")
	}
}

func TestRunSettlesTheAttemptsUnderWayBeforeItReturns(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	started := make(chan struct{}, 1)
	e := newEngine(pool, outboxConfig(config.OutboxOverride{}), "replica-a", outbox.DelivererFunc(func(ctx context.Context, _ outbox.Claimed) outbox.Outcome {
		started <- struct{}{}
		<-ctx.Done()
		return outbox.Failed(ctx.Err())
	}))
	_, stop := startRun(t, e, time.Hour)
	id := enqueue(t, pool, 1)[0]
	select {
	case <-started:
	case <-time.After(wait):
		t.Fatal("the delivery was not attempted")
	}

	require.NoError(t, stop())
	r := readRow(t, pool, id)
	require.Equal(t, outbox.StatusPending, r.Status)
	require.Equal(t, 0, r.Attempts, "the attempt cut short is given back, not charged")
	require.Equal(t, float64(1), counter(t, e, "given_back"))
}

func TestRunObservesTheOutboxForTheGauges(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	// No deliverer: the rows stay pending.
	e := outbox.NewEngine(pool, outboxConfig(config.OutboxOverride{}), "replica-a", slog.New(slog.DiscardHandler), outbox.NewMetrics(prometheus.NewRegistry()))
	enqueue(t, pool, 3)
	passes, _ := startRun(t, e, 50*time.Millisecond)

	require.NoError(t, nextPass(t, passes, outbox.ObservePass).Err)
	require.Equal(t, float64(3), gauge(t, e.Metrics().Pending.WithLabelValues(kind)))
}

func TestAHeldEngineRunsNoPassButDeliverStillWorks(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	e := newEngine(pool, outboxConfig(config.OutboxOverride{}), "replica-a", outbox.DelivererFunc(func(context.Context, outbox.Claimed) outbox.Outcome {
		return outbox.Delivered()
	}))
	e.Hold()
	passes, stop := startRun(t, e, 10*time.Millisecond)
	enqueue(t, pool, 2)
	require.NoError(t, e.Deliver(t.Context()))
	require.Equal(t, 2, countStatus(t, pool, outbox.StatusDelivered))
	require.NoError(t, stop())
	require.Empty(t, passes)
}
