package invitation_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/testfactory"
)

func TestListInvitations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ids []string
	for _, email := range []string{"a@example.com", "b@example.com", "c@example.com"} {
		ids = append(ids, b.inviteWorkspace(t, email, "viewer").Invitation.Id)
	}
	orgInv := b.inviteOrganization(t, "d@example.com", "member").Invitation.Id

	page1, err := b.api.ListWorkspaceInvitationsWithResponse(t.Context(), b.admin.WorkspaceID, &client.ListWorkspaceInvitationsParams{Limit: ptr(2)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, page1.StatusCode())
	require.Len(t, page1.JSON200.Items, 2)
	require.Equal(t, ids[2], page1.JSON200.Items[0].Id, "newest first")
	require.Equal(t, ids[1], page1.JSON200.Items[1].Id)
	cursor := page1.JSON200.NextCursor.MustGet()

	page2, err := b.api.ListWorkspaceInvitationsWithResponse(t.Context(), b.admin.WorkspaceID,
		&client.ListWorkspaceInvitationsParams{Limit: ptr(2), Cursor: &cursor})
	require.NoError(t, err)
	require.Len(t, page2.JSON200.Items, 1)
	require.Equal(t, ids[0], page2.JSON200.Items[0].Id)
	require.True(t, page2.JSON200.NextCursor.IsNull())

	// The organization's list holds its own invitations, not its workspaces'.
	orgPage, err := b.api.ListOrganizationInvitationsWithResponse(t.Context(), b.admin.OrganizationID, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, orgPage.StatusCode())
	require.Len(t, orgPage.JSON200.Items, 1)
	require.Equal(t, orgInv, orgPage.JSON200.Items[0].Id)
	require.True(t, orgPage.JSON200.Items[0].WorkspaceId.IsNull())

	bad := "%%%"
	resp, err := b.api.ListWorkspaceInvitationsWithResponse(t.Context(), b.admin.WorkspaceID, &client.ListWorkspaceInvitationsParams{Cursor: &bad})
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode())
	require.Contains(t, decodeError(t, resp.Body).Fields, "cursor")
}

func TestGetAndRevokeInvitation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created := b.inviteWorkspace(t, "ada@example.com", "runner")
	id := created.Invitation.Id

	get, err := b.api.GetInvitationWithResponse(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, get.StatusCode())
	require.Equal(t, created.Invitation, *get.JSON200)
	require.Equal(t, `"`+id+`:1"`, get.HTTPResponse.Header.Get("ETag"))

	revoke := func(ifMatch string, edit ...client.RequestEditorFn) *client.RevokeInvitationResponse {
		t.Helper()
		resp, err := b.api.RevokeInvitationWithResponse(t.Context(), id, &client.RevokeInvitationParams{IfMatch: ifMatch}, edit...)
		require.NoError(t, err)
		return resp
	}
	require.Equal(t, http.StatusPreconditionRequired, revoke("", apitest.WithoutIfMatch).StatusCode())
	require.Equal(t, http.StatusPreconditionFailed, revoke(`"`+id+`:7"`).StatusCode())

	done := revoke(`"` + id + `:1"`)
	require.Equal(t, http.StatusOK, done.StatusCode())
	require.False(t, done.JSON200.RevokedAt.IsNull())
	require.True(t, done.JSON200.AcceptedAt.IsNull())
	require.Equal(t, 2, done.JSON200.Version)
	require.Equal(t, `"`+id+`:2"`, done.HTTPResponse.Header.Get("ETag"))

	// Revoking again changes nothing, even with the ETag the first revoke used.
	again := revoke(id + ":1")
	require.Equal(t, http.StatusOK, again.StatusCode())
	require.Equal(t, *done.JSON200, *again.JSON200)
	var audits int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(),
		"SELECT count(*) FROM audit_event WHERE action = 'invitation.revoked' AND subject_id = $1 AND actor_id = $2 AND version = 2",
		id, b.admin.PrincipalID).Scan(&audits))
	require.Equal(t, 1, audits)

	// An accepted invitation cannot be revoked.
	accepted := b.inviteOrganization(t, "grace@example.com", "member")
	acc := b.accept(t, client.AcceptInvitationRequest{Token: b.keepToken(t, accepted.InvitationUrl), Password: ptr("a long enough secret")})
	requireConfirmationSent(t, acc.StatusCode(), acc.Body)
	status, _ := b.followLink(t, b.mailsTo(t, "grace@example.com")[0].Link)
	require.Equal(t, http.StatusSeeOther, status)
	resp, err := b.api.RevokeInvitationWithResponse(t.Context(), accepted.Invitation.Id, &client.RevokeInvitationParams{IfMatch: "*"})
	require.NoError(t, err)
	require.Equal(t, http.StatusConflict, resp.StatusCode())
	require.Equal(t, "conflict", decodeError(t, resp.Body).Code)
}

// crossCase is one request that must answer 404.
type crossCase struct {
	name, method, path string
	body               any
	header             []string
}

