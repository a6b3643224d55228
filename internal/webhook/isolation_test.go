package webhook_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/webhook"
)

// TestHungEndpointsDoNotHoldBackOthers reproduces the head-of-line attack:
// 20 subscriptions (well above parallel, 8) point at endpoints that never
// answer and have deliveries due before a healthy subscription's. The
// healthy delivery must arrive long before the hung attempts time out, and
// no hung endpoint may have more than webhook_in_flight_per_subscription
// requests open at once.
func TestHungEndpointsDoNotHoldBackOthers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := newFarm(t, 0)
	hung := paths("/hung/", 20)
	b.subscribeMany(t, f, webhook.AgentRevisionPublished, hung...)
	b.subscribeMany(t, f, webhook.SkillRevisionPublished, "/ok")

	const responseTimeout = 8 * time.Second
	cfg := config.Default().Outbox
	require.Equal(t, 8, cfg.Defaults.Parallel)
	d := b.deliverer(t, f.policy, webhook.WithResponseTimeout(responseTimeout))
	runSender(t, webhookEngine(b, cfg, "r1", d), time.Second)

	for i := range 3 {
		b.emit(t, b.admin.WorkspaceID, event("hung-"+string(rune('a'+i))))
	}
	// Every hung endpoint is being called before the healthy event exists.
	require.Eventually(t, func() bool {
		for _, p := range hung {
			if len(f.arrived(p)) == 0 {
				return false
			}
		}
		return true
	}, 5*time.Second, 10*time.Millisecond, "every hung endpoint is called")

	start := time.Now()
	b.emit(t, b.admin.WorkspaceID, webhook.Event{Type: webhook.SkillRevisionPublished, Data: map[string]any{"skill_id": "sk_x"}})
	require.Eventually(t, func() bool { return len(f.arrived("/ok")) == 1 }, responseTimeout, 5*time.Millisecond,
		"the healthy delivery arrives while the hung attempts still wait")
	latency := f.arrived("/ok")[0].Sub(start)
	t.Logf("healthy delivery after %s", latency)
	require.Less(t, latency, 2*time.Second, "the healthy delivery is not queued behind the hung ones")

	var failed int
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT count(*) FROM outbox_attempt WHERE result = 'failed'`).Scan(&failed))
	require.Zero(t, failed, "no hung attempt had timed out when the healthy delivery arrived")

	for _, p := range hung {
		require.LessOrEqual(t, f.peakOf(p), cfg.WebhookInFlightPerSubscription, "requests open at once to %s", p)
	}
	require.Equal(t, 2, f.peakOf(hung[0]), "a hung endpoint is called up to its bound")
}

// TestInFlightBoundAcrossReplicas runs two control replicas against one
// subscription with a backlog and a receiver that takes its time: the bound
// on its deliveries in flight holds across replicas (it is enforced in the
// claim), and every delivery still arrives.
func TestInFlightBoundAcrossReplicas(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := newFarm(t, 50*time.Millisecond)
	b.subscribeMany(t, f, webhook.AgentRevisionPublished, "/slow/a")
	for i := range 30 {
		b.emit(t, b.admin.WorkspaceID, event("n"+string(rune('a'+i))))
	}
	cfg := config.Default().Outbox
	cfg.WebhookInFlightPerSubscription = 1
	var wg sync.WaitGroup
	ctx := waitCtx(t)
	for _, replica := range []string{"r1", "r2", "r3"} {
		e := webhookEngine(b, cfg, replica, b.deliverer(t, f.policy))
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Passes one after another until nothing is pending, as the
			// replicas' deliver_outbox passes do.
			for ctx.Err() == nil {
				if err := e.Deliver(ctx); err != nil {
					t.Error(err)
					return
				}
				var pending int
				if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE status = 'pending'`).Scan(&pending); err != nil || pending == 0 {
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	require.Len(t, f.arrived("/slow/a"), 30)
	require.Equal(t, 1, f.peakOf("/slow/a"), "one request open at a time across three replicas")
	var pending int
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT count(*) FROM outbox WHERE status <> 'delivered'`).Scan(&pending))
	require.Zero(t, pending)
}
