package run_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/checkpoint"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/refcheck"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/skill"
	"github.com/svcdev/svc/internal/testdb"
	"github.com/svcdev/svc/internal/testfactory"
)

type bundle struct {
	pool    *pgxpool.Pool
	svc     *run.Service
	caller  *auth.Caller
	agentID string
	pub     *recorder
}

// recorder is a Publisher that keeps what it was given.
type recorder struct {
	mu  sync.Mutex
	evs []run.Event
}

func (r *recorder) Publish(_ context.Context, _ string, evs []run.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, evs...)
}

func setup(t testing.TB, maxAttempts int) *bundle {
	t.Helper()
	return setupWith(t, run.Options{MaxAttempts: maxAttempts})
}

// setupWith is setup with the service's options opts (its Publisher is the
// bundle's recorder).
func setupWith(t testing.TB, opts run.Options) *bundle {
	t.Helper()
	pool := testdb.New(t)
	admin := testfactory.Bootstrap(t, pool)
	ctx := t.Context()
	testfactory.Model(t, pool, admin.Owner(), &testfactory.ModelOpts{Provider: &testfactory.ProviderOpts{Type: "openai"}})
	reg, err := catalog.New(catalog.Options{})
	require.NoError(t, err)
	agents := agent.NewService(pool, reg, refcheck.None{})
	skills := skill.NewService(pool, refcheck.None{})
	caller := &auth.Caller{PrincipalID: admin.PrincipalID, OrganizationID: admin.OrganizationID, WorkspaceID: admin.WorkspaceID, Role: auth.RoleAdmin}
	head, err := agents.Create(ctx, caller, revision.CreateInput{Name: "helper", Config: json.RawMessage(`{"model":"main"}`)})
	require.NoError(t, err)
	pub := &recorder{}
	opts.Publisher = pub
	svc := run.NewService(pool, agents, skills, reg, opts)
	return &bundle{pool: pool, svc: svc, caller: caller, agentID: head.ID, pub: pub}
}

