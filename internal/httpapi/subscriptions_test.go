package httpapi_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/subscription"
	"github.com/svcdev/svc/internal/testfactory"
)

const subscriptionsPath = "/api/v1/subscriptions"

// hookURL is a public endpoint written as an IP literal, so the endpoint
// policy accepts it without a DNS lookup.
const hookURL = "https://93.184.216.34/hooks/svc"

type subscriptionsBundle struct {
	*providersBundle
	editor testfactory.Member
}

func setupSubscriptions(t *testing.T) *subscriptionsBundle {
	t.Helper()
	b := setupProviders(t)
	editor := testfactory.AddMember(t, b.h.App.Pool, b.admin.OrganizationID, b.admin.WorkspaceID, testfactory.MemberOpts{WorkspaceRole: "editor"})
	return &subscriptionsBundle{providersBundle: b, editor: editor}
}

// mustSubscription creates a subscription and returns the answer (the view
// under "subscription" and the secret).
func (b *subscriptionsBundle) mustSubscription(t *testing.T, body map[string]any) (map[string]any, string) {
	t.Helper()
	status, out, hdr := b.do(t, http.MethodPost, subscriptionsPath, body)
	require.Equal(t, http.StatusCreated, status, out)
	sub := out["subscription"].(map[string]any)
	require.Equal(t, subscriptionsPath+"/"+sub["id"].(string), hdr.Get("Location"))
	require.Equal(t, etag(sub), hdr.Get("ETag"))
	return sub, out["secret"].(string)
}

// openSecret opens the stored secret as the webhook sender will.
func (b *subscriptionsBundle) openSecret(t *testing.T, subID string) string {
	t.Helper()
	policy, err := endpoint.NewPolicy(config.Default().EndpointPolicy)
	require.NoError(t, err)
	s, err := subscription.NewService(b.h.App.Pool, b.h.App.Keyring, policy).OpenSecret(context.Background(), b.admin.WorkspaceID, subID)
	require.NoError(t, err)
	return s
}

// requireWebhookSecret checks the Standard Webhooks format: whsec_ and the
// base64 of 32 random bytes.
func requireWebhookSecret(t *testing.T, secret string) {
	t.Helper()
	require.True(t, strings.HasPrefix(secret, "whsec_"), secret)
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	require.Len(t, raw, 32)
}

