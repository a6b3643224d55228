package webhook_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/webhook"
	"github.com/svcdev/svc/internal/webhook/webhooktest"
)

// deliverer returns a deliverer under policy, closed after the test.
func (b *testBundle) deliverer(t testing.TB, policy *endpoint.Policy, opts ...webhook.Option) *webhook.Deliverer {
	t.Helper()
	d := webhook.NewDeliverer(b.pool, b.ring, policy, opts...)
	t.Cleanup(d.Close)
	return d
}

// hooked is a receiver, a subscription to it and a deliverer allowed to
// reach it.
type hooked struct {
	recv   *webhooktest.Receiver
	url    string
	sub    string
	secret string
	d      *webhook.Deliverer
}

func (b *testBundle) hooked(t testing.TB, opts ...webhook.Option) hooked {
	t.Helper()
	recv := webhooktest.NewReceiver(t)
	policy := loopback(recv.Port, newResolver())
	u := recv.URL("hooks.test", "/svc")
	sub, secret := b.subscribe(t, policy, u, webhook.AgentRevisionPublished)
	return hooked{recv: recv, url: u, sub: sub, secret: secret, d: b.deliverer(t, policy, opts...)}
}

// requireSafe checks an outcome's error names no address and no secret.
func requireSafe(t testing.TB, out outbox.Outcome, secret string) {
	t.Helper()
	if out.Err == nil {
		return
	}
	msg := out.Err.Error()
	for _, leak := range []string{"127.0.0.", "169.254", "10.1.2.3", "10.0.0.2", "::1", "hooks.test", "dial tcp", strings.TrimPrefix(secret, "whsec_")} {
		require.NotContains(t, msg, leak)
	}
}

func TestDeliverSignedPost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.hooked(t)
	h.recv.Respond(http.StatusOK, `{"ok":true}`)
	ids := b.emit(t, b.admin.WorkspaceID, event("signed"))
	require.Len(t, ids, 1)
	c := b.claimed(t, ids[0])

	out := h.d.Deliver(t.Context(), c)
	require.NoError(t, out.Err)
	require.False(t, out.Cancel)
	require.Equal(t, http.StatusOK, out.StatusCode)
	require.Equal(t, `{"ok":true}`, out.Response)

	reqs := h.recv.Requests()
	require.Len(t, reqs, 1)
	r := reqs[0]
	require.Equal(t, http.MethodPost, r.Method)
	require.Equal(t, "/svc", r.Path)
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	require.True(t, strings.HasPrefix(r.Header.Get("User-Agent"), "svc-webhooks/"), r.Header.Get("User-Agent"))
	require.JSONEq(t, string(c.Payload), string(r.Body))
	require.Equal(t, []byte(c.Payload), r.Body, "the stored body, byte for byte: what was signed")
	require.Equal(t, c.ID, r.Header.Get("webhook-id"))
	require.Equal(t, strconv.FormatInt(c.ClaimedAt.Unix(), 10), r.Header.Get("webhook-timestamp"), "the attempt's time")
	require.NoError(t, webhooktest.Verify(h.secret, r.Header, r.Body, time.Now(), webhooktest.DefaultTolerance))

	// A later attempt at the same delivery: same webhook-id, fresh timestamp
	// and signature, still verified.
	c2 := c
	c2.Attempt++
	c2.ClaimedAt = c.ClaimedAt.Add(2 * time.Minute)
	require.NoError(t, h.d.Deliver(t.Context(), c2).Err)
	reqs = h.recv.Requests()
	require.Len(t, reqs, 2)
	again := reqs[1]
	require.Equal(t, c.ID, again.Header.Get("webhook-id"))
	require.NotEqual(t, r.Header.Get("webhook-timestamp"), again.Header.Get("webhook-timestamp"))
	require.NotEqual(t, r.Header.Get("webhook-signature"), again.Header.Get("webhook-signature"))
	require.NoError(t, webhooktest.Verify(h.secret, again.Header, again.Body, c2.ClaimedAt, webhooktest.DefaultTolerance))
	require.ErrorIs(t, webhooktest.Verify(h.secret, again.Header, again.Body, c.ClaimedAt.Add(-5*time.Minute), webhooktest.DefaultTolerance),
		webhooktest.ErrTimestamp, "a receiver refuses it outside its tolerance")
}

