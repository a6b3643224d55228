package outbox_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/testdb"
)

// fillSettled inserts n delivered rows of kind, settled two days ago, each
// with its attempt row, as a week of traffic would leave them: in bulk
// statements, since a testfactory.Delivery call per row would take minutes.
func fillSettled(b *testing.B, pool *pgxpool.Pool, n int) {
	b.Helper()
	ctx := context.Background()
	const chunk = 100_000
	for from := 0; from < n; from += chunk {
		to := min(from+chunk, n) - 1
		_, err := pool.Exec(ctx, `INSERT INTO outbox (id, kind, payload, status, attempts, attempt_number, next_attempt_at, created_at, settled_at)
			SELECT 'dlv_settled_' || g, $1, '{"n": 1}', 'delivered', 1, 1, now() - interval '2 days', now() - interval '2 days', now() - interval '2 days'
			FROM generate_series($2::int, $3::int) g`, kind, from, to)
		require.NoError(b, err)
		_, err = pool.Exec(ctx, `INSERT INTO outbox_attempt (delivery_id, number, replica, started_at, duration_ms, result, status_code)
			SELECT 'dlv_settled_' || g, 1, 'bench', now() - interval '2 days', 3, 'delivered', 200
			FROM generate_series($1::int, $2::int) g`, from, to)
		require.NoError(b, err)
	}
	_, err := pool.Exec(ctx, "VACUUM ANALYZE outbox")
	require.NoError(b, err)
	_, err = pool.Exec(ctx, "VACUUM ANALYZE outbox_attempt")
	require.NoError(b, err)
}

func fillPending(b *testing.B, pool *pgxpool.Pool, n int) {
	b.Helper()
	// Ids sort after the settled rows' and rise with time, as ULIDs do.
	_, err := pool.Exec(context.Background(), `INSERT INTO outbox (id, kind, payload)
		SELECT 'dlv_zz' || to_char(clock_timestamp(), 'YYYYMMDDHH24MISSUS') || lpad(g::text, 8, '0'), $1, '{"n": 1}'
		FROM generate_series(1, $2::int) g`, kind, n)
	require.NoError(b, err)
}

// BenchmarkDeliverNoop measures the engine alone (claim, lease, record) with a
// deliverer that does nothing, beside 0 and 1,000,000 settled rows: the claim
// must stay as fast. Reported in rows/s. Needs TEST_DATABASE_URL.
func BenchmarkDeliverNoop(b *testing.B) {
	for _, settled := range []int{0, 1_000_000} {
		b.Run(fmt.Sprintf("settled=%d", settled), func(b *testing.B) {
			pool := testdb.New(b)
			fillSettled(b, pool, settled)
			var plan []string
			rows, err := pool.Query(context.Background(), `EXPLAIN SELECT d.id FROM outbox d
				WHERE d.kind = $1 AND d.status = 'pending' AND d.next_attempt_at <= now()
				ORDER BY d.next_attempt_at LIMIT 32 FOR UPDATE SKIP LOCKED`, kind)
			require.NoError(b, err)
			for rows.Next() {
				var line string
				require.NoError(b, rows.Scan(&line))
				plan = append(plan, strings.TrimSpace(line))
			}
			require.NoError(b, rows.Err())
			b.Logf("claim plan: %s", strings.Join(plan, " | "))
			if settled > 0 { // an empty table is scanned whatever its indexes
				require.Contains(b, strings.Join(plan, " "), "outbox_due_idx")
			}

			e := newEngine(pool, benchConfig(b), "bench", outbox.DelivererFunc(func(context.Context, outbox.Claimed) outbox.Outcome {
				return outbox.Delivered()
			}))
			const perIter = 20_000
			b.ResetTimer()
			var elapsed time.Duration
			for range b.N {
				b.StopTimer()
				fillPending(b, pool, perIter)
				b.StartTimer()
				start := time.Now()
				require.NoError(b, e.Deliver(context.Background()))
				elapsed += time.Since(start)
			}
			b.ReportMetric(float64(perIter*b.N)/elapsed.Seconds(), "rows/s")
		})
	}
}

// benchConfig is the default outbox configuration, or with OUTBOX_BATCH and
// OUTBOX_PARALLEL set, those raised for every kind.
func benchConfig(b *testing.B) config.Outbox {
	cfg := config.Default().Outbox
	for name, field := range map[string]*int{"OUTBOX_BATCH": &cfg.Defaults.Batch, "OUTBOX_PARALLEL": &cfg.Defaults.Parallel} {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			require.NoError(b, err)
			*field = n
		}
	}
	b.Logf("batch %d, parallel %d", cfg.Defaults.Batch, cfg.Defaults.Parallel)
	return cfg
}

// BenchmarkPurgeMillion purges 1,000,000 settled rows (and their attempts) with
// the default purge settings while a sender claims and settles pending rows of
// the same kind, and reports how long the sender's statements waited at worst.
// Needs TEST_DATABASE_URL.
func BenchmarkPurgeMillion(b *testing.B) {
	for range b.N {
		b.StopTimer()
		pool := testdb.New(b)
		fillSettled(b, pool, 1_000_000)
		cfg := config.Default().Outbox
		// The sender's statements give up after waiting 100 ms for a lock: any
		// such failure is a lock the purge held on pending rows too long.
		senderCfg := pool.Config().Copy()
		senderCfg.ConnConfig.RuntimeParams["lock_timeout"] = "100ms"
		sender, err := pgxpool.NewWithConfig(context.Background(), senderCfg)
		require.NoError(b, err)
		defer sender.Close()
		ctx, cancel := context.WithCancel(context.Background())
		var latencies []time.Duration
		var delivered atomic.Int64
		var wg sync.WaitGroup
		wg.Go(func() {
			q := db.New()
			for ctx.Err() == nil {
				fillPending(b, pool, 32)
				start := time.Now()
				rows, err := q.OutboxClaim(ctx, sender, db.OutboxClaimParams{Kind: kind, Batch: 32, LeaseSeconds: 60})
				if ctx.Err() != nil {
					return
				}
				require.NoError(b, err)
				ids := make([]string, len(rows))
				for i, r := range rows {
					ids[i] = r.ID
				}
				_, err = sender.Exec(ctx, `UPDATE outbox SET status = 'delivered', settled_at = now() WHERE id = ANY($1)`, ids)
				if ctx.Err() != nil {
					return
				}
				require.NoError(b, err)
				latencies = append(latencies, time.Since(start))
				delivered.Add(int64(len(rows)))
			}
		})
		b.StartTimer()
		start := time.Now()
		var total int64
		passes := 0
		for {
			n, err := outbox.Purge(context.Background(), pool, cfg)
			require.NoError(b, err)
			total += n
			passes++
			if n == 0 {
				break
			}
		}
		took := time.Since(start)
		b.StopTimer()
		cancel()
		wg.Wait()
		slices.Sort(latencies)
		b.ReportMetric(float64(total)/took.Seconds(), "rows/s")
		b.ReportMetric(float64(passes), "passes")
		b.ReportMetric(float64(latencies[len(latencies)-1].Microseconds())/1000, "max-claim+settle-ms")
		b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99-claim+settle-ms")
		b.Logf("purged %d rows in %s over %d passes; the sender claimed and settled %d rows in %d rounds alongside, none waiting 100 ms for a lock",
			total, took.Round(time.Millisecond), passes, delivered.Load(), len(latencies))
	}
}
