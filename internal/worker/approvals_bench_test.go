package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/tool"
	"github.com/svcdev/svc/internal/worker"
)

// BenchmarkApprovalToToolStart measures the time from a person's decision
// (DecideApproval called) to the approved tool starting on a worker: the
// decision's commit wakes the workers (svc_runs), one claims the run, loads
// its checkpoint and runs the call. The worker's poll interval (the claim
// interval without a notification) is the default, a second: the target is
// under it plus 100 ms. Reported as p50 and p99 (ms). Needs
// TEST_DATABASE_URL.
func BenchmarkApprovalToToolStart(b *testing.B) {
	script := make([]llmtest.Turn, 0, 2*b.N)
	for range b.N {
		script = append(script,
			llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "act", Arguments: `{}`}}},
			llmtest.Turn{Text: "Done."})
	}
	env := setup(b, script, 3)
	ctx := context.Background()
	started := make(chan time.Time, 1)
	act := func(context.Context, tool.RunContext) ([]tool.Tool, error) {
		return []tool.Tool{{Def: llm.Tool{Name: "act", Parameters: json.RawMessage(`{"type":"object"}`)},
			Call: func(context.Context, json.RawMessage) (tool.Result, error) {
				started <- time.Now()
				return tool.Result{Text: "done"}, nil
			}}}, nil
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	exec := worker.NewExecutor(readers(worker.ExecutorDeps{Runs: env.runs, Objects: env.store, HTTPClient: env.policy.HTTPClient(0), Log: log,
		Toolsets: []tool.Toolset{act}}, env.pool, env.reg, env.ring))
	w := worker.New(env.pool, env.runs, exec, worker.Options{ID: "bench", Slots: 1, Lease: 30 * time.Second, Drain: time.Second}, log)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() { cancel(); <-done }()
	agentID := approvalAgent(b, env, `{"tools":{"act":"ask"}}`)

	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		r, err := env.runs.Start(ctx, env.caller, run.StartInput{AgentID: agentID, Input: "act"})
		require.NoError(b, err)
		var pending []run.Approval
		for len(pending) == 0 {
			time.Sleep(2 * time.Millisecond)
			if pending, err = env.runs.PendingApprovals(ctx, env.caller, r.ID); err != nil {
				require.NoError(b, err)
			}
		}
		// The run has given its lease up once its status shows waiting.
		for {
			got, err := env.runs.GetRun(ctx, env.caller, r.ID)
			require.NoError(b, err)
			if got.Status == run.StatusWaiting {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		b.StartTimer()
		decided := time.Now()
		_, err = env.runs.DecideApproval(ctx, env.caller, r.ID, run.DecideInput{CallID: pending[0].CallID, Decision: run.DecisionApprove})
		require.NoError(b, err)
		select {
		case at := <-started:
			lat = append(lat, at.Sub(decided))
		case <-time.After(10 * time.Second):
			b.Fatal("the approved tool did not start")
		}
		b.StopTimer()
		for {
			got, err := env.runs.GetRun(ctx, env.caller, r.ID)
			require.NoError(b, err)
			if got.Status.Finished() {
				require.Equal(b, run.StatusSucceeded, got.Status, "%+v", got.Error)
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(ms(pct(lat, 50)), "approval-to-tool-p50-ms")
	b.ReportMetric(ms(pct(lat, 99)), "approval-to-tool-p99-ms")
}
