package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/testdb"
	schema "github.com/svcdev/svc/sql"
)

// migrateReport is what migrate prints on stdout.
type migrateReport struct {
	SchemaVersion   int64   `json:"schema_version"`
	DatabaseVersion int64   `json:"database_version"`
	Applied         []int64 `json:"applied"`
	Match           bool    `json:"match"`
}

func parseMigrateReport(t testing.TB, r result) migrateReport {
	t.Helper()
	var rep migrateReport
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&rep), "%s", r)
	require.False(t, dec.More(), "one JSON value on stdout: %s", r)
	require.NotNil(t, rep.Applied, "applied is a list, never null: %s", r)
	require.Equal(t, schema.Version(), rep.SchemaVersion, "%s", r)
	return rep
}

// TestMigrateEmptyDatabase: --check changes nothing and fails on an empty
// database; migrate applies every version once; later runs find nothing to do.
func TestMigrateEmptyDatabase(t *testing.T) {
	t.Parallel()
	url := testdb.Empty(t)
	vars := dbVars(url)

	r := runSvc(t, vars, "migrate", "--check")
	require.Equal(t, 1, r.code, "%s", r)
	require.Contains(t, r.stderr, "run `svc migrate`", "%s", r)
	rep := parseMigrateReport(t, r)
	require.False(t, rep.Match, "%s", r)
	require.Zero(t, rep.DatabaseVersion, "%s", r)
	require.Empty(t, rep.Applied, "%s", r)
	requireEmptyDatabase(t, url)

	r = runSvc(t, vars, "migrate")
	require.Equal(t, 0, r.code, "%s", r)
	rep = parseMigrateReport(t, r)
	require.Equal(t, schema.Versions(), rep.Applied, "%s", r)
	require.True(t, rep.Match, "%s", r)
	require.Equal(t, schema.Version(), rep.DatabaseVersion, "%s", r)
	require.Equal(t, len(schema.Versions()), countRecords(r.stderr, "migration applied"), "%s", r)
	requireMigratedOnce(t, url)

	r = runSvc(t, vars, "migrate", "--check")
	require.Equal(t, 0, r.code, "%s", r)
	rep = parseMigrateReport(t, r)
	require.True(t, rep.Match, "%s", r)
	require.Empty(t, rep.Applied, "%s", r)

	r = runSvc(t, vars, "migrate")
	require.Equal(t, 0, r.code, "%s", r)
	rep = parseMigrateReport(t, r)
	require.Empty(t, rep.Applied, "a second migrate applies nothing: %s", r)
	require.True(t, rep.Match, "%s", r)
	require.Zero(t, countRecords(r.stderr, "migration applied"), "%s", r)
	requireMigratedOnce(t, url)
}

// TestConcurrentStartMigratesOnce: migrate commands and
// control replicas started together against one empty database migrate it once,
// the others wait for the migration lock, and every one of them passes the schema
// check.
func TestConcurrentStartMigratesOnce(t *testing.T) {
	t.Parallel()
	t.Run("started together", func(t *testing.T) {
		t.Parallel()
		concurrentStart(t, false)
	})
	// Process start-up times vary, so processes started together may not overlap.
	// Holding the lock until every process waits for it makes them all contend.
	t.Run("queued behind the migration lock", func(t *testing.T) {
		t.Parallel()
		concurrentStart(t, true)
	})
}

func concurrentStart(t *testing.T, holdLock bool) {
	const migrators, controls = 4, 2
	url := testdb.Empty(t)
	keyRings := make([]string, controls)
	for i := range keyRings {
		keyRings[i] = newKeyRing(t)
	}
	var holder *pgx.Conn
	if holdLock {
		holder = connect(t, url)
		_, err := holder.Exec(context.Background(), "SELECT pg_advisory_lock($1)", migrationLockID)
		require.NoError(t, err)
	}

	var (
		wg      sync.WaitGroup
		results = make([]result, migrators)
		errs    = make([]error, migrators)
		procs   = make([]*process, controls)
		gate    = make(chan struct{})
		ended   atomic.Int32 // migrate commands that finished
	)
	for i := range migrators {
		dir := t.TempDir()
		wg.Go(func() {
			<-gate
			results[i], errs[i] = execSvc(dir, commandTimeout, dbVars(url), "migrate")
			ended.Add(1)
		})
	}
	for i := range procs {
		procs[i] = startSvc(t, runVars(t, url, keyRings[i]), "run", "--role", "control")
	}
	close(gate)

	if holdLock {
		waitLockWaiters(t, holder, migrators+controls, func() bool {
			if ended.Load() > 0 {
				return true
			}
			for _, p := range procs {
				if p.exited() {
					return true
				}
			}
			return false
		})
		var unlocked bool
		require.NoError(t, holder.QueryRow(context.Background(), "SELECT pg_advisory_unlock($1)", migrationLockID).Scan(&unlocked))
		require.True(t, unlocked)
	}
	wg.Wait()

	var stderrs []string
	for i, r := range results {
		require.NoError(t, errs[i])
		require.Equal(t, 0, r.code, "%s", r)
		rep := parseMigrateReport(t, r)
		require.True(t, rep.Match, "%s", r)
		stderrs = append(stderrs, r.stderr)
	}
	for _, p := range procs {
		addr := p.waitReady()
		p.waitReadyz(addr)
		stderrs = append(stderrs, p.stderr.String())
	}
	applied := 0
	for _, s := range stderrs {
		applied += countRecords(s, "migration applied")
	}
	require.Equal(t, len(schema.Versions()), applied, "each migration is applied by exactly one process")
	requireMigratedOnce(t, url)

	for _, p := range procs {
		p.signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		require.Equal(t, 0, p.wait(stopTimeout), "exit code after SIGTERM")
	}
}

