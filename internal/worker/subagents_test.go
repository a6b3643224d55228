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
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/refcheck"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/skill"
	"github.com/svcdev/svc/internal/testfactory"
	"github.com/svcdev/svc/internal/tool"
	"github.com/svcdev/svc/internal/tool/subagent"
	"github.com/svcdev/svc/internal/worker"
)

// TestSubagentResultReturnsToParent: the parent's call starts a child run of
// another agent and the parent gives its slot up; the child's answer comes
// back through a subagent_result delivery and the parent continues with it.
// One slot is enough: the waiting parent holds none.
func TestSubagentResultReturnsToParent(t *testing.T) {
	t.Parallel()
	parentScript := []llmtest.Turn{
		{Text: "Asking the researcher.", ToolCalls: []llmtest.Call{{Name: "agent_researcher", Arguments: `{"task":"What is the answer?"}`}}},
		{Text: "The researcher says 42."},
	}
	b := setup(t, parentScript, 3)
	ctx := t.Context()
	child := llmtest.NewChatServer([]llmtest.Turn{{Text: "The answer is 42."}})
	t.Cleanup(child.Close)
	testfactory.Model(t, b.pool, testfactory.OwnerOf(b.caller), &testfactory.ModelOpts{Key: "helper", Model: "scripted-2",
		Provider: &testfactory.ProviderOpts{Name: "Child", Config: baseURL(child)}})
	reg, err := catalog.New(catalog.Options{})
	require.NoError(t, err)
	agents := agent.NewService(b.pool, reg, refcheck.Workspace{Types: reg})
	researcher, err := agents.Create(ctx, b.caller, revision.CreateInput{Name: "Researcher", Config: json.RawMessage(`{"model":"helper"}`)})
	require.NoError(t, err)
	lead, err := agents.Create(ctx, b.caller, revision.CreateInput{Name: "lead",
		Config: json.RawMessage(`{"model":"main","subagents":[{"agent_id":"` + researcher.ID + `"}]}`)})
	require.NoError(t, err)

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	runs := run.NewService(b.pool, agents, skill.NewService(b.pool, refcheck.None{}), reg, run.Options{MaxAttempts: 3})
	policy := &endpoint.Policy{AllowHTTP: true, AllowedPorts: []uint16{portOf(t, b.model.URL), portOf(t, child.URL)},
		AllowedPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	exec := worker.NewExecutor(readers(worker.ExecutorDeps{Runs: runs, Objects: b.store,
		HTTPClient: policy.HTTPClient(0), Toolsets: []tool.Toolset{subagent.New(subagent.Deps{Agents: agents, Runs: runs, Limits: run.SubagentLimits{MaxDepth: 4, MaxLive: 8, MaxTotal: 64}}).ForRun}, Log: log}, b.pool, reg, nil))
	w := worker.New(b.pool, runs, exec, worker.Options{ID: "w1", Slots: 1, Lease: 30 * time.Second, Drain: time.Second, Poll: 50 * time.Millisecond}, log)
	engine := outbox.NewEngine(b.pool, config.Default().Outbox, "test", log, nil)
	engine.Register(outbox.KindSubagentResult, run.NewSubagentResults(b.pool))
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 2)
	go func() { done <- w.Run(wctx) }()
	go func() {
		for wctx.Err() == nil {
			_ = engine.Deliver(wctx)
			time.Sleep(50 * time.Millisecond)
		}
		done <- nil
	}()
	defer func() { cancel(); <-done; <-done }()

	r, err := runs.Start(ctx, b.caller, run.StartInput{AgentID: lead.ID, Input: "Find the answer."})
	require.NoError(t, err)
	got := b.waitRun(t, r.ID, 15*time.Second)
	require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)

	msgs, err := runs.ListMessages(ctx, b.caller, r.ThreadID, 0, 100)
	require.NoError(t, err)
	var shape []string
	for _, m := range msgs {
		shape = append(shape, m.Role+":"+m.Content)
	}
	require.Equal(t, []string{"user:Find the answer.", "assistant:Asking the researcher.", "tool:The answer is 42.", "assistant:The researcher says 42."}, shape)

	var childID, childStatus string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT id, status FROM run WHERE parent_run_id = $1`, r.ID).Scan(&childID, &childStatus))
	require.Equal(t, "succeeded", childStatus)
	atts, err := runs.ListAttempts(ctx, b.caller, r.ID)
	require.NoError(t, err)
	require.Len(t, atts, 2, "the parent gave its slot up while it waited")
	require.Equal(t, "handed_off", atts[0].Status)
	require.False(t, atts[0].Charged)
	require.EqualValues(t, 1, got.AttemptsUsed)
}

func portOf(t *testing.T, raw string) uint16 {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	p, err := strconv.ParseUint(u.Port(), 10, 16)
	require.NoError(t, err)
	return uint16(p)
}
