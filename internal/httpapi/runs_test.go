package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/app"
	"github.com/svcdev/svc/internal/checkpoint"
	"github.com/svcdev/svc/internal/refcheck"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/skill"
	"github.com/svcdev/svc/internal/stream"
	"github.com/svcdev/svc/internal/testfactory"
)

// runsBundle is the agents bundle with an agent "helper" on model "main", and
// the worker side of the run service over the process's database (there is
// no worker loop yet: tests drive runs with Claim, Emit, Commit and Finish).
type runsBundle struct {
	*agentsBundle
	agentID string
	worker  *run.Service
}

func setupRuns(t *testing.T) *runsBundle {
	t.Helper()
	return setupRunsWith(t, nil)
}

// setupRunsWith lets the worker side publish through wrap (nil: straight to Redis).
func setupRunsWith(t *testing.T, wrap func(run.Publisher) run.Publisher) *runsBundle {
	t.Helper()
	return setupRunsOn(t, nil, wrap)
}

// setupRunsOn builds the bundle on h (nil: a new process).
func setupRunsOn(t *testing.T, h *apitest.Harness, wrap func(run.Publisher) run.Publisher) *runsBundle {
	t.Helper()
	var b *agentsBundle
	if h == nil {
		// A control process: these tests play the worker's part themselves,
		// so no worker of the process may claim their runs.
		h = apitest.Start(t, apitest.Options{Role: app.RoleControl})
	}
	{
		admin := testfactory.Bootstrap(t, h.App.Pool)
		viewer := testfactory.AddMember(t, h.App.Pool, admin.OrganizationID, admin.WorkspaceID, testfactory.MemberOpts{WorkspaceRole: "viewer"})
		pb := &providersBundle{h: h, admin: admin, api: h.Client(t, admin.APIKey), viewer: viewer}
		mb := &modelsBundle{providersBundle: pb, openai: pb.createModel(t)}
		mb.mustModel(t, "main")
		b = &agentsBundle{modelsBundle: mb}
	}
	a := b.mustAgent(t, "helper", map[string]any{"model": "main"})
	h = b.h
	var pub run.Publisher = stream.NewPublisher(h.App.Redis, h.Config.Redis.KeyPrefix, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if wrap != nil {
		pub = wrap(pub)
	}
	pool := h.App.Pool
	w := run.NewService(pool, agent.NewService(pool, h.App.Types, refcheck.None{}), skill.NewService(pool, refcheck.None{}), h.App.Types,
		run.Options{MaxAttempts: 3, Publisher: pub})
	return &runsBundle{agentsBundle: b, agentID: a["id"].(string), worker: w}
}

// must sends a request as the admin and fails unless the status is want.
func (b *runsBundle) must(t *testing.T, want int, method, path string, body any, header ...string) map[string]any {
	t.Helper()
	status, out, _ := b.do(t, method, path, body, header...)
	require.Equal(t, want, status, out)
	return out
}

// startRun posts a run on a new thread and returns it.
func (b *runsBundle) startRun(t *testing.T, input string) map[string]any {
	t.Helper()
	return b.must(t, http.StatusAccepted, http.MethodPost, "/api/v1/runs", map[string]any{"agent_id": b.agentID, "input": input})
}

// claim claims the one claimable run as a worker.
func (b *runsBundle) claim(t *testing.T) run.Lease {
	t.Helper()
	claims, err := b.worker.Claim(t.Context(), "worker-1", 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, claims, 1)
	return claims[0].Lease
}

// delta emits a message.delta event under the lease.
func (b *runsBundle) delta(t *testing.T, l run.Lease, text string) {
	t.Helper()
	require.NoError(t, b.worker.Emit(t.Context(), l, []run.NewEvent{{Type: run.EventMessageDelta, Data: run.DeltaData{Text: text}}}))
}

// answer records one step with an assistant message and finishes the run.
func (b *runsBundle) answer(t *testing.T, l run.Lease, text string) {
	t.Helper()
	ctx := t.Context()
	key, err := checkpoint.Key(l.WorkspaceID, l.RunID, "step-1")
	require.NoError(t, err)
	usage := run.Usage{InputTokens: 7, OutputTokens: 3}
	require.NoError(t, b.worker.Commit(ctx, l, run.Step{Number: 1, CheckpointKey: key, Usage: usage,
		Messages: []run.Message{{Role: "assistant", Content: text}},
		Events:   []run.NewEvent{{Type: run.EventMessageCompleted, Data: run.MessageData{Role: "assistant", Content: text}}}}))
	require.NoError(t, b.worker.Finish(ctx, l, run.StatusSucceeded, nil, usage, 1))
}

func (b *runsBundle) inputCount(t *testing.T, threadID string) int {
	t.Helper()
	var n int
	require.NoError(t, b.h.App.Pool.QueryRow(context.Background(), `SELECT count(*) FROM thread_input WHERE thread_id = $1`, threadID).Scan(&n))
	return n
}

func TestThreadsInputsAndRuns(t *testing.T) {
	t.Parallel()
	b := setupRuns(t)
	// No worker claims the runs: a thread stays busy with its first run.
	newThread := func(t *testing.T) string {
		t.Helper()
		th := b.must(t, http.StatusCreated, http.MethodPost, "/api/v1/threads", map[string]any{"agent_id": b.agentID})
		return th["id"].(string)
	}
	inputs := func(threadID string) string { return "/api/v1/threads/" + threadID + "/inputs" }
	threadCount := func(t *testing.T) int {
		t.Helper()
		return len(b.get(t, "/api/v1/threads")["items"].([]any))
	}

	// The subtests run one after the other: some count the workspace's threads.
	t.Run("CreateAThread", func(t *testing.T) {
		status, th, hdr := b.do(t, http.MethodPost, "/api/v1/threads", map[string]any{"agent_id": b.agentID, "metadata": map[string]any{"ticket": "T-1"}})
		require.Equal(t, http.StatusCreated, status, th)
		thID := th["id"].(string)
		require.Equal(t, "/api/v1/threads/"+thID, hdr.Get("Location"))
		require.Empty(t, hdr.Get("ETag"), "threads are not versioned")
		require.Equal(t, "idle", th["status"])
		require.Nil(t, th["active_run_id"])
		require.Nil(t, th["revision_id"])
		require.Equal(t, map[string]any{"ticket": "T-1"}, th["metadata"])
		require.Equal(t, th, b.get(t, "/api/v1/threads/"+thID))
		list := b.get(t, "/api/v1/threads")
		require.Equal(t, thID, list["items"].([]any)[0].(map[string]any)["id"], "newest first")
		require.Nil(t, list["next_cursor"])
	})

	t.Run("ACreateIsRefused", func(t *testing.T) {
		before := threadCount(t)
		out := b.must(t, http.StatusNotFound, http.MethodPost, "/api/v1/threads", map[string]any{"agent_id": "ag_nothing"})
		require.Equal(t, "agent_id", out["error"].(map[string]any)["details"].([]any)[0].(map[string]any)["field"])
		b.must(t, http.StatusBadRequest, http.MethodPost, "/api/v1/threads", map[string]any{"agent_id": b.agentID, "colour": "red"})
		require.Equal(t, before, threadCount(t))
	})

	t.Run("AnIdleThreadStartsTheInputAtOnce", func(t *testing.T) {
		thID := newThread(t)
		posted := b.must(t, http.StatusAccepted, http.MethodPost, inputs(thID), map[string]any{"content": "hello"})
		in, r := posted["input"].(map[string]any), posted["run"].(map[string]any)
		require.Equal(t, "started", in["status"])
		require.Equal(t, r["id"], in["run_id"])
		require.Equal(t, "accepted", r["status"])
		require.Equal(t, in["id"], r["input_id"])
		require.Equal(t, thID, r["thread_id"])
		require.Equal(t, "main", r["model"])
		require.EqualValues(t, 3, r["max_attempts"], "worker.max_attempts")
		require.Equal(t, map[string]any{"input_tokens": float64(0), "output_tokens": float64(0)}, r["usage"])

		busy := b.get(t, "/api/v1/threads/"+thID)
		require.Equal(t, "running", busy["status"])
		require.Equal(t, r["id"], busy["active_run_id"])
		require.Positive(t, busy["last_seq"])
	})

	t.Run("ABusyThreadQueuesOrRefuses", func(t *testing.T) {
		thID := newThread(t)
		b.must(t, http.StatusAccepted, http.MethodPost, inputs(thID), map[string]any{"content": "hello"})
		posted := b.must(t, http.StatusAccepted, http.MethodPost, inputs(thID), map[string]any{"content": "and then"})
		require.Nil(t, posted["run"])
		require.Equal(t, "queued", posted["input"].(map[string]any)["status"])
		require.Nil(t, posted["input"].(map[string]any)["run_id"])
		out := b.must(t, http.StatusConflict, http.MethodPost, inputs(thID), map[string]any{"content": "now", "on_busy": "reject"})
		require.Equal(t, "conflict", errorCode(t, out))
		b.must(t, http.StatusBadRequest, http.MethodPost, inputs(thID), map[string]any{"content": ""})
		b.must(t, http.StatusBadRequest, http.MethodPost, inputs(thID), map[string]any{"content": "x", "on_busy": "wait"})
		require.Equal(t, 2, b.inputCount(t, thID), "refused inputs are not kept")
	})

	t.Run("IdempotencyKeyReplaysTheFirstAnswerWithoutQueueingTwice", func(t *testing.T) {
		thID := newThread(t)
		status, first, _ := b.do(t, http.MethodPost, inputs(thID), map[string]any{"content": "once"}, "Idempotency-Key", "k-1")
		require.Equal(t, http.StatusAccepted, status, first)
		status, again, hdr := b.do(t, http.MethodPost, inputs(thID), map[string]any{"content": "once"}, "Idempotency-Key", "k-1")
		require.Equal(t, http.StatusAccepted, status, again)
		require.Equal(t, "true", hdr.Get("Idempotent-Replayed"))
		require.Equal(t, first, again)
		require.Equal(t, 1, b.inputCount(t, thID))
	})

	t.Run("TheOneCallFormMakesAThreadOrUsesAnIdleOne", func(t *testing.T) {
		before := threadCount(t)
		status, started, hdr := b.do(t, http.MethodPost, "/api/v1/runs", map[string]any{"agent_id": b.agentID, "input": "hi"}, "Idempotency-Key", "k-2")
		require.Equal(t, http.StatusAccepted, status, started)
		require.Equal(t, "/api/v1/runs/"+started["id"].(string), hdr.Get("Location"))
		status, replay, hdr := b.do(t, http.MethodPost, "/api/v1/runs", map[string]any{"agent_id": b.agentID, "input": "hi"}, "Idempotency-Key", "k-2")
		require.Equal(t, http.StatusAccepted, status, replay)
		require.Equal(t, "true", hdr.Get("Idempotent-Replayed"))
		require.Equal(t, started["id"], replay["id"])
		require.Equal(t, before+1, threadCount(t), "a new thread, and the replay made none")

		idle := newThread(t)
		onIdle := b.must(t, http.StatusAccepted, http.MethodPost, "/api/v1/runs", map[string]any{"agent_id": b.agentID, "input": "x", "thread_id": idle})
		require.Equal(t, idle, onIdle["thread_id"])
	})

	t.Run("TheOneCallFormIsRefused", func(t *testing.T) {
		busy := newThread(t)
		b.must(t, http.StatusAccepted, http.MethodPost, inputs(busy), map[string]any{"content": "hello"})
		out := b.must(t, http.StatusConflict, http.MethodPost, "/api/v1/runs", map[string]any{"agent_id": b.agentID, "input": "x", "thread_id": busy})
		require.Equal(t, "conflict", errorCode(t, out))
		b.must(t, http.StatusNotFound, http.MethodPost, "/api/v1/runs", map[string]any{"agent_id": b.agentID, "input": "x", "thread_id": "th_nothing"})
		other := b.mustAgent(t, "other", map[string]any{"model": "main"})
		b.must(t, http.StatusBadRequest, http.MethodPost, "/api/v1/runs", map[string]any{"agent_id": other["id"], "input": "x", "thread_id": newThread(t)})
	})

	t.Run("ViewersReadButDoNotRun", func(t *testing.T) {
		thID := newThread(t)
		b.must(t, http.StatusForbidden, http.MethodPost, "/api/v1/threads", map[string]any{"agent_id": b.agentID}, as(b.viewer.Token)...)
		b.must(t, http.StatusForbidden, http.MethodPost, "/api/v1/runs", map[string]any{"agent_id": b.agentID, "input": "x"}, as(b.viewer.Token)...)
		b.must(t, http.StatusForbidden, http.MethodPost, inputs(thID), map[string]any{"content": "x"}, as(b.viewer.Token)...)
		b.must(t, http.StatusOK, http.MethodGet, "/api/v1/threads/"+thID, nil, as(b.viewer.Token)...)
	})
}

func TestCancelRun(t *testing.T) {
	t.Parallel()
	b := setupRuns(t)

	// A run no worker holds is cancelled at once; then it is finished.
	r := b.startRun(t, "stop me")
	path := "/api/v1/runs/" + r["id"].(string)
	done := b.must(t, http.StatusAccepted, http.MethodPost, path+"/cancel", nil)
	require.Equal(t, "cancelled", done["status"])
	require.Equal(t, "cancelled", done["error"].(map[string]any)["code"])
	require.NotNil(t, done["finished_at"])
	require.Equal(t, done, b.get(t, path))
	out := b.must(t, http.StatusConflict, http.MethodPost, path+"/cancel", nil)
	require.Equal(t, "conflict", errorCode(t, out))
	require.Equal(t, "idle", b.get(t, "/api/v1/threads/"+r["thread_id"].(string))["status"])

	// A running one is asked to stop.
	r = b.startRun(t, "running")
	path = "/api/v1/runs/" + r["id"].(string)
	l := b.claim(t)
	asked := b.must(t, http.StatusAccepted, http.MethodPost, path+"/cancel", nil)
	require.Equal(t, "running", asked["status"])
	require.NotNil(t, asked["cancel_requested_at"])
	renewal, err := b.worker.Renew(t.Context(), l, time.Minute)
	require.NoError(t, err)
	require.True(t, renewal.CancelRequested, "the worker learns of it")
	b.must(t, http.StatusForbidden, http.MethodPost, path+"/cancel", nil, as(b.viewer.Token)...)
}

func TestRunReadsAndEvents(t *testing.T) {
	t.Parallel()
	b := setupRuns(t)
	r := b.startRun(t, "hello")
	runPath, thPath := "/api/v1/runs/"+r["id"].(string), "/api/v1/threads/"+r["thread_id"].(string)
	l := b.claim(t)
	b.delta(t, l, "h")
	b.answer(t, l, "hi there")

	got := b.get(t, runPath)
	require.Equal(t, "succeeded", got["status"])
	require.EqualValues(t, 1, got["attempts_used"])
	require.NotNil(t, got["started_at"])
	require.NotNil(t, got["finished_at"])
	require.Nil(t, got["error"])
	require.Equal(t, map[string]any{"input_tokens": float64(7), "output_tokens": float64(3)}, got["usage"])
	require.Equal(t, []any{}, got["skill_revisions"])

	atts := b.get(t, runPath+"/attempts")["items"].([]any)
	require.Len(t, atts, 1)
	att := atts[0].(map[string]any)
	require.Equal(t, "completed", att["status"])
	require.Equal(t, "worker-1", att["worker"])
	require.EqualValues(t, 1, att["number"])
	require.Equal(t, true, att["charged"])
	require.EqualValues(t, 1, att["to_step"])

	second := b.startRun(t, "another")
	require.Len(t, b.get(t, "/api/v1/runs")["items"], 2)
	byThread := b.get(t, "/api/v1/runs?thread_id="+r["thread_id"].(string))["items"].([]any)
	require.Len(t, byThread, 1)
	require.Equal(t, r["id"], byThread[0].(map[string]any)["id"])
	accepted := b.get(t, "/api/v1/runs?status=accepted")["items"].([]any)
	require.Len(t, accepted, 1)
	require.Equal(t, second["id"], accepted[0].(map[string]any)["id"])
	b.must(t, http.StatusBadRequest, http.MethodGet, "/api/v1/runs?status=sleeping", nil)
	page := b.get(t, "/api/v1/runs?limit=1")
	require.NotNil(t, page["next_cursor"])
	require.Len(t, b.get(t, "/api/v1/runs?limit=1&cursor="+page["next_cursor"].(string))["items"], 1)

	msgs := b.get(t, thPath+"/messages")
	require.Nil(t, msgs["next_after"])
	items := msgs["items"].([]any)
	require.Len(t, items, 2)
	require.Equal(t, "user", items[0].(map[string]any)["role"])
	require.Equal(t, "hello", items[0].(map[string]any)["content"])
	require.Equal(t, "assistant", items[1].(map[string]any)["role"])
	require.Equal(t, "hi there", items[1].(map[string]any)["content"])
	require.Equal(t, []any{}, items[1].(map[string]any)["tool_calls"])
	one := b.get(t, thPath+"/messages?limit=1")
	require.EqualValues(t, 1, one["next_after"])
	rest := b.get(t, thPath+"/messages?after=1")["items"].([]any)
	require.Len(t, rest, 1)
	require.EqualValues(t, 2, rest[0].(map[string]any)["position"])

	evs := b.get(t, thPath+"/events")
	require.Nil(t, evs["next_after"])
	var types []string
	for i, e := range evs["items"].([]any) {
		ev := e.(map[string]any)
		require.EqualValues(t, i+1, ev["seq"], "gap-free")
		require.Equal(t, r["id"], ev["run_id"])
		types = append(types, ev["type"].(string))
	}
	require.Equal(t, []string{"run.status", "run.status", "message.delta", "message.completed", "run.status"}, types)
	last := evs["items"].([]any)[4].(map[string]any)
	require.Equal(t, map[string]any{"status": "succeeded", "attempt": nil, "error": nil}, last["data"])
	page = b.get(t, thPath+"/events?after=1&limit=2")
	require.EqualValues(t, 3, page["next_after"])
	require.EqualValues(t, 2, page["items"].([]any)[0].(map[string]any)["seq"])
	require.Empty(t, b.get(t, thPath+"/events?after=5")["items"])
	b.must(t, http.StatusBadRequest, http.MethodGet, thPath+"/events?limit=1001", nil)
}

// Another workspace's threads and runs do not exist for a key.
func TestRunsAreWorkspaceScoped(t *testing.T) {
	t.Parallel()
	b := setupRuns(t)
	r := b.startRun(t, "mine")
	runPath, thPath := "/api/v1/runs/"+r["id"].(string), "/api/v1/threads/"+r["thread_id"].(string)
	other := as(b.otherWorkspace(t))
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{http.MethodGet, thPath, nil},
		{http.MethodGet, thPath + "/messages", nil},
		{http.MethodGet, thPath + "/events", nil},
		{http.MethodGet, thPath + "/stream", nil},
		{http.MethodPost, thPath + "/inputs", map[string]any{"content": "x"}},
		{http.MethodGet, runPath, nil},
		{http.MethodGet, runPath + "/attempts", nil},
		{http.MethodPost, runPath + "/cancel", nil},
		{http.MethodGet, "/api/v1/runs?thread_id=" + r["thread_id"].(string), nil},
	} {
		out := b.must(t, http.StatusNotFound, c.method, c.path, c.body, other...)
		require.Equal(t, "not_found", errorCode(t, out), c.path)
	}
	b.must(t, http.StatusNotFound, http.MethodPost, "/api/v1/threads", map[string]any{"agent_id": b.agentID}, other...)
	require.Empty(t, b.must(t, http.StatusOK, http.MethodGet, "/api/v1/runs", nil, other...)["items"])
	require.Empty(t, b.must(t, http.StatusOK, http.MethodGet, "/api/v1/threads", nil, other...)["items"])
	require.Equal(t, "accepted", b.get(t, runPath)["status"], "the other workspace's cancel changed nothing")
}

// created_after keeps the runs created after a time, with the other filters.
func TestListRunsCreatedAfter(t *testing.T) {
	t.Parallel()
	b := setupRuns(t)
	first := b.startRun(t, "one")
	_, err := b.h.App.Pool.Exec(t.Context(), `UPDATE run SET created_at = now() - interval '2 days' WHERE id = $1`, first["id"])
	require.NoError(t, err)
	second := b.startRun(t, "two")
	since := url.QueryEscape(time.Now().Add(-24 * time.Hour).UTC().Format(time.RFC3339))
	for _, q := range []string{"", "&agent_id=" + b.agentID, "&thread_id=" + second["thread_id"].(string), "&status=accepted"} {
		items := b.get(t, "/api/v1/runs?created_after="+since+q)["items"].([]any)
		require.Len(t, items, 1, q)
		require.Equal(t, second["id"], items[0].(map[string]any)["id"], q)
	}
	require.Empty(t, b.get(t, "/api/v1/runs?created_after="+since+"&thread_id="+first["thread_id"].(string))["items"])
	require.Len(t, b.get(t, "/api/v1/runs")["items"], 2)
	b.must(t, http.StatusBadRequest, http.MethodGet, "/api/v1/runs?created_after=yesterday", nil)
}
