package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/tracing/tracingtest"
	"github.com/svcdev/svc/internal/webhook"
	"github.com/svcdev/svc/internal/webhook/webhooktest"
)

// traceID and clientSpanID are the client's W3C trace context in these tests.
const (
	traceID      = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID = "00f067aa0ba902b7"
)

func traceparent(traceID string) string { return "00-" + traceID + "-" + clientSpanID + "-01" }

// spanSet is what the collector received, with lookups.
type spanSet []tracingtest.Span

func (s spanSet) named(name string) spanSet {
	var out spanSet
	for _, sp := range s {
		if sp.Name == name {
			out = append(out, sp)
		}
	}
	return out
}

func (s spanSet) withAttr(key string, value any) spanSet {
	var out spanSet
	for _, sp := range s {
		if sp.Attributes[key] == value {
			out = append(out, sp)
		}
	}
	return out
}

func (s spanSet) childrenOf(parent tracingtest.Span) spanSet {
	var out spanSet
	for _, sp := range s {
		if sp.TraceID == parent.TraceID && sp.ParentSpanID == parent.SpanID {
			out = append(out, sp)
		}
	}
	return out
}

// one is the only span of s.
func (s spanSet) one(t *testing.T, what string) tracingtest.Span {
	t.Helper()
	require.Len(t, s, 1, "exactly one %s; got %v", what, s)
	return s[0]
}