func (b *bundle) backdateLease(t *testing.T, runID string) {
	t.Helper()
	_, err := b.pool.Exec(t.Context(), `UPDATE run SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, runID)
	require.NoError(t, err)
}

func (b *bundle) events(t *testing.T, threadID string) []run.Event {
	t.Helper()
	evs, err := b.svc.Events(t.Context(), b.caller, threadID, 0, 1000)
	require.NoError(t, err)
	return evs
}

func TestThreadQueueAndLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t, 3)
	ctx := t.Context()
	th, err := b.svc.CreateThread(ctx, b.caller, run.CreateThreadInput{AgentID: b.agentID, Metadata: map[string]any{"k": "v"}})
	require.NoError(t, err)
	require.Equal(t, "idle", th.Status())

	first, err := b.svc.PostInput(ctx, b.caller, th.ID, "hello", "")
	require.NoError(t, err)
	require.NotNil(t, first.Run, "an idle thread starts the input at once")
	require.Equal(t, run.StatusAccepted, first.Run.Status)

	second, err := b.svc.PostInput(ctx, b.caller, th.ID, "and then", "")
	require.NoError(t, err)
	require.Nil(t, second.Run, "a busy thread queues")
	_, err = b.svc.PostInput(ctx, b.caller, th.ID, "now", run.OnBusyReject)
	require.Equal(t, apperr.KindConflict, apperr.KindOf(err))

	claims, err := b.svc.Claim(ctx, "w1", 10, 30*time.Second)
	require.NoError(t, err)
	require.Len(t, claims, 1, "one run per thread at a time")
	c := claims[0]
	require.Equal(t, first.Run.ID, c.Lease.RunID)
	require.True(t, c.FirstAttempt)

	key, err := checkpoint.Key(b.caller.WorkspaceID, c.Lease.RunID, "step-1")
	require.NoError(t, err)
	require.NoError(t, b.svc.Commit(ctx, c.Lease, run.Step{Number: 1, CheckpointKey: key, Usage: run.Usage{InputTokens: 5, OutputTokens: 2},
		Messages: []run.Message{{Role: "assistant", Content: "hi"}},
		Events:   []run.NewEvent{{Type: run.EventMessageCompleted, Data: run.MessageData{Role: "assistant", Content: "hi"}}}}))
	require.NoError(t, b.svc.Finish(ctx, c.Lease, run.StatusSucceeded, nil, run.Usage{InputTokens: 5, OutputTokens: 2}, 1))

	done, err := b.svc.GetRun(ctx, b.caller, first.Run.ID)
	require.NoError(t, err)
	require.Equal(t, run.StatusSucceeded, done.Status)
	require.EqualValues(t, 1, done.AttemptsUsed)
	require.EqualValues(t, 5, done.Usage.InputTokens)

	// Finishing started the queued input.
	th, err = b.svc.GetThread(ctx, b.caller, th.ID)
	require.NoError(t, err)
	require.NotNil(t, th.ActiveRunID)
	require.NotEqual(t, first.Run.ID, *th.ActiveRunID)

	msgs, err := b.svc.ListMessages(ctx, b.caller, th.ID, 0, 100)
	require.NoError(t, err)
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.Role+":"+m.Content)
	}
	require.Equal(t, []string{"user:hello", "assistant:hi", "user:and then"}, roles)

	evs := b.events(t, th.ID)
	for i, e := range evs {
		require.EqualValues(t, i+1, e.Seq, "gap-free sequence")
	}
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	require.Equal(t, []string{"run.status", "run.status", "message.completed", "run.status", "run.status"}, types)
	require.Eventually(t, func() bool {
		b.pub.mu.Lock()
		defer b.pub.mu.Unlock()
		return len(b.pub.evs) == len(evs)
	}, 5*time.Second, 5*time.Millisecond, "every committed event was published")
}

func TestFenceRefusesStaleAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t, 3)
	ctx := t.Context()
	r, err := b.svc.Start(ctx, b.caller, run.StartInput{AgentID: b.agentID, Input: "go"})
	require.NoError(t, err)
	claims, err := b.svc.Claim(ctx, "w1", 1, 30*time.Second)
	require.NoError(t, err)
	stale := claims[0].Lease

	b.backdateLease(t, r.ID)
	_, err = b.svc.Renew(ctx, stale, 30*time.Second)
	require.ErrorIs(t, err, run.ErrLeaseLost, "an expired lease is never revived")
	n, err := b.svc.ExpireLeases(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	claims, err = b.svc.Claim(ctx, "w2", 1, 30*time.Second)
	require.NoError(t, err)
	require.Len(t, claims, 1)
	fresh := claims[0].Lease
	require.EqualValues(t, 2, fresh.Number)

	key, err := checkpoint.Key(b.caller.WorkspaceID, r.ID, "step-1")
	require.NoError(t, err)
	require.ErrorIs(t, b.svc.Commit(ctx, stale, run.Step{Number: 1, CheckpointKey: key}), run.ErrLeaseLost)
	require.ErrorIs(t, b.svc.Finish(ctx, stale, run.StatusSucceeded, nil, run.Usage{}, 1), run.ErrLeaseLost)
	require.ErrorIs(t, b.svc.Emit(ctx, stale, []run.NewEvent{{Type: run.EventMessageDelta, Data: run.DeltaData{Text: "late"}}}), run.ErrLeaseLost)

	require.NoError(t, b.svc.Commit(ctx, fresh, run.Step{Number: 1, CheckpointKey: key}))
	got, err := b.svc.GetRun(ctx, b.caller, r.ID)
	require.NoError(t, err)
	require.Equal(t, run.StatusRunning, got.Status)
	require.EqualValues(t, 1, got.AttemptsUsed, "the expired attempt was charged")

	atts, err := b.svc.ListAttempts(ctx, b.caller, r.ID)
	require.NoError(t, err)
	require.Len(t, atts, 2)
	require.Equal(t, "expired", atts[0].Status)
	require.True(t, atts[0].Charged)
	require.Equal(t, "running", atts[1].Status)
}

// TestCommitInOneStatement checks what a step's one-statement commit and a
// fenced Emit write: the replaced checkpoint queued for deletion once, the
// messages and events after the thread's last ones, the events published
// as stored; and, refused, nothing at all.
func TestCommitInOneStatement(t *testing.T) {
	t.Parallel()
	b := setup(t, 3)
	ctx := t.Context()
	r, err := b.svc.Start(ctx, b.caller, run.StartInput{AgentID: b.agentID, Input: "go"})
	require.NoError(t, err)
	claims, err := b.svc.Claim(ctx, "w1", 1, 30*time.Second)
	require.NoError(t, err)
	l := claims[0].Lease
	cleanups := func(t *testing.T) [][]string {
		rows, err := b.pool.Query(t.Context(), `SELECT payload->'keys' FROM outbox WHERE kind = 'checkpoint_cleanup' AND workspace_id = $1 ORDER BY created_at, id`, b.caller.WorkspaceID)
		require.NoError(t, err)
		defer rows.Close()
		var out [][]string
		for rows.Next() {
			var keys []string
			require.NoError(t, rows.Scan(&keys))
			out = append(out, keys)
		}
		require.NoError(t, rows.Err())
		return out
	}
	key := func(name string) string {
		k, err := checkpoint.Key(b.caller.WorkspaceID, r.ID, name)
		require.NoError(t, err)
		return k
	}
	callID := "call_1"
	step := func(n int32, k string) run.Step {
		return run.Step{Number: n, CheckpointKey: k, Usage: run.Usage{InputTokens: int64(n)},
			Messages: []run.Message{{Role: "assistant", Content: "looking", ToolCalls: []run.ToolCall{{ID: callID, Name: "lookup", Arguments: "{}"}}},
				{Role: "tool", Content: "found", ToolCallID: &callID}},
			Events: []run.NewEvent{{Type: run.EventMessageCompleted, Data: run.MessageData{Role: "assistant", Content: "looking"}},
				{Type: run.EventToolResult, Data: run.ToolResultData{CallID: callID, Name: "lookup", Content: "found"}}}}
	}

	require.NoError(t, b.svc.Emit(ctx, l, []run.NewEvent{{Type: run.EventToolCall, Data: run.ToolCallData{CallID: callID, Name: "lookup", Arguments: "{}"}}}))
	var queued [][][]string // the cleanups after each commit
	for n, k := range []string{"s1", "s2", "s2"} {
		require.NoError(t, b.svc.Commit(ctx, l, step(int32(n+1), key(k))))
		queued = append(queued, cleanups(t))
	}
	evs := b.events(t, r.ThreadID)
	first, fourth := key("s1"), key("s4")

	// What the three commits wrote; the subtests only read it.
	t.Run("Recorded", func(t *testing.T) {
		t.Run("TheReplacedCheckpointIsQueuedForDeletionOnce", func(t *testing.T) {
			t.Parallel()
			require.Empty(t, queued[0], "the first checkpoint replaces none")
			require.Equal(t, [][]string{{first}}, queued[1])
			require.Len(t, queued[2], 1, "a checkpoint recorded again replaces nothing")
		})

		t.Run("TheRunCountsItsSteps", func(t *testing.T) {
			t.Parallel()
			got, err := b.svc.GetRun(t.Context(), b.caller, r.ID)
			require.NoError(t, err)
			require.EqualValues(t, 3, got.Step)
			require.EqualValues(t, 3, got.Usage.InputTokens)
		})

		t.Run("MessagesFollowTheThreadsLastOnes", func(t *testing.T) {
			t.Parallel()
			msgs, err := b.svc.ListMessages(t.Context(), b.caller, r.ThreadID, 0, 100)
			require.NoError(t, err)
			require.Len(t, msgs, 7, "the input and two messages per step")
			for i, m := range msgs {
				require.EqualValues(t, i+1, m.Position)
			}
			require.Equal(t, "tool", msgs[6].Role)
			require.Equal(t, callID, *msgs[6].ToolCallID)
			require.Len(t, msgs[5].ToolCalls, 1)
		})

		t.Run("EventsAreGapFreeAndPublishedAsStored", func(t *testing.T) {
			t.Parallel()
			for i, e := range evs {
				require.EqualValues(t, i+1, e.Seq, "gap-free sequence")
			}
			require.Eventually(t, func() bool {
				b.pub.mu.Lock()
				defer b.pub.mu.Unlock()
				return len(b.pub.evs) == len(evs)
			}, 5*time.Second, 5*time.Millisecond)
			b.pub.mu.Lock()
			defer b.pub.mu.Unlock()
			for i, e := range evs {
				p := b.pub.evs[i]
				require.Equal(t, e.Seq, p.Seq)
				require.Equal(t, e.Type, p.Type)
				require.JSONEq(t, string(e.Data), string(p.Data))
				require.WithinDuration(t, e.At, p.At, time.Millisecond, "published as stored")
			}
		})
	})

	t.Run("ARefusedCommitWritesNothing", func(t *testing.T) {
		ctx := t.Context()
		b.backdateLease(t, r.ID)
		require.ErrorIs(t, b.svc.Commit(ctx, l, step(4, fourth)), run.ErrLeaseLost)
		require.ErrorIs(t, b.svc.Emit(ctx, l, []run.NewEvent{{Type: run.EventMessageDelta, Data: run.DeltaData{Text: "late"}}}), run.ErrLeaseLost)
		require.Len(t, cleanups(t), 1)
		require.Len(t, b.events(t, r.ThreadID), len(evs))
		after, err := b.svc.ListMessages(ctx, b.caller, r.ThreadID, 0, 100)
		require.NoError(t, err)
		require.Len(t, after, 7)
		got, err := b.svc.GetRun(ctx, b.caller, r.ID)
		require.NoError(t, err)
		require.EqualValues(t, 3, got.Step)
		var lastSeq int64
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT last_seq FROM thread WHERE id = $1`, r.ThreadID).Scan(&lastSeq))
		require.EqualValues(t, len(evs), lastSeq, "the thread's counters did not move")
	})
}

