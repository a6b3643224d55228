package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/refcheck"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/testfactory"
	"github.com/svcdev/svc/internal/tool"
	"github.com/svcdev/svc/internal/tool/subagent"
	"github.com/svcdev/svc/internal/worker"
)

// spellTool is a second tool of the approval tests, which the policies
// leave allowed: it answers its word spelled out.
func spellTool(calls *atomic.Int32) tool.Toolset {
	return func(context.Context, tool.RunContext) ([]tool.Tool, error) {
		return []tool.Tool{{
			Def: llm.Tool{Name: "spell", Description: "Spells a word.", Parameters: json.RawMessage(`{"type":"object"}`)},
			Call: func(_ context.Context, args json.RawMessage) (tool.Result, error) {
				calls.Add(1)
				return tool.Result{Text: "spelled " + string(args)}, nil
			},
		}}, nil
	}
}

// askScript calls lookup (which the policy holds) and spell (allowed) in
// one step, then answers.
var askScript = []llmtest.Turn{
	{Text: "Looking.", ToolCalls: []llmtest.Call{{Name: "lookup", Arguments: `{"word":"banana"}`}, {Name: "spell", Arguments: `{"word":"fig"}`}}},
	{Text: "Done."},
}

// approvalAgent is an agent of b's workspace on its model whose tool
// policy is policy (JSON).
func approvalAgent(t testing.TB, b *bundle, policy string) string {
	t.Helper()
	agents := agent.NewService(b.pool, b.reg, refcheck.None{})
	head, err := agents.Create(t.Context(), b.caller, revision.CreateInput{Name: "careful",
		Config: json.RawMessage(`{"model":"main","limits":{"max_steps":5},"tool_policy":` + policy + `}`)})
	require.NoError(t, err)
	return head.ID
}

