package worker_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/metrics/metricstest"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/tool"
	"github.com/svcdev/svc/internal/worker"
)

// logRecords answers the JSON log records written to logs so far.
func logRecords(t *testing.T, logs *syncBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec), sc.Text())
		out = append(out, rec)
	}
	return out
}

// loggingLookup is the lookup tool, which logs each call with the
// attempt's logger it is given.
func loggingLookup(ctx context.Context, rc tool.RunContext) ([]tool.Tool, error) {
	return []tool.Tool{{
		Def: llm.Tool{Name: "lookup", Description: "Looks a word up."}, Toolset: "test",
		Call: func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
			rc.Log.InfoContext(ctx, "looking up", "arguments", string(args))
			return tool.Result{Text: "found"}, nil
		},
	}}, nil
}

// A run's log records carry its run, attempt, workspace and thread ids:
// the worker's own (a step recorded) and those of its tools, which log with
// the logger the worker hands them. Its model and tool calls and its
// attempt are counted.
func TestRunLogsAndMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t, []llmtest.Turn{
		{Text: "Looking.", ToolCalls: []llmtest.Call{{Name: "lookup", Arguments: `{"word":"fig"}`}}},
		{Text: "Found it."},
	}, 3)
	reg := prometheus.NewRegistry()
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	exec := worker.NewExecutor(readers(worker.ExecutorDeps{Runs: b.runs, Objects: b.store, HTTPClient: b.policy.HTTPClient(0),
		Toolsets: []tool.Toolset{loggingLookup}, Log: log,
		ModelMetrics: llm.NewMetrics(reg), ToolMetrics: tool.NewMetrics(reg)}, b.pool, b.reg, b.ring))
	w := worker.New(b.pool, b.runs, exec, worker.Options{ID: "w1", Slots: 2, Lease: 30 * time.Second, Poll: 50 * time.Millisecond,
		Metrics: worker.NewMetrics(reg)}, log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()

	r, err := b.runs.Start(t.Context(), b.caller, run.StartInput{AgentID: b.agentID, Input: "Find fig."})
	require.NoError(t, err)
	got := b.waitRun(t, r.ID, 10*time.Second)
	require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
	atts, err := b.runs.ListAttempts(t.Context(), b.caller, r.ID)
	require.NoError(t, err)
	require.Len(t, atts, 1)

	ids := map[string]any{"run_id": r.ID, "attempt_id": atts[0].ID, "attempt": 1.0,
		"workspace_id": b.caller.WorkspaceID, "thread_id": r.ThreadID}
	var tools, steps int
	for _, rec := range logRecords(t, logs) {
		switch rec["msg"] {
		case "looking up":
			tools++
		case "step recorded":
			steps++
		default:
			continue
		}
		for k, v := range ids {
			require.Equal(t, v, rec[k], "%s of %v", k, rec)
		}
	}
	require.Equal(t, 1, tools, "the tool logged its call")
	require.Equal(t, 2, steps, "each step logged at debug level")

	// The attempt's goroutine gives its slot back just after the run's end
	// is recorded.
	require.Eventually(t, func() bool { return metricstest.Samples(t, reg)["svc_worker_slots_busy"] == 0 }, 5*time.Second, 10*time.Millisecond)
	m := metricstest.Samples(t, reg)
	model := `api=chat_completions,provider_type=openai_compatible`
	for name, want := range map[string]float64{
		"svc_worker_slots":                                              2,
		"svc_worker_attempts_started_total":                             1,
		"svc_worker_attempts_ended_total{charged=true,end=finished}":    1,
		"svc_worker_attempts_ended_total{charged=false,end=handed_off}": 0,
		"svc_model_calls_total{" + model + ",result=ok}":                2,
		"svc_model_call_duration_seconds{" + model + "}":                2,
		"svc_model_tokens_total{" + model + ",type=input}":              float64(got.Usage.InputTokens),
		"svc_model_tokens_total{" + model + ",type=output}":             float64(got.Usage.OutputTokens),
		"svc_tool_calls_total{result=ok,toolset=test}":                  1,
		"svc_tool_call_duration_seconds{toolset=test}":                  1,
	} {
		require.Contains(t, m, name)
		require.Equal(t, want, m[name], name)
	}
	require.Positive(t, got.Usage.InputTokens)
}

// A draining worker hands its run off after the step under way, uncharged,
// and counts it so.
func TestDrainedAttemptIsCountedHandedOff(t *testing.T) {
	t.Parallel()
	b := setup(t, []llmtest.Turn{
		{Text: "Looking it up now.", Chunks: 4, ChunkDelay: 50 * time.Millisecond, ToolCalls: []llmtest.Call{{Name: "lookup", Arguments: `{"word":"fig"}`}}},
		{Text: "Found it."},
	}, 3)
	reg := prometheus.NewRegistry()
	w := worker.New(b.pool, b.runs, b.exec, worker.Options{ID: "w1", Slots: 1, Lease: 30 * time.Second, Drain: 10 * time.Second,
		Poll: 50 * time.Millisecond, Metrics: worker.NewMetrics(reg)}, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	r, err := b.runs.Start(t.Context(), b.caller, run.StartInput{AgentID: b.agentID, Input: "Find fig."})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(b.model.Requests()) == 1 }, 10*time.Second, 5*time.Millisecond)
	cancel()
	require.NoError(t, <-done)

	got, err := b.runs.GetRun(t.Context(), b.caller, r.ID)
	require.NoError(t, err)
	require.Equal(t, run.StatusRunning, got.Status, "handed back, the run waits for a worker")
	require.EqualValues(t, 0, got.AttemptsUsed)
	m := metricstest.Samples(t, reg)
	require.Equal(t, 1.0, m["svc_worker_attempts_started_total"])
	require.Equal(t, 1.0, m["svc_worker_attempts_ended_total{charged=false,end=handed_off}"])
	require.Equal(t, 0.0, m["svc_worker_attempts_ended_total{charged=true,end=finished}"])
	require.Equal(t, 0.0, m["svc_worker_slots_busy"])
}
