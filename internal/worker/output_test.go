package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/agentloop"
	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/objectstore"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/tool"
	"github.com/svcdev/svc/internal/worker"
)

// A model server that streams 64 MiB of text, or of one tool call's
// arguments, fails its run with output_limit after one model call: the
// stream is stopped at the bound, no attempt is retried, and only the
// bounded output reached the events; no message and no checkpoint of the
// answer were written.
func TestFloodingModelFailsTheRunWithOutputLimit(t *testing.T) {
	t.Parallel()
	const limit, argLimit = 256 << 10, 64 << 10
	for _, c := range []struct {
		name      string
		arguments bool
		key       string
	}{
		{"text", false, "limits.model_output_bytes"},
		{"tool arguments", true, "limits.tool_arguments_bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, []llmtest.Turn{{Text: "Here it comes: ", Flood: 64 << 20, FloodArguments: c.arguments}}, 3)
			dir := t.TempDir()
			store, err := objectstore.OpenFile(dir)
			require.NoError(t, err)
			b.runWorker(t, worker.ExecutorDeps{Objects: store, Toolsets: []tool.Toolset{lookupTool(b.calls)},
				MaxOutputBytes: limit, MaxToolArgumentBytes: argLimit})

			r, err := b.runs.Start(t.Context(), b.caller, run.StartInput{AgentID: b.agentID, Input: "Write forever."})
			require.NoError(t, err)
			got := b.waitRun(t, r.ID, 30*time.Second)
			require.Equal(t, run.StatusFailed, got.Status)
			require.NotNil(t, got.Error)
			require.Equal(t, agentloop.CodeOutputLimit, got.Error.Code)
			require.Contains(t, got.Error.Message, c.key)
			require.EqualValues(t, 1, got.AttemptsUsed, "an output limit is not retried")
			require.Len(t, b.model.Requests(), 1, "the model was called once")
			require.Less(t, b.model.FloodSent(), int64(32<<20), "the worker stopped reading the stream")
			require.Zero(t, b.calls.Load(), "no tool of the cut answer ran")

			evs, err := b.runs.Events(t.Context(), b.caller, r.ThreadID, 0, 1000)
			require.NoError(t, err)
			streamed, eventBytes := 0, 0
			for _, e := range evs {
				eventBytes += len(e.Data)
				require.NotEqual(t, run.EventMessageCompleted, e.Type)
				require.NotEqual(t, run.EventToolCall, e.Type)
				if e.Type == run.EventMessageDelta {
					var d run.DeltaData
					require.NoError(t, json.Unmarshal(e.Data, &d))
					streamed += len(d.Text)
				}
			}
			require.LessOrEqual(t, streamed, limit, "only the bounded text was streamed")
			require.Less(t, eventBytes, limit+64<<10)
			msgs, err := b.runs.ListMessages(t.Context(), b.caller, r.ThreadID, 0, 100)
			require.NoError(t, err)
			require.Len(t, msgs, 1, "only the user's message")

			stored := int64(0)
			require.NoError(t, filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				info, err := d.Info()
				stored += info.Size()
				return err
			}))
			require.Less(t, stored, int64(limit), "no checkpoint of the cut answer")
		})
	}
}

// syncBuffer is a log destination the test reads while the worker writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A tool that fails with a database error ends its attempt; the run's
// tenant reads svc's own words in the run's error, its attempts and its
// events, never the driver's text, which the log has under the run's id.
func TestDatabaseErrorsStayInTheLog(t *testing.T) {
	t.Parallel()
	script := []llmtest.Turn{{ToolCalls: []llmtest.Call{{Name: "query", Arguments: `{}`}}}, {Text: "done"}}
	b := setup(t, script, 2)
	failing := func(context.Context, tool.RunContext) ([]tool.Tool, error) {
		return []tool.Tool{{Def: llm.Tool{Name: "query", Description: "Queries."},
			Call: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
				// A value PostgreSQL refuses: the driver's error, as is.
				_, err := b.pool.Exec(ctx, `SELECT 'not json'::jsonb`)
				return tool.Result{}, err
			}}}, nil
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	exec := worker.NewExecutor(readers(worker.ExecutorDeps{Runs: b.runs, Objects: b.store,
		HTTPClient: b.policy.HTTPClient(0), Toolsets: []tool.Toolset{failing}, Log: log}, b.pool, b.reg, b.ring))
	w := worker.New(b.pool, b.runs, exec, worker.Options{ID: "w1", Slots: 1, Lease: 30 * time.Second, Poll: 50 * time.Millisecond}, log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	r, err := b.runs.Start(t.Context(), b.caller, run.StartInput{AgentID: b.agentID, Input: "Query."})
	require.NoError(t, err)
	got := b.waitRun(t, r.ID, 30*time.Second)
	require.Equal(t, run.StatusFailed, got.Status)
	require.Equal(t, run.ErrCodeAttemptsExhausted, got.Error.Code)

	var seen []string
	seen = append(seen, got.Error.Message)
	atts, err := b.runs.ListAttempts(t.Context(), b.caller, r.ID)
	require.NoError(t, err)
	require.Len(t, atts, 2)
	for _, a := range atts {
		require.NotNil(t, a.Error)
		seen = append(seen, *a.Error)
	}
	evs, err := b.runs.Events(t.Context(), b.caller, r.ThreadID, 0, 1000)
	require.NoError(t, err)
	for _, e := range evs {
		seen = append(seen, string(e.Data))
	}
	view, err := json.Marshal(got)
	require.NoError(t, err)
	seen = append(seen, string(view))
	for _, s := range seen {
		for _, leak := range []string{"SQLSTATE", "ERROR:", "string too long", "jsonb", "pgx", "pgconn"} {
			require.NotContains(t, s, leak, "a tenant reads the driver's text")
		}
	}
	require.Contains(t, got.Error.Message, "internal error")

	require.Eventually(t, func() bool {
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, `"run_id":"`+r.ID+`"`) && strings.Contains(line, "SQLSTATE") {
				return true
			}
		}
		return false
	}, 5*time.Second, 20*time.Millisecond, "the log has the cause under the run's id:\n%s", logs.String())
}
