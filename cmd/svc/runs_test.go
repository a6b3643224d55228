package main

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/run"
)

// Process-level reliability tests of the runs engine (a killed
// worker, a stale worker, a drained worker, and two workers sharing many runs): real `svc run` processes,
// killed, frozen and stopped the way an operator's machines are.

// searchTurn is a turn of the scripted model that calls web_search with query.
func searchTurn(text, query string) llmtest.Turn {
	return llmtest.Turn{Text: text, ToolCalls: []llmtest.Call{{Name: "web_search", Arguments: `{"query":"` + query + `"}`}}}
}

// slowTurn streams text in chunks pieces, delay apart, then calls web_search
// with query (none when query is empty).
func slowTurn(text string, chunks int, delay time.Duration, query string) llmtest.Turn {
	t := llmtest.Turn{Text: text, Chunks: chunks, ChunkDelay: delay}
	if query != "" {
		t.ToolCalls = []llmtest.Call{{Name: "web_search", Arguments: `{"query":"` + query + `"}`}}
	}
	return t
}

// requireSearchShape checks a run's conversation: the input, then per step the
// assistant's text and, for each searching step, the stand-in's result.
func requireSearchShape(t *testing.T, msgs []run.Message, input string, steps []llmtest.Turn) {
	t.Helper()
	want := []string{"user:" + input}
	for _, s := range steps {
		want = append(want, "assistant:"+s.Text)
		for _, c := range s.ToolCalls {
			var args struct {
				Query string `json:"query"`
			}
			require.NoError(t, json.Unmarshal([]byte(c.Arguments), &args))
			want = append(want, "tool:Result for "+args.Query)
		}
	}
	got := shape(msgs)
	require.Len(t, got, len(want), "no step recorded twice or lost: %q", got)
	for i, w := range want {
		if title, ok := strings.CutPrefix(w, "tool:"); ok {
			require.Equal(t, "tool", msgs[i].Role, "message %d: %q", i, got)
			require.False(t, msgs[i].IsError, "message %d: %q", i, got)
			require.Contains(t, msgs[i].Content, title, "message %d is the stand-in's answer to its step's search", i)
			continue
		}
		require.Equal(t, w, got[i], "message %d", i)
	}
}

// TestRunsKilledWorkerResumesFromCheckpoint: a worker
// killed with SIGKILL while the model streams its second step keeps the run
// leased until the lease expires; then expire_leases ends the attempt,
// charged, and another worker continues from the checkpoint of step one in
// a new attempt: step one's model call and search are not repeated and no
// step is recorded twice.
func TestRunsKilledWorkerResumesFromCheckpoint(t *testing.T) {
	t.Parallel()
	script := []llmtest.Turn{
		searchTurn("First I search.", "first"),
		slowTurn("Now the second search, slowly.", 20, 150*time.Millisecond, "second"),
		{Text: "Done."},
	}
	e := newRunsEnv(t, script, 3)
	e.start("control", nil)
	first := e.start("worker", nil)
	r := e.startRun("search twice")

	e.waitFor("the first worker to stream step two", 20*time.Second, func() bool {
		return e.getRun(r.ID).Step >= 1 && e.modelAsked(1) >= 1
	})
	first.signal(syscall.SIGKILL)
	first.wait(stopTimeout)
	expires := e.leaseExpiresAt(r.ID)
	require.NotNil(t, expires, "the killed worker's attempt is still leased")
	second := e.start("worker", nil)

	got := e.waitRun(r.ID)
	require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
	require.EqualValues(t, 3, got.Step)
	require.EqualValues(t, 2, got.AttemptsUsed, "the expired attempt was charged")

	atts := e.attempts(r.ID)
	require.Len(t, atts, 2)
	require.Equal(t, "expired", atts[0].Status)
	require.True(t, atts[0].Charged)
	require.True(t, ranOn(atts[0], first), "attempt 1 ran on the killed worker: %s", atts[0].Worker)
	require.NotNil(t, atts[0].ToStep)
	require.EqualValues(t, 1, *atts[0].ToStep)
	require.False(t, atts[0].EndedAt.Before(*expires), "the attempt ended no sooner than its lease")
	require.Equal(t, "completed", atts[1].Status)
	require.True(t, atts[1].Charged)
	require.True(t, ranOn(atts[1], second), "attempt 2 ran on the other worker: %s", atts[1].Worker)
	require.EqualValues(t, 1, atts[1].FromStep, "attempt 2 continued from step one's checkpoint")
	require.False(t, atts[1].StartedAt.Before(*expires), "no second attempt before the lease expired (%s < %s)", atts[1].StartedAt, *expires)

	require.Equal(t, 1, e.modelAsked(0), "step one's model call was not repeated")
	require.Equal(t, 2, e.modelAsked(1), "step two was cut off and asked again")
	require.Equal(t, 1, e.modelAsked(2))
	require.Equal(t, 1, e.tavily.count("first"), "step one's search ran once")
	require.Equal(t, 1, e.tavily.count("second"), "the killed step never reached its search")
	requireSearchShape(t, e.messages(r.ThreadID), "search twice", script)
}

