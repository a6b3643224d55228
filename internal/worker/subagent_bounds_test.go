package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strings"
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

// delegation is a workspace with a second model ("helper", served by its
// own scripted server), agents made with refs checked, and a worker with
// the subagent toolset under lim, delivering subagent results.
type delegation struct {
	*bundle
	helper *llmtest.ChatServer
	agents *agent.Service
	runs   *run.Service
}

func newDelegation(t *testing.T, mainScript, helperScript []llmtest.Turn, lim run.SubagentLimits, slots int) *delegation {
	t.Helper()
	b := setup(t, mainScript, 3)
	helper := llmtest.NewChatServer(helperScript)
	t.Cleanup(helper.Close)
	testfactory.Model(t, b.pool, testfactory.OwnerOf(b.caller), &testfactory.ModelOpts{Key: "helper", Model: "scripted-2",
		Provider: &testfactory.ProviderOpts{Name: "Helper", Config: baseURL(helper)}})
	reg, err := catalog.New(catalog.Options{})
	require.NoError(t, err)
	agents := agent.NewService(b.pool, reg, refcheck.Workspace{Types: reg})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	runs := run.NewService(b.pool, agents, skill.NewService(b.pool, refcheck.None{}), reg, run.Options{MaxAttempts: 3})
	policy := &endpoint.Policy{AllowHTTP: true, AllowedPorts: []uint16{portOf(t, b.model.URL), portOf(t, helper.URL)},
		AllowedPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	exec := worker.NewExecutor(readers(worker.ExecutorDeps{Runs: runs, Objects: b.store,
		HTTPClient: policy.HTTPClient(0), Toolsets: []tool.Toolset{subagent.New(subagent.Deps{Agents: agents, Runs: runs, Limits: lim}).ForRun}, Log: log}, b.pool, reg, nil))
	w := worker.New(b.pool, runs, exec, worker.Options{ID: "w1", Slots: slots, Lease: 30 * time.Second, Drain: time.Second, Poll: 50 * time.Millisecond}, log)
	engine := outbox.NewEngine(b.pool, config.Default().Outbox, "test", log, nil)
	engine.Register(outbox.KindSubagentResult, run.NewSubagentResults(b.pool))
	wctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- w.Run(wctx) }()
	go func() {
		for wctx.Err() == nil {
			_ = engine.Deliver(wctx)
			time.Sleep(20 * time.Millisecond)
		}
		done <- nil
	}()
	t.Cleanup(func() { cancel(); <-done; <-done })
	return &delegation{bundle: b, helper: helper, agents: agents, runs: runs}
}

// repeat is a script of n turns, each calling tool name once.
func repeat(n int, name string) []llmtest.Turn {
	out := make([]llmtest.Turn, n)
	for i := range out {
		out[i] = llmtest.Turn{Text: "Delegating.", ToolCalls: []llmtest.Call{{Name: name, Arguments: `{"task":"Do it."}`}}}
	}
	return out
}

// toolResults are the tool messages of every request server received.
func toolResults(s *llmtest.ChatServer) []string {
	var out []string
	for _, r := range s.Requests() {
		for _, m := range r.Messages {
			if m["role"] == "tool" {
				out = append(out, fmt.Sprint(m["content"]))
			}
		}
	}
	return out
}