func TestSubscriptionsSecretShownOnce(t *testing.T) {
	t.Parallel()
	b := setupSubscriptions(t)
	sub, secret := b.mustSubscription(t, map[string]any{"url": hookURL, "event_types": []string{"run.succeeded", "run.failed", "agent.revision_published"},
		"description": "Run outcomes"})
	requireWebhookSecret(t, secret)
	subID := sub["id"].(string)
	require.Regexp(t, `^sub_[0-9a-z]{26}$`, subID)
	require.Equal(t, hookURL, sub["url"])
	require.Equal(t, []any{"agent.revision_published", "run.failed", "run.succeeded"}, sub["event_types"], "sorted")
	require.Equal(t, true, sub["enabled"])
	require.Equal(t, "Run outcomes", sub["description"])
	require.EqualValues(t, 1, sub["version"])
	require.NotContains(t, sub, "secret")
	require.Equal(t, []string{"subscription.created:description,enabled,event_types,secret,url"}, b.auditTrail(t, subID))

	// Never again: not in a read, a list, a change, the stored row or the logs.
	_, got, _ := b.do(t, http.MethodGet, subscriptionsPath+"/"+subID, nil)
	_, list, _ := b.do(t, http.MethodGet, subscriptionsPath, nil)
	_, patched, _ := b.do(t, http.MethodPatch, subscriptionsPath+"/"+subID, map[string]any{"enabled": false}, "If-Match", etag(sub))
	for _, v := range []map[string]any{got, list, patched} {
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		require.NotContains(t, string(raw), strings.TrimPrefix(secret, "whsec_"))
		require.NotContains(t, string(raw), "whsec_")
	}
	require.Equal(t, sub["id"], got["id"])
	var stored []byte
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT secret FROM subscription WHERE id = $1`, subID).Scan(&stored))
	require.NotContains(t, string(stored), strings.TrimPrefix(secret, "whsec_"), "sealed at rest")
	var audits string
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT string_agg(array_to_string(changed_fields, ','), ';') FROM audit_event WHERE subject_id = $1`, subID).Scan(&audits))
	require.NotContains(t, audits, "whsec_")
	require.NotContains(t, b.h.Logs.String(), strings.TrimPrefix(secret, "whsec_"))
	require.Equal(t, secret, b.openSecret(t, subID), "the sender opens what was shown")

	// Rotation: needs If-Match, answers a new secret once, replaces the old one.
	rot := subscriptionsPath + "/" + subID + "/rotate-secret"
	status, out, _ := b.do(t, http.MethodPost, rot, nil)
	require.Equal(t, http.StatusPreconditionRequired, status, out)
	status, out, _ = b.do(t, http.MethodPost, rot, nil, "If-Match", etag(sub))
	require.Equal(t, http.StatusPreconditionFailed, status, out)
	status, out, _ = b.do(t, http.MethodPost, rot, nil, as(b.editor.Token, "If-Match", etag(patched))...)
	require.Equal(t, http.StatusForbidden, status, out)
	status, out, hdr := b.do(t, http.MethodPost, rot, nil, "If-Match", etag(patched))
	require.Equal(t, http.StatusOK, status, out)
	fresh := out["secret"].(string)
	requireWebhookSecret(t, fresh)
	require.NotEqual(t, secret, fresh)
	rotated := out["subscription"].(map[string]any)
	require.EqualValues(t, 3, rotated["version"])
	require.Equal(t, etag(rotated), hdr.Get("ETag"))
	require.Equal(t, false, rotated["enabled"], "nothing else changed")
	require.Equal(t, fresh, b.openSecret(t, subID))
	require.Equal(t, "subscription.secret_rotated:secret", b.auditTrail(t, subID)[2])
	_, got, _ = b.do(t, http.MethodGet, subscriptionsPath+"/"+subID, nil)
	raw, err := json.Marshal(got)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "whsec_")
	require.NotContains(t, b.h.Logs.String(), strings.TrimPrefix(fresh, "whsec_"))
}

func TestSubscriptionsNeedAdmin(t *testing.T) {
	t.Parallel()
	b := setupSubscriptions(t)
	sub, _ := b.mustSubscription(t, map[string]any{"url": hookURL, "event_types": []string{"thread.idle"}})
	path := subscriptionsPath + "/" + sub["id"].(string)
	for _, tok := range []string{b.editor.Token, b.viewer.Token} {
		for _, req := range []struct {
			method, path string
			body         any
		}{
			{http.MethodGet, subscriptionsPath, nil},
			{http.MethodPost, subscriptionsPath, map[string]any{"url": hookURL, "event_types": []string{"thread.idle"}}},
			{http.MethodGet, path, nil},
			{http.MethodPatch, path, map[string]any{"enabled": false}},
			{http.MethodDelete, path, nil},
			{http.MethodPost, path + "/rotate-secret", nil},
		} {
			status, out, _ := b.do(t, req.method, req.path, req.body, as(tok, "If-Match", etag(sub))...)
			require.Equal(t, http.StatusForbidden, status, "%s %s: %v", req.method, req.path, out)
		}
	}
	_, got, _ := b.do(t, http.MethodGet, path, nil)
	require.Equal(t, sub, got, "nothing changed")
	var n int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT count(*) FROM subscription`).Scan(&n))
	require.Equal(t, 1, n)
}

func TestSubscriptionsRefuseBadInput(t *testing.T) {
	t.Parallel()
	b := setupSubscriptions(t)
	cases := []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"plain HTTP", map[string]any{"url": "http://93.184.216.34/h", "event_types": []string{"run.failed"}}, "url"},
		{"a private address", map[string]any{"url": "https://127.0.0.1/h", "event_types": []string{"run.failed"}}, "url"},
		{"a metadata address", map[string]any{"url": "https://169.254.169.254/latest", "event_types": []string{"run.failed"}}, "url"},
		{"not a URL", map[string]any{"url": "hooks here", "event_types": []string{"run.failed"}}, "url"},
		{"no event types", map[string]any{"url": hookURL, "event_types": []string{}}, "event_types"},
		{"an unknown event type", map[string]any{"url": hookURL, "event_types": []string{"run.exploded"}}, "event_types"},
		{"an event type twice", map[string]any{"url": hookURL, "event_types": []string{"run.failed", "run.failed"}}, "event_types"},
		{"no url", map[string]any{"event_types": []string{"run.failed"}}, "url"},
		{"a secret given by the client", map[string]any{"url": hookURL, "event_types": []string{"run.failed"}, "secret": "whsec_x"}, "secret"},
		{"a long description", map[string]any{"url": hookURL, "event_types": []string{"run.failed"}, "description": strings.Repeat("x", 2001)}, "description"},
	}
	for _, tc := range cases {
		status, out, _ := b.do(t, http.MethodPost, subscriptionsPath, tc.body)
		require.Equal(t, http.StatusBadRequest, status, "%s: %v", tc.name, out)
		got := fields(t, out)
		require.NotEmpty(t, got, tc.name)
		for _, f := range got {
			require.True(t, f == tc.field || strings.HasPrefix(f, tc.field+"."), "%s: fields %v", tc.name, got)
		}
	}
	var n int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT count(*) FROM subscription`).Scan(&n))
	require.Zero(t, n, "nothing was stored")
}

