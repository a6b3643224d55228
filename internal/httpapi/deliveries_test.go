package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/testfactory"
	"github.com/svcdev/svc/internal/webhook"
	"github.com/svcdev/svc/internal/webhook/webhooktest"
)

type deliveriesBundle struct {
	*subscriptionsBundle
	recv *webhooktest.Receiver
}

// setupDeliveries starts a process whose endpoint policy reaches a local
// receiver and whose sweeps are paused: the tests play the outbox engine's
// part by hand, so no sender may touch the rows they set.
func setupDeliveries(t *testing.T) *deliveriesBundle {
	t.Helper()
	return startDeliveries(t, true)
}

// startDeliveries starts the process, with its outbox senders running unless
// pause is set.
func startDeliveries(t *testing.T, pause bool) *deliveriesBundle {
	t.Helper()
	return startDeliveriesWith(t, pause, func(*config.Config) {})
}

// startDeliveriesWith is startDeliveries with the configuration edited by
// configure.
func startDeliveriesWith(t *testing.T, pause bool, configure func(*config.Config)) *deliveriesBundle {
	t.Helper()
	recv := webhooktest.NewReceiver(t)
	h := apitest.Start(t, apitest.Options{PauseSweeps: pause, Configure: func(cfg *config.Config) {
		cfg.EndpointPolicy.AllowHTTP = true
		cfg.EndpointPolicy.AllowedPrefixes = []string{"127.0.0.0/8"}
		cfg.EndpointPolicy.AllowedPorts = []int{int(recv.Port)}
		configure(cfg)
	}})
	admin := testfactory.Bootstrap(t, h.App.Pool)
	viewer := testfactory.AddMember(t, h.App.Pool, admin.OrganizationID, admin.WorkspaceID, testfactory.MemberOpts{WorkspaceRole: "viewer"})
	editor := testfactory.AddMember(t, h.App.Pool, admin.OrganizationID, admin.WorkspaceID, testfactory.MemberOpts{WorkspaceRole: "editor"})
	pb := &providersBundle{h: h, admin: admin, api: h.Client(t, admin.APIKey), viewer: viewer}
	return &deliveriesBundle{subscriptionsBundle: &subscriptionsBundle{providersBundle: pb, editor: editor}, recv: recv}
}

// hook subscribes the receiver (path) to agent.revision_published.
func (b *deliveriesBundle) hook(t *testing.T, path string) (map[string]any, string) {
	t.Helper()
	return b.mustSubscription(t, map[string]any{"url": b.recv.URL("127.0.0.1", path), "event_types": []string{webhook.AgentRevisionPublished}})
}

// publishedData is the data of an agent.revision_published event of an
// agent named name, as the contract has it.
func publishedData(name string) map[string]any {
	return map[string]any{"agent_id": "ap_x", "name": name, "revision_id": "rev_x", "revision_number": 1,
		"default_revision_id": "rev_x", "published_by_id": "pri_x"}
}

// emit emits an agent.revision_published event in the admin's workspace and
// returns the deliveries it made, oldest first.
func (b *deliveriesBundle) emit(t *testing.T, name string) []string {
	t.Helper()
	ctx := t.Context()
	var ids []string
	require.NoError(t, dbx.WithTx(ctx, b.h.App.Pool, func(ctx context.Context, tx pgx.Tx) error {
		var before string
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(id), '') FROM outbox`).Scan(&before); err != nil {
			return err
		}
		if err := webhook.Emit(ctx, tx, b.admin.WorkspaceID, webhook.Event{Type: webhook.AgentRevisionPublished,
			Data: publishedData(name)}); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT id FROM outbox WHERE id > $1 ORDER BY id`, before)
		if err != nil {
			return err
		}
		ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	}))
	return ids
}

// settle sets a delivery's state as the engine would have left it after n
// failed attempts of one round (status dead, or cancelled or delivered),
// with an attempt row each.
func (b *deliveriesBundle) settle(t *testing.T, id, status string, n int) {
	t.Helper()
	ctx := t.Context()
	lastError := "the endpoint answered 500"
	if status == outbox.StatusDelivered {
		lastError = ""
	}
	var last int32
	require.NoError(t, b.h.App.Pool.QueryRow(ctx, `UPDATE outbox SET status = $2, attempts = $3, attempt_number = attempt_number + $3,
		settled_at = now(), next_attempt_at = now() - interval '1 minute', last_error = NULLIF($4, '') WHERE id = $1
		RETURNING attempt_number`, id, status, n, lastError).Scan(&last))
	for i := 1; i <= n; i++ {
		result, code, resp, errText := "failed", int32(500), "oops", lastError
		if i == n && status == outbox.StatusDelivered {
			result, code, resp, errText = "delivered", 204, "", ""
		}
		testfactory.DeliveryAttempt(t, b.h.App.Pool, &testfactory.DeliveryAttemptOpts{
			DeliveryID: id, Number: last - int32(n-i), Result: result, StatusCode: code, Response: resp, Error: errText,
			StartedAgo: time.Duration(n-i+1) * time.Second, Duration: 12 * time.Millisecond,
		})
	}
}

