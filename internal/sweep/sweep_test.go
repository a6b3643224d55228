package sweep_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/metrics"
	"github.com/svcdev/svc/internal/supervisor"
	"github.com/svcdev/svc/internal/sweep"
	"github.com/svcdev/svc/internal/testdb"
	schema "github.com/svcdev/svc/sql"
)

const sweepName = "expire_leases"

// replica is one control process: its runner, its metrics and its pass counter.
type replica struct {
	owner   string
	runner  *sweep.Runner
	metrics *metrics.Metrics
	passes  atomic.Int64
}

// newReplica builds a runner named owner whose sweep sweepName runs run (or just
// counts passes when run is nil).
func newReplica(pool *pgxpool.Pool, owner string, interval time.Duration, run func(ctx context.Context) error) *replica {
	r := &replica{owner: owner, metrics: metrics.New("test", schema.Version())}
	r.runner = sweep.NewRunner(pool, owner, slog.New(slog.DiscardHandler), r.metrics)
	r.runner.Register(sweep.Sweep{Name: sweepName, Interval: interval, Run: func(ctx context.Context) error {
		r.passes.Add(1)
		if run != nil {
			return run(ctx)
		}
		return nil
	}})
	return r
}

// count reads svc_sweep_passes_total{sweep, result} of the replica. (The
// client's testutil package needs a module this repository does not require.)
func (r *replica) count(result string) float64 {
	var m dto.Metric
	if err := r.metrics.SweepPasses.WithLabelValues(sweepName, result).Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

func claimRow(t *testing.T, pool *pgxpool.Pool) db.SweepClaim {
	t.Helper()
	row, err := db.New().SweepGet(t.Context(), pool, sweepName)
	require.NoError(t, err)
	return row
}

// expireClaim back-dates the claim on the database's clock, as if its lease ran out.
func expireClaim(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	tag, err := pool.Exec(t.Context(), "UPDATE sweep_claim SET expires_at = now() - interval '1 second' WHERE name = $1", sweepName)
	require.NoError(t, err)
	require.Equal(t, int64(1), tag.RowsAffected())
}

// requireNotAfter fails when the pass deadline is later than the claim's expiry
// (which PostgreSQL stores to the microsecond).
func requireNotAfter(t *testing.T, deadline, expires time.Time) {
	t.Helper()
	require.False(t, deadline.After(expires.Add(time.Microsecond)), "the pass deadline %s is after the claim expires at %s (by %s)",
		deadline.Format(time.RFC3339Nano), expires.Format(time.RFC3339Nano), deadline.Sub(expires))
}

func TestRunOnce(t *testing.T) {
	t.Parallel()

	type testBundle struct {
		pool *pgxpool.Pool
		a, b *replica
	}

	setup := func(t *testing.T) *testBundle {
		t.Helper()
		pool := testdb.New(t)
		return &testBundle{
			pool: pool,
			a:    newReplica(pool, "replica-a", time.Minute, nil),
			b:    newReplica(pool, "replica-b", time.Minute, nil),
		}
	}

	t.Run("OneReplicaPerInterval", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		p, err := bundle.a.runner.RunOnce(t.Context(), sweepName)
		require.NoError(t, err)
		require.Equal(t, sweep.Pass{Sweep: sweepName, Ran: true}, p)
		require.Equal(t, int64(1), bundle.a.passes.Load())
		require.Equal(t, 1.0, bundle.a.count("ok"))

		p, err = bundle.b.runner.RunOnce(t.Context(), sweepName)
		require.NoError(t, err)
		require.Equal(t, sweep.Pass{Sweep: sweepName, Ran: false}, p)
		require.Equal(t, int64(0), bundle.b.passes.Load(), "the pass must not run without the claim")
		require.Equal(t, 1.0, bundle.b.count("skipped"))
		require.Equal(t, 0.0, bundle.b.count("ok"))
		require.Equal(t, 0.0, bundle.b.count("error"))

		row := claimRow(t, bundle.pool)
		require.Equal(t, "replica-a", row.Owner)
		require.NotNil(t, row.LastFinishedAt)
		require.Nil(t, row.LastError)
		require.Equal(t, time.Minute, row.ExpiresAt.Sub(row.ClaimedAt), "the lease is one interval on the database's clock")

		// The holder renews its own claim.
		p, err = bundle.a.runner.RunOnce(t.Context(), sweepName)
		require.NoError(t, err)
		require.True(t, p.Ran)
		require.Equal(t, int64(2), bundle.a.passes.Load())
		require.Equal(t, 2.0, bundle.a.count("ok"))
	})

	// An expired claim passes to another replica.
	t.Run("TakeoverAfterExpiry", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		p, err := bundle.a.runner.RunOnce(t.Context(), sweepName)
		require.NoError(t, err)
		require.True(t, p.Ran)
		p, err = bundle.b.runner.RunOnce(t.Context(), sweepName)
		require.NoError(t, err)
		require.False(t, p.Ran)

		expireClaim(t, bundle.pool)
		p, err = bundle.b.runner.RunOnce(t.Context(), sweepName)
		require.NoError(t, err)
		require.True(t, p.Ran)
		require.Equal(t, int64(1), bundle.b.passes.Load())
		require.Equal(t, "replica-b", claimRow(t, bundle.pool).Owner)

		// Now the former owner is the one kept out.
		p, err = bundle.a.runner.RunOnce(t.Context(), sweepName)
		require.NoError(t, err)
		require.False(t, p.Ran)
		require.Equal(t, int64(1), bundle.a.passes.Load())
		require.Equal(t, 1.0, bundle.a.count("skipped"))
	})

	t.Run("ShortIntervalGetsMinimumLease", func(t *testing.T) {
		t.Parallel()

		pool := testdb.New(t)
		r := newReplica(pool, "replica-a", 50*time.Millisecond, nil)
		_, err := r.runner.RunOnce(t.Context(), sweepName)
		require.NoError(t, err)
		row := claimRow(t, pool)
		require.Equal(t, time.Second, row.ExpiresAt.Sub(row.ClaimedAt))
	})

	t.Run("FailedPassIsRecordedThenCleared", func(t *testing.T) {
		t.Parallel()

		pool := testdb.New(t)
		var fail atomic.Bool
		fail.Store(true)
		r := newReplica(pool, "replica-a", time.Minute, func(context.Context) error {
			if fail.Load() {
				return errors.New("boom: outbox unreachable")
			}
			return nil
		})

		p, err := r.runner.RunOnce(t.Context(), sweepName)
		require.NoError(t, err, "RunOnce reports the pass's failure in the Pass")
		require.True(t, p.Ran)
		require.ErrorContains(t, p.Err, "boom: outbox unreachable")
		require.Equal(t, 1.0, r.count("error"))
		row := claimRow(t, pool)
		require.NotNil(t, row.LastError)
		require.Equal(t, "boom: outbox unreachable", *row.LastError)
		require.NotNil(t, row.LastFinishedAt)

		fail.Store(false)
		p, err = r.runner.RunOnce(t.Context(), sweepName)
		require.NoError(t, err)
		require.True(t, p.Ran)
		require.NoError(t, p.Err)
		require.Equal(t, 1.0, r.count("ok"))
		require.Nil(t, claimRow(t, pool).LastError, "a good pass clears the last error")
	})

	t.Run("PanickingPassIsAnError", func(t *testing.T) {
		t.Parallel()

		pool := testdb.New(t)
		var panicked atomic.Bool
		r := newReplica(pool, "replica-a", time.Minute, func(context.Context) error {
			if panicked.CompareAndSwap(false, true) {
				panic("nil map write")
			}
			return nil
		})

		p, err := r.runner.RunOnce(t.Context(), sweepName)
		require.NoError(t, err)
		require.True(t, p.Ran)
		require.ErrorContains(t, p.Err, "panic: nil map write")
		require.Equal(t, 1.0, r.count("error"))
		row := claimRow(t, pool)
		require.NotNil(t, row.LastError)
		require.Contains(t, *row.LastError, "panic: nil map write")

		// The sweep carries on.
		p, err = r.runner.RunOnce(t.Context(), sweepName)
		require.NoError(t, err)
		require.NoError(t, p.Err)
		require.Equal(t, 1.0, r.count("ok"))
		require.Equal(t, int64(2), r.passes.Load())
	})

	// The pass must end before the claim does, or another replica could overlap it.
	// (The claim's expiry is on the database's clock; the test's database runs on
	// the same host, so the two clocks agree.)
	t.Run("PassDeadlineWithinLease", func(t *testing.T) {
		t.Parallel()

		for _, tc := range []struct {
			name            string
			interval, lease time.Duration
		}{
			{name: "Interval", interval: 3 * time.Second, lease: 3 * time.Second},
			{name: "MinimumLease", interval: 50 * time.Millisecond, lease: time.Second},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()

				pool := testdb.New(t)
				var (
					deadline    time.Time
					hasDeadline bool
				)
				r := newReplica(pool, "replica-a", tc.interval, func(ctx context.Context) error {
					deadline, hasDeadline = ctx.Deadline()
					return nil
				})
				began := time.Now()
				p, err := r.runner.RunOnce(t.Context(), sweepName)
				require.NoError(t, err)
				require.True(t, p.Ran)
				require.True(t, hasDeadline, "the pass runs under a deadline")
				requireNotAfter(t, deadline, claimRow(t, pool).ExpiresAt)
				require.Greater(t, deadline.Sub(began), tc.lease/2, "the pass gets most of the lease")
			})
		}
	})

	// A claim that is slow to come back (here it waits for a row lock) must not
	// stretch the pass past the claim's expiry.
	t.Run("PassDeadlineWithinLeaseAfterSlowClaim", func(t *testing.T) {
		t.Parallel()

		pool := testdb.New(t)
		var deadline time.Time
		r := newReplica(pool, "replica-a", 3*time.Second, func(ctx context.Context) error {
			deadline, _ = ctx.Deadline()
			return nil
		})
		// A claim left by a replica that died: written directly, as no
		// replica of this test would leave one.
		_, err := pool.Exec(t.Context(), "INSERT INTO sweep_claim (name, owner, claimed_at, expires_at) VALUES ($1, 'replica-gone', now(), now())", sweepName)
		require.NoError(t, err)

		locker, err := pool.Begin(t.Context())
		require.NoError(t, err)
		defer func() { _ = locker.Rollback(context.Background()) }()
		_, err = locker.Exec(t.Context(), "SELECT 1 FROM sweep_claim WHERE name = $1 FOR UPDATE", sweepName)
		require.NoError(t, err)

		done := make(chan sweep.Pass, 1)
		go func() {
			p, _ := r.runner.RunOnce(context.Background(), sweepName)
			done <- p
		}()
		require.Eventually(t, func() bool {
			var waiting bool
			err := pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%name: SweepClaim%')`).Scan(&waiting)
			return err == nil && waiting
		}, 10*time.Second, 5*time.Millisecond, "the claim waits for the row lock")
		time.Sleep(300 * time.Millisecond) // the delay under test, not a wait for something to happen
		require.NoError(t, locker.Rollback(t.Context()))

		var p sweep.Pass
		select {
		case p = <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("RunOnce did not return")
		}
		require.True(t, p.Ran)
		require.NoError(t, p.Err)
		row := claimRow(t, pool)
		require.Equal(t, "replica-a", row.Owner)
		requireNotAfter(t, deadline, row.ExpiresAt)
	})

	t.Run("PassStopsWhenLeaseEnds", func(t *testing.T) {
		t.Parallel()

		pool := testdb.New(t)
		r := newReplica(pool, "replica-a", 50*time.Millisecond, func(ctx context.Context) error {
			<-ctx.Done() // a pass that would run for ever
			return ctx.Err()
		})
		began := time.Now()
		p, err := r.runner.RunOnce(t.Context(), sweepName)
		require.NoError(t, err)
		require.ErrorIs(t, p.Err, context.DeadlineExceeded)
		require.Less(t, time.Since(began), 5*time.Second)
		require.NotNil(t, claimRow(t, pool).LastError)
	})

	t.Run("UnknownSweep", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		_, err := bundle.a.runner.RunOnce(t.Context(), "no_such_sweep")
		require.ErrorContains(t, err, `no sweep named "no_such_sweep"`)
	})

	// Replicas started together all tick at once: each interval, one runs the pass.
	t.Run("ReplicaBatch", func(t *testing.T) {
		t.Parallel()

		pool := testdb.New(t)
		const replicas, rounds = 5, 5
		rs := make([]*replica, replicas)
		for i := range rs {
			rs[i] = newReplica(pool, "replica-"+string(rune('a'+i)), time.Minute, nil)
		}

		var total int64
		for round := range rounds {
			if round > 0 {
				expireClaim(t, pool)
			}
			passes := make([]sweep.Pass, replicas)
			errs := make([]error, replicas)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i, r := range rs {
				wg.Go(func() {
					<-start
					passes[i], errs[i] = r.runner.RunOnce(t.Context(), sweepName)
				})
			}
			close(start)
			wg.Wait()

			ran := 0
			for i := range replicas {
				require.NoError(t, errs[i])
				require.NoError(t, passes[i].Err, "round %d replica %d: contention is not an error", round, i)
				if passes[i].Ran {
					ran++
				}
			}
			require.Equal(t, 1, ran, "round %d: exactly one replica runs the pass", round)
			total++
		}

		var passes, skipped float64
		for _, r := range rs {
			passes += float64(r.passes.Load())
			skipped += r.count("skipped")
		}
		require.Equal(t, float64(total), passes)
		require.Equal(t, float64(total*(replicas-1)), skipped)
	})
}

