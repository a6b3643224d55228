package identity_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/testfactory"
)

func TestCreateAPIKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	expires := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)

	resp := b.do(t, b.admin.APIKey, http.MethodPost, "/api/v1/api-keys", map[string]any{"name": "ci", "role": "runner", "expires_at": expires.Format(time.RFC3339Nano)})
	created := decode[client.CreatedAPIKey](t, resp, http.StatusCreated)
	k := created.ApiKey
	require.True(t, auth.WellFormed(created.Token), "the token is a well-formed svc_ key")
	require.Equal(t, created.Token[4:12], k.Prefix)
	require.Equal(t, "ci", k.Name)
	require.EqualValues(t, "runner", k.Role)
	require.Equal(t, b.admin.WorkspaceID, k.WorkspaceId)
	require.Equal(t, b.admin.PrincipalID, k.PrincipalId, "the key is the caller's")
	require.Equal(t, b.admin.PrincipalID, k.CreatedById)
	require.True(t, expires.Equal(k.ExpiresAt.MustGet()), "expires_at %v, want %v", k.ExpiresAt.MustGet(), expires)
	require.True(t, k.RevokedAt.IsNull())
	require.True(t, k.LastUsedAt.IsNull())
	require.Equal(t, 1, k.Version)
	require.Equal(t, "/api/v1/api-keys/"+k.Id, resp.Header.Get("Location"))
	require.Equal(t, fmt.Sprintf(`"%s:1"`, k.Id), resp.Header.Get("ETag"))

	// The token works, with its own role.
	me, err := b.h.Client(t, created.Token).GetMeWithResponse(t.Context())
	require.NoError(t, err)
	require.EqualValues(t, "runner", me.JSON200.Role)
	require.Equal(t, k.Id, me.JSON200.ApiKey.Id)
	require.Equal(t, "permission_denied", errorCode(t, b.do(t, created.Token, http.MethodGet, "/api/v1/api-keys", nil), http.StatusForbidden))

	// Without expiry (absent or null).
	for _, body := range []map[string]any{{"name": "forever", "role": "viewer"}, {"name": "forever", "role": "viewer", "expires_at": nil}} {
		c := decode[client.CreatedAPIKey](t, b.do(t, b.admin.APIKey, http.MethodPost, "/api/v1/api-keys", body), http.StatusCreated)
		require.True(t, c.ApiKey.ExpiresAt.IsNull())
	}

	before := b.count(t, "SELECT count(*) FROM api_key")
	for _, bad := range []map[string]any{
		{"name": "past", "role": "viewer", "expires_at": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)},
		{"name": "no role"},
		{"name": "", "role": "viewer"},
		{"name": "x", "role": "owner"},
		{"name": "x", "role": "viewer", "expires_at": "tomorrow"},
		{"name": "x", "role": "viewer", "token": "svc_mine"},
	} {
		resp := b.do(t, b.admin.APIKey, http.MethodPost, "/api/v1/api-keys", bad)
		require.Equal(t, "invalid_argument", errorCode(t, resp, http.StatusBadRequest), "%v", bad)
	}
	require.Equal(t, before, b.count(t, "SELECT count(*) FROM api_key"))
	require.NotContains(t, b.h.Logs.String(), created.Token[4:], "tokens never reach the logs")

	evs := eventsOf(b.events(t, b.admin.APIKey), "api_key.created")
	require.Len(t, evs, 4, "three creates here and the bootstrap key")
	require.Equal(t, []string{"name", "role"}, evs[0].ChangedFields)
	require.Equal(t, []string{"name", "role", "expires_at"}, evs[2].ChangedFields)
	require.Equal(t, k.Id, evs[2].SubjectId)
}

// TestAPIKeyListNeverShowsTokens: the list shows every key of the workspace,
// newest first, across pages, and never a token.
func TestAPIKeyListNeverShowsTokens(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tokens := []string{b.admin.APIKey}
	want := []string{}
	for i := range 4 {
		c := decode[client.CreatedAPIKey](t, b.do(t, b.admin.APIKey, http.MethodPost, "/api/v1/api-keys", map[string]any{"name": fmt.Sprintf("k%d", i), "role": "viewer"}), http.StatusCreated)
		tokens = append(tokens, c.Token)
		want = append([]string{c.ApiKey.Id}, want...)
	}
	other := b.otherOrganization(t)

	var got []string
	path := "/api/v1/api-keys?limit=2"
	for range 5 {
		resp := b.do(t, b.admin.APIKey, http.MethodGet, path, nil)
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		for _, tok := range tokens {
			require.NotContains(t, string(raw), tok[4:], "a list never shows a token")
		}
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		page := decode[client.APIKeyPage](t, resp, http.StatusOK)
		for _, k := range page.Items {
			got = append(got, k.Id)
		}
		if page.NextCursor.IsNull() {
			break
		}
		path = "/api/v1/api-keys?limit=2&cursor=" + page.NextCursor.MustGet()
	}
	require.Len(t, got, 5)
	require.Equal(t, want, got[:4], "newest first")
	require.NotContains(t, got, other.Owner.KeyID)
}

func TestRevokeAPIKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	victim := b.member(t, testfactory.MemberOpts{WorkspaceRole: auth.RoleEditor})
	path := "/api/v1/api-keys/" + victim.KeyID + "/revoke"
	require.Equal(t, http.StatusOK, status(t, b.do(t, victim.Token, http.MethodGet, "/api/v1/me", nil)), "the key works (and is cached)")

	require.Equal(t, "precondition_required", errorCode(t, b.do(t, b.admin.APIKey, http.MethodPost, path, nil), http.StatusPreconditionRequired))
	require.Equal(t, "precondition_failed", errorCode(t, b.do(t, b.admin.APIKey, http.MethodPost, path, nil, "If-Match", victim.KeyID+":2"), http.StatusPreconditionFailed))
	require.Equal(t, http.StatusOK, status(t, b.do(t, victim.Token, http.MethodGet, "/api/v1/me", nil)), "refused revokes change nothing")

	resp := b.do(t, b.admin.APIKey, http.MethodPost, path, nil, "If-Match", `"`+victim.KeyID+`:1"`)
	k := decode[client.APIKey](t, resp, http.StatusOK)
	require.False(t, k.RevokedAt.IsNull())
	require.Equal(t, 2, k.Version)
	require.Equal(t, fmt.Sprintf(`"%s:2"`, victim.KeyID), resp.Header.Get("ETag"))
	require.Equal(t, "unauthenticated", errorCode(t, b.do(t, victim.Token, http.MethodGet, "/api/v1/me", nil), http.StatusUnauthorized), "refused at once")

	// Revoking again changes nothing.
	again := decode[client.APIKey](t, b.do(t, b.admin.APIKey, http.MethodPost, path, nil, "If-Match", victim.KeyID+":2"), http.StatusOK)
	require.Equal(t, 2, again.Version)
	require.True(t, k.RevokedAt.MustGet().Equal(again.RevokedAt.MustGet()))
	evs := eventsOf(b.events(t, b.admin.APIKey), "api_key.revoked")
	require.Len(t, evs, 1)
	require.Equal(t, victim.KeyID, evs[0].SubjectId)
	require.Equal(t, []string{"revoked_at"}, evs[0].ChangedFields)
	require.Equal(t, resp.Header.Get("X-Request-Id"), evs[0].RequestId.MustGet())

	// An admin may revoke the key in use: the next request with it is refused.
	resp = b.do(t, b.admin.APIKey, http.MethodPost, "/api/v1/api-keys/"+mustMe(t, b, b.admin.APIKey)+"/revoke", nil, "If-Match", "*")
	require.Equal(t, http.StatusOK, status(t, resp))
	require.Equal(t, "unauthenticated", errorCode(t, b.do(t, b.admin.APIKey, http.MethodGet, "/api/v1/me", nil), http.StatusUnauthorized))
}

// TestKeysOfOtherWorkspacesAreAbsent: revoking a key of another workspace or
// organization answers 404, as for an absent key (428 without If-Match, before
// any lookup), and the key keeps working.
func TestKeysOfOtherWorkspacesAreAbsent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := b.otherOrganization(t)
	created := decode[client.CreatedWorkspace](t, b.do(t, b.admin.APIKey, http.MethodPost, "/api/v1/workspaces", map[string]any{"name": "Second"}), http.StatusCreated)
	sibling := mustMe(t, b, created.ApiKey)

	for _, keyID := range []string{other.Owner.KeyID, sibling, "key_01jd5v6w1q3yb8j8y3tn9z2k7h"} {
		for _, hdr := range [][]string{nil, {"If-Match", "*"}, {"If-Match", keyID + ":1"}} {
			want, code := http.StatusNotFound, "not_found"
			if hdr == nil {
				want, code = http.StatusPreconditionRequired, "precondition_required"
			}
			resp := b.do(t, b.admin.APIKey, http.MethodPost, "/api/v1/api-keys/"+keyID+"/revoke", nil, hdr...)
			require.Equal(t, code, errorCode(t, resp, want))
		}
	}
	require.Equal(t, http.StatusOK, status(t, b.do(t, other.Owner.Token, http.MethodGet, "/api/v1/me", nil)))
	require.Equal(t, http.StatusOK, status(t, b.do(t, created.ApiKey, http.MethodGet, "/api/v1/me", nil)))
}

// mustMe returns the id of the key token.
func mustMe(t *testing.T, b *testBundle, token string) string {
	t.Helper()
	me, err := b.h.Client(t, token).GetMeWithResponse(t.Context())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, me.StatusCode())
	return me.JSON200.ApiKey.Id
}