func TestSubscriptionsPatchAndDelete(t *testing.T) {
	t.Parallel()
	b := setupSubscriptions(t)
	sub, _ := b.mustSubscription(t, map[string]any{"url": hookURL, "event_types": []string{"run.failed", "run.succeeded"}})
	subID := sub["id"].(string)
	path := subscriptionsPath + "/" + subID

	status, out, _ := b.do(t, http.MethodPatch, path, map[string]any{"enabled": false})
	require.Equal(t, http.StatusPreconditionRequired, status, out)
	status, out, _ = b.do(t, http.MethodPatch, path, map[string]any{"enabled": false}, "If-Match", `"`+subID+`:5"`)
	require.Equal(t, http.StatusPreconditionFailed, status, out)

	// Empty, and the same set in another order: no change.
	for _, body := range []map[string]any{{}, {"event_types": []string{"run.succeeded", "run.failed"}, "url": hookURL, "enabled": true, "description": ""}} {
		status, out, hdr := b.do(t, http.MethodPatch, path, body, "If-Match", etag(sub))
		require.Equal(t, http.StatusOK, status, out)
		require.Equal(t, sub, out)
		require.Equal(t, etag(sub), hdr.Get("ETag"))
	}
	require.Len(t, b.auditTrail(t, subID), 1)

	status, out, _ = b.do(t, http.MethodPatch, path, map[string]any{"url": "https://127.0.0.1/x"}, "If-Match", etag(sub))
	require.Equal(t, http.StatusBadRequest, status, out)
	require.Equal(t, []string{"url"}, fields(t, out))
	status, out, _ = b.do(t, http.MethodPatch, path, map[string]any{"event_types": []string{}}, "If-Match", etag(sub))
	require.Equal(t, http.StatusBadRequest, status, out)

	status, out, _ = b.do(t, http.MethodPatch, path, map[string]any{"url": "https://93.184.216.35/v2", "event_types": []string{"environment.deleted"},
		"description": "ops"}, "If-Match", etag(sub))
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, "https://93.184.216.35/v2", out["url"])
	require.Equal(t, []any{"environment.deleted"}, out["event_types"])
	require.EqualValues(t, 2, out["version"])
	require.Equal(t, "subscription.updated:description,event_types,url", b.auditTrail(t, subID)[1])
	sub = out

	// Of writers holding one ETag, exactly one wins.
	raceOnce(t, 6, http.StatusOK, func(i int) int {
		status, _, _ := b.do(t, http.MethodPatch, path, map[string]any{"description": strings.Repeat("x", i+1)}, "If-Match", etag(sub))
		return status
	})
	_, sub, _ = b.do(t, http.MethodGet, path, nil)
	require.EqualValues(t, 3, sub["version"])

	// Delete: If-Match, then gone.
	status, _, _ = b.do(t, http.MethodDelete, path, nil)
	require.Equal(t, http.StatusPreconditionRequired, status)
	status, _, _ = b.do(t, http.MethodDelete, path, nil, "If-Match", `"`+subID+`:2"`)
	require.Equal(t, http.StatusPreconditionFailed, status)
	status, _, _ = b.do(t, http.MethodDelete, path, nil, "If-Match", etag(sub))
	require.Equal(t, http.StatusNoContent, status)
	status, _, _ = b.do(t, http.MethodGet, path, nil)
	require.Equal(t, http.StatusNotFound, status)
	status, _, _ = b.do(t, http.MethodPost, path+"/rotate-secret", nil, "If-Match", "*")
	require.Equal(t, http.StatusNotFound, status)
	trail := b.auditTrail(t, subID)
	require.Equal(t, "subscription.deleted:", trail[len(trail)-1])
}

