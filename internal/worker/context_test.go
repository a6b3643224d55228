package worker_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/contextfit"
	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/worker"
)

// longThread starts a run on a new thread, waits for it, and adds turns
// turns of a question and an answer to the thread's history.
func (b *bundle) longThread(t *testing.T, turns int) string {
	t.Helper()
	r, err := b.runs.Start(t.Context(), b.caller, run.StartInput{AgentID: b.agentID, Input: "hello"})
	require.NoError(t, err)
	got := b.waitRun(t, r.ID, 20*time.Second)
	require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
	_, err = b.pool.Exec(t.Context(), `
		WITH t AS (SELECT message_count AS n FROM thread WHERE id = $1)
		INSERT INTO thread_message (thread_id, position, workspace_id, role, content)
		SELECT $1, t.n + g, $2, CASE WHEN g % 2 = 1 THEN 'user' ELSE 'assistant' END,
		       CASE WHEN g % 2 = 1 THEN 'Question ' || g || ': what do you make of item number ' || g || ' on the list we keep?'
		            ELSE 'Answer ' || g || ': item ' || g || ' is fine, nothing to add about it for now.' END
		FROM t, generate_series(1, $3::int) AS g`, r.ThreadID, b.caller.WorkspaceID, 2*turns)
	require.NoError(t, err)
	_, err = b.pool.Exec(t.Context(), `UPDATE thread SET message_count = message_count + $2 WHERE id = $1`, r.ThreadID, 2*turns)
	require.NoError(t, err)
	return r.ThreadID
}

// ask runs input on the thread and answers the run.
func (b *bundle) ask(t *testing.T, threadID, input string) run.Run {
	t.Helper()
	r, err := b.runs.Start(t.Context(), b.caller, run.StartInput{AgentID: b.agentID, Input: input, ThreadID: &threadID})
	require.NoError(t, err)
	got := b.waitRun(t, r.ID, 30*time.Second)
	require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
	return got
}

// compactions answers the data of the thread's context.compacted events.
func (b *bundle) compactions(t *testing.T, threadID string) []run.ContextCompactedData {
	t.Helper()
	evs, err := b.runs.Events(t.Context(), b.caller, threadID, 0, 1000)
	require.NoError(t, err)
	var out []run.ContextCompactedData
	for _, e := range evs {
		if e.Type == run.EventContextCompacted {
			var d run.ContextCompactedData
			require.NoError(t, json.Unmarshal(e.Data, &d))
			out = append(out, d)
		}
	}
	return out
}

// summarizing counts the summarizing calls among reqs and fails on a
// request the server refused as too long when refusals is false.
func summarizing(t *testing.T, reqs []llmtest.Request) (n, refused int) {
	t.Helper()
	for _, r := range reqs {
		if r.Refused {
			refused++
			continue
		}
		if r.System() == contextfit.Instruction {
			n++
		}
	}
	return n, refused
}

// lastText is the text of the last message of a model request.
func lastText(req llmtest.Request) string {
	c := req.Conversation()
	return c[len(c)-1].Text
}

