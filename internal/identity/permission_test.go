package identity_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/identity"
	"github.com/svcdev/svc/internal/testfactory"
)

// TestPermissionBoundaries sends every identity operation with every kind of
// caller. Requests are harmless (a missing id, a missing field), so an allowed
// caller gets past the permission check to a 200, 400, 404 or 428, and a refused
// one gets 403 permission_denied, whatever the request holds.
func TestPermissionBoundaries(t *testing.T) {
	t.Parallel()
	b := setup(t)

	callers := map[string]testfactory.MemberOpts{
		"viewer":            {WorkspaceRole: auth.RoleViewer},
		"runner":            {WorkspaceRole: auth.RoleRunner},
		"editor":            {WorkspaceRole: auth.RoleEditor},
		"admin":             {WorkspaceRole: auth.RoleAdmin},
		"admin, editor key": {WorkspaceRole: auth.RoleAdmin, KeyRole: auth.RoleEditor},
		"org owner":         {OrganizationRole: auth.OrgOwner, KeyRole: auth.RoleAdmin},
		"org admin":         {OrganizationRole: auth.OrgAdmin, KeyRole: auth.RoleAdmin},
		"org member editor": {OrganizationRole: auth.OrgMember, WorkspaceRole: auth.RoleEditor},
		"org member admin":  {OrganizationRole: auth.OrgMember, WorkspaceRole: auth.RoleAdmin},
		"service runner":    {Service: true, WorkspaceRole: auth.RoleRunner},
	}
	// What each caller may do: read, admin (workspace), org (organization admin).
	may := map[string]map[string]bool{
		"viewer":            {"read": true},
		"runner":            {"read": true},
		"editor":            {"read": true},
		"admin":             {"read": true, "admin": true},
		"admin, editor key": {"read": true},
		"org owner":         {"read": true, "admin": true, "org": true},
		"org admin":         {"read": true, "admin": true, "org": true},
		"org member editor": {"read": true},
		"org member admin":  {"read": true, "admin": true},
		"service runner":    {"read": true},
	}
	ws := b.admin.WorkspaceID
	ops := []struct {
		name, need, method, path string
		body                     any
		allowed                  int
	}{
		{"list workspaces", "org", http.MethodGet, "/api/v1/workspaces", nil, http.StatusOK},
		{"create workspace", "org", http.MethodPost, "/api/v1/workspaces", map[string]any{}, http.StatusBadRequest},
		{"get workspace", "org", http.MethodGet, "/api/v1/workspaces/ws_absent", nil, http.StatusNotFound},
		{"update workspace", "org", http.MethodPatch, "/api/v1/workspaces/" + ws, map[string]any{}, http.StatusPreconditionRequired},
		{"list members", "read", http.MethodGet, "/api/v1/members", nil, http.StatusOK},
		{"update member", "admin", http.MethodPatch, "/api/v1/members/pri_absent", map[string]any{"role": "viewer"}, http.StatusNotFound},
		{"remove member", "admin", http.MethodDelete, "/api/v1/members/pri_absent", nil, http.StatusNotFound},
		{"list api keys", "admin", http.MethodGet, "/api/v1/api-keys", nil, http.StatusOK},
		{"create api key", "admin", http.MethodPost, "/api/v1/api-keys", map[string]any{"name": "x"}, http.StatusBadRequest},
		{"revoke api key", "admin", http.MethodPost, "/api/v1/api-keys/key_absent/revoke", nil, http.StatusNotFound},
		{"list audit events", "admin", http.MethodGet, "/api/v1/audit-events", nil, http.StatusOK},
	}
	for name, opts := range callers {
		m := b.member(t, opts)
		for _, op := range ops {
			resp := b.do(t, m.Token, op.method, op.path, op.body, "If-Match", "*")
			if op.name == "update workspace" {
				resp = b.do(t, m.Token, op.method, op.path, op.body) // without If-Match: 428 once allowed
			}
			if may[name][op.need] {
				require.Equal(t, op.allowed, status(t, resp), "%s: %s", name, op.name)
			} else {
				require.Equal(t, "permission_denied", errorCode(t, resp, http.StatusForbidden), "%s: %s", name, op.name)
			}
		}
	}
}

// TestServiceChecksPermissions: the service refuses callers without the
// permission even when no middleware ran before it; over HTTP only admins reach
// key creation, and a key's role is capped by the caller's (see roleAtMost).
func TestServiceChecksPermissions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	svc := identity.NewService(b.h.App.Pool, nil)
	admin := &auth.Caller{
		PrincipalID: b.admin.PrincipalID, WorkspaceID: b.admin.WorkspaceID, OrganizationID: b.admin.OrganizationID,
		Role: auth.RoleAdmin, OrganizationRole: auth.OrgOwner,
	}
	_, err := svc.CreateAPIKey(t.Context(), admin, identity.CreateAPIKeyInput{Name: "ok", Role: auth.RoleAdmin})
	require.NoError(t, err)

	editor := *admin
	editor.Role, editor.OrganizationRole = auth.RoleEditor, ""
	_, err = svc.CreateAPIKey(t.Context(), &editor, identity.CreateAPIKeyInput{Name: "refused", Role: auth.RoleViewer})
	require.Equal(t, apperr.KindPermissionDenied, apperr.KindOf(err))
	_, err = svc.CreateWorkspace(t.Context(), &editor, identity.CreateWorkspaceInput{Name: "refused"})
	require.Equal(t, apperr.KindPermissionDenied, apperr.KindOf(err))
	_, err = svc.ListMembers(t.Context(), nil, identity.PageInput{})
	require.Equal(t, apperr.KindUnauthenticated, apperr.KindOf(err))

	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM api_key WHERE name = 'ok'"))
	require.Zero(t, b.count(t, "SELECT count(*) FROM api_key WHERE name = 'refused'"))
	require.Zero(t, b.count(t, "SELECT count(*) FROM workspace WHERE name = 'refused'"))
}