// TestRunsAttemptsExhaustedFailsRun: once a run's
// charged attempts reach max_attempts (two here), the lease sweep fails it
// with attempts_exhausted rather than queueing it again.
func TestRunsAttemptsExhaustedFailsRun(t *testing.T) {
	t.Parallel()
	script := []llmtest.Turn{slowTurn(strings.Repeat("slow ", 30), 30, 150*time.Millisecond, "")}
	e := newRunsEnv(t, script, 2)
	e.start("control", nil)
	r := e.startRun("never finishes")

	for attempt := 1; attempt <= 2; attempt++ {
		w := e.start("worker", nil)
		e.waitFor("the worker to stream", 20*time.Second, func() bool { return e.modelAsked(0) >= attempt })
		w.signal(syscall.SIGKILL)
		w.wait(stopTimeout)
	}
	got := e.waitRun(r.ID)
	require.Equal(t, run.StatusFailed, got.Status)
	require.NotNil(t, got.Error)
	require.Equal(t, run.ErrCodeAttemptsExhausted, got.Error.Code, "%+v", got.Error)
	require.EqualValues(t, 2, got.AttemptsUsed)
	atts := e.attempts(r.ID)
	require.Len(t, atts, 2)
	for _, a := range atts {
		require.Equal(t, "expired", a.Status)
		require.True(t, a.Charged)
	}
	require.Equal(t, 2, e.modelAsked(0))
}

