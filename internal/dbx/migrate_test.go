package dbx_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/testdb"
	schema "github.com/svcdev/svc/sql"
)

// migrationLockID mirrors the advisory lock id dbx.Migrate takes ("svc_migr").
const migrationLockID int64 = 0x7376635f6d696772

func discardLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// openPool opens a pool on url that is closed when the test ends.
func openPool(t *testing.T, url string, opts dbx.PoolOptions) *pgxpool.Pool {
	t.Helper()
	pool, err := dbx.NewPool(context.Background(), url, opts)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// tableExists reports whether a table is visible on the search path.
func tableExists(t *testing.T, pool *pgxpool.Pool, table string) bool {
	t.Helper()
	var exists bool
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT to_regclass($1) IS NOT NULL", table).Scan(&exists))
	return exists
}

// versionRows counts goose's rows per migration version (version 0 is goose's own marker).
func versionRows(t *testing.T, pool *pgxpool.Pool) map[int64]int {
	t.Helper()
	rows, err := pool.Query(t.Context(), "SELECT version_id, count(*) FROM goose_db_version WHERE version_id > 0 GROUP BY version_id")
	require.NoError(t, err)
	out := map[int64]int{}
	for rows.Next() {
		var v int64
		var n int
		require.NoError(t, rows.Scan(&v, &n))
		out[v] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// oncePerVersion is what versionRows returns after each embedded migration ran exactly once.
func oncePerVersion() map[int64]int {
	out := map[int64]int{}
	for _, v := range schema.Versions() {
		out[v] = 1
	}
	return out
}

func TestMigrate(t *testing.T) {
	t.Parallel()

	type testBundle struct {
		url  string
		pool *pgxpool.Pool
	}

	setup := func(t *testing.T) *testBundle {
		t.Helper()
		url := testdb.Empty(t)
		return &testBundle{url: url, pool: openPool(t, url, dbx.PoolOptions{})}
	}

	t.Run("EmptyDatabaseGetsEveryVersion", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		res, err := dbx.Migrate(t.Context(), bundle.pool, 5*time.Second, discardLog())
		require.NoError(t, err)
		require.Equal(t, schema.Versions(), res.Applied)
		require.Equal(t, int64(0), res.From)
		require.Equal(t, schema.Version(), res.To)

		require.NoError(t, dbx.CheckSchema(t.Context(), bundle.pool, false))
		state, err := dbx.ReadSchema(t.Context(), bundle.pool)
		require.NoError(t, err)
		require.Equal(t, schema.Versions(), state.Applied)
		require.Equal(t, oncePerVersion(), versionRows(t, bundle.pool))
		require.True(t, tableExists(t, bundle.pool, "sweep_claim"))
	})

	t.Run("SecondRunAppliesNothing", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		_, err := dbx.Migrate(t.Context(), bundle.pool, 5*time.Second, discardLog())
		require.NoError(t, err)

		res, err := dbx.Migrate(t.Context(), bundle.pool, 5*time.Second, discardLog())
		require.NoError(t, err)
		require.Empty(t, res.Applied)
		require.Equal(t, schema.Version(), res.From)
		require.Equal(t, schema.Version(), res.To)
		require.Equal(t, oncePerVersion(), versionRows(t, bundle.pool))
		require.NoError(t, dbx.CheckSchema(t.Context(), bundle.pool, false))
	})

	// Replicas starting together against an empty database.
	t.Run("ConcurrentReplicasMigrateOnce", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		const replicas = 8
		pools := make([]*pgxpool.Pool, replicas)
		for i := range pools {
			pools[i] = openPool(t, bundle.url, dbx.PoolOptions{MaxConns: 2})
			require.NoError(t, dbx.Ping(t.Context(), pools[i], 10*time.Second)) // connect before the race
		}

		results := make([]dbx.MigrateResult, replicas)
		errs := make([]error, replicas)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, pool := range pools {
			wg.Go(func() {
				<-start
				results[i], errs[i] = dbx.Migrate(t.Context(), pool, 30*time.Second, discardLog())
			})
		}
		close(start)
		wg.Wait()

		migrated := 0
		for i := range replicas {
			require.NoError(t, errs[i], "replica %d", i)
			require.Equal(t, schema.Version(), results[i].To, "replica %d", i)
			if len(results[i].Applied) > 0 {
				migrated++
				require.Equal(t, schema.Versions(), results[i].Applied)
			}
			require.NoError(t, dbx.CheckSchema(t.Context(), pools[i], false), "replica %d", i)
		}
		require.Equal(t, 1, migrated, "exactly one replica applies the migrations")
		require.Equal(t, oncePerVersion(), versionRows(t, bundle.pool))
	})

	t.Run("LockTimeout", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		holder, err := pgx.Connect(t.Context(), bundle.url)
		require.NoError(t, err)
		t.Cleanup(func() { _ = holder.Close(context.Background()) })
		_, err = holder.Exec(t.Context(), "SELECT pg_advisory_lock($1)", migrationLockID)
		require.NoError(t, err)

		// One connection, so the checks below see the connection Migrate used;
		// connected beforehand, so the time below is Migrate's own.
		pool := openPool(t, bundle.url, dbx.PoolOptions{MaxConns: 1})
		require.NoError(t, dbx.Ping(t.Context(), pool, 10*time.Second))
		began := time.Now()
		res, err := dbx.Migrate(t.Context(), pool, 300*time.Millisecond, discardLog())
		elapsed := time.Since(began)
		require.ErrorIs(t, err, dbx.ErrMigrationLockTimeout)
		require.Contains(t, err.Error(), "migration_advisory_lock_timeout")
		require.Empty(t, res.Applied)
		require.GreaterOrEqual(t, elapsed, 250*time.Millisecond, "waits for the lock")
		require.Less(t, elapsed, 2*time.Second, "gives up after the lock time-out")

		require.False(t, tableExists(t, pool, "goose_db_version"), "the database is untouched")
		require.False(t, tableExists(t, pool, "sweep_claim"), "the database is untouched")
		var lockTimeout string
		require.NoError(t, pool.QueryRow(t.Context(), "SHOW lock_timeout").Scan(&lockTimeout))
		require.Equal(t, "0", lockTimeout, "the pooled connection gets its lock_timeout back")

		// Once the other process lets go, migrating works.
		_, err = holder.Exec(t.Context(), "SELECT pg_advisory_unlock($1)", migrationLockID)
		require.NoError(t, err)
		res, err = dbx.Migrate(t.Context(), pool, 5*time.Second, discardLog())
		require.NoError(t, err)
		require.Equal(t, schema.Versions(), res.Applied)
	})

	// database.max_conns may be 1; migrating must not wait for a second connection.
	t.Run("SingleConnectionPool", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		pool := openPool(t, bundle.url, dbx.PoolOptions{MaxConns: 1})
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		res, err := dbx.Migrate(ctx, pool, 5*time.Second, discardLog())
		require.NoError(t, err)
		require.Equal(t, schema.Versions(), res.Applied)
		require.NoError(t, dbx.CheckSchema(ctx, pool, false))
	})

	t.Run("RefusesNewerDatabase", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		_, err := dbx.Migrate(t.Context(), bundle.pool, 5*time.Second, discardLog())
		require.NoError(t, err)
		_, err = bundle.pool.Exec(t.Context(), "INSERT INTO goose_db_version (version_id, is_applied) VALUES (999999, true)")
		require.NoError(t, err)

		res, err := dbx.Migrate(t.Context(), bundle.pool, 5*time.Second, discardLog())
		require.Error(t, err)
		require.Contains(t, err.Error(), "newer")
		require.Empty(t, res.Applied)
		want := oncePerVersion()
		want[999999] = 1
		require.Equal(t, want, versionRows(t, bundle.pool))
	})
}
