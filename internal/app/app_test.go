package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/gen/openapi"
	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/app"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/supervisor"
	"github.com/svcdev/svc/internal/testfactory"
)

func readJSON(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	return v
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestProbes(t *testing.T) {
	t.Parallel()

	for _, role := range app.Roles {
		t.Run(string(role), func(t *testing.T) {
			t.Parallel()
			h := apitest.Start(t, apitest.Options{Role: role})

			health, err := h.API.GetHealthWithResponse(t.Context())
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, health.StatusCode())
			require.Equal(t, client.HealthStatusOk, health.JSON200.Status)
			require.Equal(t, client.Role(role), health.JSON200.Role)

			ready, err := h.API.GetReadinessWithResponse(t.Context())
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, ready.StatusCode())
			require.Equal(t, client.ReadinessStatusReady, ready.JSON200.Status)
			require.Equal(t, client.Role(role), ready.JSON200.Role)
			require.Nil(t, ready.JSON200.Degraded, "nothing is degraded")
		})
	}
}

func TestControlServesContractPagesAndConsole(t *testing.T) {
	t.Parallel()
	h := apitest.Start(t, apitest.Options{Role: app.RoleControl})

	resp := h.Get(t, "/api/v1/openapi.json")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, string(openapi.JSON()), string(body), "the embedded JSON is served as is")
	doc := apitest.Contract(t)
	var served map[string]any
	require.NoError(t, json.Unmarshal(body, &served))
	require.Equal(t, doc.Info.Title, served["info"].(map[string]any)["title"])
	require.Contains(t, served["paths"], "/api/v1/docs", "the served contract documents every path, static pages included")

	page := h.Get(t, "/api/v1/docs")
	require.Equal(t, http.StatusOK, page.StatusCode)
	require.Contains(t, page.Header.Get("Content-Type"), "text/html")

	console := h.Get(t, "/")
	require.Equal(t, http.StatusOK, console.StatusCode)
	require.Contains(t, console.Header.Get("Content-Type"), "text/html")
}

func TestWorkerServesOnlyProbes(t *testing.T) {
	t.Parallel()
	h := apitest.Start(t, apitest.Options{Role: app.RoleWorker})

	require.Equal(t, http.StatusOK, h.Get(t, "/healthz").StatusCode)
	require.Equal(t, http.StatusOK, h.Get(t, "/readyz").StatusCode)
	for _, path := range []string{"/", "/api/v1/openapi.json", "/api/v1/docs", "/api/v1/docs/assets/scalar-1.72.1.js", "/metrics", "/api/v1/anything"} {
		resp := h.Get(t, path)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		require.Equal(t, "not_found", readJSON(t, resp)["error"].(map[string]any)["code"], path)
	}
}

func TestUnknownRoutesAndMethods(t *testing.T) {
	t.Parallel()
	h := apitest.Start(t, apitest.Options{})

	resp := h.Get(t, "/no/such/page")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	e := readJSON(t, resp)["error"].(map[string]any)
	require.Equal(t, "not_found", e["code"])
	require.Equal(t, resp.Header.Get("X-Request-Id"), e["request_id"])

	req, err := http.NewRequest(http.MethodDelete, h.URL+"/healthz", nil)
	require.NoError(t, err)
	resp, err = h.HTTP.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Allow"), http.MethodGet)
	require.Equal(t, "method_not_allowed", readJSON(t, resp)["error"].(map[string]any)["code"])
}

func TestRequestIDs(t *testing.T) {
	t.Parallel()
	h := apitest.Start(t, apitest.Options{})

	resp := h.Get(t, "/healthz", "X-Request-Id", "client-chosen.id_1")
	require.Equal(t, "client-chosen.id_1", resp.Header.Get("X-Request-Id"), "a well-formed id is echoed")

	for _, bad := range []string{"has space", strings.Repeat("a", 129), "semi;colon"} {
		resp := h.Get(t, "/no-such-route", "X-Request-Id", bad)
		id := resp.Header.Get("X-Request-Id")
		require.NotEqual(t, bad, id, "a malformed id is replaced")
		require.Len(t, id, 26, "generated ids are ULIDs")
		require.Equal(t, id, readJSON(t, resp)["error"].(map[string]any)["request_id"])
	}
}

// logRecords returns the process's "request" log records.
func logRecords(t *testing.T, logs string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "every log line is JSON: %q", line)
		if rec["msg"] == "request" {
			out = append(out, rec)
		}
	}
	return out
}

