package identity_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/testfactory"
)

func TestListMembers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	viewer := b.member(t, testfactory.MemberOpts{WorkspaceRole: auth.RoleViewer})
	service := b.member(t, testfactory.MemberOpts{Service: true, WorkspaceRole: auth.RoleRunner})
	b.member(t, testfactory.MemberOpts{OrganizationRole: auth.OrgAdmin}) // not a workspace member
	other := b.otherOrganization(t)

	page := decode[client.MemberPage](t, b.do(t, viewer.Token, http.MethodGet, "/api/v1/members", nil), http.StatusOK)
	require.True(t, page.NextCursor.IsNull())
	byID := map[string]client.Member{}
	var order []string
	for _, m := range page.Items {
		byID[m.Principal.Id] = m
		order = append(order, m.Principal.Id)
	}
	require.Equal(t, []string{service.PrincipalID, viewer.PrincipalID, b.admin.PrincipalID}, order, "newest principal first; organization admins without membership are not members")
	require.Equal(t, b.admin.Email, byID[b.admin.PrincipalID].Email.MustGet())
	require.EqualValues(t, "admin", byID[b.admin.PrincipalID].Role)
	require.EqualValues(t, "viewer", byID[viewer.PrincipalID].Role)
	require.True(t, byID[service.PrincipalID].Email.IsNull(), "service principals have no e-mail")
	require.EqualValues(t, "service", byID[service.PrincipalID].Principal.Kind)
	require.NotContains(t, order, other.Owner.PrincipalID)

	// Pages of 1 give the same order.
	var paged []string
	path := "/api/v1/members?limit=1"
	for range 4 {
		p := decode[client.MemberPage](t, b.do(t, viewer.Token, http.MethodGet, path, nil), http.StatusOK)
		for _, m := range p.Items {
			paged = append(paged, m.Principal.Id)
		}
		if p.NextCursor.IsNull() {
			break
		}
		path = "/api/v1/members?limit=1&cursor=" + p.NextCursor.MustGet()
	}
	require.Equal(t, order, paged)
}

func TestUpdateMemberRole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	alice := b.member(t, testfactory.MemberOpts{WorkspaceRole: auth.RoleAdmin})
	path := "/api/v1/members/" + alice.PrincipalID
	patch := func(role string, hdr ...string) *http.Response {
		return b.do(t, b.admin.APIKey, http.MethodPatch, path, map[string]any{"role": role}, hdr...)
	}
	// Alice's admin key works before.
	require.Equal(t, http.StatusOK, status(t, b.do(t, alice.Token, http.MethodGet, "/api/v1/api-keys", nil)))

	require.Equal(t, "precondition_required", errorCode(t, patch("editor"), http.StatusPreconditionRequired))
	require.Equal(t, "precondition_failed", errorCode(t, patch("editor", "If-Match", alice.PrincipalID+":2"), http.StatusPreconditionFailed))
	require.Equal(t, "invalid_argument", errorCode(t, patch("owner", "If-Match", "*"), http.StatusBadRequest))

	// Same role: nothing changes.
	resp := patch("admin", "If-Match", alice.PrincipalID+":1")
	require.Equal(t, 1, decode[client.Member](t, resp, http.StatusOK).Version)
	require.Zero(t, b.count(t, "SELECT count(*) FROM audit_event WHERE action = 'member.role_changed'"))

	resp = patch("editor", "If-Match", `"`+alice.PrincipalID+`:1"`)
	m := decode[client.Member](t, resp, http.StatusOK)
	require.EqualValues(t, "editor", m.Role)
	require.Equal(t, 2, m.Version)
	require.Equal(t, fmt.Sprintf(`"%s:2"`, alice.PrincipalID), resp.Header.Get("ETag"))

	// The demotion applies to her key at once (no cache delay in this process).
	require.Equal(t, "permission_denied", errorCode(t, b.do(t, alice.Token, http.MethodGet, "/api/v1/api-keys", nil), http.StatusForbidden))
	me, err := b.h.Client(t, alice.Token).GetMeWithResponse(t.Context())
	require.NoError(t, err)
	require.EqualValues(t, "editor", me.JSON200.Role)

	evs := eventsOf(b.events(t, b.admin.APIKey), "member.role_changed")
	require.Len(t, evs, 1)
	require.Equal(t, alice.PrincipalID, evs[0].SubjectId)
	require.Equal(t, "member", evs[0].SubjectType)
	require.Equal(t, []string{"role"}, evs[0].ChangedFields)
	require.Equal(t, 2, evs[0].Version.MustGet())
}

