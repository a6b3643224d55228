package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/webhook/webhooktest"
)

// deliveryView polls GET /deliveries/{id} until cond holds.
func (b *deliveriesBundle) awaitDelivery(t *testing.T, id string, cond func(map[string]any) bool) map[string]any {
	t.Helper()
	var view map[string]any
	require.Eventually(t, func() bool {
		status, out, _ := b.do(t, http.MethodGet, "/api/v1/deliveries/"+id, nil)
		require.Equal(t, http.StatusOK, status, out)
		view = out
		return cond(out)
	}, 30*time.Second, 20*time.Millisecond, "delivery %s never reached the state; last seen %v", id, view)
	return view
}

// The running process delivers webhooks itself: a committed event reaches the
// receiver signed, a failure is retried with the same webhook-id, and a 410
// disables the subscription.
func TestWebhooksAreDeliveredByTheRunningProcess(t *testing.T) {
	t.Parallel()
	b := startDeliveries(t, false)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	sub, secret := b.hook(t, "/hooks")

	// Delivered at once: the commit wakes the senders.
	first := b.emit(t, "first")[0]
	reqs, err := b.recv.WaitFor(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, first, reqs[0].Header.Get("webhook-id"))
	require.NoError(t, webhooktest.Verify(secret, reqs[0].Header, reqs[0].Body, time.Now(), webhooktest.DefaultTolerance))
	var event map[string]any
	require.NoError(t, json.Unmarshal(reqs[0].Body, &event))
	require.Equal(t, "agent.revision_published", event["type"])
	requireData(t, publishedData("first"), event["data"])
	view := b.awaitDelivery(t, first, func(v map[string]any) bool { return v["status"] == "delivered" })
	attempts := view["attempts"].([]any)
	require.Len(t, attempts, 1)
	require.EqualValues(t, 204, attempts[0].(map[string]any)["status_code"])

	// A failing receiver: the delivery waits for its retry, then succeeds with
	// the same webhook-id and a fresh signature.
	b.recv.Respond(http.StatusServiceUnavailable, "busy")
	second := b.emit(t, "second")[0]
	_, err = b.recv.WaitFor(ctx, 2)
	require.NoError(t, err)
	view = b.awaitDelivery(t, second, func(v map[string]any) bool { return v["last_error"] != nil })
	require.Equal(t, "pending", view["status"])
	require.EqualValues(t, 1, view["attempts_used"])
	// The subscription shows its endpoint's failure, not yet backed off
	// (outbox.webhook_endpoint_failures is 3).
	status, subView, _ := b.do(t, http.MethodGet, subscriptionsPath+"/"+sub["id"].(string), nil)
	require.Equal(t, http.StatusOK, status, subView)
	require.Equal(t, map[string]any{"consecutive_failures": float64(1), "paused_until": nil}, subView["endpoint"])
	b.recv.Respond(http.StatusOK, "")
	_, err = b.h.App.Pool.Exec(ctx, `UPDATE outbox SET next_attempt_at = now() WHERE id = $1`, second)
	require.NoError(t, err)
	b.h.App.Outbox.Wake()
	reqs, err = b.recv.WaitFor(ctx, 3)
	require.NoError(t, err)
	require.Equal(t, second, reqs[2].Header.Get("webhook-id"))
	require.NoError(t, webhooktest.Verify(secret, reqs[2].Header, reqs[2].Body, time.Now(), webhooktest.DefaultTolerance))
	view = b.awaitDelivery(t, second, func(v map[string]any) bool { return v["status"] == "delivered" })
	require.Len(t, view["attempts"], 2)
	status, subView, _ = b.do(t, http.MethodGet, subscriptionsPath+"/"+sub["id"].(string), nil)
	require.Equal(t, http.StatusOK, status, subView)
	require.Equal(t, map[string]any{"consecutive_failures": float64(0), "paused_until": nil}, subView["endpoint"], "a delivery resets it")

	// 410 Gone: the delivery is dead and the subscription disabled.
	b.recv.Respond(http.StatusGone, "")
	third := b.emit(t, "third")[0]
	b.awaitDelivery(t, third, func(v map[string]any) bool { return v["status"] == "dead" })
	status, out, _ := b.do(t, http.MethodGet, subscriptionsPath+"/"+sub["id"].(string), nil)
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, false, out["enabled"])
	require.Empty(t, b.emit(t, "fourth"), "a disabled subscription gets no new deliveries")
}

// A subscription whose endpoint keeps failing shows until when it is backed
// off, in its view and in the list.
func TestSubscriptionShowsItsEndpointBackOff(t *testing.T) {
	t.Parallel()
	b := startDeliveries(t, false)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	sub, _ := b.hook(t, "/down")
	b.recv.Respond(http.StatusServiceUnavailable, "down")
	for i := range 3 {
		id := b.emit(t, "failing")[0]
		_, err := b.recv.WaitFor(ctx, i+1)
		require.NoError(t, err)
		b.awaitDelivery(t, id, func(v map[string]any) bool { return v["last_error"] != nil })
	}
	var view map[string]any
	require.Eventually(t, func() bool {
		status, out, _ := b.do(t, http.MethodGet, subscriptionsPath+"/"+sub["id"].(string), nil)
		require.Equal(t, http.StatusOK, status, out)
		view = out["endpoint"].(map[string]any)
		return view["paused_until"] != nil
	}, 30*time.Second, 20*time.Millisecond, "never backed off: %v", view)
	require.EqualValues(t, 3, view["consecutive_failures"])
	until, err := time.Parse(time.RFC3339Nano, view["paused_until"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(10*time.Second), until, 10*time.Second)

	status, list, _ := b.do(t, http.MethodGet, subscriptionsPath, nil)
	require.Equal(t, http.StatusOK, status, list)
	require.Equal(t, view, list["items"].([]any)[0].(map[string]any)["endpoint"])
}

// A redelivery is attempted at once: the commit wakes the senders, long
// before the engine's next scan (control.scan_seconds).
func TestRedeliveryIsAttemptedAtOnce(t *testing.T) {
	t.Parallel()
	b := startDeliveriesWith(t, false, func(cfg *config.Config) { cfg.Control.ScanSeconds = 3600 })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	b.hook(t, "/again")
	id := b.emit(t, "again")[0]
	_, err := b.recv.WaitFor(ctx, 1)
	require.NoError(t, err)
	b.awaitDelivery(t, id, func(v map[string]any) bool { return v["status"] == "delivered" })

	status, out, _ := b.do(t, http.MethodPost, "/api/v1/deliveries/"+id+"/redeliver", nil)
	require.Equal(t, http.StatusAccepted, status, out)
	soon, cancelSoon := context.WithTimeout(ctx, time.Second)
	defer cancelSoon()
	reqs, err := b.recv.WaitFor(soon, 2)
	require.NoError(t, err, "the redelivery waited for the next scan")
	require.Equal(t, id, reqs[1].Header.Get("webhook-id"))
}