func countContaining(texts []string, sub string) int {
	n := 0
	for _, s := range texts {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

// TestMutualDelegationIsBounded: two agents that name each other as
// subagents, with models that always delegate, start a bounded number of
// runs, never deeper than the limit; the models see the refusals as tool
// results naming the limit; and every run ends.
func TestMutualDelegationIsBounded(t *testing.T) {
	t.Parallel()
	const steps = 3
	lim := run.SubagentLimits{MaxDepth: 3, MaxLive: 8, MaxTotal: 10}
	d := newDelegation(t, repeat(steps, "agent_pong"), repeat(steps, "agent_ping"), lim, 4)
	ctx := t.Context()
	limits := fmt.Sprintf(`"limits":{"max_steps":%d}`, steps)
	ping, err := d.agents.Create(ctx, d.caller, revision.CreateInput{Name: "ping", Config: json.RawMessage(`{"model":"main",` + limits + `}`)})
	require.NoError(t, err)
	pong, err := d.agents.Create(ctx, d.caller, revision.CreateInput{Name: "pong", Config: json.RawMessage(
		`{"model":"helper",` + limits + `,"subagents":[{"agent_id":"` + ping.ID + `"}]}`)})
	require.NoError(t, err)
	// The cycle is closed by a later publish of the first agent.
	_, err = d.agents.Publish(ctx, d.caller, revision.PublishInput{HeadID: ping.ID, Config: json.RawMessage(
		`{"model":"main",` + limits + `,"subagents":[{"agent_id":"` + pong.ID + `"}]}`)})
	require.NoError(t, err)

	r, err := d.runs.Start(ctx, d.caller, run.StartInput{AgentID: ping.ID, Input: "Play."})
	require.NoError(t, err)
	d.waitRun(t, r.ID, 90*time.Second)
	require.Eventually(t, func() bool {
		var live int
		require.NoError(t, d.pool.QueryRow(ctx, `SELECT count(*) FROM run WHERE finished_at IS NULL`).Scan(&live))
		return live == 0
	}, 60*time.Second, 50*time.Millisecond, "every run ends")

	var total, deepest int
	require.NoError(t, d.pool.QueryRow(ctx, `SELECT count(*), max(depth) FROM run`).Scan(&total, &deepest))
	require.LessOrEqual(t, total, 1+lim.MaxTotal, "the root and at most its limit of descendants")
	require.Equal(t, lim.MaxDepth, deepest, "delegation went as deep as allowed, no deeper")
	var strays int
	require.NoError(t, d.pool.QueryRow(ctx, `SELECT count(*) FROM run WHERE parent_run_id IS NOT NULL AND root_run_id IS DISTINCT FROM $1`, r.ID).Scan(&strays))
	require.Zero(t, strays, "every delegated run belongs to the root's tree")

	results := append(toolResults(d.model), toolResults(d.helper)...)
	require.Positive(t, countContaining(results, "worker.subagent_max_depth"), "the deepest runs' models are told of the depth limit: %q", results)
	require.Positive(t, countContaining(results, "worker.subagent_max_descendants"), "the models are told of the total limit: %q", results)
}

// TestFanOutBeyondLiveLimit: a step asking for more subagent runs at once
// than may be unfinished starts as many as allowed; the model sees the
// others refused, naming the limit, and gets the answers of those that ran.
func TestFanOutBeyondLiveLimit(t *testing.T) {
	t.Parallel()
	calls := make([]llmtest.Call, 5)
	for i := range calls {
		calls[i] = llmtest.Call{Name: "agent_helper", Arguments: fmt.Sprintf(`{"task":"Part %d."}`, i+1)}
	}
	lim := run.SubagentLimits{MaxDepth: 4, MaxLive: 3, MaxTotal: 64}
	// One slot: the children cannot run (and end) while the parent's step
	// starts them.
	d := newDelegation(t, []llmtest.Turn{{Text: "Splitting the work.", ToolCalls: calls}, {Text: "All done."}},
		[]llmtest.Turn{{Text: "Part done."}}, lim, 1)
	ctx := t.Context()
	helper, err := d.agents.Create(ctx, d.caller, revision.CreateInput{Name: "helper", Config: json.RawMessage(`{"model":"helper"}`)})
	require.NoError(t, err)
	lead, err := d.agents.Create(ctx, d.caller, revision.CreateInput{Name: "lead", Config: json.RawMessage(
		`{"model":"main","subagents":[{"agent_id":"` + helper.ID + `"}]}`)})
	require.NoError(t, err)

	r, err := d.runs.Start(ctx, d.caller, run.StartInput{AgentID: lead.ID, Input: "Do five parts."})
	require.NoError(t, err)
	got := d.waitRun(t, r.ID, 30*time.Second)
	require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)

	var children int
	require.NoError(t, d.pool.QueryRow(ctx, `SELECT count(*) FROM run WHERE parent_run_id = $1`, r.ID).Scan(&children))
	require.Equal(t, lim.MaxLive, children)
	msgs, err := d.runs.ListMessages(ctx, d.caller, r.ThreadID, 0, 100)
	require.NoError(t, err)
	var results []string
	for _, m := range msgs {
		if m.Role == "tool" {
			results = append(results, m.Content)
		}
	}
	require.Len(t, results, 5)
	require.Equal(t, 3, countContaining(results, "Part done."), "%q", results)
	require.Equal(t, 2, countContaining(results, "worker.subagent_max_live_children"), "%q", results)
}
