package invitation_test

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/internal/invitation"
	"github.com/svcdev/svc/internal/testfactory"
)

func TestCreateWorkspaceInvitation(t *testing.T) {
	t.Parallel()
	b := setup(t)

	resp, err := b.api.CreateWorkspaceInvitationWithResponse(t.Context(), b.admin.WorkspaceID, nil,
		client.CreateInvitationRequest{Email: "ada@example.com", Role: "editor"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode(), string(resp.Body))
	created := resp.JSON201
	inv := created.Invitation

	require.EqualValues(t, "queued", created.Delivery)
	require.True(t, strings.HasPrefix(inv.Id, "inv_"), inv.Id)
	require.EqualValues(t, "ada@example.com", inv.Email)
	require.EqualValues(t, "editor", inv.Role)
	require.Equal(t, b.admin.OrganizationID, inv.OrganizationId)
	require.Equal(t, b.admin.WorkspaceID, inv.WorkspaceId.MustGet())
	require.True(t, inv.PrincipalId.IsNull(), "no account has this address yet")
	require.Equal(t, b.admin.PrincipalID, inv.InvitedById)
	require.True(t, inv.AcceptedAt.IsNull())
	require.True(t, inv.RevokedAt.IsNull())
	require.Equal(t, 1, inv.Version)
	require.Equal(t, time.UTC, inv.CreatedAt.Location())
	require.Equal(t, ttlSeconds*time.Second, inv.ExpiresAt.Sub(inv.CreatedAt))

	hdr := resp.HTTPResponse.Header
	require.Equal(t, "/api/v1/invitations/"+inv.Id, hdr.Get("Location"))
	require.Equal(t, `"`+inv.Id+`:1"`, hdr.Get("ETag"))

	// The URL is the console's accept page under the public URL, with the token.
	u, err := url.Parse(created.InvitationUrl)
	require.NoError(t, err)
	require.Equal(t, "https", u.Scheme)
	require.Equal(t, "svc.example.com", u.Host)
	require.Equal(t, "/invitations/accept", u.Path)
	token := b.keepToken(t, created.InvitationUrl)
	require.Len(t, token, 43, "256 bits, base64url without padding")

	// Only the token's SHA-256 is stored.
	var stored []byte
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), "SELECT token_hash FROM invitation WHERE id = $1", inv.Id).Scan(&stored))
	sum := sha256.Sum256([]byte(token))
	require.Equal(t, sum[:], stored)

	// The mail is in the outbox: its clear payload has no token, its sealed part
	// opens with the process's key ring to the URL.
	var kind, wsID string
	var payload, sealed []byte
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(),
		"SELECT kind, workspace_id, payload, sealed FROM outbox WHERE payload->>'invitation_id' = $1", inv.Id).
		Scan(&kind, &wsID, &payload, &sealed))
	require.Equal(t, "identity_mail", kind)
	require.Equal(t, b.admin.WorkspaceID, wsID)
	require.NotContains(t, string(payload), token)
	var mail map[string]any
	require.NoError(t, json.Unmarshal(payload, &mail))
	require.Equal(t, map[string]any{
		"template": "invitation", "to": "ada@example.com", "invitation_id": inv.Id,
		"organization_name": "Default organization", "workspace_name": "Default workspace",
		"role": "editor", "invited_by": b.admin.Email, "expires_at": inv.ExpiresAt.Format(time.RFC3339Nano),
	}, mail)
	plain, err := b.h.App.Keyring.Open(sealed, []byte("identity_mail:"+inv.Id))
	require.NoError(t, err)
	var secrets invitation.MailSecrets
	require.NoError(t, json.Unmarshal(plain, &secrets))
	require.Equal(t, created.InvitationUrl, secrets.InvitationURL)
	_, err = b.h.App.Keyring.Open(sealed, []byte("identity_mail:inv_other"))
	require.Error(t, err, "the sealed part is bound to its invitation")

	var actor string
	var version int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(),
		"SELECT actor_id, version FROM audit_event WHERE action = 'invitation.created' AND subject_id = $1", inv.Id).Scan(&actor, &version))
	require.Equal(t, b.admin.PrincipalID, actor)
	require.Equal(t, 1, version)
}