func TestRequestLogsNeverHoldURLs(t *testing.T) {
	t.Parallel()
	h := apitest.Start(t, apitest.Options{})

	r1 := h.Get(t, "/api/v1/openapi.json?api_key=supersecret123")
	r2 := h.Get(t, "/private/supersecret456?token=supersecret789")
	require.Equal(t, http.StatusNotFound, r2.StatusCode)

	logs := h.Logs.String()
	require.NotContains(t, logs, "supersecret")
	records := logRecords(t, logs)
	byID := map[string]map[string]any{}
	for _, rec := range records {
		byID[rec["request_id"].(string)] = rec
	}
	rec := byID[r1.Header.Get("X-Request-Id")]
	require.NotNil(t, rec, "the request has a log record with its id")
	require.Equal(t, "/api/v1/openapi.json", rec["route"])
	require.Equal(t, "GET", rec["method"])
	require.EqualValues(t, 200, rec["status"])
	require.Contains(t, rec, "duration_ms")
	rec = byID[r2.Header.Get("X-Request-Id")]
	require.NotNil(t, rec)
	require.Equal(t, "unmatched", rec["route"])
	require.EqualValues(t, 404, rec["status"])
}

func TestReadyzRuntimeWhenATaskStops(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	h := apitest.Start(t, apitest.Options{BeforeStart: func(a *app.App) {
		a.Supervisor.Add(supervisor.Task{Name: "fragile", Run: func(ctx context.Context) error {
			select {
			case <-stop:
				return errors.New("lost its input")
			case <-ctx.Done():
				return nil
			}
		}})
	}})
	require.Equal(t, http.StatusOK, h.Get(t, "/readyz").StatusCode)

	close(stop)
	eventually(t, 5*time.Second, "/readyz answers 503 runtime", func() bool {
		resp := h.Get(t, "/readyz")
		return resp.StatusCode == http.StatusServiceUnavailable && readJSON(t, resp)["dependency"] == "runtime"
	})
	require.Equal(t, http.StatusOK, h.Get(t, "/healthz").StatusCode, "liveness is unaffected")
}

func TestReadyzDatabaseOutage(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	proxy, url := apitest.ProxyURL(t, cfg.Database.URL)
	h := apitest.Start(t, apitest.Options{DatabaseURL: url, Configure: func(c *config.Config) {
		c.Server.ReadinessTimeout = 300 * time.Millisecond
	}})
	require.Equal(t, http.StatusOK, h.Get(t, "/readyz").StatusCode)

	proxy.Cut()
	start := time.Now()
	resp := h.Get(t, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, map[string]any{"status": "unavailable", "dependency": "database"}, readJSON(t, resp))
	// The readiness time-out is 300 ms, the connect time-out 10 s; the rest is
	// slack for a loaded test machine.
	require.Less(t, time.Since(start), 5*time.Second, "the probe answers within the readiness time-out, not the connect time-out")

	proxy.Restore()
	eventually(t, 10*time.Second, "/readyz recovers after the database returns", func() bool {
		return h.Get(t, "/readyz").StatusCode == http.StatusOK
	})
}

func TestRedisOutageDegradesAndRecovers(t *testing.T) {
	t.Parallel()
	proxy, url := apitest.ProxyURL(t, apitest.RedisURL(t))
	h := apitest.Start(t, apitest.Options{Configure: func(c *config.Config) { c.Redis.URL = url }})

	degraded := func() []client.ReadinessDegraded {
		r, err := h.API.GetReadinessWithResponse(t.Context())
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode(), "losing Redis never makes the process unready")
		if r.JSON200.Degraded == nil {
			return nil
		}
		return *r.JSON200.Degraded
	}
	require.Empty(t, degraded())

	proxy.Cut()
	// Redis is pinged every 2 s; the rest of the wait is slack for a loaded test machine.
	eventually(t, 15*time.Second, "readyz lists redis as degraded", func() bool {
		d := degraded()
		return len(d) == 1 && d[0] == client.ReadinessDegradedRedis
	})
	proxy.Restore()
	eventually(t, 15*time.Second, "readyz recovers when redis returns", func() bool { return len(degraded()) == 0 })
}

