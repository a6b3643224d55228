package worker_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/checkpoint"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/objectstore"
	"github.com/svcdev/svc/internal/outbox"
)

// cleanupDrain is what deleting the checkpoints a benchmark's runs
// replaced cost: the checkpoint_cleanup deliveries, how long an outbox
// engine (as a control process registers it) took to deliver them all, and
// the CPU this process and PostgreSQL's backends used meanwhile.
type cleanupDrain struct {
	deliveries   int
	took         time.Duration
	cpu, backend time.Duration
}

// drainCleanups delivers every pending checkpoint_cleanup delivery of the
// database behind pool, deleting from store.
func drainCleanups(b *testing.B, pool *pgxpool.Pool, store objectstore.Store) cleanupDrain {
	b.Helper()
	ctx := context.Background()
	pending := func() int {
		var n int
		require.NoError(b, pool.QueryRow(ctx,
			`SELECT count(*) FROM outbox WHERE kind = 'checkpoint_cleanup' AND status = 'pending'`).Scan(&n))
		return n
	}
	d := cleanupDrain{deliveries: pending()}
	engine := outbox.NewEngine(pool, config.Default().Outbox, "bench", slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	engine.Register(outbox.KindCheckpointCleanup, checkpoint.NewCleaner(store))
	cpu0, pg0 := cpuTime(b), backendCPU(b, pool)
	start := time.Now()
	for pending() > 0 {
		require.NoError(b, engine.Deliver(ctx))
		require.Less(b, time.Since(start), 5*time.Minute, "the checkpoint cleanups were not delivered")
	}
	d.took = time.Since(start)
	d.cpu, d.backend = cpuTime(b)-cpu0, backendCPUSince(b, pool, pg0)
	return d
}
