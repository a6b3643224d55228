package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/app"
	"github.com/svcdev/svc/internal/testdb"
)

// TestRunWritesWhenTheDatabaseIsLost: the database goes away in the middle
// of posting an input or cancelling a run, after the request's first
// lookups succeeded; the answer is the documented 503 unavailable, and
// nothing of the request is kept.
func TestRunWritesWhenTheDatabaseIsLost(t *testing.T) {
	t.Parallel()

	type testBundle struct {
		*runsBundle
		proxy *apitest.Proxy
		// direct reaches the process's database without the proxy.
		direct *pgxpool.Pool
	}

	setup := func(t *testing.T) *testBundle {
		t.Helper()
		url := testdb.NewURL(t)
		proxy, proxied := apitest.ProxyURL(t, url)
		h := apitest.Start(t, apitest.Options{Role: app.RoleControl, DatabaseURL: proxied})
		direct, err := pgxpool.New(t.Context(), url)
		require.NoError(t, err)
		t.Cleanup(direct.Close)
		return &testBundle{runsBundle: setupRunsOn(t, h, nil), proxy: proxy, direct: direct}
	}

	count := func(t *testing.T, b *testBundle, sql string, args ...any) int {
		t.Helper()
		var n int
		require.NoError(t, b.direct.QueryRow(t.Context(), sql, args...).Scan(&n))
		return n
	}

	t.Run("PostInput", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		th := b.must(t, http.StatusCreated, http.MethodPost, "/api/v1/threads", map[string]any{"agent_id": b.agentID})
		threadID := th["id"].(string)

		// The thread is locked and the input written before the next queued
		// input is looked for.
		b.proxy.CutOn("-- name: InputNextQueued ")
		out := b.must(t, http.StatusServiceUnavailable, http.MethodPost, "/api/v1/threads/"+threadID+"/inputs", map[string]any{"content": "hello"})
		require.Equal(t, "unavailable", errorCode(t, out))
		require.Zero(t, count(t, b, "SELECT count(*) FROM thread_input WHERE thread_id = $1", threadID), "the input was not kept")
		require.Zero(t, count(t, b, "SELECT count(*) FROM run WHERE thread_id = $1", threadID), "no run started")
	})

	t.Run("CancelQueuedRun", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		r := b.startRun(t, "stop me")
		runID := r["id"].(string)

		// No attempt holds the run: it is locked, then finished at once.
		b.proxy.CutOn("-- name: RunFinish ")
		out := b.must(t, http.StatusServiceUnavailable, http.MethodPost, "/api/v1/runs/"+runID+"/cancel", nil)
		require.Equal(t, "unavailable", errorCode(t, out))
		require.Equal(t, 1, count(t, b, "SELECT count(*) FROM run WHERE id = $1 AND finished_at IS NULL", runID), "the run goes on")
	})

	t.Run("CancelRunningRun", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		r := b.startRun(t, "stop me")
		runID := r["id"].(string)
		b.claim(t)

		// An attempt holds the run: it is locked, then asked to stop.
		b.proxy.CutOn("-- name: RunRequestCancel ")
		out := b.must(t, http.StatusServiceUnavailable, http.MethodPost, "/api/v1/runs/"+runID+"/cancel", nil)
		require.Equal(t, "unavailable", errorCode(t, out))
		require.Equal(t, 1, count(t, b, "SELECT count(*) FROM run WHERE id = $1 AND cancel_requested_at IS NULL", runID), "the run was not asked to stop")
	})
}
