package dbx_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/testdb"
	schema "github.com/svcdev/svc/sql"
)

func TestCheckSchema(t *testing.T) {
	t.Parallel()

	type testBundle struct {
		pool *pgxpool.Pool // a database migrated to this binary's schema
	}

	setup := func(t *testing.T) *testBundle {
		t.Helper()
		return &testBundle{pool: testdb.New(t)}
	}

	t.Run("Exact", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		require.NoError(t, dbx.CheckSchema(t.Context(), bundle.pool, false))
		require.NoError(t, dbx.CheckSchema(t.Context(), bundle.pool, true))

		state, err := dbx.ReadSchema(t.Context(), bundle.pool)
		require.NoError(t, err)
		require.Equal(t, schema.Versions(), state.Applied)
		require.Equal(t, schema.Version(), state.Current())
		require.Equal(t, schema.Version(), state.Newest())
		require.Empty(t, state.Missing())
	})

	t.Run("EmptyDatabaseCreatesNothing", func(t *testing.T) {
		t.Parallel()

		pool := openPool(t, testdb.Empty(t), dbx.PoolOptions{})
		state, err := dbx.ReadSchema(t.Context(), pool)
		require.NoError(t, err)
		require.Empty(t, state.Applied)
		require.Equal(t, schema.Versions(), state.Missing())

		for _, allowNewer := range []bool{false, true} {
			err := dbx.CheckSchema(t.Context(), pool, allowNewer)
			require.ErrorIs(t, err, dbx.ErrSchemaMismatch)
			require.Contains(t, err.Error(), "no schema yet")
			require.Contains(t, err.Error(), "run `svc migrate`")
		}
		require.False(t, tableExists(t, pool, "goose_db_version"), "checking must not create goose's table")
		require.False(t, tableExists(t, pool, "sweep_claim"))
	})

	t.Run("NewerDatabase", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		_, err := bundle.pool.Exec(t.Context(), "INSERT INTO goose_db_version (version_id, is_applied) VALUES (999999, true)")
		require.NoError(t, err)

		err = dbx.CheckSchema(t.Context(), bundle.pool, false)
		require.ErrorIs(t, err, dbx.ErrSchemaMismatch)
		require.Contains(t, err.Error(), "newer")
		require.Contains(t, err.Error(), "999999")
		// A rolling upgrade: older replicas keep serving the migrated schema.
		require.NoError(t, dbx.CheckSchema(t.Context(), bundle.pool, true))

		state, err := dbx.ReadSchema(t.Context(), bundle.pool)
		require.NoError(t, err)
		require.Equal(t, int64(999999), state.Newest())
		require.Equal(t, schema.Version(), state.Current())
	})

	t.Run("MissingVersion", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		_, err := bundle.pool.Exec(t.Context(), "DELETE FROM goose_db_version WHERE version_id = $1", schema.Version())
		require.NoError(t, err)

		for _, allowNewer := range []bool{false, true} {
			err := dbx.CheckSchema(t.Context(), bundle.pool, allowNewer)
			require.ErrorIs(t, err, dbx.ErrSchemaMismatch)
			require.Contains(t, err.Error(), "run `svc migrate`")
		}
		state, err := dbx.ReadSchema(t.Context(), bundle.pool)
		require.NoError(t, err)
		require.Equal(t, []int64{schema.Version()}, state.Missing())
	})

	// goose records a down migration as a newer row with is_applied = false.
	t.Run("RolledBackVersionIsMissing", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		_, err := bundle.pool.Exec(t.Context(), "INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, false)", schema.Version())
		require.NoError(t, err)

		err = dbx.CheckSchema(t.Context(), bundle.pool, true)
		require.ErrorIs(t, err, dbx.ErrSchemaMismatch)
		require.Contains(t, err.Error(), "run `svc migrate`")
		state, err := dbx.ReadSchema(t.Context(), bundle.pool)
		require.NoError(t, err)
		require.Equal(t, []int64{schema.Version()}, state.Missing())
	})

	t.Run("MissingOlderButHasNewer", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		_, err := bundle.pool.Exec(t.Context(), "DELETE FROM goose_db_version WHERE version_id = $1", schema.Version())
		require.NoError(t, err)
		_, err = bundle.pool.Exec(t.Context(), "INSERT INTO goose_db_version (version_id, is_applied) VALUES (999999, true)")
		require.NoError(t, err)

		err = dbx.CheckSchema(t.Context(), bundle.pool, true)
		require.ErrorIs(t, err, dbx.ErrSchemaMismatch)
		require.Contains(t, err.Error(), "yet has newer ones")
	})
}