func TestDeliverAcceptsEvery2xx(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.hooked(t)
	for _, status := range []int{http.StatusOK, http.StatusCreated, http.StatusAccepted, http.StatusNoContent, 299} {
		h.recv.Respond(status, "")
		ids := b.emit(t, b.admin.WorkspaceID, event("2xx"))
		out := h.d.Deliver(t.Context(), b.claimed(t, ids[0]))
		require.NoError(t, out.Err, status)
		require.Equal(t, status, out.StatusCode)
	}
}

func TestDeliverFailuresAreRetried(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.hooked(t)
	for _, tc := range []struct {
		status int
		body   string
		err    string
	}{
		{http.StatusInternalServerError, "database is down", "the endpoint answered 500"},
		{http.StatusNotFound, "no such hook", "the endpoint answered 404"},
		{http.StatusTooManyRequests, "", "the endpoint answered 429"},
		{http.StatusBadRequest, `{"error":"bad signature"}`, "the endpoint answered 400"},
		{http.StatusNotModified, "", "the endpoint answered 304; redirects are not followed"},
	} {
		h.recv.Respond(tc.status, tc.body)
		ids := b.emit(t, b.admin.WorkspaceID, event("fails"))
		out := h.d.Deliver(t.Context(), b.claimed(t, ids[0]))
		require.Error(t, out.Err, tc.status)
		require.Equal(t, tc.err, out.Err.Error())
		require.False(t, out.Permanent)
		require.False(t, out.Cancel)
		require.Equal(t, tc.status, out.StatusCode)
		require.Equal(t, tc.body, out.Response)
		requireSafe(t, out, h.secret)
	}
	enabled, version := b.subscriptionState(t, h.sub)
	require.True(t, enabled)
	require.EqualValues(t, 1, version)
}