// TestSchemaMismatchRefusesToStart: a process whose build does not match the
// database's schema refuses to start, tells the operator to migrate, and changes
// nothing; only all and control migrate, and only when auto_migrate is on.
func TestSchemaMismatchRefusesToStart(t *testing.T) {
	t.Parallel()
	keyRing := newKeyRing(t)

	empty := []struct {
		name string
		role string
		vars map[string]string
	}{
		{"worker never migrates", "worker", nil},
		{"control without auto_migrate", "control", map[string]string{"SVC_DATABASE__AUTO_MIGRATE": "false"}},
		{"all without auto_migrate", "all", map[string]string{"SVC_DATABASE__AUTO_MIGRATE": "false"}},
	}
	for _, tc := range empty {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := testdb.Empty(t)
			vars := runVars(t, url, keyRing)
			for k, v := range tc.vars {
				vars[k] = v
			}
			r := runSvcWithin(t, refuseTimeout, vars, "run", "--role", tc.role)
			require.Equal(t, 1, r.code, "%s", r)
			require.Less(t, r.elapsed, 5*time.Second, "refuses quickly: %s", r)
			require.Contains(t, r.stderr, "run `svc migrate`", "%s", r)
			require.Empty(t, r.stdout, "%s", r)
			require.NotContains(t, r.stderr, "svc ready", "%s", r)
			requireEmptyDatabase(t, url)
		})
	}

	t.Run("schema newer than the build", func(t *testing.T) {
		t.Parallel()
		url := testdb.NewURL(t)
		conn := connect(t, url)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := conn.Exec(ctx, "INSERT INTO goose_db_version (version_id, is_applied) VALUES (999999, true)")
		require.NoError(t, err)
		before := gooseVersionCounts(t, url)

		for _, role := range []string{"worker", "control"} {
			r := runSvcWithin(t, refuseTimeout, runVars(t, url, keyRing), "run", "--role", role)
			require.Equal(t, 1, r.code, "%s", r)
			require.Contains(t, r.stderr, "999999", "names the database's version: %s", r)
			require.NotContains(t, r.stderr, "svc ready", "%s", r)
		}

		r := runSvc(t, dbVars(url), "migrate", "--check")
		require.Equal(t, 1, r.code, "%s", r)
		rep := parseMigrateReport(t, r)
		require.False(t, rep.Match, "%s", r)
		require.Equal(t, int64(999999), rep.DatabaseVersion, "%s", r)

		r = runSvc(t, dbVars(url), "migrate")
		require.Equal(t, 1, r.code, "an older build never touches a newer schema: %s", r)
		require.Equal(t, before, gooseVersionCounts(t, url), "nothing changed")
	})
}

// TestMigrationLockTimeout: migrate waits for the migration lock at most
// database.migration_advisory_lock_timeout, says which setting bounds the wait,
// and succeeds once the lock is free.
func TestMigrationLockTimeout(t *testing.T) {
	t.Parallel()
	url := testdb.Empty(t)
	holder := connect(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := holder.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLockID)
	require.NoError(t, err)

	vars := dbVars(url)
	vars["SVC_DATABASE__MIGRATION_ADVISORY_LOCK_TIMEOUT"] = "500ms"
	r := runSvc(t, vars, "migrate")
	require.Equal(t, 1, r.code, "%s", r)
	require.Less(t, r.elapsed, 3*time.Second, "%s", r)
	require.GreaterOrEqual(t, r.elapsed, 500*time.Millisecond, "waited for the lock: %s", r)
	require.Contains(t, r.stderr, "database.migration_advisory_lock_timeout", "%s", r)
	requireEmptyDatabase(t, url)

	var unlocked bool
	require.NoError(t, holder.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", migrationLockID).Scan(&unlocked))
	require.True(t, unlocked)

	r = runSvc(t, vars, "migrate")
	require.Equal(t, 0, r.code, "%s", r)
	rep := parseMigrateReport(t, r)
	require.Equal(t, schema.Versions(), rep.Applied, "%s", r)
	requireMigratedOnce(t, url)
}