func TestRemoveMember(t *testing.T) {
	t.Parallel()
	b := setup(t)
	bob := b.member(t, testfactory.MemberOpts{WorkspaceRole: auth.RoleEditor})
	require.Equal(t, http.StatusOK, status(t, b.do(t, bob.Token, http.MethodGet, "/api/v1/me", nil)))

	path := "/api/v1/members/" + bob.PrincipalID
	require.Equal(t, "precondition_required", errorCode(t, b.do(t, b.admin.APIKey, http.MethodDelete, path, nil), http.StatusPreconditionRequired))
	require.Equal(t, "precondition_failed", errorCode(t, b.do(t, b.admin.APIKey, http.MethodDelete, path, nil, "If-Match", bob.PrincipalID+":9"), http.StatusPreconditionFailed))
	resp := b.do(t, b.admin.APIKey, http.MethodDelete, path, nil, "If-Match", bob.PrincipalID+":1")
	require.Equal(t, http.StatusNoContent, status(t, resp))

	// His key stops at once; he is gone from the list; a second delete is 404.
	require.Equal(t, "unauthenticated", errorCode(t, b.do(t, bob.Token, http.MethodGet, "/api/v1/me", nil), http.StatusUnauthorized))
	require.Equal(t, "not_found", errorCode(t, b.do(t, b.admin.APIKey, http.MethodDelete, path, nil, "If-Match", "*"), http.StatusNotFound))
	require.Zero(t, b.count(t, "SELECT count(*) FROM workspace_member WHERE principal_id = $1", bob.PrincipalID))

	evs := b.events(t, b.admin.APIKey)
	removed := eventsOf(evs, "member.removed")
	require.Len(t, removed, 1)
	require.Equal(t, bob.PrincipalID, removed[0].SubjectId)
	revoked := eventsOf(evs, "api_key.revoked")
	require.Len(t, revoked, 1)
	require.Equal(t, bob.KeyID, revoked[0].SubjectId)
	require.Equal(t, resp.Header.Get("X-Request-Id"), revoked[0].RequestId.MustGet())
	require.Equal(t, resp.Header.Get("X-Request-Id"), removed[0].RequestId.MustGet())
	require.Equal(t, []string{"revoked_at"}, revoked[0].ChangedFields)
	require.Equal(t, b.admin.PrincipalID, revoked[0].ActorId.MustGet())
}

