package webhook_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/config"

	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/subscription"
	"github.com/svcdev/svc/internal/webhook"
)

// BenchmarkDeliver measures the deliverer alone, without the engine's claims
// and settlements: reading the subscription, opening its secret, signing and
// POSTing to a local receiver that answers 204, from 8 goroutines (the
// default outbox parallel) per GOMAXPROCS; read reads the subscription for
// every delivery, cached keeps it for a second.
func BenchmarkDeliver(b *testing.B) {
	b.Run("read", func(b *testing.B) { benchmarkDeliver(b) })
	b.Run("cached", func(b *testing.B) { benchmarkDeliver(b, webhook.WithSubscriptionCache(time.Second)) })
}

func benchmarkDeliver(b *testing.B, opts ...webhook.Option) {
	bundle := setup(b)
	h := bundle.hooked(b, opts...)
	var claims []outbox.Claimed
	for range 64 {
		ids := bundle.emit(b, bundle.admin.WorkspaceID, event("bench"))
		claims = append(claims, bundle.claimed(b, ids[0]))
	}
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if out := h.d.Deliver(b.Context(), claims[i%len(claims)]); out.Err != nil {
				b.Error(out.Err)
				return
			}
			i++
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
}

// BenchmarkSustainedDelivery measures sustained webhook delivery through the
// outbox engine: 20,000 due deliveries, drained by one replica's deliver pass
// (claims, the deliverer's subscription read, signing, POSTs to a local
// receiver that answers 204, batched settlements), with the default outbox
// settings and with batch and parallel raised. The deliveries belong to one
// subscription (whose throughput the per-subscription in-flight bound caps)
// or are spread over 50. Reported in deliveries/s. Needs TEST_DATABASE_URL.
func BenchmarkSustainedDelivery(b *testing.B) {
	for _, c := range []struct {
		name            string
		subs            int
		batch, parallel int
	}{
		{"subs=1,defaults", 1, 0, 0}, {"subs=50,defaults", 50, 0, 0},
		{"subs=50,batch=256,parallel=16", 50, 256, 16}, {"subs=50,batch=256,parallel=32", 50, 256, 32},
	} {
		b.Run(c.name, func(b *testing.B) {
			bundle := setup(b)
			recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.WriteHeader(http.StatusNoContent)
			}))
			b.Cleanup(recv.Close)
			port, err := strconv.ParseUint(recv.URL[strings.LastIndexByte(recv.URL, ':')+1:], 10, 16)
			require.NoError(b, err)
			policy := loopback(uint16(port), newResolver())
			svc := subscription.NewService(bundle.pool, bundle.ring, policy, subscription.WithMaxPerWorkspace(c.subs))
			subs := make([]string, c.subs)
			for i := range subs {
				s, err := svc.Create(b.Context(), bundle.caller, subscription.CreateInput{
					URL: "http://hooks.test:" + strconv.Itoa(int(port)) + "/svc", EventTypes: []string{webhook.AgentRevisionPublished},
				})
				require.NoError(b, err)
				subs[i] = s.Subscription.ID
			}
			d := bundle.deliverer(b, policy)

			cfg := config.Default().Outbox
			if c.batch > 0 {
				cfg.Defaults.Batch, cfg.Defaults.Parallel = c.batch, c.parallel
			}
			e := outbox.NewEngine(bundle.pool, cfg, "bench", slog.New(slog.DiscardHandler), outbox.NewMetrics(prometheus.NewRegistry()))
			e.Register(outbox.KindWebhook, d)
			const perIter = 20_000
			var elapsed time.Duration
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				// Seeded in one statement: a factory call per row would dwarf the measurement.
				_, err := bundle.pool.Exec(b.Context(), `INSERT INTO outbox (id, kind, workspace_id, subscription_id, event_type, payload)
					SELECT 'dlv_' || lower(replace(gen_random_uuid()::text, '-', '')), 'webhook', $1, ($2::text[])[1 + g % cardinality($2::text[])], $3,
						jsonb_build_object('type', $3::text, 'timestamp', now(), 'data', jsonb_build_object('agent_id', 'ag_' || g, 'revision', 1))
					FROM generate_series(1, $4::int) g`, bundle.admin.WorkspaceID, subs, webhook.AgentRevisionPublished, perIter)
				require.NoError(b, err)
				b.StartTimer()
				start := time.Now()
				require.NoError(b, e.Deliver(b.Context()))
				elapsed += time.Since(start)
			}
			var pending int
			var lastError *string
			require.NoError(b, bundle.pool.QueryRow(b.Context(), `SELECT count(*), max(last_error) FROM outbox WHERE status <> 'delivered'`).Scan(&pending, &lastError))
			require.Zero(b, pending, "every delivery was delivered (last error: %v)", lastError)
			b.ReportMetric(float64(perIter*b.N)/elapsed.Seconds(), "deliveries/s")
		})
	}
}