// TestRunsStaleWorkerIsFenced: a worker frozen with
// SIGSTOP past its lease, while the model streams a step, loses the run to
// another worker; resumed with SIGCONT while the new attempt streams, once
// the model's whole answer (with the step's search) has reached it, it runs
// none of the step's tools and its writes are refused: it records no event,
// message or checkpoint, does not end its (already expired) attempt again,
// and stops; the run finishes as the new attempt makes it.
func TestRunsStaleWorkerIsFenced(t *testing.T) {
	t.Parallel()
	slow := "The second search, slowly."
	script := []llmtest.Turn{
		searchTurn("First I search.", "first"),
		slowTurn(slow, 10, 400*time.Millisecond, "second"),
		{Text: "Done."},
	}
	e := newRunsEnv(t, script, 3)
	e.start("control", nil)
	stale := e.start("worker", nil)
	r := e.startRun("search twice")

	e.waitFor("the first worker to record some of step two's text", 20*time.Second, func() bool {
		stepOne := false
		for _, ev := range e.events(r.ThreadID) {
			switch {
			case ev.Type == run.EventToolResult:
				stepOne = true
			case stepOne && ev.Type == run.EventMessageDelta:
				return true
			}
		}
		return false
	})
	e.freezeOutsideTransaction(stale, r.ID)
	frozen := true
	t.Cleanup(func() {
		if frozen {
			_ = stale.cmd.Process.Signal(syscall.SIGCONT)
		}
	})
	fresh := e.start("worker", nil)
	e.waitFor("the other worker to stream step two", 30*time.Second, func() bool { return e.modelAsked(1) >= 2 })

	atts := e.attempts(r.ID)
	require.Len(t, atts, 2)
	expired := atts[0]
	require.Equal(t, "expired", expired.Status)
	require.True(t, ranOn(expired, stale))
	require.Equal(t, "running", atts[1].Status)
	require.True(t, ranOn(atts[1], fresh))

	// The first request for step two is the stale worker's.
	e.waitFor("the model to send the stale worker its whole answer", 20*time.Second, func() bool {
		for _, req := range e.model.Requests() {
			if assistants(req) == 1 {
				return req.Ended
			}
		}
		return false
	})
	stale.signal(syscall.SIGCONT)
	frozen = false
	e.waitFor("the stale worker to give up its attempt", 20*time.Second, func() bool {
		return countRecords(stale.stderr.String(), "attempt lost its lease; it stops without touching the run") == 1
	})

	got := e.waitRun(r.ID)
	require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
	require.EqualValues(t, 3, got.Step)
	require.EqualValues(t, 2, got.AttemptsUsed)
	atts = e.attempts(r.ID)
	require.Len(t, atts, 2)
	require.Equal(t, expired, atts[0], "the stale worker did not end its attempt again")
	require.Equal(t, "completed", atts[1].Status)
	require.True(t, strings.HasSuffix(e.checkpointKey(r.ID), "/a0002-slot1.json"), "the checkpoint is the new attempt's: %s", e.checkpointKey(r.ID))
	requireSearchShape(t, e.messages(r.ThreadID), "search twice", script)
	require.Equal(t, 1, e.tavily.count("first"))
	require.Equal(t, 1, e.tavily.count("second"), "the stale worker did not search")

	// After the takeover (the sweep's lease_expired error), the log holds only
	// the new attempt's stream: step two's text once, then the last step.
	evs := e.events(r.ThreadID)
	takeover := -1
	for i, ev := range evs {
		require.EqualValues(t, i+1, ev.Seq, "the event log has no gap")
		var d run.ErrorData
		if ev.Type == run.EventError && json.Unmarshal(ev.Data, &d) == nil && d.Code == "lease_expired" {
			require.Equal(t, -1, takeover, "one lease expired")
			takeover = i
		}
	}
	require.NotEqual(t, -1, takeover, "the sweep recorded the expiry")
	var after strings.Builder
	completed := 0
	for _, ev := range evs[takeover:] {
		switch ev.Type {
		case run.EventMessageDelta:
			var d run.DeltaData
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			after.WriteString(d.Text)
		case run.EventMessageCompleted:
			completed++
		}
	}
	require.Equal(t, slow+"Done.", after.String(), "no streamed text of the stale attempt after the takeover")
	require.Equal(t, 2, completed, "steps two and three completed once each after the takeover")

	require.Equal(t, 0, stale.stop(syscall.SIGTERM, stopTimeout), "the stale worker still stops cleanly")
}