// claim reads a pending delivery as the engine's claim would hand it over.
func (b *deliveriesBundle) claim(t *testing.T, id string) outbox.Claimed {
	t.Helper()
	var c outbox.Claimed
	var ws, sub, event *string
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `UPDATE outbox SET attempts = attempts + 1, attempt_number = attempt_number + 1
		WHERE id = $1 AND status = 'pending'
		RETURNING id, kind, workspace_id, subscription_id, event_type, payload, attempts, created_at, now()`, id).
		Scan(&c.ID, &c.Kind, &ws, &sub, &event, &c.Payload, &c.Attempt, &c.CreatedAt, &c.ClaimedAt))
	c.WorkspaceID, c.SubscriptionID, c.EventType = *ws, *sub, *event
	return c
}

// record settles a claimed attempt with out as the engine does: the row
// takes status, the attempt is recorded under its number.
func (b *deliveriesBundle) record(t *testing.T, c outbox.Claimed, out outbox.Outcome, status string) {
	t.Helper()
	ctx := t.Context()
	var errText string
	result := "delivered"
	if out.Err != nil {
		errText, result = out.Err.Error(), "failed"
	}
	var number int32
	require.NoError(t, b.h.App.Pool.QueryRow(ctx, `UPDATE outbox SET status = $2, settled_at = now(), lease_until = NULL, last_error = NULLIF($3, '')
		WHERE id = $1 RETURNING attempt_number`, c.ID, status, errText).Scan(&number))
	testfactory.DeliveryAttempt(t, b.h.App.Pool, &testfactory.DeliveryAttemptOpts{
		DeliveryID: c.ID, Number: number, Result: result, StatusCode: int32(out.StatusCode), Response: out.Response, Error: errText,
		StartedAt: c.ClaimedAt,
	})
}

func deliveriesPath(subID string) string { return subscriptionsPath + "/" + subID + "/deliveries" }

func itemIDs(t *testing.T, page map[string]any) []string {
	t.Helper()
	var out []string
	for _, it := range page["items"].([]any) {
		out = append(out, it.(map[string]any)["id"].(string))
	}
	return out
}