// approvalWorker runs, until stopped, a worker of one slot over b with the
// lookup and spell tools; stop waits for it to end.
func approvalWorker(t *testing.T, b *bundle, name string, spelled *atomic.Int32) (stop func()) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	exec := worker.NewExecutor(readers(worker.ExecutorDeps{Runs: b.runs, Objects: b.store, HTTPClient: b.policy.HTTPClient(0), Log: log,
		Toolsets: []tool.Toolset{lookupTool(b.calls), spellTool(spelled)}}, b.pool, b.reg, b.ring))
	w := worker.New(b.pool, b.runs, exec, worker.Options{ID: name, Slots: 1, Lease: 30 * time.Second, Drain: time.Second, Poll: 50 * time.Millisecond}, log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once atomic.Bool
	stop = func() {
		if once.CompareAndSwap(false, true) {
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}

// waitStatus waits for run runID to have status.
func (b *bundle) waitStatus(t *testing.T, runID string, status run.Status, within time.Duration) run.Run {
	t.Helper()
	var r run.Run
	require.Eventually(t, func() bool {
		var err error
		r, err = b.runs.GetRun(context.Background(), b.caller, runID)
		require.NoError(t, err)
		return r.Status == status
	}, within, 20*time.Millisecond, "run %s is not %s", runID, status)
	return r
}

// waitingCall starts a run of agentID and waits until it waits for a
// person, answering the run and its one pending call.
func waitingCall(t *testing.T, b *bundle, agentID string) (run.Run, run.Approval) {
	t.Helper()
	r, err := b.runs.Start(t.Context(), b.caller, run.StartInput{AgentID: agentID, Input: "How long is banana?"})
	require.NoError(t, err)
	r = b.waitStatus(t, r.ID, run.StatusWaiting, 10*time.Second)
	pending, err := b.runs.PendingApprovals(t.Context(), b.caller, r.ID)
	require.NoError(t, err)
	require.Len(t, pending, 1)
	require.Equal(t, "lookup", pending[0].Name)
	require.JSONEq(t, `{"word":"banana"}`, pending[0].Arguments)
	return r, pending[0]
}

// toolMessages are the tool messages of a thread.
func toolMessages(t *testing.T, b *bundle, threadID string) []run.Message {
	t.Helper()
	msgs, err := b.runs.ListMessages(t.Context(), b.caller, threadID, 0, 100)
	require.NoError(t, err)
	var out []run.Message
	for _, m := range msgs {
		if m.Role == "tool" {
			out = append(out, m)
		}
	}
	return out
}

func eventTypes(t *testing.T, b *bundle, threadID string) []string {
	t.Helper()
	evs, err := b.runs.Events(t.Context(), b.caller, threadID, 0, 1000)
	require.NoError(t, err)
	var out []string
	for _, e := range evs {
		if e.Type != run.EventMessageDelta {
			out = append(out, e.Type)
		}
	}
	return out
}

// TestApprovalApprovedRunsTheCall: the held call waits while the step's
// other call runs; the run gives its slot and lease up and shows waiting;
// once approved, it is claimed again and the call runs.
func TestApprovalApprovedRunsTheCall(t *testing.T) {
	t.Parallel()
	forVendors(t, func(t *testing.T, v vendor) {
		b := setupOn(t, v, askScript, 3)
		agentID := approvalAgent(t, b, `{"tools":{"lookup":"ask"}}`)
		spelled := &atomic.Int32{}
		approvalWorker(t, b, "w1", spelled)

		r, call := waitingCall(t, b, agentID)
		require.EqualValues(t, 1, spelled.Load(), "the step's other call ran")
		require.Zero(t, b.calls.Load(), "the held call did not run")
		var leased bool
		require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT lease_attempt_id IS NOT NULL FROM run WHERE id = $1`, r.ID).Scan(&leased))
		require.False(t, leased, "a waiting run holds no lease")
		require.Contains(t, eventTypes(t, b, r.ThreadID), run.EventApprovalRequested)
		page, err := b.runs.ListWaiting(t.Context(), b.caller, nil, nil)
		require.NoError(t, err)
		require.Len(t, page.Items, 1)
		require.Equal(t, r.ID, page.Items[0].Run.ID)
		require.Len(t, page.Items[0].Pending, 1)

		a, err := b.runs.DecideApproval(t.Context(), b.caller, r.ID, run.DecideInput{CallID: call.CallID, Decision: run.DecisionApprove})
		require.NoError(t, err)
		require.Equal(t, run.ApprovalApproved, a.Status)
		require.Equal(t, b.caller.PrincipalID, *a.DecidedByID)

		got := b.waitRun(t, r.ID, 10*time.Second)
		require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
		require.EqualValues(t, 1, b.calls.Load())
		require.EqualValues(t, 1, spelled.Load(), "the call that ran is not run again")
		tools := toolMessages(t, b, r.ThreadID)
		require.Len(t, tools, 2)
		require.Equal(t, "banana has 6 letters", tools[0].Content)
		require.True(t, strings.HasPrefix(tools[1].Content, "spelled "))
		reqs := b.model.Requests()
		sent := toolContents(reqs[len(reqs)-1])
		require.Len(t, sent, 2, "the model reads both results of the step")
		require.Equal(t, "banana has 6 letters", sent[0])
		types := eventTypes(t, b, r.ThreadID)
		require.Contains(t, types, run.EventApprovalDecided)
		var audits int
		require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT count(*) FROM audit_event WHERE action = 'run.approval_approved' AND subject_id = $1 AND actor_id = $2`,
			r.ID, b.caller.PrincipalID).Scan(&audits))
		require.Equal(t, 1, audits)

		// Decided once: a second decision is refused.
		_, err = b.runs.DecideApproval(t.Context(), b.caller, r.ID, run.DecideInput{CallID: call.CallID, Decision: run.DecisionDeny})
		require.Equal(t, apperr.KindConflict, apperr.KindOf(err), "%v", err)
		_, err = b.runs.DecideApproval(t.Context(), b.caller, r.ID, run.DecideInput{CallID: "call_nothing", Decision: run.DecisionApprove})
		require.Equal(t, apperr.KindConflict, apperr.KindOf(err), "%v", err)
	})
}

