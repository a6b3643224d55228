package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/app"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/testfactory"
)

// setupNoWorker starts a control process, whose runs no worker takes: they
// stay accepted until cancelled, so lists and cancels are what the test
// made them.
func setupNoWorker(t *testing.T) *testBundle {
	t.Helper()
	prefix := "svc-test-" + strings.ToLower(ulid.Make().String()) + ":"
	h := apitest.Start(t, apitest.Options{Role: app.RoleControl, PauseSweeps: true, Configure: func(c *config.Config) {
		c.Redis.KeyPrefix = prefix
	}})
	return &testBundle{h: h, admin: testfactory.Bootstrap(t, h.App.Pool)}
}

// setupWithModel starts a process with a worker whose model is a local
// server playing script, and an agent "scripted" on it; it returns the
// bundle and the agent's id.
func setupWithModel(t *testing.T, script []llmtest.Turn) (*testBundle, string) {
	t.Helper()
	model := llmtest.NewChatServer(script)
	t.Cleanup(model.Close)
	b := setup(t, allowLoopback(t, model.URL))
	o := b.admin.Owner()
	testfactory.Model(t, b.h.App.Pool, o, &testfactory.ModelOpts{Model: "scripted-1",
		Provider: &testfactory.ProviderOpts{Config: json.RawMessage(`{"base_url":"` + model.URL + `/v1"}`)}})
	// Through the service: its configuration gets the defaults a run needs.
	ag, err := b.h.App.Agents.Create(t.Context(), b.admin.Caller("admin"), revision.CreateInput{Name: "scripted", Config: json.RawMessage(`{"model":"main"}`)})
	require.NoError(t, err)
	return b, ag.ID
}

// allowLoopback lets providers and subscriptions reach the local server at
// rawURL (http, on loopback, its port), as a development configuration would.
func allowLoopback(tb testing.TB, rawURL string) func(*config.Config) {
	tb.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(tb, err)
	port, err := strconv.Atoi(u.Port())
	require.NoError(tb, err)
	return func(c *config.Config) {
		c.EndpointPolicy.AllowHTTP = true
		c.EndpointPolicy.AllowedPrefixes = []string{"127.0.0.0/8"}
		c.EndpointPolicy.AllowedPorts = []int{port}
	}
}

// agentWithModel makes a model "main" (once) and an agent on it.
func (b *testBundle) agentWithModel(t *testing.T, name string, model bool) string {
	t.Helper()
	o := b.admin.Owner()
	if model {
		testfactory.Model(t, b.h.App.Pool, o, nil)
	}
	return testfactory.Agent(t, b.h.App.Pool, o, &testfactory.AgentOpts{Name: name}).ID
}

// startRun starts a run as the admin through the run service.
func (b *testBundle) startRun(t *testing.T, agentID, input string) run.Run {
	t.Helper()
	r, err := b.h.App.Runs.Start(t.Context(), b.admin.Caller("admin"), run.StartInput{AgentID: agentID, Input: input})
	require.NoError(t, err)
	return r
}

// waitRun waits until the run is finished and returns it.
func (b *testBundle) waitRun(t *testing.T, runID string) run.Run {
	t.Helper()
	var r run.Run
	require.Eventually(t, func() bool {
		var err error
		r, err = b.h.App.Runs.GetRun(t.Context(), b.admin.Caller("admin"), runID)
		require.NoError(t, err)
		return r.Status.Finished()
	}, 20*time.Second, 20*time.Millisecond)
	return r
}

var runLinkRE = regexp.MustCompile(`<a href="/w/[^/]+/runs/(run_[0-9a-z]+)"><code>`)

