package webhook_test

import (
	"testing"
	"time"

	"github.com/svcdev/svc/internal/outbox"
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
