package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/agentloop"
	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/refcheck"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/tool"
	"github.com/svcdev/svc/internal/worker"
)

// TestTimeLimitByDatabaseClock: a run's timeout_seconds counts from its
// start by the database's clock. A worker whose clock is ten minutes ahead
// does not end a run at once as out of time; one ten minutes behind ends it
// when its time is up, not ten minutes later; and a run a previous attempt
// started long ago keeps that start's deadline on the next worker.
func TestTimeLimitByDatabaseClock(t *testing.T) {
	t.Parallel()
	slow := []llmtest.Turn{{Text: strings.Repeat("tick ", 60), Chunks: 60, ChunkDelay: 100 * time.Millisecond}}
	for _, tc := range []struct {
		name    string
		skew    time.Duration
		script  []llmtest.Turn
		timeout int
		// startedAgo is how long before the claim a previous attempt
		// started the run (0: this is its first attempt).
		startedAgo time.Duration
		// want is the run's status; for a run out of time, within is how
		// long after its start (by the database) it ended, at most.
		want   run.Status
		within time.Duration
	}{
		{name: "clock ahead does not end the run early", skew: 10 * time.Minute,
			script: []llmtest.Turn{{Text: "Done.", Chunks: 2}}, timeout: 30, want: run.StatusSucceeded},
		{name: "clock behind does not let the run overrun", skew: -10 * time.Minute,
			script: slow, timeout: 2, want: run.StatusFailed, within: 4 * time.Second},
		{name: "a resumed run keeps its first start's deadline", skew: -10 * time.Minute,
			script: slow, timeout: 60, startedAgo: 58 * time.Second, want: run.StatusFailed, within: 62 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tc.script, 3)
			ctx := t.Context()
			agents := agent.NewService(b.pool, b.reg, refcheck.None{})
			head, err := agents.Create(ctx, b.caller, revision.CreateInput{Name: "timed", Config: json.RawMessage(
				fmt.Sprintf(`{"model":"main","limits":{"timeout_seconds":%d}}`, tc.timeout))})
			require.NoError(t, err)
			r, err := b.runs.Start(ctx, b.caller, run.StartInput{AgentID: head.ID, Input: "Go."})
			require.NoError(t, err)
			if tc.startedAgo > 0 {
				// As a first attempt on another worker left it: started, one
				// attempt charged, claimable again.
				_, err = b.pool.Exec(ctx, `UPDATE run SET started_at = now() - make_interval(secs => $2), attempt_count = 1, attempts_used = 1
					WHERE id = $1`, r.ID, tc.startedAgo.Seconds())
				require.NoError(t, err)
			}
			skew := tc.skew
			b.runWorker(t, worker.ExecutorDeps{Objects: b.store, Clock: func() time.Time { return time.Now().Add(skew) }})

			got := b.waitRun(t, r.ID, 20*time.Second)
			require.Equal(t, tc.want, got.Status, "%+v", got.Error)
			if tc.want != run.StatusFailed {
				return
			}
			require.Equal(t, agentloop.CodeLimit, got.Error.Code)
			require.Contains(t, got.Error.Message, "time limit")
			var secs float64
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT extract(epoch FROM finished_at - started_at)::float8 FROM run WHERE id = $1`, r.ID).Scan(&secs))
			ran := time.Duration(secs * float64(time.Second))
			require.GreaterOrEqual(t, ran, time.Duration(tc.timeout)*time.Second, "the run ended before its time was up")
			require.Less(t, ran, tc.within, "the run overran its time limit")
		})
	}
}

// TestTimeLimitEndsALongToolCall: a tool call that runs past the run's
// time limit is cancelled when the time is up, and the run fails with the
// limit's error instead of running on for as long as the tool does.
func TestTimeLimitEndsALongToolCall(t *testing.T) {
	t.Parallel()
	script := []llmtest.Turn{
		{Text: "Waiting.", ToolCalls: []llmtest.Call{{Name: "wait", Arguments: `{}`}}},
		{Text: "Done."},
	}
	b := setup(t, script, 3)
	ctx := t.Context()
	agents := agent.NewService(b.pool, b.reg, refcheck.None{})
	head, err := agents.Create(ctx, b.caller, revision.CreateInput{Name: "timed", Config: json.RawMessage(
		`{"model":"main","limits":{"timeout_seconds":2}}`)})
	require.NoError(t, err)
	cancelled := make(chan struct{}, 1)
	waitTool := func(context.Context, tool.RunContext) ([]tool.Tool, error) {
		return []tool.Tool{{
			Def: llm.Tool{Name: "wait", Description: "Waits.", Parameters: json.RawMessage(`{"type":"object"}`)},
			Call: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
				select {
				case <-ctx.Done():
					cancelled <- struct{}{}
					return tool.Result{}, ctx.Err()
				case <-time.After(60 * time.Second):
					return tool.Result{Text: "waited"}, nil
				}
			},
		}}, nil
	}
	b.runWorker(t, worker.ExecutorDeps{Objects: b.store, Toolsets: []tool.Toolset{waitTool}})
	r, err := b.runs.Start(ctx, b.caller, run.StartInput{AgentID: head.ID, Input: "Go."})
	require.NoError(t, err)

	got := b.waitRun(t, r.ID, 20*time.Second)
	require.Equal(t, run.StatusFailed, got.Status)
	require.Equal(t, agentloop.CodeLimit, got.Error.Code)
	require.Contains(t, got.Error.Message, "time limit")
	select {
	case <-cancelled:
	default:
		t.Fatal("the tool was not told to stop")
	}
	var secs float64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT extract(epoch FROM finished_at - started_at)::float8 FROM run WHERE id = $1`, r.ID).Scan(&secs))
	require.Less(t, secs, 10.0, "the run waited for the tool past its time limit")
}
