package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

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
	"github.com/svcdev/svc/internal/tracing"
	"github.com/svcdev/svc/internal/tracing/tracingtest"
	"github.com/svcdev/svc/internal/worker"
)

// TestTracingFollowsSubagents: a run started within a span continues its
// trace; its subagent's run continues the trace under the tool call that
// started it; the parent's attempt that resumes with the child's answer
// starts a trace of its own, linked to the parent run's origin.
func TestTracingFollowsSubagents(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithSampler(tracing.NewSampler(1)))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ended := tracingtest.WatchEnded(tp)
	tracer := tp.Tracer("test")

	b := setup(t, []llmtest.Turn{
		{Text: "Asking.", ToolCalls: []llmtest.Call{{Name: "agent_researcher", Arguments: `{"task":"What is the answer?"}`}}},
		{Text: "It is 42."},
	}, 3)
	ctx := t.Context()
	child := llmtest.NewChatServer([]llmtest.Turn{{Text: "42."}})
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
	exec := worker.NewExecutor(readers(worker.ExecutorDeps{Runs: runs, Objects: b.store, HTTPClient: policy.HTTPClient(0),
		Toolsets: []tool.Toolset{subagent.New(subagent.Deps{Agents: agents, Runs: runs, Limits: run.SubagentLimits{MaxDepth: 4, MaxLive: 8, MaxTotal: 64}}).ForRun},
		Log:      log, Tracer: tracer}, b.pool, reg, nil))
	w := worker.New(b.pool, runs, exec, worker.Options{ID: "w1", Slots: 2, Lease: 30 * time.Second, Drain: time.Second,
		Poll: 50 * time.Millisecond, Tracer: tracer}, log)
	engine := outbox.NewEngine(b.pool, config.Default().Outbox, "test", log, nil)
	engine.Register(outbox.KindSubagentResult, run.NewSubagentResults(b.pool))
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 2)
	go func() { done <- w.Run(wctx) }()
	go func() {
		for wctx.Err() == nil {
			_ = engine.Deliver(wctx)
			time.Sleep(20 * time.Millisecond)
		}
		done <- nil
	}()
	defer func() { cancel(); <-done; <-done }()

	rctx, request := tracer.Start(ctx, "request")
	r, err := runs.Start(rctx, b.caller, run.StartInput{AgentID: lead.ID, Input: "Find the answer."})
	request.End()
	require.NoError(t, err)
	require.Equal(t, run.StatusSucceeded, b.waitRun(t, r.ID, 20*time.Second).Status)
	wait, stop := context.WithTimeout(ctx, 20*time.Second)
	defer stop()
	require.NoError(t, ended.Wait(wait, "run.attempt", 3))

	got := spans.GetSpans()
	var attempts, calls tracetest.SpanStubs
	for _, s := range got {
		switch s.Name {
		case "run.attempt":
			attempts = append(attempts, s)
		case "execute_tool agent_researcher":
			calls = append(calls, s)
		}
	}
	require.Len(t, attempts, 3)
	require.Len(t, calls, 1)
	call := calls[0]
	reqSC := request.SpanContext()
	var parentFirst, parentResumed, childAttempt *tracetest.SpanStub
	for i := range attempts {
		a := &attempts[i]
		attrs := map[string]any{}
		for _, kv := range a.Attributes {
			attrs[string(kv.Key)] = kv.Value.AsInterface()
		}
		switch {
		case attrs["svc.run.id"] == r.ID && attrs["svc.run.attempt"] == int64(1):
			parentFirst = a
		case attrs["svc.run.id"] == r.ID:
			parentResumed = a
		default:
			childAttempt = a
			require.Equal(t, r.ID, attrs["svc.run.parent_id"])
		}
	}
	require.NotNil(t, parentFirst)
	require.NotNil(t, parentResumed)
	require.NotNil(t, childAttempt)
	require.Equal(t, reqSC.TraceID(), parentFirst.SpanContext.TraceID())
	require.Equal(t, reqSC.SpanID(), parentFirst.Parent.SpanID(), "the run continues the span it was started in")
	require.Equal(t, reqSC.TraceID(), call.SpanContext.TraceID())
	require.Equal(t, call.SpanContext.TraceID(), childAttempt.SpanContext.TraceID(), "the child run is in its parent's trace")
	require.Equal(t, call.SpanContext.SpanID(), childAttempt.Parent.SpanID(), "under the tool call that started it")
	require.NotEqual(t, reqSC.TraceID(), parentResumed.SpanContext.TraceID())
	require.False(t, parentResumed.Parent.IsValid())
	require.Len(t, parentResumed.Links, 1)
	require.Equal(t, reqSC.SpanID(), parentResumed.Links[0].SpanContext.SpanID())
}