func TestRegister(t *testing.T) {
	t.Parallel()

	run := func(context.Context) error { return nil }

	t.Run("InvalidSweepPanics", func(t *testing.T) {
		t.Parallel()

		for name, s := range map[string]sweep.Sweep{
			"NoName":           {Interval: time.Minute, Run: run},
			"ZeroInterval":     {Name: "x", Run: run},
			"NegativeInterval": {Name: "x", Interval: -time.Second, Run: run},
			"NoRun":            {Name: "x", Interval: time.Minute},
		} {
			r := sweep.NewRunner(nil, "replica-a", slog.New(slog.DiscardHandler), metrics.New("test", 1))
			require.Panics(t, func() { r.Register(s) }, name)
			require.Empty(t, r.Sweeps(), name)
		}
	})

	t.Run("ListsSweepsAndTasks", func(t *testing.T) {
		t.Parallel()

		r := sweep.NewRunner(nil, "replica-a", slog.New(slog.DiscardHandler), metrics.New("test", 1))
		r.Register(sweep.Sweep{Name: "expire_leases", Interval: time.Minute, Run: run})
		r.Register(sweep.Sweep{Name: "purge_outbox", Interval: time.Second, Run: run})
		require.Equal(t, []string{"expire_leases", "purge_outbox"}, r.Sweeps())
		tasks := r.Tasks()
		require.Len(t, tasks, 2)
		require.Equal(t, "sweep expire_leases", tasks[0].Name)
		require.Equal(t, "sweep purge_outbox", tasks[1].Name)
	})
}

