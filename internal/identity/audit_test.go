package identity_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/identity"
	"github.com/svcdev/svc/internal/testfactory"
)

// TestAuditTrailPages: the trail is the workspace's own, newest first, and
// pages through every event.
func TestAuditTrailPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := b.otherOrganization(t)
	for range 5 {
		require.Equal(t, http.StatusCreated, status(t, b.do(t, b.admin.APIKey, http.MethodPost, "/api/v1/api-keys", map[string]any{"name": "k", "role": "viewer"})))
		require.Equal(t, http.StatusCreated, status(t, b.do(t, other.Owner.Token, http.MethodPost, "/api/v1/api-keys", map[string]any{"name": "k", "role": "viewer"})))
	}
	want := b.count(t, "SELECT count(*) FROM audit_event WHERE workspace_id = $1", b.admin.WorkspaceID)
	require.Equal(t, 7, want, "bootstrap's two workspace events and five key creations")

	var ids []string
	path := "/api/v1/audit-events?limit=3"
	for range 4 {
		page := decode[client.AuditEventPage](t, b.do(t, b.admin.APIKey, http.MethodGet, path, nil), http.StatusOK)
		for _, e := range page.Items {
			ids = append(ids, e.Id)
			require.True(t, e.ActorId.IsNull() || e.ActorId.MustGet() == b.admin.PrincipalID, "another organization's events never show: %v", e)
		}
		if page.NextCursor.IsNull() {
			break
		}
		path = "/api/v1/audit-events?limit=3&cursor=" + page.NextCursor.MustGet()
	}
	require.Len(t, ids, want)
	for i := 1; i < len(ids); i++ {
		require.Greater(t, ids[i-1], ids[i], "newest first")
	}
	viewer := b.member(t, testfactory.MemberOpts{WorkspaceRole: auth.RoleEditor})
	require.Equal(t, "permission_denied", errorCode(t, b.do(t, viewer.Token, http.MethodGet, "/api/v1/audit-events", nil), http.StatusForbidden))
}

// TestAuditTrailFilters: the filters given all apply, each one narrows the
// trail, and a time range that ends before it starts is refused.
func TestAuditTrailFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := b.member(t, testfactory.MemberOpts{WorkspaceRole: auth.RoleAdmin})
	created := decode[client.CreatedAPIKey](t, b.do(t, b.admin.APIKey, http.MethodPost, "/api/v1/api-keys", map[string]any{"name": "a", "role": "viewer"}), http.StatusCreated)
	require.Equal(t, http.StatusCreated, status(t, b.do(t, other.Token, http.MethodPost, "/api/v1/api-keys", map[string]any{"name": "b", "role": "viewer"})))
	b.exec(t, `UPDATE audit_event SET created_at = '2001-01-01T00:00:00Z' WHERE subject_id = $1`, created.ApiKey.Id)
	list := func(query string) []client.AuditEvent {
		t.Helper()
		return decode[client.AuditEventPage](t, b.do(t, b.admin.APIKey, http.MethodGet, "/api/v1/audit-events?"+query, nil), http.StatusOK).Items
	}
	all := list("")
	require.Greater(t, len(all), 1)
	bySubject := list("subject_id=" + created.ApiKey.Id)
	require.Len(t, bySubject, 1)
	require.Equal(t, "api_key.created", bySubject[0].Action)
	require.Len(t, list("subject_id="+created.ApiKey.Id+"&action=api_key.revoked"), 0, "the filters all apply")
	byOther := list("actor_id=" + other.PrincipalID)
	require.Len(t, byOther, 1)
	require.Equal(t, "api_key.created", byOther[0].Action)
	keys := list("action=api_key.created")
	require.Len(t, keys, b.count(t, "SELECT count(*) FROM audit_event WHERE workspace_id = $1 AND action = 'api_key.created'", b.admin.WorkspaceID))
	require.Less(t, len(keys), len(all))
	require.Empty(t, list("actor_id=prn_nobody"))
	old := list("until=2002-01-01T00:00:00Z")
	require.Len(t, old, 1)
	require.Equal(t, created.ApiKey.Id, old[0].SubjectId)
	require.Len(t, list("since=2002-01-01T00:00:00Z"), len(all)-1)
	require.Len(t, list("since=2000-01-01T00:00:00Z&until=2001-01-02T00:00:00Z"), 1)
	require.Equal(t, "invalid_argument", errorCode(t, b.do(t, b.admin.APIKey, http.MethodGet,
		"/api/v1/audit-events?since=2002-01-01T00:00:00Z&until=2001-01-01T00:00:00Z", nil), http.StatusBadRequest))
}

// TestUserDisableAndEnable: an operator's disable refuses the user's keys within
// the authenticator's cache time, enable gives them back unchanged, and both are
// idempotent and audited without an actor.
func TestUserDisableAndEnable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	bob := b.member(t, testfactory.MemberOpts{Email: "Bob@Example.com", WorkspaceRole: auth.RoleEditor})
	me := func(token string) int { return status(t, b.do(t, token, http.MethodGet, "/api/v1/me", nil)) }
	require.Equal(t, http.StatusOK, me(bob.Token))

	st, err := identity.SetUserDisabled(t.Context(), b.h.App.Pool, "bob@example.com", true)
	require.NoError(t, err)
	require.Equal(t, identity.UserState{UserID: bob.UserID, Email: "Bob@Example.com", Disabled: true, Changed: true}, st)
	// Another process's change applies within the key cache's time; the rest
	// of the wait is slack for a loaded test machine.
	const within = auth.CacheTTL + 5*time.Second
	require.Eventually(t, func() bool { return me(bob.Token) == http.StatusUnauthorized }, within, 50*time.Millisecond)
	require.Equal(t, http.StatusOK, me(b.admin.APIKey), "other users are untouched")

	st, err = identity.SetUserDisabled(t.Context(), b.h.App.Pool, "BOB@example.com", true)
	require.NoError(t, err)
	require.False(t, st.Changed)
	require.True(t, st.Disabled)
	require.Equal(t, 2, b.count(t, "SELECT version FROM user_account WHERE id = $1", bob.UserID), "a second disable changes nothing")

	st, err = identity.SetUserDisabled(t.Context(), b.h.App.Pool, "bob@example.com", false)
	require.NoError(t, err)
	require.True(t, st.Changed)
	require.False(t, st.Disabled)
	require.Eventually(t, func() bool { return me(bob.Token) == http.StatusOK }, within, 50*time.Millisecond)
	resp, err := b.h.Client(t, bob.Token).GetMeWithResponse(t.Context())
	require.NoError(t, err)
	require.EqualValues(t, "editor", resp.JSON200.Role, "grants are as they were")

	evs := b.events(t, b.admin.APIKey)
	for action, n := range map[string]int{"user.disabled": 1, "user.enabled": 1} {
		got := eventsOf(evs, action)
		require.Len(t, got, n, action)
		require.True(t, got[0].ActorId.IsNull(), "operator commands have no actor")
		require.Equal(t, bob.UserID, got[0].SubjectId)
		require.Equal(t, []string{"disabled_at"}, got[0].ChangedFields)
	}

	_, err = identity.SetUserDisabled(t.Context(), b.h.App.Pool, "nobody@example.com", true)
	require.True(t, errors.Is(err, identity.ErrUserNotFound), "%v", err)
	_, err = identity.SetUserDisabled(t.Context(), b.h.App.Pool, "not an address", true)
	require.Error(t, err)
}