// TestOrganizationAdminsKeepTheirWorkspaces: a workspace admin can neither
// remove nor demote the workspace membership of the organization's owner or
// of an organization admin (409 conflict, nothing changes). Removing it would
// revoke their keys of the workspace and leave an owner with no way back in.
// Afterwards the owner still lists the workspace, acts as admin in it and
// makes keys for it.
func TestOrganizationAdminsKeepTheirWorkspaces(t *testing.T) {
	t.Parallel()
	b := setup(t)
	wsAdmin := b.member(t, testfactory.MemberOpts{WorkspaceRole: auth.RoleAdmin})
	orgAdmin := b.member(t, testfactory.MemberOpts{OrganizationRole: auth.OrgAdmin, WorkspaceRole: auth.RoleViewer, KeyRole: auth.RoleAdmin})
	for _, pri := range []string{b.admin.PrincipalID, orgAdmin.PrincipalID} {
		path := "/api/v1/members/" + pri
		resp := b.do(t, wsAdmin.Token, http.MethodDelete, path, nil, "If-Match", "*")
		e := decode[client.Error](t, resp, http.StatusConflict)
		require.EqualValues(t, "conflict", e.Error.Code)
		require.Contains(t, e.Error.Message, "acts as admin in all its workspaces")
		require.Equal(t, "conflict", errorCode(t, b.do(t, wsAdmin.Token, http.MethodPatch, path, map[string]any{"role": "editor"}, "If-Match", "*"), http.StatusConflict))
	}
	require.Equal(t, 2, b.count(t, "SELECT count(*) FROM workspace_member WHERE principal_id IN ($1, $2) AND version = 1", b.admin.PrincipalID, orgAdmin.PrincipalID))
	require.Zero(t, b.count(t, "SELECT count(*) FROM api_key WHERE revoked_at IS NOT NULL"))
	require.Empty(t, eventsOf(b.events(t, b.admin.APIKey), "member.removed"))

	for _, token := range []string{b.admin.APIKey, orgAdmin.Token} {
		me, err := b.h.Client(t, token).GetMeWithResponse(t.Context())
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, me.StatusCode())
		require.EqualValues(t, "admin", me.JSON200.Role)
	}
	members := decode[client.MemberPage](t, b.do(t, b.admin.APIKey, http.MethodGet, "/api/v1/members", nil), http.StatusOK)
	var ids []string
	for _, m := range members.Items {
		ids = append(ids, m.Principal.Id)
	}
	require.Contains(t, ids, b.admin.PrincipalID)
	ws := decode[client.WorkspacePage](t, b.do(t, b.admin.APIKey, http.MethodGet, "/api/v1/workspaces", nil), http.StatusOK)
	var wsIDs []string
	for _, w := range ws.Items {
		wsIDs = append(wsIDs, w.Id)
	}
	require.Contains(t, wsIDs, b.admin.WorkspaceID)
	key := decode[client.CreatedAPIKey](t, b.do(t, b.admin.APIKey, http.MethodPost, "/api/v1/api-keys", map[string]any{"name": "after", "role": "admin"}), http.StatusCreated)
	require.Equal(t, http.StatusOK, status(t, b.do(t, key.Token, http.MethodGet, "/api/v1/api-keys", nil)), "the new key acts as admin")

	// The workspace admin can still remove ordinary members.
	bob := b.member(t, testfactory.MemberOpts{WorkspaceRole: auth.RoleEditor})
	require.Equal(t, http.StatusNoContent, status(t, b.do(t, wsAdmin.Token, http.MethodDelete, "/api/v1/members/"+bob.PrincipalID, nil, "If-Match", "*")))
}

// TestLastAdminIsKept: the workspace's only admin member can be neither demoted
// nor removed, whoever asks; with a second admin, either can go. The workspace
// is left with admin members who are not organization admins (whose
// membership cannot change at all).
func TestLastAdminIsKept(t *testing.T) {
	t.Parallel()
	b := setup(t)
	orgOwner := b.member(t, testfactory.MemberOpts{OrganizationRole: auth.OrgOwner, KeyRole: auth.RoleAdmin})
	first := b.member(t, testfactory.MemberOpts{WorkspaceRole: auth.RoleAdmin})
	b.exec(t, "DELETE FROM workspace_member WHERE principal_id = $1", b.admin.PrincipalID)
	self := "/api/v1/members/" + first.PrincipalID
	for _, token := range []string{first.Token, orgOwner.Token} {
		require.Equal(t, "conflict", errorCode(t, b.do(t, token, http.MethodPatch, self, map[string]any{"role": "editor"}, "If-Match", "*"), http.StatusConflict))
		require.Equal(t, "conflict", errorCode(t, b.do(t, token, http.MethodDelete, self, nil, "If-Match", "*"), http.StatusConflict))
	}
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM workspace_member WHERE role = 'admin' AND version = 1"))

	second := b.member(t, testfactory.MemberOpts{WorkspaceRole: auth.RoleAdmin})
	resp := b.do(t, second.Token, http.MethodPatch, self, map[string]any{"role": "viewer"}, "If-Match", "*")
	require.EqualValues(t, "viewer", decode[client.Member](t, resp, http.StatusOK).Role)
	// Now the second admin is the last one.
	require.Equal(t, "conflict", errorCode(t, b.do(t, orgOwner.Token, http.MethodDelete, "/api/v1/members/"+second.PrincipalID, nil, "If-Match", "*"), http.StatusConflict))
}