// passWaiter collects the passes a runner reports through OnPassFunc.
type passWaiter chan sweep.Pass

func newPassWaiter(r *sweep.Runner) passWaiter {
	w := make(passWaiter, 1024)
	r.OnPassFunc = func(p sweep.Pass) {
		select {
		case w <- p:
		default: // never block the runner; tests wait for a handful of passes
		}
	}
	return w
}

func (w passWaiter) next(t *testing.T) sweep.Pass {
	t.Helper()
	select {
	case p := <-w:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("no sweep pass within 10s")
		return sweep.Pass{}
	}
}

func TestTasks(t *testing.T) {
	t.Parallel()

	type testBundle struct {
		pool *pgxpool.Pool
	}

	setup := func(t *testing.T) *testBundle {
		t.Helper()
		return &testBundle{pool: testdb.New(t)}
	}

	t.Run("TicksUnderSupervisor", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		r := newReplica(bundle.pool, "replica-a", 50*time.Millisecond, nil)
		passes := newPassWaiter(r.runner)
		sup := supervisor.New(slog.New(slog.DiscardHandler))
		for _, task := range r.runner.Tasks() {
			sup.Add(task)
		}
		sup.Start(t.Context())

		for range 3 {
			p := passes.next(t)
			require.Equal(t, sweepName, p.Sweep)
			require.True(t, p.Ran)
			require.NoError(t, p.Err)
		}
		ok, stopped := sup.Healthy()
		require.True(t, ok, "stopped: %s", stopped)

		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		require.NoError(t, sup.Stop(ctx))
		ok, _ = sup.Healthy()
		require.True(t, ok, "stopping is not a failure")
		require.GreaterOrEqual(t, r.count("ok"), 3.0)
	})

	t.Run("FailingPassesDoNotStopTheTask", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		r := newReplica(bundle.pool, "replica-a", 50*time.Millisecond, func(context.Context) error {
			return errors.New("boom")
		})
		passes := newPassWaiter(r.runner)
		sup := supervisor.New(slog.New(slog.DiscardHandler))
		for _, task := range r.runner.Tasks() {
			sup.Add(task)
		}
		sup.Start(t.Context())

		for range 3 {
			require.ErrorContains(t, passes.next(t).Err, "boom")
		}
		ok, stopped := sup.Healthy()
		require.True(t, ok, "a failing pass must not make the process unready (stopped: %s)", stopped)

		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		require.NoError(t, sup.Stop(ctx))
	})

	t.Run("TwoReplicasOneClaim", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		var inFlight, maxInFlight atomic.Int64
		run := func(context.Context) error {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for {
				m := maxInFlight.Load()
				if n <= m || maxInFlight.CompareAndSwap(m, n) {
					break
				}
			}
			return nil
		}
		a := newReplica(bundle.pool, "replica-a", 50*time.Millisecond, run)
		b := newReplica(bundle.pool, "replica-b", 50*time.Millisecond, run)
		all := make(chan sweep.Pass, 1024)
		for _, r := range []*replica{a, b} {
			r.runner.OnPassFunc = func(p sweep.Pass) {
				select {
				case all <- p:
				default:
				}
			}
		}

		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		taskErrs := make(chan error, 2)
		for _, r := range []*replica{a, b} {
			task := r.runner.Tasks()[0]
			go func() { taskErrs <- task.Run(ctx) }()
		}

		ran, skipped := 0, 0
		for ran < 3 || skipped < 3 {
			select {
			case p := <-all:
				require.NoError(t, p.Err)
				if p.Ran {
					ran++
				} else {
					skipped++
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("after 10s: %d passes ran, %d skipped", ran, skipped)
			}
		}
		cancel()
		for range 2 {
			select {
			case err := <-taskErrs:
				require.NoError(t, err)
			case <-time.After(10 * time.Second):
				t.Fatal("a sweep task did not return after its context was cancelled")
			}
		}
		require.Equal(t, int64(1), maxInFlight.Load(), "passes never overlap across replicas")
	})

	t.Run("ReturnsNilWhenCancelled", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		// A long interval: the task is waiting for its first tick when cancelled.
		r := newReplica(bundle.pool, "replica-a", time.Hour, nil)
		task := r.runner.Tasks()[0]
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- task.Run(ctx) }()
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("the sweep task did not return after its context was cancelled")
		}
		require.Equal(t, int64(0), r.passes.Load())
	})

	t.Run("ReturnsNilWhenCancelledMidPass", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		started := make(chan struct{})
		var once sync.Once
		r := newReplica(bundle.pool, "replica-a", 50*time.Millisecond, func(ctx context.Context) error {
			once.Do(func() { close(started) })
			<-ctx.Done()
			return ctx.Err()
		})
		task := r.runner.Tasks()[0]
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- task.Run(ctx) }()
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("no pass started")
		}
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("the sweep task did not return after its context was cancelled")
		}
	})
}
