package run_test

import (
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/run"
	schema "github.com/svcdev/svc/sql"
)

// An error event is `run.error`; one stored or written as `error` (by a build
// before schema version 23) reads as `run.error` too, and migration 00023
// renames the stored ones.
func TestErrorEventsReadAsRunError(t *testing.T) {
	t.Parallel()
	b := setup(t, 3)
	ctx := t.Context()
	r, err := b.svc.Start(ctx, b.caller, run.StartInput{AgentID: b.agentID, Input: "go"})
	require.NoError(t, err)
	claims, err := b.svc.Claim(ctx, "w1", 1, 30*time.Second)
	require.NoError(t, err)
	require.NoError(t, b.svc.HandOff(ctx, claims[0].Lease, 0, 0, "worker draining"))

	evs := b.events(t, r.ThreadID)
	last := evs[len(evs)-1]
	require.Equal(t, "run.error", last.Type)
	require.JSONEq(t, `{"code":"handed_off","message":"worker draining","retrying":true}`, string(last.Data))

	// An event an older replica writes.
	_, err = b.pool.Exec(ctx, `INSERT INTO thread_event (thread_id, seq, workspace_id, run_id, type, data)
		VALUES ($1, $2, $3, $4, 'error', '{"code":"attempt_failed","message":"boom","retrying":true}')`,
		r.ThreadID, last.Seq+1, b.caller.WorkspaceID, r.ID)
	require.NoError(t, err)
	evs = b.events(t, r.ThreadID)
	require.Equal(t, run.EventError, evs[len(evs)-1].Type)

	// The migration's Up renames it in the table, its Down renames both back.
	up, down := migration(t, "00023_run_error_event.sql")
	_, err = b.pool.Exec(ctx, up)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"run.error": 2}, errorTypes(t, b, r.ThreadID))
	_, err = b.pool.Exec(ctx, down)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"error": 2}, errorTypes(t, b, r.ThreadID))
	for _, e := range b.events(t, r.ThreadID)[len(evs)-2:] {
		require.Equal(t, run.EventError, e.Type)
	}
}

// migration answers the Up and Down statements of a migration file.
func migration(t *testing.T, name string) (up, down string) {
	t.Helper()
	b, err := fs.ReadFile(schema.Migrations, name)
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(b), "-- +goose Up")
	require.True(t, ok)
	up, down, ok = strings.Cut(rest, "-- +goose Down")
	require.True(t, ok)
	return up, down
}

// errorTypes counts the thread's stored events by type, for error types.
func errorTypes(t *testing.T, b *bundle, threadID string) map[string]int {
	t.Helper()
	rows, err := b.pool.Query(t.Context(),
		`SELECT type, count(*)::int FROM thread_event WHERE thread_id = $1 AND type IN ('error', 'run.error') GROUP BY type`, threadID)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var typ string
		var n int
		require.NoError(t, rows.Scan(&typ, &n))
		out[typ] = n
	}
	require.NoError(t, rows.Err())
	return out
}
