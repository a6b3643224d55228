package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/netip"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/refs"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/skill"
	"github.com/svcdev/svc/internal/worker"
)

// addTenant makes another workspace of b's organization whose agent's model
// is served by srv.
func (b *bundle) addTenant(t *testing.T, srv *llmtest.ChatServer) (*auth.Caller, string) {
	t.Helper()
	ctx := t.Context()
	c := *b.caller
	c.WorkspaceID = id.New(id.Workspace)
	_, err := b.pool.Exec(ctx, `INSERT INTO workspace (id, organization_id, name, created_by_id, updated_by_id)
		VALUES ($1, $2, 'noisy', $3, $3)`, c.WorkspaceID, c.OrganizationID, c.PrincipalID)
	require.NoError(t, err)
	prv := id.New(id.Provider)
	cfg, _ := json.Marshal(map[string]string{"base_url": srv.URL + "/v1"})
	_, err = b.pool.Exec(ctx, `INSERT INTO provider (id, workspace_id, kind, type, name, config, created_by_id, updated_by_id)
		VALUES ($1, $2, 'model', 'openai_compatible', 'Local', $3, $4, $4)`, prv, c.WorkspaceID, cfg, c.PrincipalID)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `INSERT INTO model (workspace_id, key, provider_id, api, model, created_by_id, updated_by_id)
		VALUES ($1, 'main', $2, 'chat_completions', 'scripted-1', $3, $3)`, c.WorkspaceID, prv, c.PrincipalID)
	require.NoError(t, err)
	head, err := agent.NewService(b.pool, b.reg, refs.None{}).Create(ctx, &c, revision.CreateInput{Name: "noisy",
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

	// The runs service the workers use, with the limit; an endpoint policy
	// that lets them reach both model servers.
	runs := run.NewService(b.pool, agent.NewService(b.pool, b.reg, refs.None{}), skill.NewService(b.pool, refs.None{}), b.reg,
		run.Options{MaxAttempts: 3, MaxRunning: 3})
	policy := &endpoint.Policy{AllowHTTP: true, AllowedPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	for _, u := range []string{b.model.URL, hang.URL} {
		pu, err := url.Parse(u)
		require.NoError(t, err)
		port, err := strconv.ParseUint(pu.Port(), 10, 16)
		require.NoError(t, err)
		policy.AllowedPorts = append(policy.AllowedPorts, uint16(port))
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	exec := worker.NewExecutor(worker.ExecutorDeps{Pool: b.pool, Runs: runs, Keyring: b.ring, Objects: b.store, Types: b.reg,
		HTTPClient: policy.HTTPClient(0), Log: log})
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
