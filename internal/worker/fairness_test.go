package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/refcheck"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/skill"
	"github.com/svcdev/svc/internal/testfactory"
	"github.com/svcdev/svc/internal/worker"
)

// addTenant makes another workspace of b's organization whose agent's model
// is served by srv.
func (b *bundle) addTenant(t testing.TB, srv *llmtest.ChatServer) (*auth.Caller, string) {
	t.Helper()
	ctx := t.Context()
	c := *b.caller
	c.WorkspaceID = testfactory.Workspace(t, b.pool, c.OrganizationID, c.PrincipalID, &testfactory.WorkspaceOpts{Name: "noisy"}).ID
	testfactory.Model(t, b.pool, testfactory.OwnerOf(&c), &testfactory.ModelOpts{Model: "scripted-1", Provider: &testfactory.ProviderOpts{Config: baseURL(srv)}})
	head, err := agent.NewService(b.pool, b.reg, refcheck.None{}).Create(ctx, &c, revision.CreateInput{Name: "noisy",
		Config: json.RawMessage(`{"model":"main"}`)})
	require.NoError(t, err)
	return &c, head.ID
}

// TestNoisyWorkspaceDoesNotStarveAnother: a noisy workspace's runs hang
// (their model never answers) and more of them wait; with
// worker.workspace_max_running 3 they hold 3 slots of the two workers
// together (4 slots each), never more, and another workspace's trivial
// run, accepted after all of them, is claimed at once and finishes within
// 2 s. With one global line, oldest first, and no limit, the noisy runs took
// every slot and the other run waited for them to end.
func TestNoisyWorkspaceDoesNotStarveAnother(t *testing.T) {
	t.Parallel()
	b := setup(t, []llmtest.Turn{{Text: "Done."}}, 3)
	ctx := t.Context()
	hang := llmtest.NewChatServer([]llmtest.Turn{{Text: "never", Chunks: 2, ChunkDelay: time.Minute}})
	t.Cleanup(hang.Close)
	noisy, noisyAgent := b.addTenant(t, hang)

	runs, exec := b.limitedRuns(t, 3, hang)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	const interval = time.Second // the application's claim interval
	workers := make([]*worker.Worker, 2)
	for i := range workers {
		workers[i] = worker.New(b.pool, runs, exec, worker.Options{ID: "w" + strconv.Itoa(i), Slots: 4, Lease: 30 * time.Second,
			Drain: 100 * time.Millisecond, Poll: interval}, log)
		wctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- workers[i].Run(wctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	active := func() int { return workers[0].Active() + workers[1].Active() }

	for range 8 {
		_, err := runs.Start(ctx, noisy, run.StartInput{AgentID: noisyAgent, Input: "hang"})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return len(hang.Requests()) == 3 }, 10*time.Second, 10*time.Millisecond,
		"the noisy workspace's runs reach its limit")
	time.Sleep(2 * interval) // both workers polled again with free slots
	require.Equal(t, 3, active(), "the limit holds over both workers")
	require.Len(t, hang.Requests(), 3)

	r, err := runs.Start(ctx, b.caller, run.StartInput{AgentID: b.agentID, Input: "hi"})
	require.NoError(t, err)
	got := b.waitRun(t, r.ID, 2*time.Second)
	require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
	require.NotNil(t, got.StartedAt)
	require.Less(t, got.StartedAt.Sub(got.CreatedAt), interval, "claimed within one claim interval")
	require.Less(t, got.FinishedAt.Sub(got.CreatedAt), 2*time.Second)

	var leased, accepted int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE lease_expires_at IS NOT NULL), count(*) FILTER (WHERE status = 'accepted')
		FROM run WHERE workspace_id = $1`, noisy.WorkspaceID).Scan(&leased, &accepted))
	require.Equal(t, 3, leased)
	require.Equal(t, 5, accepted, "the noisy workspace's other runs stay accepted")
}

// limitedRuns is a runs service with worker.workspace_max_running
// maxRunning, and an executor on it whose client reaches b's model server
// and the others.
func (b *bundle) limitedRuns(t testing.TB, maxRunning int, others ...*llmtest.ChatServer) (*run.Service, *worker.Executor) {
	t.Helper()
	runs := run.NewService(b.pool, agent.NewService(b.pool, b.reg, refcheck.None{}), skill.NewService(b.pool, refcheck.None{}), b.reg,
		run.Options{MaxAttempts: 3, MaxRunning: maxRunning})
	policy := &endpoint.Policy{AllowHTTP: true, AllowedPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	for _, srv := range append([]*llmtest.ChatServer{b.model}, others...) {
		pu, err := url.Parse(srv.URL)
		require.NoError(t, err)
		port, err := strconv.ParseUint(pu.Port(), 10, 16)
		require.NoError(t, err)
		policy.AllowedPorts = append(policy.AllowedPorts, uint16(port))
	}
	exec := worker.NewExecutor(readers(worker.ExecutorDeps{Runs: runs, Objects: b.store,
		HTTPClient: policy.HTTPClient(0), Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, b.pool, b.reg, b.ring))
	return runs, exec
}

// BenchmarkNoisyNeighbour: a noisy workspace's runs hang at its
// worker.workspace_max_running (3) on a worker of 4 slots, with 100 more
// waiting; each iteration starts another workspace's trivial run (one
// model call answered at once) and waits for it to finish. Reported: how
// long after acceptance it was claimed, and finished (p50 and max), with
// the application's 1 s claim interval.
func BenchmarkNoisyNeighbour(b *testing.B) {
	env := setup(b, []llmtest.Turn{{Text: "Done."}}, 3)
	ctx := context.Background()
	hang := llmtest.NewChatServer([]llmtest.Turn{{Text: "never", Chunks: 2, ChunkDelay: time.Hour}})
	b.Cleanup(hang.Close)
	noisy, noisyAgent := env.addTenant(b, hang)
	runs, exec := env.limitedRuns(b, 3, hang)
	w := worker.New(env.pool, runs, exec, worker.Options{ID: "bench", Slots: 4, Lease: 30 * time.Second,
		Drain: 100 * time.Millisecond, Poll: time.Second}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	b.Cleanup(func() { cancel(); <-done })
	for range 103 {
		_, err := runs.Start(ctx, noisy, run.StartInput{AgentID: noisyAgent, Input: "hang"})
		require.NoError(b, err)
	}
	require.Eventually(b, func() bool { return len(hang.Requests()) == 3 }, 30*time.Second, 10*time.Millisecond)
	var claimed, finished []time.Duration
	b.ResetTimer()
	for range b.N {
		r, err := runs.Start(ctx, env.caller, run.StartInput{AgentID: env.agentID, Input: "hi"})
		require.NoError(b, err)
		var got run.Run
		require.Eventually(b, func() bool {
			got, err = runs.GetRun(ctx, env.caller, r.ID)
			require.NoError(b, err)
			return got.Status.Finished()
		}, 30*time.Second, 5*time.Millisecond)
		require.Equal(b, run.StatusSucceeded, got.Status)
		claimed = append(claimed, got.StartedAt.Sub(got.CreatedAt))
		finished = append(finished, got.FinishedAt.Sub(got.CreatedAt))
	}
	b.StopTimer()
	require.Len(b, hang.Requests(), 3, "no more noisy runs started: they hang at their limit")
	b.ReportMetric(ms(pct(claimed, 50)), "claimed-p50-ms")
	b.ReportMetric(ms(slices.Max(claimed)), "claimed-max-ms")
	b.ReportMetric(ms(pct(finished, 50)), "finished-p50-ms")
	b.ReportMetric(ms(slices.Max(finished)), "finished-max-ms")
}