func TestDeliveriesListAndRead(t *testing.T) {
	t.Parallel()
	b := setupDeliveries(t)
	sub, _ := b.hook(t, "/a")
	other, _ := b.hook(t, "/b")
	subID := sub["id"].(string)
	var mine []string
	for i := range 3 {
		ids := b.emit(t, "agent "+strconv.Itoa(i))
		require.Len(t, ids, 2, "one per subscription")
		mine = append(mine, ids...)
	}
	// Which of each pair is this subscription's.
	var own []string
	for _, id := range mine {
		var s string
		require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT subscription_id FROM outbox WHERE id = $1`, id).Scan(&s))
		if s == subID {
			own = append(own, id)
		}
	}
	require.Len(t, own, 3)
	b.settle(t, own[0], outbox.StatusDead, 12)
	b.settle(t, own[1], outbox.StatusDelivered, 2)

	// The subtests only read the deliveries made above.
	t.Run("ListIsNewestFirstThisSubscriptionsOnly", func(t *testing.T) {
		t.Parallel()
		status, page, _ := b.do(t, http.MethodGet, deliveriesPath(subID), nil)
		require.Equal(t, http.StatusOK, status, page)
		require.Equal(t, []string{own[2], own[1], own[0]}, itemIDs(t, page))
		require.Nil(t, page["next_cursor"])
		status, page, _ = b.do(t, http.MethodGet, deliveriesPath(other["id"].(string)), nil)
		require.Equal(t, http.StatusOK, status, page)
		require.Len(t, itemIDs(t, page), 3)
	})

	t.Run("AListedPendingDelivery", func(t *testing.T) {
		t.Parallel()
		status, page, _ := b.do(t, http.MethodGet, deliveriesPath(subID), nil)
		require.Equal(t, http.StatusOK, status, page)
		pending := page["items"].([]any)[0].(map[string]any)
		require.Equal(t, own[2], pending["id"])
		require.Equal(t, subID, pending["subscription_id"])
		require.Equal(t, webhook.AgentRevisionPublished, pending["event_type"])
		require.Equal(t, "pending", pending["status"])
		require.EqualValues(t, 0, pending["attempts_used"])
		require.EqualValues(t, 12, pending["max_attempts"])
		require.NotNil(t, pending["next_attempt_at"])
		require.Nil(t, pending["settled_at"])
		require.Nil(t, pending["last_error"])
		payload := pending["payload"].(map[string]any)
		require.Equal(t, webhook.AgentRevisionPublished, payload["type"])
		requireData(t, publishedData("agent 2"), payload["data"])
		require.NotContains(t, pending, "attempts", "attempts are in the delivery's own view")
	})

	t.Run("PagesAndTheStatusFilter", func(t *testing.T) {
		t.Parallel()
		status, page, _ := b.do(t, http.MethodGet, deliveriesPath(subID)+"?limit=2", nil)
		require.Equal(t, http.StatusOK, status, page)
		require.Equal(t, []string{own[2], own[1]}, itemIDs(t, page))
		status, page, _ = b.do(t, http.MethodGet, deliveriesPath(subID)+"?limit=2&cursor="+url.QueryEscape(page["next_cursor"].(string)), nil)
		require.Equal(t, http.StatusOK, status, page)
		require.Equal(t, []string{own[0]}, itemIDs(t, page))
		require.Nil(t, page["next_cursor"])
		for st, want := range map[string][]string{"dead": {own[0]}, "delivered": {own[1]}, "pending": {own[2]}, "cancelled": nil} {
			status, page, _ = b.do(t, http.MethodGet, deliveriesPath(subID)+"?status="+st, nil)
			require.Equal(t, http.StatusOK, status, page)
			require.Equal(t, want, itemIDs(t, page), st)
		}
	})

	t.Run("AnUnknownStatusOrCursorIsRefused", func(t *testing.T) {
		t.Parallel()
		status, out, _ := b.do(t, http.MethodGet, deliveriesPath(subID)+"?status=failed", nil)
		require.Equal(t, http.StatusBadRequest, status, out)
		status, out, _ = b.do(t, http.MethodGet, deliveriesPath(subID)+"?cursor=***", nil)
		require.Equal(t, http.StatusBadRequest, status, out)
	})

	t.Run("ADeadDeliveryWithItsAttemptsNewestFirst", func(t *testing.T) {
		t.Parallel()
		status, dead, hdr := b.do(t, http.MethodGet, "/api/v1/deliveries/"+own[0], nil)
		require.Equal(t, http.StatusOK, status, dead)
		require.Empty(t, hdr.Get("ETag"), "deliveries are not versioned")
		require.Equal(t, "dead", dead["status"])
		require.EqualValues(t, 12, dead["attempts_used"])
		require.Nil(t, dead["next_attempt_at"], "settled")
		require.NotNil(t, dead["settled_at"])
		require.Equal(t, "the endpoint answered 500", dead["last_error"])
		attempts := dead["attempts"].([]any)
		require.Len(t, attempts, 12)
		first := attempts[0].(map[string]any)
		require.EqualValues(t, 12, first["number"])
		require.Equal(t, "failed", first["result"])
		require.EqualValues(t, 500, first["status_code"])
		require.Equal(t, "oops", first["response"])
		require.EqualValues(t, 12, first["duration_ms"])
		require.EqualValues(t, 1, attempts[11].(map[string]any)["number"])
	})

	t.Run("ADeliveredDelivery", func(t *testing.T) {
		t.Parallel()
		status, delivered, _ := b.do(t, http.MethodGet, "/api/v1/deliveries/"+own[1], nil)
		require.Equal(t, http.StatusOK, status, delivered)
		require.Nil(t, delivered["last_error"])
		last := delivered["attempts"].([]any)[0].(map[string]any)
		require.Equal(t, "delivered", last["result"])
		require.Nil(t, last["response"])
		require.Nil(t, last["error"])
	})

	t.Run("APendingDeliveryHasNoAttempts", func(t *testing.T) {
		t.Parallel()
		status, fresh, _ := b.do(t, http.MethodGet, "/api/v1/deliveries/"+own[2], nil)
		require.Equal(t, http.StatusOK, status, fresh)
		require.Equal(t, []any{}, fresh["attempts"])
	})
}

// TestDeliveriesAcrossWorkspaces: another workspace's key, an absent id,
// and an outbox row of another kind are all the same 404.
func TestDeliveriesAcrossWorkspaces(t *testing.T) {
	t.Parallel()
	b := setupDeliveries(t)
	sub, _ := b.hook(t, "/")
	ids := b.emit(t, "x")
	b.settle(t, ids[0], outbox.StatusDead, 1)
	mail, err := outbox.Enqueue(t.Context(), b.h.App.Pool, outbox.Delivery{Kind: outbox.KindIdentityMail, WorkspaceID: b.admin.WorkspaceID, Payload: map[string]any{"to": "a@example.com"}})
	require.NoError(t, err)
	other := b.otherWorkspace(t)

	var bodies []string
	for _, tc := range []struct {
		token, method, path string
	}{
		{other, http.MethodGet, deliveriesPath(sub["id"].(string))},
		{other, http.MethodGet, "/api/v1/deliveries/" + ids[0]},
		{other, http.MethodPost, "/api/v1/deliveries/" + ids[0] + "/redeliver"},
		{b.admin.APIKey, http.MethodGet, deliveriesPath("sub_01jd5v6w1q3yb8j8y3tn9z2k7h")},
		{b.admin.APIKey, http.MethodGet, "/api/v1/deliveries/dlv_01jd5v6w1q3yb8j8y3tn9z2k7h"},
		{b.admin.APIKey, http.MethodPost, "/api/v1/deliveries/dlv_01jd5v6w1q3yb8j8y3tn9z2k7h/redeliver"},
		{b.admin.APIKey, http.MethodGet, "/api/v1/deliveries/" + mail},
		{b.admin.APIKey, http.MethodPost, "/api/v1/deliveries/" + mail + "/redeliver"},
	} {
		status, out, _ := b.do(t, tc.method, tc.path, nil, as(tc.token)...)
		require.Equal(t, http.StatusNotFound, status, "%s %s: %v", tc.method, tc.path, out)
		require.Equal(t, "not_found", errorCode(t, out))
		bodies = append(bodies, errorMessage(t, out))
	}
	require.Equal(t, bodies[:3], bodies[3:6], "the same answer as an absent id")
	var status string
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT status FROM outbox WHERE id = $1`, ids[0]).Scan(&status))
	require.Equal(t, "dead", status, "nothing was redelivered")
}