// TestSubscriptionsAcrossWorkspaces: another workspace's subscription answers
// exactly like a missing one.
func TestSubscriptionsAcrossWorkspaces(t *testing.T) {
	t.Parallel()
	b := setupSubscriptions(t)
	sub, _ := b.mustSubscription(t, map[string]any{"url": hookURL, "event_types": []string{"run.failed"}})
	other := b.otherWorkspace(t)
	var bodies []string
	for _, subID := range []string{sub["id"].(string), "sub_01jd5v6w1q3yb8j8y3tn9z2k7h"} {
		path := subscriptionsPath + "/" + subID
		for _, req := range []struct {
			method, path string
			body         any
		}{
			{http.MethodGet, path, nil},
			{http.MethodPatch, path, map[string]any{"enabled": false}},
			{http.MethodDelete, path, nil},
			{http.MethodPost, path + "/rotate-secret", nil},
		} {
			status, out, hdr := b.do(t, req.method, req.path, req.body, as(other, "If-Match", etag(sub))...)
			require.Equal(t, http.StatusNotFound, status, "%s %s", req.method, req.path)
			require.Empty(t, hdr.Get("ETag"))
			bodies = append(bodies, errorMessage(t, out))
		}
	}
	require.Equal(t, bodies[:4], bodies[4:])
	_, got, _ := b.do(t, http.MethodGet, subscriptionsPath+"/"+sub["id"].(string), nil)
	require.Equal(t, sub, got)
}

// TestSubscriptionsCreateReplay: a retried create with the same
// Idempotency-Key replays the answer, secret included, and makes nothing more.
func TestSubscriptionsCreateReplay(t *testing.T) {
	t.Parallel()
	b := setupSubscriptions(t)
	body := map[string]any{"url": hookURL, "event_types": []string{"run.failed"}}
	status, first, _ := b.do(t, http.MethodPost, subscriptionsPath, body, "Idempotency-Key", "sub-1")
	require.Equal(t, http.StatusCreated, status, first)
	status, again, hdr := b.do(t, http.MethodPost, subscriptionsPath, body, "Idempotency-Key", "sub-1")
	require.Equal(t, http.StatusCreated, status, again)
	require.Equal(t, "true", hdr.Get("Idempotent-Replayed"))
	require.Equal(t, first, again)
	var n int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT count(*) FROM subscription`).Scan(&n))
	require.Equal(t, 1, n)
}

// TestSubscriptionsPerWorkspaceCap: a workspace holds at most
// limits.subscriptions_per_workspace subscriptions (each one an endpoint the
// shared sender calls); one more is 409 conflict naming the limit and is not
// created, and a delete makes room.
func TestSubscriptionsPerWorkspaceCap(t *testing.T) {
	t.Parallel()
	b := &subscriptionsBundle{providersBundle: setupProvidersWith(t, func(c *config.Config) { c.Limits.SubscriptionsPerWorkspace = 2 })}
	body := map[string]any{"url": hookURL, "event_types": []string{"run.failed"}}
	first, _ := b.mustSubscription(t, body)
	b.mustSubscription(t, body)

	status, out, _ := b.do(t, http.MethodPost, subscriptionsPath, body)
	require.Equal(t, http.StatusConflict, status, out)
	e := out["error"].(map[string]any)
	require.Equal(t, "conflict", e["code"])
	require.Contains(t, e["message"], "limits.subscriptions_per_workspace")
	require.Contains(t, e["message"], "(2)")
	status, list, _ := b.do(t, http.MethodGet, subscriptionsPath, nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, list["items"], 2, "the refused subscription was not created")

	status, out, _ = b.do(t, http.MethodDelete, subscriptionsPath+"/"+first["id"].(string), nil, "If-Match", etag(first))
	require.Equal(t, http.StatusNoContent, status, out)
	b.mustSubscription(t, body)
}