// listedRuns are the run ids a runs list links to, in order.
func listedRuns(body string) []string {
	var out []string
	for _, m := range runLinkRE.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestRunsListFiltersAndPages(t *testing.T) {
	t.Parallel()
	b := setupNoWorker(t)
	br := b.browser(t)
	br.signIn(t, b.admin.Email, adminPassword)

	// Empty: the list says where to start one.
	p := br.get(t, b.workspacePath("runs"))
	require.Equal(t, http.StatusOK, p.status, p.body)
	requirePageHeaders(t, p)
	require.Contains(t, p.body, "No runs yet")
	require.Contains(t, p.body, `href="`+b.workspacePath("runs", "new")+`"`)

	first := b.agentWithModel(t, "first agent", true)
	second := b.agentWithModel(t, "second agent", false)
	var firsts []string
	for i := range 51 {
		firsts = append(firsts, b.startRun(t, first, "input "+strconv.Itoa(i)).ID)
	}
	other := b.startRun(t, second, "other")
	_, err := b.h.App.Runs.Cancel(t.Context(), b.admin.Caller("admin"), other.ID)
	require.NoError(t, err)
	old := b.startRun(t, second, "old")
	b.exec(t, `UPDATE run SET created_at = now() - interval '3 days' WHERE id = $1`, old.ID)

	// Newest first, 50 a page, each linking to its run, with its agent.
	p = br.get(t, b.workspacePath("runs"))
	require.Equal(t, http.StatusOK, p.status, p.body)
	ids := listedRuns(p.body)
	require.Len(t, ids, 50)
	require.Equal(t, []string{old.ID, other.ID, firsts[50]}, ids[:3])
	require.Contains(t, p.body, "second agent")
	require.Contains(t, p.body, `<span class="status status-cancelled">cancelled</span>`)
	require.Contains(t, p.body, "0 of "+strconv.Itoa(int(old.MaxAttempts)))
	next := regexp.MustCompile(`<nav class="pager" aria-label="Pages"><a href="([^"]+)">`).FindStringSubmatch(p.body)
	require.NotNil(t, next, p.body)
	p = br.get(t, strings.ReplaceAll(next[1], "&amp;", "&"))
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Len(t, listedRuns(p.body), 3)

	// Filters apply together and the form keeps them.
	p = br.get(t, b.workspacePath("runs")+"?agent="+second)
	require.Equal(t, []string{old.ID, other.ID}, listedRuns(p.body))
	require.Contains(t, p.body, `<option value="`+second+`" selected>second agent</option>`)
	p = br.get(t, b.workspacePath("runs")+"?agent="+second+"&status=cancelled")
	require.Equal(t, []string{other.ID}, listedRuns(p.body))
	require.Contains(t, p.body, `<option value="cancelled" selected>cancelled</option>`)
	since := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	p = br.get(t, b.workspacePath("runs")+"?agent="+second+"&since="+since)
	require.Equal(t, []string{other.ID}, listedRuns(p.body))
	require.Contains(t, p.body, `value="`+since+`"`)
	p = br.get(t, b.workspacePath("runs")+"?status=failed")
	require.Empty(t, listedRuns(p.body))
	require.Contains(t, p.body, "No runs match these filters.")

	// A hand-made filter is refused beside its field.
	p = br.get(t, b.workspacePath("runs")+"?status=sleeping&since=yesterday")
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "not a status of runs")
	require.Contains(t, p.body, "must be a date")
	require.Empty(t, listedRuns(p.body))

	// A viewer reads the list but is not offered the playground.
	viewer, _ := b.signedInMember(t, "viewer")
	p = viewer.get(t, b.workspacePath("runs")+"?status=failed")
	require.Equal(t, http.StatusOK, p.status)
	require.NotContains(t, p.body, "Start a run")
	require.Equal(t, http.StatusForbidden, viewer.get(t, b.workspacePath("runs", "new")).status)
}

