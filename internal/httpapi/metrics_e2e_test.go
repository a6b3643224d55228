package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/webhook"
	"github.com/svcdev/svc/internal/webhook/webhooktest"
)

// scrape is one answer of the metrics listener, parsed with Prometheus's
// own parser (which refuses a malformed exposition).
type scrape struct {
	text     string
	families map[string]*dto.MetricFamily
}

func scrapeMetrics(t *testing.T, addr string) scrape {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	require.NoError(t, err, "the exposition parses")
	return scrape{text: string(b), families: fams}
}

// value is the value of the sample of family name whose labels are labels
// (name, value pairs, all of its labels): a counter's or gauge's value, a
// histogram's count. ok is false when there is none.
func (s scrape) value(name string, labels ...string) (float64, bool) {
	f := s.families[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		if len(m.GetLabel())*2 != len(labels) {
			continue
		}
		match := true
		for _, l := range m.GetLabel() {
			i := slices.Index(labels, l.GetName())
			if i%2 != 0 || labels[i+1] != l.GetValue() {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// must is value, failing when the sample is missing.
func (s scrape) must(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	v, ok := s.value(name, labels...)
	require.True(t, ok, "no sample %s%v in the scrape:\n%s", name, labels, s.grep(name))
	return v
}

// grep is the lines of the exposition about family name.
func (s scrape) grep(name string) string {
	var out []string
	for _, line := range strings.Split(s.text, "\n") {
		if strings.Contains(line, name) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// labelValues is every value label takes in family name.
func (s scrape) labelValues(name, label string) []string {
	var out []string
	for _, m := range s.families[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				out = append(out, l.GetValue())
			}
		}
	}
	return out
}

// TestMetricsOfARun: a process of role all runs a run that calls a tool,
// while a client follows the thread's stream and a subscription receives
// the run.succeeded webhook. The metrics listener then shows what an
// operator would look for: the run by its final status, its attempt, the
// model and tool calls, the open stream while it is open, the webhook's
// delivery, and the queue empty again; the stream is counted among the
// requests but not timed with them. The exposition passes Prometheus's
// parser and promtool's checks, and every metric the dashboard and the
// alert rules of deploy/observability read is one svc serves.
func TestMetricsOfARun(t *testing.T) {
	t.Parallel()
	recv := webhooktest.NewReceiver(t)
	b, agentID := setupE2E(t, []llmtest.Turn{
		{Text: "Counting.", ToolCalls: []llmtest.Call{{Name: "run_command", Arguments: `{"command":"echo 1"}`}}},
		{Text: "One.", Chunks: 2},
	}, func(c *config.Config) {
		c.Metrics.Listen = "127.0.0.1:0"
		c.EndpointPolicy.AllowedPorts = append(c.EndpointPolicy.AllowedPorts, int(recv.Port))
	})
	addr := b.h.App.MetricsAddr().String()
	b.must(t, http.StatusCreated, http.MethodPost, subscriptionsPath, map[string]any{
		"url": recv.URL("127.0.0.1", "/hooks"), "event_types": []string{webhook.RunSucceeded}})

	r := b.must(t, http.StatusAccepted, http.MethodPost, "/api/v1/runs", map[string]any{"agent_id": agentID, "input": "Count."})
	s := b.openStream(t, "/api/v1/threads/"+r["thread_id"].(string)+"/stream")
	require.Equal(t, 1.0, scrapeMetrics(t, addr).must(t, "svc_stream_open"), "the stream is open")
	for n := 1; ; n++ {
		ev := s.expect(t, n, n)[0]
		if ev["type"] == "run.status" && ev["data"].(map[string]any)["status"] == "succeeded" {
			break
		}
	}
	s.close()

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := recv.WaitFor(ctx, 1)
	require.NoError(t, err)
	// The process records each end (the stream's request, the webhook's
	// attempt, the attempt's slot) just after the client sees it.
	var m scrape
	require.Eventually(t, func() bool {
		m = scrapeMetrics(t, addr)
		delivered, _ := m.value("svc_outbox_attempts_total", "kind", "webhook", "result", "delivered")
		open, _ := m.value("svc_stream_open")
		busy, _ := m.value("svc_worker_slots_busy")
		_, observed := m.value("svc_outbox_pending", "kind", "webhook")
		return delivered == 1 && open == 0 && busy == 0 && observed
	}, 30*time.Second, 20*time.Millisecond, "the webhook delivered, the stream closed, the slot freed and the outbox observed")

	model := []string{"api", "chat_completions", "provider_type", "openai_compatible"}
	run := b.must(t, http.StatusOK, http.MethodGet, "/api/v1/runs/"+r["id"].(string), nil)
	usage := run["usage"].(map[string]any)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"svc_runs_finished_total", []string{"status", "succeeded"}, 1},
		{"svc_runs_finished_total", []string{"status", "failed"}, 0},
		{"svc_runs_duration_seconds", []string{"status", "succeeded"}, 1},
		{"svc_runs_queued", nil, 0},
		{"svc_runs_queued_oldest_seconds", nil, 0},
		{"svc_runs_running", nil, 0},
		{"svc_runs_lease_expiries_total", nil, 0},
		{"svc_worker_slots", nil, float64(b.h.Config.Worker.Slots)},
		{"svc_worker_attempts_started_total", nil, 1},
		{"svc_worker_attempts_ended_total", []string{"end", "finished", "charged", "true"}, 1},
		{"svc_worker_attempts_ended_total", []string{"end", "retried", "charged", "true"}, 0},
		{"svc_model_calls_total", append(model, "result", "ok"), 2},
		{"svc_model_call_duration_seconds", model, 2},
		{"svc_model_tokens_total", append(model, "type", "input"), usage["input_tokens"].(float64)},
		{"svc_model_tokens_total", append(model, "type", "output"), usage["output_tokens"].(float64)},
		{"svc_tool_calls_total", []string{"toolset", "environment", "result", "ok"}, 1},
		{"svc_tool_call_duration_seconds", []string{"toolset", "environment"}, 1},
		{"svc_outbox_attempt_duration_seconds", []string{"kind", "webhook"}, 1},
		{"svc_outbox_delivery_latency_seconds", []string{"kind", "webhook"}, 1},
	} {
		require.Equal(t, c.want, m.must(t, c.name, c.labels...), "%s%v", c.name, c.labels)
	}
	require.Positive(t, usage["output_tokens"].(float64))

	// The stream is a request, not a latency.
	var streamRoute string
	for _, route := range m.labelValues("svc_http_requests_total", "route") {
		if strings.HasSuffix(route, "/stream") {
			streamRoute = route
		}
	}
	require.NotEmpty(t, streamRoute, m.grep("svc_http_requests_total"))
	require.Equal(t, 1.0, m.must(t, "svc_http_requests_total", "method", "GET", "route", streamRoute, "status", "200"))
	require.NotContains(t, m.labelValues("svc_http_request_duration_seconds", "route"), streamRoute)
	require.Equal(t, 1.0, m.must(t, "svc_http_request_duration_seconds", "method", "POST", "route", "/api/v1/runs"))

	t.Run("promtool check metrics", func(t *testing.T) {
		out, err := promtool(t, m.text, "check", "metrics")
		require.NoError(t, err, "promtool check metrics:\n%s", out)
	})
	t.Run("dashboard and alert rules", func(t *testing.T) {
		checkObservabilityFiles(t, m)
	})
}

// observabilityDir is deploy/observability.
func observabilityDir() string { return filepath.Join("..", "..", "deploy", "observability") }

// checkObservabilityFiles checks deploy/observability against scrape s of a
// process of role all: every svc_ metric the dashboard's queries and the
// alert rules read is a family s has; the alert rules are valid and pass
// their own tests (promtool check rules, promtool test rules); and each of
// the dashboard's queries is valid PromQL (checked by promtool as a
// recording rule, its Grafana variables given values).
func checkObservabilityFiles(t *testing.T, s scrape) {
	t.Helper()
	dir := observabilityDir()
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "grafana-dashboard.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &dash))
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	raw, err = os.ReadFile(filepath.Join(dir, "alerts.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(raw, &rules))

	exprs := map[string]string{} // where -> query
	var recording []map[string]string
	for _, p := range dash.Panels {
		for i, q := range p.Targets {
			exprs[fmt.Sprintf("dashboard panel %q query %d", p.Title, i)] = q.Expr
			promql := strings.NewReplacer("$__rate_interval", "5m", "$job", ".*").Replace(q.Expr)
			recording = append(recording, map[string]string{"record": fmt.Sprintf("svc_dashboard:query_%d", len(recording)), "expr": promql})
		}
	}
	require.GreaterOrEqual(t, len(recording), 30, "the dashboard has its panels")
	var alerts []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs["alert "+r.Alert] = r.Expr
			alerts = append(alerts, r.Alert)
		}
	}
	require.Subset(t, alerts, []string{"SvcOutboxBacklog", "SvcOutboxDead", "SvcRunsFailing", "SvcWorkersSaturated", "SvcRunQueueAge"})

	name := regexp.MustCompile(`\bsvc_[a-z0-9_]+`)
	for where, expr := range exprs {
		for _, n := range name.FindAllString(expr, -1) {
			family := n
			if f, ok := strings.CutSuffix(n, "_bucket"); ok && s.families[f].GetType() == dto.MetricType_HISTOGRAM {
				family = f
			}
			require.Contains(t, s.families, family, "%s reads %s, which svc does not serve", where, n)
		}
	}

	out, err := promtool(t, "", "check", "rules", filepath.Join(dir, "alerts.yaml"))
	require.NoError(t, err, "promtool check rules:\n%s", out)
	out, err = promtool(t, "", "test", "rules", filepath.Join(dir, "alerts_test.yaml"))
	require.NoError(t, err, "promtool test rules:\n%s", out)
	queries, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": recording}}})
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "dashboard-queries.yaml")
	require.NoError(t, os.WriteFile(file, queries, 0o600))
	out, err = promtool(t, "", "check", "rules", file)
	require.NoError(t, err, "the dashboard's queries as rules:\n%s", out)
}

// promtool runs promtool with args and stdin, answering its output.
func promtool(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	require.NoError(t, err, "promtool is not installed: run scripts/install-promtool.sh (scripts/test.sh does)")
	cmd := exec.CommandContext(t.Context(), path, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
