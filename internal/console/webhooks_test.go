package console_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/testfactory"
)

// hookURL is a public endpoint written as an IP literal, so the endpoint
// policy accepts it without a DNS lookup.
const hookURL = "https://93.184.216.34/hooks/svc"

var secretRE = regexp.MustCompile(`<code id="new-secret">(whsec_[^<]+)</code>`)

// shownSecret is the secret a page shows, unescaped, or "".
func shownSecret(body string) string {
	m := secretRE.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

func TestAdminsCreateASubscriptionAndSeeItsSecretOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.signIn(t, b.admin.Email, adminPassword)

	empty := br.get(t, b.workspacePath("webhooks"))
	require.Equal(t, http.StatusOK, empty.status, empty.body)
	requirePageHeaders(t, empty)
	require.Contains(t, empty.body, "No subscriptions yet")
	require.Contains(t, empty.body, `<input type="checkbox" name="event_types" value="run.succeeded">`)

	// Refused fields are shown beside their inputs, with what was typed kept.
	p := br.submit(t, b.workspacePath("webhooks"), b.workspacePath("webhooks"), url.Values{
		"url": {hookURL}, "description": {"<b>outcomes</b>"}, "enabled": {"on"}})
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
	require.Regexp(t, `field-error[^>]*>[^<]*at least one event type`, p.body)
	require.Contains(t, p.body, `value="&lt;b&gt;outcomes&lt;/b&gt;"`)
	p = br.submit(t, b.workspacePath("webhooks"), b.workspacePath("webhooks"), url.Values{
		"url": {"http://127.0.0.1/x"}, "event_types": {"run.failed"}, "enabled": {"on"}})
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
	require.Contains(t, p.body, `value="run.failed" checked`)

	p = br.submit(t, b.workspacePath("webhooks"), b.workspacePath("webhooks"), url.Values{
		"url": {hookURL}, "event_types": {"run.succeeded", "run.failed"}, "description": {"<b>outcomes</b>"}, "enabled": {"on"}})
	require.Equal(t, http.StatusOK, p.status, p.body)
	secret := shownSecret(p.body)
	require.NotEmpty(t, secret, p.body)
	b.secret(secret)
	require.Contains(t, p.body, "&lt;b&gt;outcomes&lt;/b&gt;")
	require.NotContains(t, p.body, "<b>outcomes</b>")

	var subID, url0 string
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT id, url FROM subscription WHERE workspace_id = $1`, b.admin.WorkspaceID).Scan(&subID, &url0))
	require.Equal(t, hookURL, url0)

	// The secret is never shown again: not in the list, not on its page.
	list := br.get(t, b.workspacePath("webhooks"))
	require.Contains(t, list.body, b.workspacePath("webhooks", subID))
	require.NotContains(t, list.body, "new-secret")
	require.NotContains(t, html.UnescapeString(list.body), secret)
	page := br.get(t, b.workspacePath("webhooks", subID))
	require.Equal(t, http.StatusOK, page.status, page.body)
	require.NotContains(t, html.UnescapeString(page.body), secret)
	require.NotContains(t, page.body, "new-secret")
	require.Contains(t, page.body, `value="run.failed" checked`)
	require.Contains(t, page.body, "No deliveries yet")

	// Rotating shows the new secret once.
	p = br.submit(t, b.workspacePath("webhooks", subID), b.workspacePath("webhooks", subID, "rotate-secret"), nil)
	require.Equal(t, http.StatusOK, p.status, p.body)
	rotated := shownSecret(p.body)
	require.NotEmpty(t, rotated, p.body)
	b.secret(rotated)
	require.NotEqual(t, secret, rotated)
	require.NotContains(t, br.get(t, b.workspacePath("webhooks", subID)).body, "new-secret")

	// A change with the ETag of an earlier page is refused, overwriting nothing.
	stale := hiddenFields(page.body)
	p = br.post(t, b.workspacePath("webhooks", subID), url.Values{"csrf_token": {stale["csrf_token"]}, "etag": {stale["etag"]},
		"url": {hookURL}, "event_types": {"thread.idle"}})
	require.Equal(t, http.StatusPreconditionFailed, p.status, p.body)
	require.Contains(t, p.body, "changed since you opened it")
	require.Contains(t, p.body, `value="thread.idle" checked`)

	// Disabling through the form keeps the ticked event types.
	p = br.submit(t, b.workspacePath("webhooks", subID), b.workspacePath("webhooks", subID), url.Values{
		"url": {hookURL}, "event_types": {"thread.idle", "run.failed"}, "description": {"idle"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	after := br.get(t, p.header.Get("Location"))
	require.Contains(t, after.body, "The subscription is saved.")
	require.Contains(t, after.body, `<span class="status status-cancelled">disabled</span>`)
	require.Contains(t, after.body, `value="thread.idle" checked`)
	require.NotContains(t, after.body, `value="run.succeeded" checked`)

	// Deleting with a stale ETag is refused; with the page's it deletes.
	p = br.post(t, b.workspacePath("webhooks", subID, "delete"), url.Values{"csrf_token": {stale["csrf_token"]}, "etag": {stale["etag"]}})
	require.Equal(t, http.StatusPreconditionFailed, p.status, p.body)
	p = br.submit(t, b.workspacePath("webhooks", subID), b.workspacePath("webhooks", subID, "delete"), nil)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Equal(t, b.workspacePath("webhooks"), p.header.Get("Location"))
	require.Equal(t, http.StatusNotFound, br.get(t, b.workspacePath("webhooks", subID)).status)
}

func TestADeliveryPageShowsEveryAttemptAndRedelivers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.signIn(t, b.admin.Email, adminPassword)
	pool := b.h.App.Pool
	sub := testfactory.Subscription(t, pool, b.admin.Owner(), &testfactory.SubscriptionOpts{URL: hookURL})
	dead := testfactory.Delivery(t, pool, &testfactory.DeliveryOpts{WorkspaceID: b.admin.WorkspaceID, SubscriptionID: sub.ID,
		Status: "dead", Attempts: 2, SettledAgo: time.Minute, Payload: []byte(`{"type":"run.succeeded","data":{"note":"<i>x</i>"}}`)})
	testfactory.DeliveryAttempt(t, pool, &testfactory.DeliveryAttemptOpts{DeliveryID: dead, Number: 1, Result: "failed",
		StatusCode: 502, Response: "bad gateway", Error: "endpoint answered 502", StartedAgo: 3 * time.Minute, Duration: 120 * time.Millisecond})
	testfactory.DeliveryAttempt(t, pool, &testfactory.DeliveryAttemptOpts{DeliveryID: dead, Number: 2, Result: "failed",
		Error: "dial tcp: connection refused", StartedAgo: 2 * time.Minute, Duration: 7 * time.Millisecond})
	pending := testfactory.Delivery(t, pool, &testfactory.DeliveryOpts{WorkspaceID: b.admin.WorkspaceID, SubscriptionID: sub.ID})

	list := br.get(t, b.workspacePath("webhooks", sub.ID))
	require.Equal(t, http.StatusOK, list.status, list.body)
	require.Contains(t, list.body, b.workspacePath("webhooks", sub.ID, "deliveries", dead))
	require.Contains(t, list.body, b.workspacePath("webhooks", sub.ID, "deliveries", pending))
	filtered := br.get(t, b.workspacePath("webhooks", sub.ID)+"?status=dead")
	require.Contains(t, filtered.body, dead)
	require.NotContains(t, filtered.body, pending)
	bad := br.get(t, b.workspacePath("webhooks", sub.ID)+"?status=lost")
	require.Equal(t, http.StatusOK, bad.status)
	require.Contains(t, bad.body, "must be one of pending")

	p := br.get(t, b.workspacePath("webhooks", sub.ID, "deliveries", dead))
	require.Equal(t, http.StatusOK, p.status, p.body)
	requirePageHeaders(t, p)
	require.Contains(t, p.body, "endpoint answered 502")
	require.Contains(t, p.body, ">502<")
	require.Contains(t, p.body, "120 ms")
	require.Contains(t, p.body, "dial tcp: connection refused")
	require.Contains(t, p.body, "no answer")
	require.Contains(t, p.body, "&lt;i&gt;x&lt;/i&gt;", "the payload is escaped")
	require.Less(t, strings.Index(p.body, "dial tcp"), strings.Index(p.body, "endpoint answered 502"), "newest first")
	require.Contains(t, p.body, ">Redeliver</button>")

	// A pending delivery has nothing to redeliver; another subscription's path does not find it.
	pp := br.get(t, b.workspacePath("webhooks", sub.ID, "deliveries", pending))
	require.Equal(t, http.StatusOK, pp.status, pp.body)
	require.NotContains(t, pp.body, ">Redeliver</button>")
	require.Contains(t, pp.body, "No attempts yet")
	p2 := br.post(t, b.workspacePath("webhooks", sub.ID, "deliveries", pending), url.Values{"csrf_token": {hiddenFields(pp.body)["csrf_token"]}})
	require.Equal(t, http.StatusConflict, p2.status, p2.body)
	other := testfactory.Subscription(t, pool, b.admin.Owner(), &testfactory.SubscriptionOpts{URL: hookURL})
	require.Equal(t, http.StatusNotFound, br.get(t, b.workspacePath("webhooks", other.ID, "deliveries", dead)).status)

	r := br.submit(t, b.workspacePath("webhooks", sub.ID, "deliveries", dead), b.workspacePath("webhooks", sub.ID, "deliveries", dead), nil)
	require.Equal(t, http.StatusSeeOther, r.status, r.body)
	again := br.get(t, r.header.Get("Location"))
	require.Contains(t, again.body, "queued again")
	require.Contains(t, again.body, `<span class="status status-pending">pending</span>`)
	require.Contains(t, again.body, "endpoint answered 502", "earlier attempts stay listed")
}

func TestWebhooksAreForAdminsOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sub := testfactory.Subscription(t, b.h.App.Pool, b.admin.Owner(), &testfactory.SubscriptionOpts{URL: hookURL})
	dlv := testfactory.Delivery(t, b.h.App.Pool, &testfactory.DeliveryOpts{WorkspaceID: b.admin.WorkspaceID, SubscriptionID: sub.ID, Status: "dead"})
	for _, role := range []string{"viewer", "editor"} {
		br, _ := b.signedInMember(t, role)
		for _, path := range []string{b.workspacePath("webhooks"), b.workspacePath("webhooks", sub.ID), b.workspacePath("webhooks", sub.ID, "deliveries", dlv)} {
			require.Equal(t, http.StatusForbidden, br.get(t, path).status, role+" "+path)
		}
		csrf := hiddenFields(br.get(t, b.workspacePath("api-keys")).body)["csrf_token"]
		for _, path := range []string{b.workspacePath("webhooks"), b.workspacePath("webhooks", sub.ID, "delete"),
			b.workspacePath("webhooks", sub.ID, "rotate-secret"), b.workspacePath("webhooks", sub.ID, "deliveries", dlv)} {
			p := br.post(t, path, url.Values{"csrf_token": {csrf}, "url": {hookURL}, "event_types": {"run.failed"}, "etag": {sub.ID + ":1"}})
			require.Equal(t, http.StatusForbidden, p.status, role+" "+path)
		}
	}
	var n int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT count(*) FROM subscription WHERE workspace_id = $1`, b.admin.WorkspaceID).Scan(&n))
	require.Equal(t, 1, n)
}
