package webhook_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/webhook"
)

// BenchmarkHealthyBesideHungEndpoints measures how soon a healthy endpoint
// gets its deliveries while 20 endpoints of the same workspace never answer:
// one control replica with the default outbox settings (parallel 8, 2 in
// flight per subscription, slow attempts moved out of their slots after
// 500 ms, endpoints backed off after 3 failures) and the default time-outs.
// Every iteration emits an event to the 20 hung subscriptions, then one to
// the healthy one, and waits for the latter to arrive; the latencies (from
// the emitting commit to the receiver) are reported as p50, p90, p99 and max
// in milliseconds. Needs TEST_DATABASE_URL.
func BenchmarkHealthyBesideHungEndpoints(b *testing.B) {
	bundle := setup(b)
	f := newFarm(b, 0)
	bundle.subscribeMany(b, f, webhook.AgentRevisionPublished, paths("/hung/", 20)...)
	bundle.subscribeMany(b, f, webhook.SkillRevisionPublished, "/ok")
	cfg := config.Default()
	d := bundle.deliverer(b, f.policy,
		webhook.WithConnectTimeout(time.Duration(cfg.Outbox.WebhookConnectTimeoutSeconds)*time.Second),
		webhook.WithResponseTimeout(time.Duration(cfg.Outbox.WebhookResponseTimeoutSeconds)*time.Second))
	runSender(b, webhookEngine(bundle, cfg.Outbox, "bench", d), time.Duration(cfg.Control.ScanSeconds)*time.Second)

	healthy := webhook.Event{Type: webhook.SkillRevisionPublished, Data: map[string]any{"skill_id": "sk_bench"}}
	latencies := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		bundle.emit(b, bundle.admin.WorkspaceID, event("hung"))
		start := time.Now()
		bundle.emit(b, bundle.admin.WorkspaceID, healthy)
		ctx, cancel := context.WithTimeout(b.Context(), 30*time.Second)
		for len(f.arrived("/ok")) <= i && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		cancel()
		got := f.arrived("/ok")
		if len(got) <= i {
			b.Fatalf("healthy delivery %d did not arrive within 30s", i)
		}
		latencies = append(latencies, got[i].Sub(start))
		time.Sleep(50 * time.Millisecond)
	}
	b.StopTimer()
	slices.Sort(latencies)
	pct := func(p float64) float64 {
		return float64(latencies[min(len(latencies)-1, int(p*float64(len(latencies))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50_ms")
	b.ReportMetric(pct(0.90), "p90_ms")
	b.ReportMetric(pct(0.99), "p99_ms")
	b.ReportMetric(float64(latencies[len(latencies)-1].Microseconds())/1000, "max_ms")
	b.ReportMetric(float64(len(f.arrived("/hung/0"))), "hung0_attempts")
}