// TestTracingFollowsARunFromItsRequest: with tracing on, a run started by a
// request that carries a traceparent is one trace with the client's: the
// API span under the client's span, the run's attempt under the API span,
// its steps under the attempt, and each step's model call and tool call
// under the step, with the GenAI attributes; the webhook the run's end
// sends is a delivery span of its own. No span carries the prompt, the
// tool's arguments or the answers.
func TestTracingFollowsARunFromItsRequest(t *testing.T) {
	t.Parallel()
	collector := tracingtest.NewReceiver(t)
	hooks := webhooktest.NewReceiver(t)
	b, agentID := setupE2E(t, []llmtest.Turn{
		{Text: "Let me look.", ToolCalls: []llmtest.Call{{Name: "run_command", Arguments: `{"command":"echo secret-argument"}`}}},
		{Text: "The answer is forty-two."},
	}, func(c *config.Config) {
		c.Tracing.OTLPEndpoint = collector.URL
		c.EndpointPolicy.AllowedPorts = append(c.EndpointPolicy.AllowedPorts, int(hooks.Port))
	})
	ended := tracingtest.WatchEnded(b.h.App.Tracing.SDK())
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	b.must(t, http.StatusCreated, http.MethodPost, "/api/v1/subscriptions", map[string]any{
		"url": hooks.URL("127.0.0.1", "/hooks"), "event_types": []string{webhook.RunSucceeded}})

	r := b.must(t, http.StatusAccepted, http.MethodPost, "/api/v1/runs",
		map[string]any{"agent_id": agentID, "input": "What is the secret-prompt answer?"}, "traceparent", traceparent(traceID))
	runID := r["id"].(string)
	require.Eventually(t, func() bool {
		return b.must(t, http.StatusOK, http.MethodGet, "/api/v1/runs/"+runID, nil)["status"] == "succeeded"
	}, 30*time.Second, 20*time.Millisecond)
	_, err := hooks.WaitFor(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, ended.Wait(ctx, "run.attempt", 1))
	require.NoError(t, ended.Wait(ctx, "outbox.deliver webhook", 1))
	require.NoError(t, b.h.App.Tracing.ForceFlush(ctx))

	var stored string
	require.NoError(t, b.h.App.Pool.QueryRow(ctx, `SELECT traceparent FROM run WHERE id = $1`, runID).Scan(&stored))
	require.True(t, strings.HasPrefix(stored, "00-"+traceID+"-"), stored)

	all := spanSet(collector.Spans())
	inTrace := spanSet{}
	for _, s := range all {
		if s.TraceID == traceID {
			inTrace = append(inTrace, s)
		}
	}
	api := inTrace.named("POST /api/v1/runs").one(t, "API span")
	require.Equal(t, clientSpanID, api.ParentSpanID, "the API span continues the client's span")
	require.Equal(t, "server", api.Kind)
	require.Equal(t, "/api/v1/runs", api.Attributes["http.route"])
	require.EqualValues(t, 202, api.Attributes["http.response.status_code"])
	require.Equal(t, "svc", api.Resource["service.name"])
	require.Equal(t, b.h.App.ReplicaID, api.Resource["service.instance.id"])
	require.Equal(t, "00-"+traceID+"-"+api.SpanID+"-01", stored, "the run keeps the API span's context")
	inTrace.childrenOf(api).named("RunInsert").one(t, "RunInsert query under the API span")

	attempt := inTrace.named("run.attempt").one(t, "attempt")
	require.Equal(t, api.SpanID, attempt.ParentSpanID, "the attempt continues the request's trace")
	require.Equal(t, runID, attempt.Attributes["svc.run.id"])
	require.EqualValues(t, 1, attempt.Attributes["svc.run.attempt"])
	require.Equal(t, "invoke_agent", attempt.Attributes["gen_ai.operation.name"])
	require.Equal(t, agentID, attempt.Attributes["gen_ai.agent.id"])
	require.Equal(t, "succeeded", attempt.Attributes["svc.attempt.ending"])
	require.Equal(t, "unset", attempt.Status)

	steps := inTrace.childrenOf(attempt).named("run.step")
	require.Len(t, steps, 2)
	slices.SortFunc(steps, func(a, b tracingtest.Span) int {
		return int(a.Attributes["svc.run.step"].(int64) - b.Attributes["svc.run.step"].(int64))
	})
	for i, step := range steps {
		require.EqualValues(t, i+1, step.Attributes["svc.run.step"])
		chat := inTrace.childrenOf(step).named("chat scripted-1").one(t, fmt.Sprintf("model call of step %d", i+1))
		require.Equal(t, "client", chat.Kind)
		require.Equal(t, "chat", chat.Attributes["gen_ai.operation.name"])
		require.Equal(t, "openai_compatible", chat.Attributes["gen_ai.provider.name"])
		require.Equal(t, "openai_compatible", chat.Attributes["gen_ai.system"])
		require.Equal(t, "scripted-1", chat.Attributes["gen_ai.request.model"])
		require.Positive(t, chat.Attributes["gen_ai.usage.input_tokens"])
		require.EqualValues(t, 5, chat.Attributes["gen_ai.usage.output_tokens"])
		want := []any{"tool_calls"}
		if i == 1 {
			want = []any{"stop"}
		}
		require.Equal(t, want, chat.Attributes["gen_ai.response.finish_reasons"])
		inTrace.childrenOf(step).named("RunCommitStep").one(t, fmt.Sprintf("commit of step %d", i+1))
	}
	tool := inTrace.childrenOf(steps[0]).named("execute_tool run_command").one(t, "tool call")
	require.Equal(t, "execute_tool", tool.Attributes["gen_ai.operation.name"])
	require.Equal(t, "run_command", tool.Attributes["gen_ai.tool.name"])
	require.Equal(t, "environment", tool.Attributes["svc.toolset"])
	require.NotEmpty(t, tool.Attributes["gen_ai.tool.call.id"])
	require.Equal(t, "unset", tool.Status)
	require.Empty(t, inTrace.childrenOf(steps[1]).named("execute_tool run_command"))

	delivery := all.named("outbox.deliver webhook").withAttr("svc.webhook.event_type", webhook.RunSucceeded).one(t, "webhook delivery")
	require.Equal(t, "webhook", delivery.Attributes["svc.outbox.kind"])
	require.EqualValues(t, 1, delivery.Attributes["svc.outbox.attempt"])
	require.Equal(t, "delivered", delivery.Attributes["svc.outbox.result"])
	require.EqualValues(t, 204, delivery.Attributes["http.response.status_code"])
	require.Equal(t, b.admin.WorkspaceID, delivery.Attributes["svc.workspace.id"])

	// Content stays out: the input, the arguments, the answers.
	for _, s := range all {
		for k, v := range s.Attributes {
			text := fmt.Sprint(v)
			for _, secret := range []string{"secret-prompt", "secret-argument", "forty-two", "Let me look", "Bearer"} {
				require.NotContains(t, text, secret, "span %s attribute %s", s.Name, k)
			}
		}
		require.NotContains(t, s.Name, runID, "span names hold no ids")
	}
}