func TestAttemptsExhaustedAndHandOff(t *testing.T) {
	t.Parallel()
	b := setup(t, 2)
	ctx := t.Context()
	r, err := b.svc.Start(ctx, b.caller, run.StartInput{AgentID: b.agentID, Input: "go"})
	require.NoError(t, err)

	// A hand-off is not charged.
	claims, err := b.svc.Claim(ctx, "w1", 1, 30*time.Second)
	require.NoError(t, err)
	require.NoError(t, b.svc.HandOff(ctx, claims[0].Lease, 0, 0, "worker draining"))
	for range 2 {
		claims, err = b.svc.Claim(ctx, "w1", 1, 30*time.Second)
		require.NoError(t, err)
		require.Len(t, claims, 1)
		b.backdateLease(t, r.ID)
		_, err = b.svc.ExpireLeases(ctx)
		require.NoError(t, err)
	}
	got, err := b.svc.GetRun(ctx, b.caller, r.ID)
	require.NoError(t, err)
	require.Equal(t, run.StatusFailed, got.Status)
	require.Equal(t, run.ErrCodeAttemptsExhausted, got.Error.Code)
	require.EqualValues(t, 2, got.AttemptsUsed)
	claims, err = b.svc.Claim(ctx, "w1", 1, 30*time.Second)
	require.NoError(t, err)
	require.Empty(t, claims)
}