// TestRunsSigtermDrainsAndHandsOff: a worker told to stop
// while the model streams claims nothing more, finishes its step (model call
// and search), hands the run off uncharged within drain_seconds and exits 0;
// another worker finishes it from that step's checkpoint. With max_attempts
// 1, a charged hand-off would have failed the run.
func TestRunsSigtermDrainsAndHandsOff(t *testing.T) {
	t.Parallel()
	script := []llmtest.Turn{
		slowTurn("Searching, slowly.", 10, 200*time.Millisecond, "first"),
		{Text: "Done."},
	}
	e := newRunsEnv(t, script, 1)
	e.start("control", nil)
	draining := e.start("worker", nil)
	r := e.startRun("search once")
	e.waitFor("the worker to stream step one", 20*time.Second, func() bool {
		for _, ev := range e.events(r.ThreadID) {
			if ev.Type == run.EventMessageDelta {
				return true
			}
		}
		return false
	})

	asked := time.Now()
	draining.signal(syscall.SIGTERM)
	later := e.startRun("search once more") // claimable while the worker drains
	require.Equal(t, 0, draining.wait(stopTimeout), "a drained worker exits 0")
	require.Less(t, time.Since(asked), 10*time.Second, "hand-off within drain_seconds")
	require.Equal(t, 1, countRecords(draining.stderr.String(), "draining attempts"))

	mid := e.getRun(r.ID)
	require.EqualValues(t, 1, mid.Step, "the step under way was finished and recorded")
	require.EqualValues(t, 0, mid.AttemptsUsed, "a hand-off is not charged")
	atts := e.attempts(r.ID)
	require.Len(t, atts, 1)
	require.Equal(t, "handed_off", atts[0].Status)
	require.False(t, atts[0].Charged)
	require.NotNil(t, atts[0].ToStep)
	require.EqualValues(t, 1, *atts[0].ToStep)
	require.Equal(t, 1, e.tavily.count("first"), "the finished step's search ran")
	require.Empty(t, e.attempts(later.ID), "the stopping worker claimed nothing more")
	require.Equal(t, run.StatusAccepted, e.getRun(later.ID).Status)

	next := e.start("worker", nil)
	for _, id := range []string{r.ID, later.ID} {
		got := e.waitRun(id)
		require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
		require.EqualValues(t, 1, got.AttemptsUsed, "max_attempts 1 was enough")
	}
	atts = e.attempts(r.ID)
	require.Len(t, atts, 2)
	require.Equal(t, "completed", atts[1].Status)
	require.EqualValues(t, 1, atts[1].FromStep, "continued from the handed-off checkpoint")
	require.True(t, ranOn(atts[1], next))
	require.Equal(t, 2, e.modelAsked(0), "step one was asked once per run: not again after the hand-off")
	require.Equal(t, 2, e.tavily.count("first"), "one search per run")
	requireSearchShape(t, e.messages(r.ThreadID), "search once", script)
}

// TestRunsTwoWorkersManyRuns: two worker processes share fifty runs of four
// steps (three searches): every run succeeds, no run ever has two attempts
// running at once, and each search runs exactly once per step of each run.
func TestRunsTwoWorkersManyRuns(t *testing.T) {
	t.Parallel()
	const runs = 50
	script := []llmtest.Turn{
		searchTurn("One.", "step one"),
		searchTurn("Two.", "step two"),
		searchTurn("Three.", "step three"),
		{Text: "Done."},
	}
	e := newRunsEnv(t, script, 3)
	e.start("control", nil)
	workers := []*process{e.start("worker", nil), e.start("worker", nil)}

	began := time.Now()
	ids := make([]run.Run, runs)
	for i := range ids {
		ids[i] = e.startRun("go")
	}
	for _, r := range ids {
		got := e.waitRun(r.ID)
		require.Equal(t, run.StatusSucceeded, got.Status, "run %s: %+v", r.ID, got.Error)
		require.EqualValues(t, 4, got.Step)
	}
	t.Logf("%d runs of 4 steps on 2 workers in %s", runs, time.Since(began).Round(time.Millisecond))

	var overlapping, open int
	require.NoError(t, e.pool.QueryRow(t.Context(), `
		SELECT
			(SELECT count(*) FROM run_attempt a JOIN run_attempt b ON a.run_id = b.run_id AND a.id < b.id
			 WHERE tstzrange(a.started_at, coalesce(a.ended_at, 'infinity')) && tstzrange(b.started_at, coalesce(b.ended_at, 'infinity'))),
			(SELECT count(*) FROM run_attempt WHERE ended_at IS NULL OR status = 'running')`).Scan(&overlapping, &open))
	require.Zero(t, overlapping, "no run had two attempts running at once")
	require.Zero(t, open, "every attempt ended")

	ran := map[int]int{}
	for _, r := range ids {
		requireSearchShape(t, e.messages(r.ThreadID), "go", script)
		for _, a := range e.attempts(r.ID) {
			for i, w := range workers {
				if ranOn(a, w) {
					ran[i]++
				}
			}
		}
	}
	require.Len(t, ran, 2, "both workers ran attempts: %v", ran)
	// Every run's three tool messages hold a search's answer, so each step
	// searched at least once; the totals leave no room for a second search.
	for _, q := range []string{"step one", "step two", "step three"} {
		require.Equal(t, runs, e.tavily.count(q), "searches for %q", q)
	}
	require.Equal(t, 3*runs, e.tavily.total())
	for _, w := range workers {
		require.Equal(t, 0, w.stop(syscall.SIGTERM, stopTimeout))
	}
}