// TestDeliverGoneDisables: 410 disables the subscription (version + 1, an
// audit event without actor) and kills the delivery; the next delivery to it
// is cancelled without a request.
func TestDeliverGoneDisables(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.hooked(t)
	h.recv.Respond(http.StatusGone, "this hook is gone")
	ids := b.emit(t, b.admin.WorkspaceID, event("gone"))
	next := b.emit(t, b.admin.WorkspaceID, event("after"))

	out := h.d.Deliver(t.Context(), b.claimed(t, ids[0]))
	require.Error(t, out.Err)
	require.True(t, out.Permanent)
	require.Equal(t, http.StatusGone, out.StatusCode)
	require.Equal(t, "this hook is gone", out.Response)
	require.Equal(t, "the endpoint answered 410 Gone; the subscription was disabled", out.Err.Error())
	enabled, version := b.subscriptionState(t, h.sub)
	require.False(t, enabled)
	require.EqualValues(t, 2, version)
	var action, ws, org string
	var actor *string
	var auditVersion int32
	var fields []string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT action, actor_id, workspace_id, organization_id, version, changed_fields
		FROM audit_event WHERE subject_id = $1 ORDER BY id DESC LIMIT 1`, h.sub).Scan(&action, &actor, &ws, &org, &auditVersion, &fields))
	require.Equal(t, "subscription.disabled", action)
	require.Nil(t, actor, "the service did it, not a principal")
	require.Equal(t, []any{b.admin.WorkspaceID, b.admin.OrganizationID, int32(2), []string{"enabled"}}, []any{ws, org, auditVersion, fields})

	out = h.d.Deliver(t.Context(), b.claimed(t, next[0]))
	require.True(t, out.Cancel)
	require.Equal(t, webhook.ReasonSubscriptionDisabled, out.Reason)
	require.Len(t, h.recv.Requests(), 1, "a disabled subscription gets no request")

	// Another 410 (a delivery claimed before the disable) changes nothing more.
	out = h.d.Deliver(t.Context(), b.claimed(t, ids[0]))
	require.True(t, out.Cancel)
	_, version = b.subscriptionState(t, h.sub)
	require.EqualValues(t, 2, version)
}

// TestDeliverGoneAfterURLChange: a 410 from an endpoint the subscription no
// longer names does not disable it; the attempt is retried (to the new url).
func TestDeliverGoneAfterURLChange(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.hooked(t)
	h.recv.Handle(func(w http.ResponseWriter, r *http.Request) {
		_, err := b.pool.Exec(r.Context(), `UPDATE subscription SET url = $2, version = version + 1 WHERE id = $1`, h.sub, h.url+"/v2")
		if err != nil {
			w.WriteHeader(http.StatusTeapot)
			return
		}
		w.WriteHeader(http.StatusGone)
	})
	ids := b.emit(t, b.admin.WorkspaceID, event("moved"))
	out := h.d.Deliver(t.Context(), b.claimed(t, ids[0]))
	require.Equal(t, http.StatusGone, out.StatusCode)
	require.Error(t, out.Err)
	require.False(t, out.Permanent)
	enabled, version := b.subscriptionState(t, h.sub)
	require.True(t, enabled)
	require.EqualValues(t, 2, version, "only the url change")
}

func TestDeliverRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.hooked(t)
	target := webhooktest.NewReceiver(t)
	for _, location := range []string{target.URL("127.0.0.1", "/elsewhere"), "http://169.254.169.254/latest/meta-data/", "/svc/again"} {
		h.recv.Handle(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, location, http.StatusTemporaryRedirect)
		})
		ids := b.emit(t, b.admin.WorkspaceID, event("redirect"))
		out := h.d.Deliver(t.Context(), b.claimed(t, ids[0]))
		require.Error(t, out.Err)
		require.Equal(t, "the endpoint answered 307; redirects are not followed", out.Err.Error())
		require.False(t, out.Permanent)
		require.Equal(t, http.StatusTemporaryRedirect, out.StatusCode)
	}
	require.Len(t, h.recv.Requests(), 3, "one request each, the redirect not followed")
	require.Empty(t, target.Requests())
}

// TestDeliverKeepsASnippet: at most ResponseSnippetBytes of the answer are
// read and kept, as valid UTF-8 without NUL, however long the answer is.
func TestDeliverKeepsASnippet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.hooked(t)
	long := strings.Repeat("é", 10000) // 20,000 bytes; the limit falls inside a character
	for _, tc := range []struct{ body, want string }{
		{"a" + long, "a" + strings.Repeat("é", (outbox.ResponseSnippetBytes-1)/2)},
		{long, strings.Repeat("é", outbox.ResponseSnippetBytes/2)},
		{"ok\x00\xff\xfeend", "ok\uFFFDend"},
		{"", ""},
	} {
		h.recv.Respond(http.StatusServiceUnavailable, tc.body)
		ids := b.emit(t, b.admin.WorkspaceID, event("snippet"))
		out := h.d.Deliver(t.Context(), b.claimed(t, ids[0]))
		require.LessOrEqual(t, len(out.Response), outbox.ResponseSnippetBytes)
		require.True(t, utf8.ValidString(out.Response))
		require.NotContains(t, out.Response, "\x00")
		require.Equal(t, tc.want, out.Response)
	}

	// A huge answer is not read to its end: the attempt ends with its snippet.
	h.recv.Handle(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		chunk := []byte(strings.Repeat("x", 64<<10))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	ids := b.emit(t, b.admin.WorkspaceID, event("endless"))
	out := h.d.Deliver(t.Context(), b.claimed(t, ids[0]))
	require.NoError(t, out.Err)
	require.Equal(t, strings.Repeat("x", outbox.ResponseSnippetBytes), out.Response)
}

func TestDeliverCancelledForDisabledOrDeletedSubscription(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.hooked(t)
	ids := b.emit(t, b.admin.WorkspaceID, event("one"))
	c := b.claimed(t, ids[0])
	_, err := b.pool.Exec(t.Context(), `UPDATE subscription SET enabled = false WHERE id = $1`, h.sub)
	require.NoError(t, err)
	out := h.d.Deliver(t.Context(), c)
	require.True(t, out.Cancel)
	require.NoError(t, out.Err)
	require.Equal(t, webhook.ReasonSubscriptionDisabled, out.Reason)

	// Deleted after the claim (the cascade took the row, not the claim).
	_, err = b.pool.Exec(t.Context(), `DELETE FROM subscription WHERE id = $1`, h.sub)
	require.NoError(t, err)
	out = h.d.Deliver(t.Context(), c)
	require.True(t, out.Cancel)
	require.Equal(t, webhook.ReasonSubscriptionDeleted, out.Reason)
	require.Empty(t, h.recv.Requests())
}

func TestDeliverTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.hooked(t, webhook.WithTimeout(300*time.Millisecond), webhook.WithConnectTimeout(time.Second))
	release := make(chan struct{})
	defer close(release)
	h.recv.Handle(func(http.ResponseWriter, *http.Request) { <-release })
	ids := b.emit(t, b.admin.WorkspaceID, event("slow"))
	out := h.d.Deliver(t.Context(), b.claimed(t, ids[0]))
	require.Error(t, out.Err)
	require.Equal(t, "the endpoint did not answer within 300ms", out.Err.Error())
	require.Zero(t, out.StatusCode)
	require.False(t, out.Permanent)
	requireSafe(t, out, h.secret)
}

func TestDeliverConnectionRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.hooked(t)
	h.recv.Close() // nothing listens on the port any more
	ids := b.emit(t, b.admin.WorkspaceID, event("nobody"))
	out := h.d.Deliver(t.Context(), b.claimed(t, ids[0]))
	require.Error(t, out.Err)
	require.Equal(t, "could not connect to the endpoint", out.Err.Error())
	require.NotErrorIs(t, out.Err, endpoint.ErrRefused)
	require.False(t, out.Permanent)
	requireSafe(t, out, h.secret)
}

// TestDeliverStopped: when the sender stops mid-request, Deliver returns at
// once with the context's error, for the engine to give the attempt back.
func TestDeliverStopped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.hooked(t)
	h.recv.Handle(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	ids := b.emit(t, b.admin.WorkspaceID, event("stopped"))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan outbox.Outcome, 1)
	go func() { done <- h.d.Deliver(ctx, b.claimed(t, ids[0])) }()
	_, err := h.recv.WaitFor(waitCtx(t), 1)
	require.NoError(t, err)
	cancel()
	out := <-done
	require.ErrorIs(t, out.Err, context.Canceled)
}

// TestDeliverSubscriptionCache: with the cache, a subscription is read once
// per ttl (a change shows after it, as documented), and a 410 drops the
// entry so the disable applies to the next delivery at once.
func TestDeliverSubscriptionCache(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.hooked(t, webhook.WithSubscriptionCache(time.Hour))
	moved := webhooktest.NewReceiver(t)
	ids := b.emit(t, b.admin.WorkspaceID, event("one"))
	require.NoError(t, h.d.Deliver(t.Context(), b.claimed(t, ids[0])).Err)

	// Within the ttl the cached url is used: the move is not seen yet.
	_, err := b.pool.Exec(t.Context(), `UPDATE subscription SET url = $2 WHERE id = $1`, h.sub, moved.URL("127.0.0.1", "/"))
	require.NoError(t, err)
	ids = b.emit(t, b.admin.WorkspaceID, event("two"))
	require.NoError(t, h.d.Deliver(t.Context(), b.claimed(t, ids[0])).Err)
	require.Len(t, h.recv.Requests(), 2)
	require.Empty(t, moved.Requests())
	_, err = b.pool.Exec(t.Context(), `UPDATE subscription SET url = $2 WHERE id = $1`, h.sub, h.url)
	require.NoError(t, err)

	// 410 disables and forgets: the next delivery, claimed before, is then
	// cancelled unsent rather than sent on the cached "enabled".
	h.recv.Respond(http.StatusGone, "")
	gone := b.emit(t, b.admin.WorkspaceID, event("gone"))
	next := b.emit(t, b.admin.WorkspaceID, event("next"))
	require.True(t, h.d.Deliver(t.Context(), b.claimed(t, gone[0])).Permanent)
	enabled, _ := b.subscriptionState(t, h.sub)
	require.False(t, enabled)
	out := h.d.Deliver(t.Context(), b.claimed(t, next[0]))
	require.True(t, out.Cancel, "read again after the 410")
	require.Len(t, h.recv.Requests(), 3)
}

// TestDeliverUntrustedCertificate: an https endpoint whose certificate the
// system does not trust is a failure that says so, without details.
func TestDeliverUntrustedCertificate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	port, err := strconv.ParseUint(u.Port(), 10, 16)
	require.NoError(t, err)
	policy := loopback(uint16(port), newResolver())
	_, secret := b.subscribe(t, policy, srv.URL+"/hooks", webhook.AgentRevisionPublished)
	ids := b.emit(t, b.admin.WorkspaceID, event("tls"))
	out := b.deliverer(t, policy).Deliver(t.Context(), b.claimed(t, ids[0]))
	require.Error(t, out.Err)
	require.Equal(t, "the endpoint's TLS certificate is not valid", out.Err.Error())
	require.False(t, out.Permanent)
	requireSafe(t, out, secret)
}
