package console_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/testfactory"
)

// BenchmarkPages renders the console's list and detail pages of a
// workspace holding 10,000 runs and 1,000 agents, signed in as its admin,
// and reports each page's p50 and p95 server time and size. Targets: p95
// under 50 ms, pages under 100 KB. Needs TEST_DATABASE_URL.
func BenchmarkPages(b *testing.B) {
	const runs, agents = 10000, 1000
	h := apitest.Start(b, apitest.Options{PauseSweeps: true})
	admin := testfactory.Bootstrap(b, h.App.Pool)
	ctx := b.Context()
	// Seed in bulk: agents with their revision, then threads with one
	// finished run each, spread over the agents.
	_, err := h.App.Pool.Exec(ctx, `
		WITH a AS (
			SELECT 'ap_bench' || lpad(g::text, 22, '0') AS id, 'rev_bench' || lpad(g::text, 21, '0') AS rev, g
			FROM generate_series(1, $3::int) g
		), heads AS (
			INSERT INTO head (id, workspace_id, kind, name, description, labels, default_revision_id, created_by_id, updated_by_id)
			SELECT a.id, $1, 'agent', 'agent ' || a.g, 'benchmark agent', jsonb_build_object('team', 'team-' || (a.g % 10)), a.rev, $2, $2 FROM a
			RETURNING id
		)
		INSERT INTO revision (id, head_id, number, config, content_hash, created_by_id)
		SELECT a.rev, a.id, 1, '{"model":"main"}', 'sha256:' || repeat('0', 64), $2 FROM a`,
		admin.WorkspaceID, admin.PrincipalID, agents)
	require.NoError(b, err)
	_, err = h.App.Pool.Exec(ctx, `
		WITH t AS (
			SELECT g, 'th_bench' || lpad(g::text, 22, '0') AS id, 'run_bench' || lpad(g::text, 21, '0') AS run,
				'ap_bench' || lpad((1 + g % $3::int)::text, 22, '0') AS agent, 'rev_bench' || lpad((1 + g % $3::int)::text, 21, '0') AS rev
			FROM generate_series(1, $4::int) g
		), threads AS (
			INSERT INTO thread (id, workspace_id, agent_id, metadata, created_by_id)
			SELECT id, $1, agent, '{}', $2 FROM t RETURNING id
		)
		INSERT INTO run (id, workspace_id, thread_id, agent_id, revision_id, model_key, skill_revisions, depth, max_attempts, created_by_id,
			status, started_at, finished_at, usage)
		SELECT t.run, $1, t.id, t.agent, t.rev, 'main', '[]', 0, 3, $2,
			(ARRAY['succeeded', 'failed', 'cancelled'])[1 + t.g % 3], now() - interval '1 hour', now(), '{"input_tokens": 120, "output_tokens": 40}'
		FROM t JOIN threads ON threads.id = t.id`,
		admin.WorkspaceID, admin.PrincipalID, agents, runs)
	require.NoError(b, err)
	_, err = h.App.Pool.Exec(ctx, `ANALYZE`)
	require.NoError(b, err)

	c := signedInClient(b, h, admin.Email)
	ws := "/w/" + admin.WorkspaceID
	pages := []string{
		ws + "/runs",
		ws + "/runs?status=failed",
		ws + "/runs/run_bench" + fmt.Sprintf("%021d", runs/2),
		ws + "/runs/threads/th_bench" + fmt.Sprintf("%022d", runs/2),
		ws + "/agents",
		ws + "/agents?label=team%3Ateam-3",
		ws + "/agents/ap_bench" + fmt.Sprintf("%022d", agents/2),
		ws + "/api-keys",
	}
	for _, p := range pages {
		name := strings.TrimPrefix(p, ws+"/")
		b.Run(name, func(b *testing.B) {
			var took []time.Duration
			size := 0
			for b.Loop() {
				start := time.Now()
				resp, err := c.Get(h.URL + p)
				require.NoError(b, err)
				body, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				require.NoError(b, err)
				took = append(took, time.Since(start))
				require.Equal(b, http.StatusOK, resp.StatusCode, "%s: %.300s", p, body)
				size = len(body)
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[len(took)*95/100].Microseconds())/1000, "p95-ms")
			b.ReportMetric(float64(size)/1024, "KiB")
		})
	}
}

