package idempotency

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/testdb"
)

func TestPurgeDeletesOnlyExpiredRecords(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	// Records expired at a chosen moment are written directly: the
	// middleware writes them only around requests, expiring in the future.
	insert := func(state, expires string) string {
		t.Helper()
		rid := id.New(idPrefix)
		_, err := pool.Exec(context.Background(),
			`INSERT INTO idempotency_key (id, workspace_id, principal_id, method, route, key_hash, fingerprint, state, status, response, expires_at)
			 VALUES ($1, 'ws_x', 'pri_x', 'POST', '/r', convert_to($1, 'UTF8'), '\x00', $2,
			         CASE WHEN $2 = 'completed' THEN 201 END, CASE WHEN $2 = 'completed' THEN '\x01'::bytea END, `+expires+`)`,
			rid, state)
		require.NoError(t, err)
		return rid
	}
	const past, future = "now() - interval '1 second'", "now() + interval '1 hour'"
	// Three expired records (one more than the batch), and two live ones.
	for _, state := range []string{"completed", "completed", "in_progress"} {
		insert(state, past)
	}
	keep := []string{insert("completed", future), insert("in_progress", future)}

	n, err := purge(t.Context(), pool, 2)
	require.NoError(t, err)
	require.EqualValues(t, 3, n)

	rows, err := pool.Query(t.Context(), "SELECT id FROM idempotency_key ORDER BY id")
	require.NoError(t, err)
	var left []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		left = append(left, s)
	}
	require.NoError(t, rows.Err())
	require.ElementsMatch(t, keep, left)

	n, err = Purge(t.Context(), pool)
	require.NoError(t, err)
	require.Zero(t, n, "nothing else is expired")
}