func TestStartsWithRedisDown(t *testing.T) {
	t.Parallel()
	proxy, url := apitest.ProxyURL(t, apitest.RedisURL(t))
	proxy.Cut()
	h := apitest.Start(t, apitest.Options{Configure: func(c *config.Config) { c.Redis.URL = url }})
	r, err := h.API.GetReadinessWithResponse(t.Context())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.StatusCode())
	require.NotNil(t, r.JSON200.Degraded)
	require.Equal(t, []client.ReadinessDegraded{client.ReadinessDegradedRedis}, *r.JSON200.Degraded)
}

func TestMetricsListener(t *testing.T) {
	t.Parallel()
	h := apitest.Start(t, apitest.Options{Configure: func(c *config.Config) { c.Metrics.Listen = "127.0.0.1:0" }})
	require.Equal(t, http.StatusOK, h.Get(t, "/healthz").StatusCode)
	require.Equal(t, http.StatusNotFound, h.Get(t, "/metrics").StatusCode, "the API port never serves metrics")

	resp, err := http.Get("http://" + h.App.MetricsAddr().String() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	text := string(b)
	for _, want := range []string{
		`svc_build_info{`,
		`svc_http_requests_total{method="GET",route="/healthz",status="200"} 1`,
		`svc_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`svc_http_request_duration_seconds_bucket{method="GET",route="/healthz"`,
		`svc_db_pool_max_conns 4`,
		`go_goroutines`,
	} {
		require.Contains(t, text, want)
	}
}

func TestControlRegistersTheSweepsOfThisBuild(t *testing.T) {
	t.Parallel()
	h := apitest.Start(t, apitest.Options{Role: app.RoleControl})
	require.Contains(t, h.App.Sweeps.Sweeps(), "expire_credentials")
	pass, err := h.App.Sweeps.RunOnce(t.Context(), "expire_credentials")
	require.NoError(t, err)
	require.True(t, pass.Ran)
	require.NoError(t, pass.Err)
	var owner string
	require.NoError(t, h.App.Pool.QueryRow(t.Context(), "SELECT owner FROM sweep_claim WHERE name = 'expire_credentials'").Scan(&owner))
	require.Equal(t, h.App.ReplicaID, owner)
}

// The outbox's alert gauges are served on the metrics listener, computed from
// the database by observe_outbox.
func TestOutboxAlertMetricsAreServed(t *testing.T) {
	t.Parallel()
	h := apitest.Start(t, apitest.Options{PauseSweeps: true, Configure: func(c *config.Config) { c.Metrics.Listen = "127.0.0.1:0" }})
	scrape := func() string {
		resp, err := http.Get("http://" + h.App.MetricsAddr().String() + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	// The engine is held; observe as its observe_outbox pass does.
	observe := func() {
		_, err := outbox.Observe(t.Context(), h.App.Pool, h.Config.Outbox, h.App.Outbox.Metrics())
		require.NoError(t, err)
	}
	observe()
	text := scrape()
	require.Contains(t, text, "\nsvc_outbox_dead 0\n")
	require.Contains(t, text, "\nsvc_outbox_backlog_alert 0\n")

	testfactory.Delivery(t, h.App.Pool, &testfactory.DeliveryOpts{Kind: "subagent_result", Status: "dead", Attempts: 12})
	observe()
	text = scrape()
	require.Contains(t, text, "\nsvc_outbox_dead 1\n")
	require.Contains(t, text, `svc_outbox_dead_deliveries{kind="subagent_result"} 1`)
	require.Contains(t, text, `svc_outbox_pending{kind="webhook"} 0`)
}

// The outbox engine's passes are counted with the sweeps, under the names
// deliver_outbox and observe_outbox.
func TestOutboxPassesAreCountedAsSweeps(t *testing.T) {
	t.Parallel()
	h := apitest.Start(t, apitest.Options{Role: app.RoleControl, Configure: func(c *config.Config) {
		c.Metrics.Listen = "127.0.0.1:0"
		c.Control.ScanSeconds = 1
	}})
	scrape := func() string {
		resp, err := http.Get("http://" + h.App.MetricsAddr().String() + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	require.Eventually(t, func() bool {
		text := scrape()
		return strings.Contains(text, `svc_sweep_passes_total{result="ok",sweep="deliver_outbox"}`) &&
			strings.Contains(text, `svc_sweep_passes_total{result="ok",sweep="observe_outbox"}`) &&
			strings.Contains(text, `svc_sweep_duration_seconds_count{sweep="deliver_outbox"}`)
	}, 30*time.Second, 50*time.Millisecond)
}