func TestCreateOrganizationInvitation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// An address with an account elsewhere: the invitation still does not name
	// its principal, which would tell this tenant that the account exists.
	m := testfactory.AddMember(t, b.h.App.Pool, b.admin.OrganizationID, b.admin.WorkspaceID, testfactory.MemberOpts{WorkspaceRole: "viewer"})

	created := b.inviteOrganization(t, m.Email, "admin")
	inv := created.Invitation
	require.True(t, inv.WorkspaceId.IsNull())
	require.Equal(t, b.admin.OrganizationID, inv.OrganizationId)
	require.EqualValues(t, "admin", inv.Role)
	require.True(t, inv.PrincipalId.IsNull(), "the principal is known only once the invitation is accepted")

	var payload []byte
	var wsID *string
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(),
		"SELECT workspace_id, payload FROM outbox WHERE payload->>'invitation_id' = $1", inv.Id).Scan(&wsID, &payload))
	require.Nil(t, wsID)
	var mail map[string]any
	require.NoError(t, json.Unmarshal(payload, &mail))
	require.Nil(t, mail["workspace_name"])
	require.Equal(t, "admin", mail["role"])
}

func TestCreateInvitationRefusesBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ws := "/api/v1/workspaces/" + b.admin.WorkspaceID + "/invitations"
	org := "/api/v1/organizations/" + b.admin.OrganizationID + "/invitations"
	auth := []string{"Authorization", "Bearer " + b.admin.APIKey}

	for _, tc := range []struct {
		name, path, email, role, field string
	}{
		{"NotAnAddress", ws, "not-an-email", "editor", "email"},
		{"NoDotInDomain", ws, "ada@example", "editor", "email"},
		{"DisplayNameForm", ws, "Ada <ada@example.com>", "editor", "email"},
		{"Spaces", org, " ada@example.com", "member", "email"},
		{"Quoted", org, `"Ada" ada@example.com`, "member", "email"},
		{"TwoAts", org, "ada@@example.com", "member", "email"},
		{"TooLong", org, strings.Repeat("a", 250) + "@example.com", "member", "email"},
		{"UnknownRole", ws, "ada@example.com", "superuser", "role"},
		{"OrganizationRoleForWorkspace", ws, "ada@example.com", "owner", "role"},
		{"WorkspaceRoleForOrganization", org, "ada@example.com", "editor", "role"},
		{"EmptyRole", org, "ada@example.com", "", "role"},
	} {
		resp := b.h.Do(t, http.MethodPost, tc.path, map[string]string{"email": tc.email, "role": tc.role}, auth...)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, tc.name)
		e := readError(t, resp)
		require.Equal(t, "invalid_argument", e.Code, tc.name)
		require.Contains(t, e.Fields, tc.field, tc.name)
	}
	var n int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), "SELECT count(*) FROM invitation").Scan(&n))
	require.Zero(t, n)
}