// TestApprovalDeniedTellsTheModel: a denied call does not run and the
// model reads that a person denied it, with their message.
func TestApprovalDeniedTellsTheModel(t *testing.T) {
	t.Parallel()
	forVendors(t, func(t *testing.T, v vendor) {
		b := setupOn(t, v, askScript, 3)
		agentID := approvalAgent(t, b, `{"toolsets":{},"tools":{"lookup":"ask"}}`)
		approvalWorker(t, b, "w1", &atomic.Int32{})
		r, call := waitingCall(t, b, agentID)

		_, err := b.runs.DecideApproval(t.Context(), b.caller, r.ID, run.DecideInput{CallID: call.CallID, Decision: run.DecisionDeny, Message: "not on a Sunday"})
		require.NoError(t, err)
		got := b.waitRun(t, r.ID, 10*time.Second)
		require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
		require.Zero(t, b.calls.Load())
		tools := toolMessages(t, b, r.ThreadID)
		require.Equal(t, "the call was not run: a person denied it, saying: not on a Sunday", tools[0].Content)
		require.True(t, tools[0].IsError)
		reqs := b.model.Requests()
		require.Contains(t, toolContents(reqs[len(reqs)-1]), "the call was not run: a person denied it, saying: not on a Sunday")
	})
}

// toolContents are the contents of the tool results of a model request.
func toolContents(req llmtest.Request) []string {
	var out []string
	for _, m := range req.Conversation() {
		if m.Role == "tool" {
			out = append(out, m.Text)
		}
	}
	return out
}

// TestDenyPolicyNeverRunsTheTool: a tool the policy denies is never
// called; the model is told, and the run does not wait.
func TestDenyPolicyNeverRunsTheTool(t *testing.T) {
	t.Parallel()
	forVendors(t, func(t *testing.T, v vendor) {
		b := setupOn(t, v, askScript, 3)
		agentID := approvalAgent(t, b, `{"tools":{"lookup":"deny"}}`)
		approvalWorker(t, b, "w1", &atomic.Int32{})
		r, err := b.runs.Start(t.Context(), b.caller, run.StartInput{AgentID: agentID, Input: "How long is banana?"})
		require.NoError(t, err)
		got := b.waitRun(t, r.ID, 10*time.Second)
		require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
		require.Zero(t, b.calls.Load())
		require.NotContains(t, eventTypes(t, b, r.ThreadID), run.EventApprovalRequested)
		reqs := b.model.Requests()
		require.Contains(t, toolContents(reqs[1]), `the call was not run: the agent's tool policy denies the tool "lookup"`)
	})
}