// TestInvitationsAcrossTenants: ids of another organization, of another
// workspace, and invitations the caller does not administer all answer 404
// exactly as absent ids do, on every endpoint.
func TestInvitationsAcrossTenants(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pool := b.h.App.Pool
	other := b.otherTenant(t)
	otherAPI := b.h.Client(t, other.Admin.Token)

	// Invitations of the other organization and of its workspace.
	otherWS, err := otherAPI.CreateWorkspaceInvitationWithResponse(t.Context(), other.WorkspaceID, nil, client.CreateInvitationRequest{Email: "x@example.com", Role: "viewer"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, otherWS.StatusCode(), string(otherWS.Body))
	b.keepToken(t, otherWS.JSON201.InvitationUrl)
	otherOrg, err := otherAPI.CreateOrganizationInvitationWithResponse(t.Context(), other.OrganizationID, nil, client.CreateInvitationRequest{Email: "x@example.com", Role: "member"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, otherOrg.StatusCode())
	b.keepToken(t, otherOrg.JSON201.InvitationUrl)

	// A second workspace of the admin's own organization, with an invitation.
	sibling := b.workspace(t, b.admin.OrganizationID)
	sibAdmin := testfactory.AddMember(t, pool, b.admin.OrganizationID, sibling, testfactory.MemberOpts{WorkspaceRole: "admin"})
	sibInv, err := b.h.Client(t, sibAdmin.Token).CreateWorkspaceInvitationWithResponse(t.Context(), sibling, nil, client.CreateInvitationRequest{Email: "y@example.com", Role: "viewer"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, sibInv.StatusCode())
	b.keepToken(t, sibInv.JSON201.InvitationUrl)

	// An organization invitation, invisible to a workspace admin who is no organization admin.
	ownOrgInv := b.inviteOrganization(t, "z@example.com", "member").Invitation.Id
	wsAdmin := testfactory.AddMember(t, pool, b.admin.OrganizationID, b.admin.WorkspaceID, testfactory.MemberOpts{WorkspaceRole: "admin"})

	absent := "inv_01jd5v6w1q3yb8j8y3tn9z2k7h"
	adminAuth := []string{"Authorization", "Bearer " + b.admin.APIKey}
	body := map[string]string{"email": "new@example.com", "role": "viewer"}
	orgBody := map[string]string{"email": "new@example.com", "role": "member"}
	cases := []crossCase{
		{"CreateInOtherOrgsWorkspace", http.MethodPost, "/api/v1/workspaces/" + other.WorkspaceID + "/invitations", body, adminAuth},
		{"CreateInSiblingWorkspace", http.MethodPost, "/api/v1/workspaces/" + sibling + "/invitations", body, adminAuth},
		{"CreateInAbsentWorkspace", http.MethodPost, "/api/v1/workspaces/ws_01jd5v6w1q3yb8j8y3tn9z2k7h/invitations", body, adminAuth},
		{"ListOtherOrgsWorkspace", http.MethodGet, "/api/v1/workspaces/" + other.WorkspaceID + "/invitations", nil, adminAuth},
		{"ListSiblingWorkspace", http.MethodGet, "/api/v1/workspaces/" + sibling + "/invitations", nil, adminAuth},
		{"CreateInOtherOrganization", http.MethodPost, "/api/v1/organizations/" + other.OrganizationID + "/invitations", orgBody, adminAuth},
		{"CreateInAbsentOrganization", http.MethodPost, "/api/v1/organizations/org_01jd5v6w1q3yb8j8y3tn9z2k7h/invitations", orgBody, adminAuth},
		{"ListOtherOrganization", http.MethodGet, "/api/v1/organizations/" + other.OrganizationID + "/invitations", nil, adminAuth},
		{"GetOtherOrgsWorkspaceInvitation", http.MethodGet, "/api/v1/invitations/" + otherWS.JSON201.Invitation.Id, nil, adminAuth},
		{"GetOtherOrganizationInvitation", http.MethodGet, "/api/v1/invitations/" + otherOrg.JSON201.Invitation.Id, nil, adminAuth},
		{"GetSiblingWorkspaceInvitation", http.MethodGet, "/api/v1/invitations/" + sibInv.JSON201.Invitation.Id, nil, adminAuth},
		{"GetOrgInvitationAsWorkspaceAdmin", http.MethodGet, "/api/v1/invitations/" + ownOrgInv, nil, []string{"Authorization", "Bearer " + wsAdmin.Token}},
		{"GetAbsent", http.MethodGet, "/api/v1/invitations/" + absent, nil, adminAuth},
	}
	targets := []string{otherWS.JSON201.Invitation.Id, otherOrg.JSON201.Invitation.Id, sibInv.JSON201.Invitation.Id, absent}
	for _, target := range targets {
		path := "/api/v1/invitations/" + target + "/revoke"
		cases = append(cases,
			crossCase{"RevokeWithIfMatch " + target, http.MethodPost, path, nil, append([]string{"If-Match", `"` + target + `:1"`}, adminAuth...)})
	}
	cases = append(cases, crossCase{"RevokeOrgInvitationAsWorkspaceAdmin", http.MethodPost, "/api/v1/invitations/" + ownOrgInv + "/revoke", nil,
		[]string{"Authorization", "Bearer " + wsAdmin.Token, "If-Match", "*"}})

	for _, tc := range cases {
		resp := b.h.Do(t, tc.method, tc.path, tc.body, tc.header...)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, tc.name)
		require.Empty(t, resp.Header.Get("ETag"), tc.name)
		require.Equal(t, "not_found", readError(t, resp).Code, tc.name)
	}
	// Without If-Match, a revoke is refused before any invitation is looked up.
	for _, target := range targets {
		resp := b.h.Do(t, http.MethodPost, "/api/v1/invitations/"+target+"/revoke", nil, adminAuth...)
		require.Equal(t, http.StatusPreconditionRequired, resp.StatusCode, target)
		require.Equal(t, "precondition_required", readError(t, resp).Code, target)
	}

	// Nothing changed on the other side.
	for _, invID := range []string{otherWS.JSON201.Invitation.Id, otherOrg.JSON201.Invitation.Id} {
		resp, err := otherAPI.GetInvitationWithResponse(t.Context(), invID)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode())
		require.True(t, resp.JSON200.RevokedAt.IsNull())
		require.Equal(t, 1, resp.JSON200.Version)
	}
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT count(*) FROM invitation WHERE email = 'new@example.com'").Scan(&n))
	require.Zero(t, n)
}