// signedInClient is an HTTP client signed in to the console as email (the
// bootstrap admin's password).
func signedInClient(tb testing.TB, h *apitest.Harness, email string) *http.Client {
	tb.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(tb, err)
	c := &http.Client{Jar: jar, Transport: http.DefaultTransport.(*http.Transport).Clone(), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(h.URL + "/sign-in")
	require.NoError(tb, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	csrf := hiddenFields(string(body))["csrf_token"]
	resp, err = c.PostForm(h.URL+"/sign-in", url.Values{"csrf_token": {csrf}, "email": {email}, "password": {adminPassword}})
	require.NoError(tb, err)
	_ = resp.Body.Close()
	require.Equal(tb, http.StatusSeeOther, resp.StatusCode)
	return c
}

// BenchmarkLiveStreamLatency measures how long a streamed piece of a
// model's answer takes from the worker's event (its at time) to a console
// page's stream: a run streams 40 pieces 25 ms apart while a signed-in
// client follows the thread's console stream. Target: under 150 ms. Needs
// TEST_DATABASE_URL and TEST_REDIS_URL.
func BenchmarkLiveStreamLatency(b *testing.B) {
	model := llmtest.NewChatServer([]llmtest.Turn{{Text: strings.Repeat("piece ", 40), Chunks: 40, ChunkDelay: 25 * time.Millisecond}})
	b.Cleanup(model.Close)
	h := apitest.Start(b, apitest.Options{PauseSweeps: true, Configure: allowLoopback(b, model.URL)})
	admin := testfactory.Bootstrap(b, h.App.Pool)
	testfactory.Model(b, h.App.Pool, admin.Owner(), &testfactory.ModelOpts{Model: "scripted-1",
		Provider: &testfactory.ProviderOpts{Config: json.RawMessage(`{"base_url":"` + model.URL + `/v1"}`)}})
	ag, err := h.App.Agents.Create(b.Context(), admin.Caller("admin"), revision.CreateInput{Name: "streamer", Config: json.RawMessage(`{"model":"main"}`)})
	require.NoError(b, err)
	c := signedInClient(b, h, admin.Email)
	var lat []time.Duration
	for b.Loop() {
		// The page follows the thread before its run starts, as the
		// playground's run page does.
		th, err := h.App.Runs.CreateThread(b.Context(), admin.Caller("admin"), run.CreateThreadInput{AgentID: ag.ID})
		require.NoError(b, err)
		req, err := http.NewRequestWithContext(b.Context(), http.MethodGet, h.URL+"/w/"+admin.WorkspaceID+"/runs/threads/"+th.ID+"/stream?after=0", nil)
		require.NoError(b, err)
		resp, err := c.Do(req)
		require.NoError(b, err)
		require.Equal(b, http.StatusOK, resp.StatusCode)
		_, err = h.App.Runs.PostInput(b.Context(), admin.Caller("admin"), th.ID, "stream", "enqueue")
		require.NoError(b, err)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			got := time.Now()
			var ev struct {
				Type string    `json:"type"`
				At   time.Time `json:"at"`
				Data struct {
					Status string `json:"status"`
				} `json:"data"`
			}
			require.NoError(b, json.Unmarshal([]byte(data), &ev))
			if ev.Type == "message.delta" {
				lat = append(lat, got.Sub(ev.At))
				if os.Getenv("DEBUG_LAT") != "" {
					fmt.Fprintf(os.Stderr, "%s at=%s got=%s lat=%s\n", ev.Type, ev.At.Format("15:04:05.000"), got.Format("15:04:05.000"), got.Sub(ev.At))
				}
			}
			if ev.Type == "run.status" && (ev.Data.Status == "succeeded" || ev.Data.Status == "failed") {
				break
			}
		}
		_ = resp.Body.Close()
	}
	require.NotEmpty(b, lat)
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
}