// TestApprovalTimeout: a call nobody decides on is denied when its
// timeout passes (on_timeout deny), or fails its run (fail).
func TestApprovalTimeout(t *testing.T) {
	t.Parallel()
	t.Run("deny", func(t *testing.T) {
		forVendors(t, func(t *testing.T, v vendor) {
			b := setupOn(t, v, askScript, 3)
			agentID := approvalAgent(t, b, `{"tools":{"lookup":"ask"},"approval_timeout_seconds":1,"on_timeout":"deny"}`)
			approvalWorker(t, b, "w1", &atomic.Int32{})
			r, _ := waitingCall(t, b, agentID)
			n, err := b.runs.ExpireApprovals(t.Context())
			require.NoError(t, err)
			require.Zero(t, n, "not yet")
			time.Sleep(1100 * time.Millisecond)
			n, err = b.runs.ExpireApprovals(t.Context())
			require.NoError(t, err)
			require.Equal(t, 1, n)
			got := b.waitRun(t, r.ID, 10*time.Second)
			require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
			require.Zero(t, b.calls.Load())
			require.Equal(t, "the call was not run: nobody approved it within 1s", toolMessages(t, b, r.ThreadID)[0].Content)
		})
	})
	t.Run("fail", func(t *testing.T) {
		t.Parallel()
		b := setup(t, askScript, 3)
		agentID := approvalAgent(t, b, `{"tools":{"lookup":"ask"},"approval_timeout_seconds":1,"on_timeout":"fail"}`)
		approvalWorker(t, b, "w1", &atomic.Int32{})
		r, _ := waitingCall(t, b, agentID)
		time.Sleep(1100 * time.Millisecond)
		n, err := b.runs.ExpireApprovals(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		got, err := b.runs.GetRun(t.Context(), b.caller, r.ID)
		require.NoError(t, err)
		require.Equal(t, run.StatusFailed, got.Status)
		require.Equal(t, run.ErrCodeApprovalTimeout, got.Error.Code)
		require.Zero(t, b.calls.Load())
	})
}

// TestApprovalSurvivesTheWorker: the worker that suspended the run stops
// while it waits; after the decision another worker continues it from its
// checkpoint, and the step's other call does not run again.
func TestApprovalSurvivesTheWorker(t *testing.T) {
	t.Parallel()
	forVendors(t, func(t *testing.T, v vendor) { approvalSurvivesTheWorker(t, setupOn(t, v, askScript, 3)) })
}

func approvalSurvivesTheWorker(t *testing.T, b *bundle) {
	agentID := approvalAgent(t, b, `{"tools":{"lookup":"ask"}}`)
	spelled := &atomic.Int32{}
	stop := approvalWorker(t, b, "w1", spelled)
	r, call := waitingCall(t, b, agentID)
	stop()

	_, err := b.runs.DecideApproval(t.Context(), b.caller, r.ID, run.DecideInput{CallID: call.CallID, Decision: run.DecisionApprove})
	require.NoError(t, err)
	approvalWorker(t, b, "w2", spelled)
	got := b.waitRun(t, r.ID, 10*time.Second)
	require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
	require.EqualValues(t, 1, b.calls.Load())
	require.EqualValues(t, 1, spelled.Load())
	atts, err := b.runs.ListAttempts(t.Context(), b.caller, r.ID)
	require.NoError(t, err)
	require.Len(t, atts, 2)
	require.Equal(t, "w2", atts[1].Worker)
	require.False(t, atts[0].Charged, "waiting is not charged")
}

// TestCancelWhileWaiting: cancelling a waiting run ends it at once; its
// call no longer waits.
func TestCancelWhileWaiting(t *testing.T) {
	t.Parallel()
	forVendors(t, func(t *testing.T, v vendor) { cancelWhileWaiting(t, setupOn(t, v, askScript, 3)) })
}

func cancelWhileWaiting(t *testing.T, b *bundle) {
	agentID := approvalAgent(t, b, `{"tools":{"lookup":"ask"}}`)
	approvalWorker(t, b, "w1", &atomic.Int32{})
	r, call := waitingCall(t, b, agentID)

	got, err := b.runs.Cancel(t.Context(), b.caller, r.ID)
	require.NoError(t, err)
	require.Equal(t, run.StatusCancelled, got.Status)
	pending, err := b.runs.PendingApprovals(t.Context(), b.caller, r.ID)
	require.NoError(t, err)
	require.Empty(t, pending)
	_, err = b.runs.DecideApproval(t.Context(), b.caller, r.ID, run.DecideInput{CallID: call.CallID, Decision: run.DecisionApprove})
	require.Equal(t, apperr.KindConflict, apperr.KindOf(err), "%v", err)
	require.Zero(t, b.calls.Load())
}

// TestChildWaitingMakesParentWait: a subagent's run that waits for a
// person makes its parent (suspended for the child's answer) show waiting
// too; both are in the inbox, the parent listing the child's call. The
// decision lets the child, then the parent, finish.
func TestChildWaitingMakesParentWait(t *testing.T) {
	t.Parallel()
	parentScript := []llmtest.Turn{
		{Text: "Asking.", ToolCalls: []llmtest.Call{{Name: "agent_researcher", Arguments: `{"task":"How long is banana?"}`}}},
		{Text: "Six."},
	}
	b := setup(t, parentScript, 3)
	ctx := t.Context()
	child := llmtest.NewChatServer([]llmtest.Turn{
		{Text: "Looking.", ToolCalls: []llmtest.Call{{Name: "lookup", Arguments: `{"word":"banana"}`}}},
		{Text: "Banana has 6 letters."},
	})
	t.Cleanup(child.Close)
	b.policy.AllowedPorts = append(b.policy.AllowedPorts, portOf(t, child.URL))
	testfactory.Model(t, b.pool, testfactory.OwnerOf(b.caller), &testfactory.ModelOpts{Key: "helper", Model: "scripted-2",
		Provider: &testfactory.ProviderOpts{Name: "Child", Config: baseURL(child)}})
	agents := agent.NewService(b.pool, b.reg, refcheck.None{})
	researcher, err := agents.Create(ctx, b.caller, revision.CreateInput{Name: "Researcher",
		Config: json.RawMessage(`{"model":"helper","tool_policy":{"tools":{"lookup":"ask"}}}`)})
	require.NoError(t, err)
	lead, err := agents.Create(ctx, b.caller, revision.CreateInput{Name: "lead",
		Config: json.RawMessage(`{"model":"main","subagents":[{"agent_id":"` + researcher.ID + `"}]}`)})
	require.NoError(t, err)

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	exec := worker.NewExecutor(readers(worker.ExecutorDeps{Runs: b.runs, Objects: b.store, HTTPClient: b.policy.HTTPClient(0), Log: log,
		Toolsets: []tool.Toolset{lookupTool(b.calls), subagent.New(subagent.Deps{Agents: agents, Runs: b.runs,
			Limits: run.SubagentLimits{MaxDepth: 4, MaxLive: 8, MaxTotal: 64}}).ForRun}}, b.pool, b.reg, b.ring))
	w := worker.New(b.pool, b.runs, exec, worker.Options{ID: "w1", Slots: 2, Lease: 30 * time.Second, Drain: time.Second, Poll: 50 * time.Millisecond}, log)
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

	r, err := b.runs.Start(ctx, b.caller, run.StartInput{AgentID: lead.ID, Input: "How long is banana?"})
	require.NoError(t, err)
	b.waitStatus(t, r.ID, run.StatusWaiting, 30*time.Second)
	var childID string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT id FROM run WHERE parent_run_id = $1`, r.ID).Scan(&childID))
	// The parent shows waiting only while a run below it waits, and the
	// child waits until the decision: no wait is needed to see it.
	childRun, err := b.runs.GetRun(ctx, b.caller, childID)
	require.NoError(t, err)
	require.Equal(t, run.StatusWaiting, childRun.Status)

	page, err := b.runs.ListWaiting(ctx, b.caller, nil, nil)
	require.NoError(t, err)
	require.Len(t, page.Items, 2, "the parent and its child wait")
	for _, wr := range page.Items {
		require.Len(t, wr.Pending, 1)
		require.Equal(t, childID, wr.Pending[0].RunID, "the parent lists its child's call")
	}
	pending, err := b.runs.PendingApprovals(ctx, b.caller, r.ID)
	require.NoError(t, err)
	require.Len(t, pending, 1)

	_, err = b.runs.DecideApproval(ctx, b.caller, childID, run.DecideInput{CallID: pending[0].CallID, Decision: run.DecisionApprove})
	require.NoError(t, err)
	got := b.waitRun(t, r.ID, 30*time.Second)
	require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
	require.EqualValues(t, 1, b.calls.Load())
	var childStatus string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT status FROM run WHERE id = $1`, childID).Scan(&childStatus))
	require.Equal(t, "succeeded", childStatus)
}