// TestConcurrentDemotionsKeepAnAdmin: of two admins demoted at once by two
// callers (organization owners, who stay admins whatever happens), exactly one
// demotion succeeds; the workspace keeps one admin member.
func TestConcurrentDemotionsKeepAnAdmin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	x := b.member(t, testfactory.MemberOpts{WorkspaceRole: auth.RoleAdmin})
	y := b.member(t, testfactory.MemberOpts{WorkspaceRole: auth.RoleAdmin})
	owner2 := b.member(t, testfactory.MemberOpts{OrganizationRole: auth.OrgOwner, KeyRole: auth.RoleAdmin})
	b.exec(t, "DELETE FROM workspace_member WHERE principal_id = $1", b.admin.PrincipalID)
	pairs := [][2]string{{b.admin.APIKey, x.PrincipalID}, {owner2.Token, y.PrincipalID}}
	for _, p := range pairs {
		require.Equal(t, http.StatusOK, status(t, b.do(t, p[0], http.MethodGet, "/api/v1/me", nil)), "warm the key cache")
	}
	release := b.lockWorkspace(t, b.admin.WorkspaceID)
	codes := make([]int, len(pairs))
	var wg sync.WaitGroup
	for i, p := range pairs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = b.send(http.MethodPatch, "/api/v1/members/"+p[1], `{"role": "viewer"}`, "Authorization", "Bearer "+p[0], "If-Match", "*")
		}()
	}
	b.waitLockWaiters(t, len(pairs))
	release()
	wg.Wait()
	require.ElementsMatch(t, []int{http.StatusOK, http.StatusConflict}, codes)
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM workspace_member WHERE workspace_id = $1 AND role = 'admin'", b.admin.WorkspaceID))
}

// TestMembersOfOtherWorkspacesAreAbsent: a principal of another workspace (even
// of the same organization) is not a member here: 404 (428 without If-Match,
// before any lookup), nothing changes.
func TestMembersOfOtherWorkspacesAreAbsent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := b.otherOrganization(t)
	created := decode[client.CreatedWorkspace](t, b.do(t, b.admin.APIKey, http.MethodPost, "/api/v1/workspaces", map[string]any{"name": "Second"}), http.StatusCreated)
	sibling := testfactory.AddMember(t, b.h.App.Pool, b.admin.OrganizationID, created.Workspace.Id, testfactory.MemberOpts{WorkspaceRole: auth.RoleEditor})

	for _, pri := range []string{other.Owner.PrincipalID, sibling.PrincipalID} {
		for _, hdr := range [][]string{nil, {"If-Match", "*"}, {"If-Match", pri + ":1"}} {
			want, code := http.StatusNotFound, "not_found"
			if hdr == nil {
				want, code = http.StatusPreconditionRequired, "precondition_required"
			}
			resp := b.do(t, b.admin.APIKey, http.MethodPatch, "/api/v1/members/"+pri, map[string]any{"role": "viewer"}, hdr...)
			require.Equal(t, code, errorCode(t, resp, want))
			resp = b.do(t, b.admin.APIKey, http.MethodDelete, "/api/v1/members/"+pri, nil, hdr...)
			require.Equal(t, code, errorCode(t, resp, want))
		}
	}
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM workspace_member WHERE principal_id = $1 AND role = 'admin'", other.Owner.PrincipalID))
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM workspace_member WHERE principal_id = $1 AND role = 'editor'", sibling.PrincipalID))
}