func TestRunPageCancelAndPermissions(t *testing.T) {
	t.Parallel()
	b := setupNoWorker(t)
	agentID := b.agentWithModel(t, "waiter", true)
	r := b.startRun(t, agentID, "wait for me")
	runPath := b.workspacePath("runs", r.ID)

	// A viewer sees the run but no cancel button, and may not cancel.
	viewer, _ := b.signedInMember(t, "viewer")
	p := viewer.get(t, runPath)
	require.Equal(t, http.StatusOK, p.status, p.body)
	requirePageHeaders(t, p)
	require.Contains(t, p.body, `<span class="status status-accepted" data-live-status>accepted</span>`)
	require.Contains(t, p.body, `href="`+b.workspacePath("agents", agentID, "revisions", r.RevisionID)+`"`)
	require.Contains(t, p.body, `href="`+b.workspacePath("runs", "threads", r.ThreadID)+`"`)
	require.Contains(t, p.body, "No worker has taken the run yet.")
	require.Contains(t, p.body, `data-live-stream="`+b.workspacePath("runs", "threads", r.ThreadID, "stream")+`?after=1"`)
	require.NotContains(t, p.body, "Cancel run")
	p = viewer.post(t, runPath+"/cancel", url.Values{"csrf_token": {hiddenFields(p.body)["csrf_token"]}})
	require.Equal(t, http.StatusForbidden, p.status, p.body)

	// A runner cancels it; the page says so and offers nothing more.
	runner, _ := b.signedInMember(t, "runner")
	p = runner.get(t, runPath)
	require.Contains(t, p.body, "Cancel run")
	p = runner.submit(t, runPath, runPath+"/cancel", nil)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Equal(t, runPath, p.header.Get("Location"))
	p = runner.get(t, runPath)
	require.Contains(t, p.body, "The run is cancelled.")
	require.Contains(t, p.body, `status-cancelled" data-live-status>cancelled</span>`)
	require.Contains(t, p.body, "cancelled: cancelled by ")
	require.NotContains(t, p.body, "Cancel run")
	require.NotContains(t, p.body, "data-live-stream")
	// The timeline shows the run's events, each with its data.
	require.Contains(t, p.body, `<span class="badge">run.status</span>`)
	require.Contains(t, p.body, "<summary>Event data</summary>")

	// Cancelling again is refused on the page.
	p = runner.post(t, runPath+"/cancel", url.Values{"csrf_token": {hiddenFields(p.body)["csrf_token"]}})
	require.Equal(t, http.StatusConflict, p.status, p.body)
	require.Contains(t, p.body, "already cancelled")

	// Another workspace's run, or none, is not found.
	require.Equal(t, http.StatusNotFound, runner.get(t, b.workspacePath("runs", "run_nothing")).status)
}

