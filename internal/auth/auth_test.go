package auth_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/testfactory"
)

type authBundle struct {
	h     *apitest.Harness
	admin testfactory.Admin
}

func setup(t *testing.T) *authBundle {
	t.Helper()
	h := apitest.Start(t, apitest.Options{})
	return &authBundle{h: h, admin: testfactory.Bootstrap(t, h.App.Pool)}
}

func errorCode(t *testing.T, resp *http.Response) string {
	t.Helper()
	var body struct {
		Error struct{ Code string } `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return body.Error.Code
}

func (b *authBundle) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := b.h.App.Pool.Exec(t.Context(), sql, args...)
	require.NoError(t, err)
	b.h.App.Auth.Forget() // as the identity services do after such changes
}

func TestMeDescribesTheCaller(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp, err := b.h.Client(t, b.admin.APIKey).GetMeWithResponse(t.Context())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode())
	me := resp.JSON200
	require.Equal(t, b.admin.PrincipalID, me.Principal.Id)
	require.Equal(t, b.admin.WorkspaceID, me.Workspace.Id)
	require.Equal(t, b.admin.OrganizationID, me.Organization.Id)
	require.EqualValues(t, "admin", me.Role)
	require.EqualValues(t, "owner", me.OrganizationRole.MustGet())
	require.EqualValues(t, b.admin.Email, me.User.MustGet().Email)
	require.Equal(t, b.admin.APIKey[4:12], me.ApiKey.Prefix)
	require.True(t, me.ApiKey.ExpiresAt.IsNull())
}

func TestBadCredentialsAreAll401(t *testing.T) {
	t.Parallel()
	b := setup(t)
	good, err := auth.NewToken()
	require.NoError(t, err)
	// Change the last character to a different one, whatever it was.
	last := "x"
	if strings.HasSuffix(b.admin.APIKey, last) {
		last = "y"
	}
	tampered := b.admin.APIKey[:len(b.admin.APIKey)-1] + last
	for name, header := range map[string]string{
		"missing":          "",
		"not bearer":       "Basic " + b.admin.APIKey,
		"empty bearer":     "Bearer ",
		"malformed":        "Bearer svc_short",
		"bad checksum":     "Bearer " + tampered,
		"unknown":          "Bearer " + good.Secret,
		"no prefix":        "Bearer " + strings.TrimPrefix(b.admin.APIKey, "svc_"),
		"lowercase scheme": "bearer " + good.Secret,
	} {
		var hdr []string
		if header != "" {
			hdr = []string{"Authorization", header}
		}
		resp := b.h.Do(t, http.MethodGet, "/api/v1/me", nil, hdr...)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, name)
		require.Equal(t, "unauthenticated", errorCode(t, resp), name)
	}
}

func TestExpiredRevokedAndDisabled(t *testing.T) {
	t.Parallel()

	cases := map[string]struct{ refuse, restore string }{
		"expired key":   {`UPDATE api_key SET expires_at = now() - interval '1 second' WHERE workspace_id = $1`, `UPDATE api_key SET expires_at = NULL WHERE workspace_id = $1`},
		"revoked key":   {`UPDATE api_key SET revoked_at = now() WHERE workspace_id = $1`, ``},
		"disabled user": {`UPDATE user_account SET disabled_at = now() WHERE principal_id IN (SELECT principal_id FROM api_key WHERE workspace_id = $1)`, `UPDATE user_account SET disabled_at = NULL`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			me := func() int {
				return b.h.Do(t, http.MethodGet, "/api/v1/me", nil, "Authorization", "Bearer "+b.admin.APIKey).StatusCode
			}
			require.Equal(t, http.StatusOK, me())
			b.exec(t, tc.refuse, b.admin.WorkspaceID)
			require.Equal(t, http.StatusUnauthorized, me())
			if tc.restore != "" {
				if strings.Contains(tc.restore, "$1") {
					b.exec(t, tc.restore, b.admin.WorkspaceID)
				} else {
					b.exec(t, tc.restore)
				}
				require.Equal(t, http.StatusOK, me(), "restoring gives back the key as it was")
			}
		})
	}
}

func TestEffectiveRole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	org, ws := b.admin.OrganizationID, b.admin.WorkspaceID
	role := func(token string) string {
		resp, err := b.h.Client(t, token).GetMeWithResponse(t.Context())
		require.NoError(t, err)
		if resp.StatusCode() != http.StatusOK {
			return resp.Status()
		}
		return string(resp.JSON200.Role)
	}
	viewerWithAdminKey := testfactory.AddMember(t, b.h.App.Pool, org, ws, testfactory.MemberOpts{WorkspaceRole: "viewer", KeyRole: "admin"})
	require.Equal(t, "viewer", role(viewerWithAdminKey.Token), "a key never acts above its principal")
	adminWithRunnerKey := testfactory.AddMember(t, b.h.App.Pool, org, ws, testfactory.MemberOpts{WorkspaceRole: "admin", KeyRole: "runner"})
	require.Equal(t, "runner", role(adminWithRunnerKey.Token), "nor above its own role")
	orgAdmin := testfactory.AddMember(t, b.h.App.Pool, org, ws, testfactory.MemberOpts{OrganizationRole: "admin", KeyRole: "admin"})
	require.Equal(t, "admin", role(orgAdmin.Token), "organization admins act as workspace admins")
	orgMember := testfactory.AddMember(t, b.h.App.Pool, org, ws, testfactory.MemberOpts{OrganizationRole: "member", KeyRole: "editor"})
	require.Equal(t, "401 Unauthorized", role(orgMember.Token), "an organization member without workspace membership has no access")
	service := testfactory.AddMember(t, b.h.App.Pool, org, ws, testfactory.MemberOpts{Service: true, WorkspaceRole: "runner"})
	resp, err := b.h.Client(t, service.Token).GetMeWithResponse(t.Context())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode())
	require.True(t, resp.JSON200.User.IsNull(), "service principals have no user")
	require.EqualValues(t, "service", resp.JSON200.Principal.Kind)
}

func TestPermissionDeniedAndAuthBeforeValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	viewer := testfactory.AddMember(t, b.h.App.Pool, b.admin.OrganizationID, b.admin.WorkspaceID, testfactory.MemberOpts{WorkspaceRole: "viewer"})

	resp := b.h.Do(t, http.MethodGet, "/api/v1/api-keys", nil, "Authorization", "Bearer "+viewer.Token)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Equal(t, "permission_denied", errorCode(t, resp))

	resp = b.h.Do(t, http.MethodGet, "/api/v1/workspaces", nil, "Authorization", "Bearer "+viewer.Token)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "organization operations need an organization admin")

	ownerWithViewerKey := testfactory.AddMember(t, b.h.App.Pool, b.admin.OrganizationID, b.admin.WorkspaceID, testfactory.MemberOpts{OrganizationRole: "owner", KeyRole: "viewer"})
	resp = b.h.Do(t, http.MethodGet, "/api/v1/workspaces", nil, "Authorization", "Bearer "+ownerWithViewerKey.Token)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "an owner's viewer key acts as a viewer, not as an organization admin")

	// An unauthenticated request learns nothing about validation.
	resp = b.h.Do(t, http.MethodPost, "/api/v1/api-keys", map[string]any{"nmae": 1})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	// Nor does one without the permission.
	resp = b.h.Do(t, http.MethodPost, "/api/v1/api-keys", map[string]any{"nmae": 1}, "Authorization", "Bearer "+viewer.Token)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}

func TestTokensAreNeverLogged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.h.Do(t, http.MethodGet, "/api/v1/me", nil, "Authorization", "Bearer "+b.admin.APIKey)
	b.h.Do(t, http.MethodGet, "/api/v1/me", nil, "Authorization", "Bearer svc_wrong")
	logs := b.h.Logs.String()
	require.NotContains(t, logs, b.admin.APIKey)
	require.NotContains(t, logs, b.admin.APIKey[4:])
	require.NotContains(t, logs, "svc_wrong")
}

func TestCachedKeyNeverOutlivesItsExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	me := func() int {
		return b.h.Do(t, http.MethodGet, "/api/v1/me", nil, "Authorization", "Bearer "+b.admin.APIKey).StatusCode
	}
	// The key expires in a second, well within the cache's 2 s. The first request
	// must be answered before then to show the key cached; one answered later (a
	// slow machine) proves nothing, so the key gets a fresh expiry and another try.
	const lifetime = time.Second
	for attempt := 1; ; attempt++ {
		var expires time.Time
		require.NoError(t, b.h.App.Pool.QueryRow(t.Context(),
			`UPDATE api_key SET expires_at = now() + make_interval(secs => $2) WHERE workspace_id = $1 RETURNING expires_at`,
			b.admin.WorkspaceID, lifetime.Seconds()).Scan(&expires))
		b.h.App.Auth.Forget()
		status := me()
		if time.Now().After(expires) {
			require.Less(t, attempt, 5, "no request was answered within %s of setting the expiry", lifetime)
			continue
		}
		require.Equal(t, http.StatusOK, status, "cached now")
		time.Sleep(time.Until(expires) + 100*time.Millisecond)
		require.Equal(t, http.StatusUnauthorized, me(), "refused at its expiry, not when the cache entry would have lapsed")
		return
	}
}