func TestCreateInvitationConflicts(t *testing.T) {
	t.Parallel()

	t.Run("PendingForTheSameAddressAnyCase", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.inviteWorkspace(t, "ada@example.com", "editor")
		resp, err := b.api.CreateWorkspaceInvitationWithResponse(t.Context(), b.admin.WorkspaceID, nil,
			client.CreateInvitationRequest{Email: "ADA@Example.com", Role: "viewer"})
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, resp.StatusCode())
		require.Equal(t, "already_exists", decodeError(t, resp.Body).Code)

		// Another target is another invitation.
		b.inviteOrganization(t, "ada@example.com", "member")
		resp2, err := b.api.CreateOrganizationInvitationWithResponse(t.Context(), b.admin.OrganizationID, nil,
			client.CreateInvitationRequest{Email: "ada@example.com", Role: "admin"})
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, resp2.StatusCode())
		require.Equal(t, "already_exists", decodeError(t, resp2.Body).Code)
	})

	t.Run("AlreadyAMember", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for _, email := range []string{b.admin.Email, strings.ToUpper(b.admin.Email)} {
			resp, err := b.api.CreateWorkspaceInvitationWithResponse(t.Context(), b.admin.WorkspaceID, nil,
				client.CreateInvitationRequest{Email: email, Role: "viewer"})
			require.NoError(t, err)
			require.Equal(t, http.StatusConflict, resp.StatusCode())
			e := decodeError(t, resp.Body)
			require.Equal(t, "already_exists", e.Code)
			require.Contains(t, e.Message, "already a member of the workspace")

			resp2, err := b.api.CreateOrganizationInvitationWithResponse(t.Context(), b.admin.OrganizationID, nil,
				client.CreateInvitationRequest{Email: email, Role: "member"})
			require.NoError(t, err)
			require.Equal(t, http.StatusConflict, resp2.StatusCode())
			require.Contains(t, decodeError(t, resp2.Body).Message, "already a member of the organization")
		}
	})

	t.Run("ExpiredOrRevokedPendingDoesNotBlock", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		first := b.inviteWorkspace(t, "ada@example.com", "editor")
		b.expire(t, first.Invitation.Id)
		second := b.inviteWorkspace(t, "ada@example.com", "viewer")
		require.NotEqual(t, first.Invitation.Id, second.Invitation.Id)
		get, err := b.api.GetInvitationWithResponse(t.Context(), first.Invitation.Id)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, get.StatusCode(), "the expired invitation was replaced")

		rev, err := b.api.RevokeInvitationWithResponse(t.Context(), second.Invitation.Id,
			&client.RevokeInvitationParams{IfMatch: `"` + second.Invitation.Id + `:1"`})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, rev.StatusCode())
		b.inviteWorkspace(t, "ada@example.com", "viewer")
	})

	t.Run("ConcurrentIdenticalInvitations", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		const n = 8
		statuses := make([]int, n)
		urls := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				resp, err := b.api.CreateWorkspaceInvitationWithResponse(t.Context(), b.admin.WorkspaceID, nil,
					client.CreateInvitationRequest{Email: "ada@example.com", Role: "editor"})
				if err == nil {
					statuses[i] = resp.StatusCode()
					if resp.JSON201 != nil {
						urls[i] = resp.JSON201.InvitationUrl
					}
				}
			})
		}
		wg.Wait()
		for _, u := range urls {
			if u != "" {
				b.keepToken(t, u)
			}
		}
		created, conflicts := 0, 0
		for _, s := range statuses {
			switch s {
			case http.StatusCreated:
				created++
			case http.StatusConflict:
				conflicts++
			}
		}
		require.Equal(t, 1, created, "statuses: %v", statuses)
		require.Equal(t, n-1, conflicts, "statuses: %v", statuses)
	})
}

func TestCreateInvitationPermissions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pool := b.h.App.Pool
	editor := testfactory.AddMember(t, pool, b.admin.OrganizationID, b.admin.WorkspaceID, testfactory.MemberOpts{WorkspaceRole: "editor"})
	wsAdmin := testfactory.AddMember(t, pool, b.admin.OrganizationID, b.admin.WorkspaceID, testfactory.MemberOpts{WorkspaceRole: "admin"})
	body := client.CreateInvitationRequest{Email: "ada@example.com", Role: "viewer"}

	resp, err := b.h.Client(t, editor.Token).CreateWorkspaceInvitationWithResponse(t.Context(), b.admin.WorkspaceID, nil, body)
	require.NoError(t, err)
	require.Equal(t, http.StatusForbidden, resp.StatusCode())

	body.Role = "member"
	resp2, err := b.h.Client(t, wsAdmin.Token).CreateOrganizationInvitationWithResponse(t.Context(), b.admin.OrganizationID, nil, body)
	require.NoError(t, err)
	require.Equal(t, http.StatusForbidden, resp2.StatusCode(), "a workspace admin is not an organization admin")

	// A workspace admin may invite to the workspace.
	body.Role = "viewer"
	resp3, err := b.h.Client(t, wsAdmin.Token).CreateWorkspaceInvitationWithResponse(t.Context(), b.admin.WorkspaceID, nil, body)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp3.StatusCode())
	b.keepToken(t, resp3.JSON201.InvitationUrl)
}

func TestOnlyOwnersInviteOwners(t *testing.T) {
	t.Parallel()
	b := setup(t)
	orgAdmin := testfactory.AddMember(t, b.h.App.Pool, b.admin.OrganizationID, b.admin.WorkspaceID, testfactory.MemberOpts{OrganizationRole: "admin", KeyRole: "admin"})
	body := map[string]any{"email": "new-owner@example.com", "role": "owner"}
	path := "/api/v1/organizations/" + b.admin.OrganizationID + "/invitations"

	resp := b.h.Do(t, http.MethodPost, path, body, "Authorization", "Bearer "+orgAdmin.Token)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "an organization admin cannot grant owner")
	resp = b.h.Do(t, http.MethodPost, path, map[string]any{"email": "new-admin@example.com", "role": "admin"}, "Authorization", "Bearer "+orgAdmin.Token)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "but can invite admins")
	resp = b.h.Do(t, http.MethodPost, path, body, "Authorization", "Bearer "+b.admin.APIKey)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "owners invite owners")
}