func TestDeliveriesNeedAdmin(t *testing.T) {
	t.Parallel()
	b := setupDeliveries(t)
	sub, _ := b.hook(t, "/")
	ids := b.emit(t, "x")
	b.settle(t, ids[0], outbox.StatusDead, 1)
	for _, tok := range []string{b.editor.Token, b.viewer.Token} {
		for _, req := range []struct{ method, path string }{
			{http.MethodGet, deliveriesPath(sub["id"].(string))},
			{http.MethodGet, "/api/v1/deliveries/" + ids[0]},
			{http.MethodPost, "/api/v1/deliveries/" + ids[0] + "/redeliver"},
		} {
			status, out, _ := b.do(t, req.method, req.path, nil, as(tok)...)
			require.Equal(t, http.StatusForbidden, status, "%s %s: %v", req.method, req.path, out)
		}
	}
	status, _, _ := b.do(t, http.MethodPost, "/api/v1/deliveries/"+ids[0]+"/redeliver", nil, "Authorization", "Bearer svc_nope")
	require.Equal(t, http.StatusUnauthorized, status)
}

// TestRedeliverResetsInPlace: a dead delivery goes back to pending with a new
// round of attempts; its id, payload and attempt history stay; attempt
// numbers go on; the next attempt carries the same webhook-id with a
// signature for its own timestamp.
func TestRedeliverResetsInPlace(t *testing.T) {
	t.Parallel()
	b := setupDeliveries(t)
	sub, secret := b.hook(t, "/svc")
	ids := b.emit(t, "again")
	dlv := ids[0]
	path := "/api/v1/deliveries/" + dlv + "/redeliver"

	// A pending delivery is not redelivered.
	status, out, _ := b.do(t, http.MethodPost, path, nil)
	require.Equal(t, http.StatusConflict, status, out)
	require.Equal(t, "conflict", errorCode(t, out))

	// The first round: one attempt, refused by the receiver, then dead.
	b.recv.Respond(http.StatusBadRequest, "no")
	deliverer := b.deliverer(t)
	first := b.claim(t, dlv)
	b.record(t, first, deliverer.Deliver(t.Context(), first), outbox.StatusDead)
	_, before, _ := b.do(t, http.MethodGet, "/api/v1/deliveries/"+dlv, nil)
	require.Equal(t, "dead", before["status"])
	require.Len(t, before["attempts"], 1)
	require.Equal(t, "the endpoint answered 400", before["last_error"])

	status, out, hdr := b.do(t, http.MethodPost, path, nil, "Idempotency-Key", "redeliver-1")
	require.Equal(t, http.StatusAccepted, status, out)
	require.Equal(t, dlv, out["id"])
	require.Equal(t, "pending", out["status"])
	require.EqualValues(t, 0, out["attempts_used"])
	require.Nil(t, out["settled_at"])
	next, err := time.Parse(time.RFC3339Nano, out["next_attempt_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), next, time.Minute, "due now")
	require.Equal(t, before["payload"], out["payload"])
	require.Equal(t, before["attempts"], out["attempts"], "the history stays")
	require.Empty(t, hdr.Get("Idempotent-Replayed"))
	var number int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT attempt_number FROM outbox WHERE id = $1`, dlv).Scan(&number))
	require.Equal(t, 1, number, "attempt numbers are not reset")
	require.Equal(t, []string{"delivery.redelivered:attempts,next_attempt_at,settled_at,status"}, b.auditTrail(t, dlv))
	var actor string
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT actor_id FROM audit_event WHERE subject_id = $1`, dlv).Scan(&actor))
	require.Equal(t, b.admin.PrincipalID, actor)

	// A retry with the same key replays the answer; without one, it is pending.
	status, replay, hdr := b.do(t, http.MethodPost, path, nil, "Idempotency-Key", "redeliver-1")
	require.Equal(t, http.StatusAccepted, status, replay)
	require.Equal(t, "true", hdr.Get("Idempotent-Replayed"))
	require.Equal(t, out, replay)
	status, conflict, _ := b.do(t, http.MethodPost, path, nil)
	require.Equal(t, http.StatusConflict, status, conflict)
	require.Len(t, b.auditTrail(t, dlv), 1)

	// The new round's attempt: same webhook-id, its own timestamp, verified.
	b.recv.Respond(http.StatusNoContent, "")
	second := b.claim(t, dlv)
	require.EqualValues(t, 1, second.Attempt, "a new round")
	require.NoError(t, deliverer.Deliver(t.Context(), second).Err)
	reqs := b.recv.Requests()
	require.Len(t, reqs, 2)
	for i, c := range []outbox.Claimed{first, second} {
		r := reqs[i]
		require.Equal(t, dlv, r.Header.Get("webhook-id"))
		require.Equal(t, strconv.FormatInt(c.ClaimedAt.Unix(), 10), r.Header.Get("webhook-timestamp"))
		require.NoError(t, webhooktest.Verify(secret, r.Header, r.Body, c.ClaimedAt, webhooktest.DefaultTolerance))
	}
	require.Equal(t, reqs[0].Body, reqs[1].Body)

	b.record(t, second, outbox.Delivered(), outbox.StatusDelivered)
	_, after, _ := b.do(t, http.MethodGet, "/api/v1/deliveries/"+dlv, nil)
	require.Equal(t, "delivered", after["status"])
	require.Nil(t, after["last_error"])
	numbers := []any{}
	for _, a := range after["attempts"].([]any) {
		numbers = append(numbers, a.(map[string]any)["number"])
	}
	require.Equal(t, []any{float64(2), float64(1)}, numbers, "numbered across rounds, newest first")

	// A delivery whose subscription is disabled would only be cancelled.
	status, patched, _ := b.do(t, http.MethodPatch, subscriptionsPath+"/"+sub["id"].(string), map[string]any{"enabled": false}, "If-Match", etag(sub))
	require.Equal(t, http.StatusOK, status, patched)
	status, out, _ = b.do(t, http.MethodPost, path, nil)
	require.Equal(t, http.StatusConflict, status, out)
	require.Equal(t, "disabled", errorCode(t, out))
}

// deliverer is a webhook deliverer under the process's endpoint policy.
func (b *deliveriesBundle) deliverer(t *testing.T) *webhook.Deliverer {
	t.Helper()
	policy, err := endpoint.NewPolicy(b.h.Config.EndpointPolicy)
	require.NoError(t, err)
	d := webhook.NewDeliverer(b.h.App.Pool, b.h.App.Keyring, policy)
	t.Cleanup(d.Close)
	return d
}

// requireData checks decoded JSON data against the data it was encoded from.
func requireData(t *testing.T, want map[string]any, got any) {
	t.Helper()
	b, err := json.Marshal(want)
	require.NoError(t, err)
	g, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, string(b), string(g))
}