// TestRunsWorkerFrozenInsideTransaction (the harder case of
// TestRunsStaleWorkerIsFenced): a worker frozen in the middle of one of its fenced transactions
// (here: finishing the run, after its final step was recorded) keeps the
// run's row locked; expire_leases skips locked rows (SKIP LOCKED), so the
// run can only be taken over once PostgreSQL ends that session. An operator
// bounds this with idle_in_transaction_session_timeout on the database URL;
// without one, svc sets half a lease (docs/operations.md, "Runs under
// faults"): the frozen session is ended, its lock released, and the run
// continues on another worker as in row 1: from the final step's
// checkpoint, which ends it without asking the model again.
func TestRunsWorkerFrozenInsideTransaction(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// param is appended to the database URL of the worker processes.
		param string
	}{
		{name: "url_setting", param: "idle_in_transaction_session_timeout=2000"},
		// svc sets half a lease itself when the URL sets nothing.
		{name: "default"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			text := strings.Repeat("word ", 100)
			script := []llmtest.Turn{slowTurn(text, 100, 40*time.Millisecond, "first"), {Text: "Done."}}
			e := newRunsEnv(t, script, 3)
			worker := map[string]string{}
			if tc.param != "" {
				worker["SVC_DATABASE__URL"] = e.vars["SVC_DATABASE__URL"] + sep(e.vars["SVC_DATABASE__URL"]) + tc.param
			}
			e.start("control", nil)
			frozen := e.start("worker", worker)
			r := e.startRun("stream a lot")
			e.waitFor("the worker to stream", 20*time.Second, func() bool { return e.modelAsked(0) >= 1 })
			e.freezeInsideTransaction(frozen, r.ID)
			require.Equal(t, 1, e.modelAsked(1), "the final step was asked for")
			stopped := true
			t.Cleanup(func() {
				if stopped {
					_ = frozen.cmd.Process.Signal(syscall.SIGCONT)
				}
			})
			e.start("worker", worker)

			got := e.waitRun(r.ID)
			require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
			atts := e.attempts(r.ID)
			require.Len(t, atts, 2)
			require.Equal(t, "expired", atts[0].Status)
			require.True(t, ranOn(atts[0], frozen))
			require.Equal(t, "completed", atts[1].Status)
			requireSearchShape(t, e.messages(r.ThreadID), "stream a lot", script)
			require.Equal(t, 1, e.modelAsked(1), "the final step was not asked for again")

			// Resumed, the frozen worker finds its session gone and its lease
			// lost: it changes nothing.
			lastSeq := e.events(r.ThreadID)
			frozen.signal(syscall.SIGCONT)
			stopped = false
			time.Sleep(2 * time.Second)
			require.Equal(t, atts, e.attempts(r.ID))
			require.Equal(t, lastSeq, e.events(r.ThreadID))
			require.Equal(t, got, e.getRun(r.ID))
			require.Equal(t, 1, e.tavily.count("first"), "the frozen step never searched")
		})
	}
}

// sep is the separator before a query parameter added to url.
func sep(url string) string {
	if strings.Contains(url, "?") {
		return "&"
	}
	return "?"
}
