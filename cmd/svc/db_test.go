package main

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	schema "github.com/svcdev/svc/sql"
)

// migrationLockID is the advisory lock svc takes while migrating ("svc_migr").
const migrationLockID int64 = 0x7376635f6d696772

// connect opens a connection to url, closed when the test ends.
func connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// publicTables lists the tables of the public schema of the database at url.
func publicTables(t testing.TB, url string) []string {
	t.Helper()
	conn := connect(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := conn.Query(ctx, "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1")
	require.NoError(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return names
}

// requireEmptyDatabase asserts that nothing created a table in the database.
func requireEmptyDatabase(t testing.TB, url string) {
	t.Helper()
	require.Empty(t, publicTables(t, url), "the database must still be empty")
}

// gooseVersionCounts returns how many goose_db_version rows each version has.
func gooseVersionCounts(t testing.TB, url string) map[int64]int {
	t.Helper()
	conn := connect(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := conn.Query(ctx, "SELECT version_id, count(*)::int FROM goose_db_version GROUP BY version_id ORDER BY version_id")
	require.NoError(t, err)
	counts := map[int64]int{}
	var v int64
	var n int
	_, err = pgx.ForEachRow(rows, []any{&v, &n}, func() error {
		counts[v] = n
		return nil
	})
	require.NoError(t, err)
	return counts
}

// requireMigratedOnce asserts that goose recorded each embedded version exactly
// once and nothing else (version 0 is goose's own initial row).
func requireMigratedOnce(t testing.TB, url string) {
	t.Helper()
	counts := gooseVersionCounts(t, url)
	want := map[int64]int{}
	for _, v := range schema.Versions() {
		want[v] = 1
	}
	if n, ok := counts[0]; ok {
		require.Equal(t, 1, n, "goose's version 0 row appears once")
		want[0] = 1
	}
	require.Equal(t, want, counts, "goose_db_version rows per version")
}

// waitLockWaiters waits until n sessions wait for an advisory lock in conn's
// database. It fails at once when ended reports that a process finished: none may
// while the test holds the migration lock.
func waitLockWaiters(t *testing.T, conn *pgx.Conn, n int, ended func() bool) {
	t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for {
		var waiting int
		require.NoError(t, conn.QueryRow(context.Background(), `
			SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
			WHERE d.datname = current_database() AND l.locktype = 'advisory' AND NOT l.granted`).Scan(&waiting))
		if waiting == n {
			return
		}
		if ended() {
			t.Fatalf("a process finished while the test held the migration lock (%d of %d waited for it)", waiting, n)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d processes wait for the migration lock after %s", waiting, n, readyTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