func TestCancel(t *testing.T) {
	t.Parallel()
	b := setup(t, 3)
	ctx := t.Context()
	// Not yet claimed: cancelled at once.
	r, err := b.svc.Start(ctx, b.caller, run.StartInput{AgentID: b.agentID, Input: "go"})
	require.NoError(t, err)
	got, err := b.svc.Cancel(ctx, b.caller, r.ID)
	require.NoError(t, err)
	require.Equal(t, run.StatusCancelled, got.Status)
	_, err = b.svc.Cancel(ctx, b.caller, r.ID)
	require.Equal(t, apperr.KindConflict, apperr.KindOf(err))

	// Running: the worker learns it at its next renewal.
	r, err = b.svc.Start(ctx, b.caller, run.StartInput{AgentID: b.agentID, Input: "again"})
	require.NoError(t, err)
	claims, err := b.svc.Claim(ctx, "w1", 1, 30*time.Second)
	require.NoError(t, err)
	got, err = b.svc.Cancel(ctx, b.caller, r.ID)
	require.NoError(t, err)
	require.Equal(t, run.StatusRunning, got.Status)
	ren, err := b.svc.Renew(ctx, claims[0].Lease, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ren.CancelRequested)
}

func TestClaimSkipsLockedRunsAcrossWorkers(t *testing.T) {
	t.Parallel()
	b := setup(t, 3)
	ctx := t.Context()
	const runs = 60
	for range runs {
		_, err := b.svc.Start(ctx, b.caller, run.StartInput{AgentID: b.agentID, Input: "go"})
		require.NoError(t, err)
	}
	var mu sync.Mutex
	seen := map[string]string{}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				claims, err := b.svc.Claim(ctx, "w"+string(rune('a'+w)), 7, 30*time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				if len(claims) == 0 {
					return
				}
				mu.Lock()
				for _, c := range claims {
					if prev, ok := seen[c.Lease.RunID]; ok {
						t.Errorf("run %s claimed by %s and %s", c.Lease.RunID, prev, c.Lease.AttemptID)
					}
					seen[c.Lease.RunID] = c.Lease.AttemptID
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Len(t, seen, runs)
}

// TestNULCharactersAreRecorded: a model may stream a NUL character, which
// PostgreSQL's text and jsonb refuse; the step is recorded with U+FFFD in
// its place, and an escaped backslash before "u0000" stays as it was.
func TestNULCharactersAreRecorded(t *testing.T) {
	t.Parallel()
	b := setup(t, 3)
	ctx := t.Context()
	r, err := b.svc.Start(ctx, b.caller, run.StartInput{AgentID: b.agentID, Input: "go"})
	require.NoError(t, err)
	claims, err := b.svc.Claim(ctx, "w1", 1, 30*time.Second)
	require.NoError(t, err)
	l := claims[0].Lease
	callID := "call_\x00"
	args := `{"q":"a\u0000b"}`
	require.NoError(t, b.svc.Emit(ctx, l, []run.NewEvent{{Type: run.EventToolCall, Data: run.ToolCallData{CallID: callID, Name: "lookup", Arguments: args}}}))
	key, err := checkpoint.Key(b.caller.WorkspaceID, r.ID, "s1")
	require.NoError(t, err)
	text := "one\x00two \\u0000 three"
	require.NoError(t, b.svc.Commit(ctx, l, run.Step{Number: 1, CheckpointKey: key,
		Messages: []run.Message{{Role: "assistant", Content: text, ToolCalls: []run.ToolCall{{ID: callID, Name: "lookup", Arguments: args}}}},
		Events:   []run.NewEvent{{Type: run.EventMessageCompleted, Data: run.MessageData{Role: "assistant", Content: text}}}}))

	want := "one\uFFFDtwo \\u0000 three"
	msgs, err := b.svc.ListMessages(ctx, b.caller, r.ThreadID, 0, 100)
	require.NoError(t, err)
	require.Equal(t, want, msgs[1].Content)
	require.Equal(t, "call_\uFFFD", msgs[1].ToolCalls[0].ID)
	evs := b.events(t, r.ThreadID)
	var call run.ToolCallData
	require.NoError(t, json.Unmarshal(evs[len(evs)-2].Data, &call))
	require.Equal(t, "call_\uFFFD", call.CallID)
	var done run.MessageData
	require.NoError(t, json.Unmarshal(evs[len(evs)-1].Data, &done))
	require.Equal(t, want, done.Content)
}

// TestQueuedInputSurvivesAFailedStart: when the next queued input cannot
// start for a failure of svc's own (here the database answers a
// serialization failure, which is worth a retry), finishing the run fails
// as a whole and the input stays queued; it is not cancelled as an input
// the workspace cannot run.
func TestQueuedInputSurvivesAFailedStart(t *testing.T) {
	t.Parallel()
	b := setup(t, 3)
	ctx := t.Context()
	th, err := b.svc.CreateThread(ctx, b.caller, run.CreateThreadInput{AgentID: b.agentID})
	require.NoError(t, err)
	_, err = b.svc.PostInput(ctx, b.caller, th.ID, "first", "")
	require.NoError(t, err)
	second, err := b.svc.PostInput(ctx, b.caller, th.ID, "second", "")
	require.NoError(t, err)
	require.Nil(t, second.Run, "queued behind the first")
	claims, err := b.svc.Claim(ctx, "w1", 1, 30*time.Second)
	require.NoError(t, err)
	require.Len(t, claims, 1)

	_, err = b.pool.Exec(ctx, `CREATE FUNCTION collide() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'collided' USING ERRCODE = 'serialization_failure'; END $$;
		CREATE TRIGGER collide BEFORE INSERT ON run FOR EACH ROW EXECUTE FUNCTION collide();`)
	require.NoError(t, err)
	err = b.svc.Finish(ctx, claims[0].Lease, run.StatusSucceeded, nil, run.Usage{}, 0)
	require.Equal(t, apperr.KindUnavailable, apperr.KindOf(err), "%v", err)

	var status string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT status FROM thread_input WHERE id = $1`, second.Input.ID).Scan(&status))
	require.Equal(t, "queued", status)

	_, err = b.pool.Exec(ctx, `DROP TRIGGER collide ON run`)
	require.NoError(t, err)
	require.NoError(t, b.svc.Finish(ctx, claims[0].Lease, run.StatusSucceeded, nil, run.Usage{}, 0))
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT status FROM thread_input WHERE id = $1`, second.Input.ID).Scan(&status))
	require.NotEqual(t, "cancelled", status, "the input started once the database let it")
}