// TestTracingLinksResumedAttemptsAndFollowsQueuedInputs: a run that waits
// for a person resumes in an attempt that starts a trace of its own,
// linked to the request that started the run; an input queued meanwhile by
// another traced request starts its run later in that request's trace.
func TestTracingLinksResumedAttemptsAndFollowsQueuedInputs(t *testing.T) {
	t.Parallel()
	const queuedTraceID = "0af7651916cd43dd8448eb211c80319c"
	collector := tracingtest.NewReceiver(t)
	b, _ := setupE2E(t, []llmtest.Turn{
		{Text: "Counting.", ToolCalls: []llmtest.Call{{Name: "run_command", Arguments: `{"command":"echo one"}`}}},
		{Text: "One."},
		{Text: "Second input done."},
	}, func(c *config.Config) { c.Tracing.OTLPEndpoint = collector.URL })
	ended := tracingtest.WatchEnded(b.h.App.Tracing.SDK())
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	tpl := b.must(t, http.StatusOK, http.MethodGet, "/api/v1/environment-templates", nil)["items"].([]any)[0].(map[string]any)
	ag := b.must(t, http.StatusCreated, http.MethodPost, "/api/v1/agents", map[string]any{"name": "careful", "config": map[string]any{
		"model": "main", "tools": map[string]any{"environment": map[string]any{"template_id": tpl["id"]}},
		"tool_policy": map[string]any{"toolsets": map[string]any{"environment": "ask"}}}})

	r := b.must(t, http.StatusAccepted, http.MethodPost, "/api/v1/runs",
		map[string]any{"agent_id": ag["id"], "input": "How many?"}, "traceparent", traceparent(traceID))
	path := "/api/v1/runs/" + r["id"].(string)
	require.Eventually(t, func() bool {
		return b.must(t, http.StatusOK, http.MethodGet, path, nil)["status"] == "waiting"
	}, 30*time.Second, 20*time.Millisecond)
	posted := b.must(t, http.StatusAccepted, http.MethodPost, "/api/v1/threads/"+r["thread_id"].(string)+"/inputs",
		map[string]any{"content": "And then?"}, "traceparent", traceparent(queuedTraceID))
	require.Nil(t, posted["run"], "the input is queued behind the waiting run")
	call := b.must(t, http.StatusOK, http.MethodGet, path+"/approvals", nil)["items"].([]any)[0].(map[string]any)
	b.must(t, http.StatusOK, http.MethodPost, path+"/approvals", map[string]any{"call_id": call["call_id"], "decision": "approve"})
	require.NoError(t, ended.Wait(ctx, "run.attempt", 3))
	require.NoError(t, b.h.App.Tracing.ForceFlush(ctx))

	all := spanSet(collector.Spans())
	api := all.named("POST /api/v1/runs").withAttr("http.route", "/api/v1/runs").one(t, "API span")
	require.Equal(t, traceID, api.TraceID)
	attempts := all.named("run.attempt").withAttr("svc.run.id", r["id"])
	require.Len(t, attempts, 2)
	slices.SortFunc(attempts, func(a, b tracingtest.Span) int {
		return int(a.Attributes["svc.run.attempt"].(int64) - b.Attributes["svc.run.attempt"].(int64))
	})
	first, resumed := attempts[0], attempts[1]
	require.Equal(t, traceID, first.TraceID)
	require.Equal(t, api.SpanID, first.ParentSpanID)
	require.Equal(t, "waiting", first.Attributes["svc.attempt.ending"])
	require.NotEqual(t, traceID, resumed.TraceID, "a resumed attempt starts a trace of its own")
	require.Empty(t, resumed.ParentSpanID)
	require.Equal(t, []tracingtest.Link{{TraceID: traceID, SpanID: api.SpanID}}, resumed.Links)
	require.Equal(t, "succeeded", resumed.Attributes["svc.attempt.ending"])
	step := all.childrenOf(resumed).withAttr("svc.run.step_resumed", true).one(t, "resumed step")
	all.childrenOf(step).named("execute_tool run_command").one(t, "the approved call")

	queued := all.named("POST /api/v1/threads/:thread_id/inputs").one(t, "input request")
	require.Equal(t, queuedTraceID, queued.TraceID)
	var secondRun string
	require.NoError(t, b.h.App.Pool.QueryRow(ctx, `SELECT run_id FROM thread_input WHERE id = $1`,
		posted["input"].(map[string]any)["id"]).Scan(&secondRun))
	second := all.named("run.attempt").withAttr("svc.run.id", secondRun)
	later := second.one(t, "attempt of the queued input's run")
	require.Equal(t, queuedTraceID, later.TraceID, "the queued input's run continues the request that posted it")
	require.Equal(t, queued.SpanID, later.ParentSpanID)
}

// TestTracingOffExportsNothing: with tracing.otlp_endpoint empty nothing
// is exported, even with the OpenTelemetry SDK's own environment variables
// naming a collector, and runs keep no trace context. It sets environment
// variables, so it does not run in parallel.
func TestTracingOffExportsNothing(t *testing.T) {
	collector := tracingtest.NewReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	b, agentID := setupE2E(t, []llmtest.Turn{{Text: "Nothing to trace."}}, nil)
	require.False(t, b.h.App.Tracing.Enabled())
	require.Nil(t, b.h.App.Tracing.SDK())

	r := b.must(t, http.StatusAccepted, http.MethodPost, "/api/v1/runs",
		map[string]any{"agent_id": agentID, "input": "Hello"}, "traceparent", traceparent(traceID))
	require.Eventually(t, func() bool {
		return b.must(t, http.StatusOK, http.MethodGet, "/api/v1/runs/"+r["id"].(string), nil)["status"] == "succeeded"
	}, 30*time.Second, 20*time.Millisecond)
	require.NoError(t, b.h.App.Tracing.ForceFlush(t.Context()))
	var stored *string
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT traceparent FROM run WHERE id = $1`, r["id"]).Scan(&stored))
	require.Nil(t, stored)
	// Shutting down flushes whatever an exporter would hold.
	require.NoError(t, b.h.App.Tracing.Shutdown(t.Context()))
	require.Empty(t, collector.Exports())
}