// TestRunsLive runs an agent from the playground against a scripted model:
// the run page shows attempts and timeline, the stream sends the API's
// events and resumes after Last-Event-ID, the thread page shows the
// conversation and takes another input, and what the model said is shown
// as text, never as HTML.
func TestRunsLive(t *testing.T) {
	t.Parallel()
	answer := "Here: <script>alert(1)</script> and <b>bold</b>."
	b, agentID := setupWithModel(t, []llmtest.Turn{
		{Text: answer, Chunks: 3, ChunkDelay: 10 * time.Millisecond},
		{Text: "Second answer.", Chunks: 2},
	})
	br := b.browser(t)
	br.signIn(t, b.admin.Email, adminPassword)

	// The playground lists the active agents; a missing input is refused
	// with what was typed kept.
	form := br.get(t, b.workspacePath("runs", "new")+"?agent="+agentID)
	require.Equal(t, http.StatusOK, form.status, form.body)
	require.Contains(t, form.body, `<option value="`+agentID+`" selected>scripted</option>`)
	require.Contains(t, form.body, `<datalist id="revisions">`)
	p := br.submit(t, b.workspacePath("runs", "new"), b.workspacePath("runs", "new"), url.Values{"agent_id": {agentID}, "input": {""}})
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
	require.Contains(t, p.body, `field-error`)
	p = br.submit(t, b.workspacePath("runs", "new"), b.workspacePath("runs", "new"), url.Values{"agent_id": {agentID}, "revision_id": {"rev_nothing"}, "input": {"<i>hi</i>"}})
	require.Equal(t, http.StatusNotFound, p.status, p.body)
	require.Contains(t, p.body, `&lt;i&gt;hi&lt;/i&gt;</textarea>`)

	p = br.submit(t, b.workspacePath("runs", "new"), b.workspacePath("runs", "new"), url.Values{"agent_id": {agentID}, "input": {"Say something risky."}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	runPath := p.header.Get("Location")
	runID := runPath[strings.LastIndex(runPath, "/")+1:]
	r, err := b.h.App.Runs.GetRun(t.Context(), b.admin.Caller("admin"), runID)
	require.NoError(t, err)

	// The page's stream follows the run as it goes, to its end.
	streamPath := b.workspacePath("runs", "threads", r.ThreadID, "stream")
	frames := br.stream(t, streamPath+"?after=0", "", func(f sseFrame) bool {
		return f.event == "run.status" && strings.Contains(f.data, `"status":"succeeded"`)
	})
	r = b.waitRun(t, runID)
	require.Equal(t, run.StatusSucceeded, r.Status, "%+v", r.Error)

	p = br.get(t, runPath)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "The run started.")
	require.Contains(t, p.body, `data-live-status>succeeded</span>`)
	require.Contains(t, p.body, "<code>"+b.h.App.ReplicaID+"</code>")
	require.Contains(t, p.body, "charged")
	require.Contains(t, p.body, `<span class="badge">message.delta</span>`)
	require.Regexp(t, `[0-9]+ streamed piece`, p.body)
	requireEscaped(t, p.body)

	// The stream sent exactly the API's events; it resumes after Last-Event-ID.
	evs, err := b.h.App.Runs.Events(t.Context(), b.admin.Caller("admin"), r.ThreadID, 0, 100)
	require.NoError(t, err)
	require.Len(t, frames, len(evs))
	for i, e := range evs {
		require.Equal(t, strconv.FormatInt(e.Seq, 10), frames[i].id)
		require.Equal(t, e.Type, frames[i].event)
		var got map[string]any
		require.NoError(t, json.Unmarshal([]byte(frames[i].data), &got))
		require.Equal(t, e.Type, got["type"])
		require.Equal(t, runID, got["run_id"])
	}
	rest := br.stream(t, streamPath+"?after=0", "3", nil)
	require.Len(t, rest, len(evs)-3)
	require.Equal(t, "4", rest[0].id)

	// The thread page shows the conversation, escaped, and takes another input.
	threadPath := b.workspacePath("runs", "threads", r.ThreadID)
	p = br.get(t, threadPath)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `<span class="badge">User</span>`)
	require.Contains(t, p.body, `<span class="badge">Assistant</span>`)
	require.Contains(t, p.body, "Say something risky.")
	requireEscaped(t, p.body)
	require.Contains(t, p.body, `href="`+runPath+`"><code>`+runID+`</code>`)
	p = br.submit(t, threadPath, threadPath+"/inputs", url.Values{"content": {""}})
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
	p = br.submit(t, threadPath, threadPath+"/inputs", url.Values{"content": {"And again?"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	secondPath := p.header.Get("Location")
	require.NotEqual(t, runPath, secondPath)
	require.True(t, strings.HasPrefix(secondPath, b.workspacePath("runs", "run_")), secondPath)
	b.waitRun(t, secondPath[strings.LastIndex(secondPath, "/")+1:])
	p = br.get(t, threadPath)
	require.Contains(t, p.body, "And again?")
	require.Contains(t, p.body, "Second answer.")

	// A viewer reads the thread but has no input form, and may not post.
	viewer, _ := b.signedInMember(t, "viewer")
	p = viewer.get(t, threadPath)
	require.Equal(t, http.StatusOK, p.status)
	require.NotContains(t, p.body, "/inputs")
	p = viewer.post(t, threadPath+"/inputs", url.Values{"csrf_token": {hiddenFields(p.body)["csrf_token"]}, "content": {"no"}})
	require.Equal(t, http.StatusForbidden, p.status)
}

// requireEscaped checks that the model's answer is on the page as text.
func requireEscaped(t *testing.T, body string) {
	t.Helper()
	require.Contains(t, body, "Here: &lt;script&gt;alert(1)&lt;/script&gt; and &lt;b&gt;bold&lt;/b&gt;.")
	require.NotContains(t, body, "<script>alert(1)")
	require.NotContains(t, body, "<b>bold</b>")
}

// sseFrame is one event frame of a stream.
type sseFrame struct{ id, event, data string }

// stream reads a console stream with the browser's session (and
// Last-Event-ID when lastID is set) until done says a frame is the last one
// wanted, or, with done nil, until it has been quiet for a moment, and
// returns its event frames.
func (br *browser) stream(t *testing.T, path, lastID string, done func(sseFrame) bool) []sseFrame {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, br.b.h.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	// A plain client: the contract check reads whole bodies, and a stream
	// does not end.
	resp, err := (&http.Client{Jar: br.jar}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	require.NotEmpty(t, resp.Header.Get("X-Request-Id"))

	lines := make(chan string)
	go func() {
		defer close(lines)
		r := bufio.NewReader(resp.Body)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return // the stream ended or the test left
			}
			select {
			case lines <- strings.TrimSuffix(line, "\n"):
			case <-ctx.Done():
				return
			}
		}
	}()
	quiet := time.Second
	if done != nil {
		quiet = 20 * time.Second
	}
	var out []sseFrame
	var f sseFrame
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return out
			}
			name, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch name {
			case "id":
				f.id = value
			case "event":
				f.event = value
			case "data":
				f.data = value
			}
			if line == "" && f.id != "" {
				out = append(out, f)
				if done != nil && done(f) {
					return out
				}
				f = sseFrame{}
			}
		case <-time.After(quiet):
			require.Nil(t, done, "the stream went quiet before its last frame: %v", out)
			return out
		}
	}
}