// TestLongThreadKeepsAnswering: a thread of 1,000 turns on a model whose
// context window (4,000 tokens, which the scripted server enforces as a
// vendor does) holds a small part of it keeps answering: the first run
// summarizes the older turns once, and later runs reuse the summary
// without asking for another while the rest fits. The thread's messages
// are unchanged.
func TestLongThreadKeepsAnswering(t *testing.T) {
	t.Parallel()
	forVendors(t, func(t *testing.T, v vendor) {
		b := setupOn(t, v, []llmtest.Turn{{Text: "Noted."}}, 3, llmtest.Window(4000), llmtest.Cycle())
		_, err := b.pool.Exec(t.Context(), `UPDATE model SET context_window = 4000 WHERE key = 'main'`)
		require.NoError(t, err)
		b.runWorker(t, worker.ExecutorDeps{Objects: b.store})
		threadID := b.longThread(t, 1000)

		b.ask(t, threadID, "What about the last item?")
		n, refused := summarizing(t, b.model.Requests())
		require.Equal(t, 0, refused, "no request was longer than the window")
		require.Equal(t, 1, n, "one summarizing call")
		cs := b.compactions(t, threadID)
		require.Len(t, cs, 1)
		c := cs[0]
		require.Equal(t, "summarize", c.Strategy)
		require.Equal(t, "Noted.", c.Summary)
		require.Equal(t, 1, c.FromPosition)
		require.Greater(t, c.ThroughPosition, 1900, "most of the thread is summarized")
		require.Less(t, c.SummarizedMessages, c.ReplacedMessages, "the oldest turns did not fit in the summarizing call")
		require.Less(t, c.TokensAfter, c.TokensBefore)
		last := b.model.Requests()[len(b.model.Requests())-1]
		require.Contains(t, last.System(), "## Summary of the earlier conversation")
		require.Contains(t, last.System(), "Noted.")
		require.Less(t, last.Tokens, 4000)

		// Later runs reuse the summary.
		for i := range 3 {
			b.ask(t, threadID, fmt.Sprintf("And item %d?", i))
		}
		n, refused = summarizing(t, b.model.Requests())
		require.Equal(t, 0, refused)
		require.Equal(t, 1, n, "the summary is computed once")
		require.Len(t, b.compactions(t, threadID), 1)
		last = b.model.Requests()[len(b.model.Requests())-1]
		require.Contains(t, last.System(), "## Summary of the earlier conversation")
		require.Equal(t, "And item 2?", lastText(last))

		msgs, err := b.runs.ListMessages(t.Context(), b.caller, threadID, 0, 10)
		require.NoError(t, err)
		require.Equal(t, "hello", msgs[0].Content, "the thread's messages are unchanged")
		var count int
		require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT count(*) FROM thread_message WHERE thread_id = $1`, threadID).Scan(&count))
		require.Equal(t, 2+2000+4*2, count)
	})
}

// TestContextLengthErrorRecovered: a model without a known context window
// sends the whole thread; the vendor's context-length refusal makes the
// run compact once, with the vendor's numbers, and send again.
func TestContextLengthErrorRecovered(t *testing.T) {
	t.Parallel()
	forVendors(t, func(t *testing.T, v vendor) {
		b := setupOn(t, v, []llmtest.Turn{{Text: "Noted."}}, 3, llmtest.Window(3000), llmtest.Cycle())
		b.runWorker(t, worker.ExecutorDeps{Objects: b.store})
		threadID := b.longThread(t, 200)

		b.ask(t, threadID, "Where were we?")
		reqs := b.model.Requests()
		n, refused := summarizing(t, reqs)
		require.Equal(t, 1, refused, "the whole thread was refused once")
		require.Equal(t, 1, n)
		require.False(t, reqs[len(reqs)-1].Refused)
		require.Equal(t, "Where were we?", lastText(reqs[len(reqs)-1]))
		require.Len(t, b.compactions(t, threadID), 1)

		// The next run starts from the thread's summary: no refusal, no new summary.
		b.ask(t, threadID, "And now?")
		n, refused = summarizing(t, b.model.Requests())
		require.Equal(t, 1, refused)
		require.Equal(t, 1, n)
		last := b.model.Requests()[len(b.model.Requests())-1]
		require.Contains(t, last.System(), "## Summary of the earlier conversation")
	})
}

// TestTruncateStrategy: an agent that truncates drops the oldest turns
// without a summarizing call, and still answers.
func TestTruncateStrategy(t *testing.T) {
	t.Parallel()
	forVendors(t, func(t *testing.T, v vendor) {
		b := setupOn(t, v, []llmtest.Turn{{Text: "Noted."}}, 3, llmtest.Window(3000), llmtest.Cycle())
		_, err := b.pool.Exec(t.Context(), `UPDATE model SET context_window = 3000 WHERE key = 'main'`)
		require.NoError(t, err)
		_, err = b.pool.Exec(t.Context(), `UPDATE revision SET config = jsonb_set(config, '{context}', '{"strategy":"truncate"}') WHERE head_id = $1`, b.agentID)
		require.NoError(t, err)
		b.runWorker(t, worker.ExecutorDeps{Objects: b.store})
		threadID := b.longThread(t, 300)

		b.ask(t, threadID, "Still there?")
		reqs := b.model.Requests()
		n, refused := summarizing(t, reqs)
		require.Equal(t, 0, refused)
		require.Equal(t, 0, n)
		require.Empty(t, b.compactions(t, threadID))
		last := reqs[len(reqs)-1]
		require.NotContains(t, last.System(), "Summary")
		first := last.Conversation()[0]
		require.Equal(t, "user", first.Role, "the conversation sent starts with the user")
		require.True(t, strings.HasPrefix(first.Text, "Question"))
	})
}
