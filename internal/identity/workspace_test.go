package identity_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/testfactory"
)

func TestCreateWorkspace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	orgAdmin := b.member(t, testfactory.MemberOpts{OrganizationRole: auth.OrgAdmin, KeyRole: auth.RoleAdmin})

	resp := b.do(t, orgAdmin.Token, http.MethodPost, "/api/v1/workspaces", map[string]any{"name": "Research"})
	created := decode[client.CreatedWorkspace](t, resp, http.StatusCreated)
	ws := created.Workspace
	require.Equal(t, "Research", ws.Name)
	require.Equal(t, b.admin.OrganizationID, ws.OrganizationId)
	require.Equal(t, 1, ws.Version)
	require.Equal(t, orgAdmin.PrincipalID, ws.CreatedById)
	require.Equal(t, orgAdmin.PrincipalID, ws.UpdatedById)
	require.Equal(t, "/api/v1/workspaces/"+ws.Id, resp.Header.Get("Location"))
	require.Equal(t, fmt.Sprintf(`"%s:1"`, ws.Id), resp.Header.Get("ETag"))

	// The new key acts as admin in the new workspace, for its creator.
	me, err := b.h.Client(t, created.ApiKey).GetMeWithResponse(t.Context())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, me.StatusCode())
	require.Equal(t, ws.Id, me.JSON200.Workspace.Id)
	require.Equal(t, orgAdmin.PrincipalID, me.JSON200.Principal.Id)
	require.EqualValues(t, "admin", me.JSON200.Role)
	members := decode[client.MemberPage](t, b.do(t, created.ApiKey, http.MethodGet, "/api/v1/members", nil), http.StatusOK)
	require.Len(t, members.Items, 1)
	require.Equal(t, orgAdmin.PrincipalID, members.Items[0].Principal.Id)
	require.EqualValues(t, "admin", members.Items[0].Role)

	// Its trail starts with the creation, the membership and the key, by the creator.
	evs := b.events(t, created.ApiKey)
	require.Len(t, evs, 3)
	for _, e := range evs {
		require.Equal(t, orgAdmin.PrincipalID, e.ActorId.MustGet())
		require.Equal(t, resp.Header.Get("X-Request-Id"), e.RequestId.MustGet())
	}
	require.Len(t, eventsOf(evs, "workspace.created"), 1)

	// The old workspace is untouched by the new key.
	require.Equal(t, http.StatusOK, status(t, b.do(t, orgAdmin.Token, http.MethodGet, "/api/v1/workspaces/"+ws.Id, nil)))

	for _, bad := range []map[string]any{{}, {"name": ""}, {"name": strings.Repeat("x", 201)}, {"name": "a\nb"}, {"name": "x", "extra": 1}} {
		require.Equal(t, "invalid_argument", errorCode(t, b.do(t, orgAdmin.Token, http.MethodPost, "/api/v1/workspaces", bad), http.StatusBadRequest), "%v", bad)
	}
	require.Equal(t, 2, b.count(t, "SELECT count(*) FROM workspace"), "refused creates write nothing")
	require.NotContains(t, b.h.Logs.String(), created.ApiKey[4:], "tokens never reach the logs")
}

func TestListAndGetWorkspaces(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := b.otherOrganization(t)
	ids := []string{b.admin.WorkspaceID}
	for i := range 4 {
		created := decode[client.CreatedWorkspace](t, b.do(t, b.admin.APIKey, http.MethodPost, "/api/v1/workspaces", map[string]any{"name": fmt.Sprintf("ws %d", i)}), http.StatusCreated)
		ids = append([]string{created.Workspace.Id}, ids...) // newest first
	}

	// Pages of 2 walk all 5 workspaces, newest first, and never the other organization's.
	var got []string
	path := "/api/v1/workspaces?limit=2"
	for pages := 0; ; pages++ {
		require.Less(t, pages, 4, "pagination must end")
		page := decode[client.WorkspacePage](t, b.do(t, b.admin.APIKey, http.MethodGet, path, nil), http.StatusOK)
		for _, w := range page.Items {
			got = append(got, w.Id)
		}
		if page.NextCursor.IsNull() {
			break
		}
		path = "/api/v1/workspaces?limit=2&cursor=" + page.NextCursor.MustGet()
	}
	require.Equal(t, ids, got)
	require.NotContains(t, got, other.WorkspaceID)

	resp := b.do(t, b.admin.APIKey, http.MethodGet, "/api/v1/workspaces/"+ids[2], nil)
	ws := decode[client.Workspace](t, resp, http.StatusOK)
	require.Equal(t, ids[2], ws.Id)
	require.Equal(t, fmt.Sprintf(`"%s:1"`, ids[2]), resp.Header.Get("ETag"))

	require.Equal(t, "invalid_argument", errorCode(t, b.do(t, b.admin.APIKey, http.MethodGet, "/api/v1/workspaces?cursor=!!", nil), http.StatusBadRequest))
	require.Equal(t, "invalid_argument", errorCode(t, b.do(t, b.admin.APIKey, http.MethodGet, "/api/v1/workspaces?limit=0", nil), http.StatusBadRequest))

	// The other organization sees only its own.
	page := decode[client.WorkspacePage](t, b.do(t, other.Owner.Token, http.MethodGet, "/api/v1/workspaces", nil), http.StatusOK)
	require.Len(t, page.Items, 1)
	require.Equal(t, other.WorkspaceID, page.Items[0].Id)
}

// TestWorkspaceOfAnotherOrganizationIsAbsent: every
// operation on another organization's workspace answers exactly what an absent
// id does, with or without If-Match (without it, 428 before any lookup), and
// changes nothing.
func TestWorkspaceOfAnotherOrganizationIsAbsent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := b.otherOrganization(t)
	body := map[string]any{"name": "taken over"}
	for _, id := range []string{other.WorkspaceID, "ws_01jd5v6w1q3yb8j8y3tn9z2k7h"} {
		require.Equal(t, "not_found", errorCode(t, b.do(t, b.admin.APIKey, http.MethodGet, "/api/v1/workspaces/"+id, nil), http.StatusNotFound))
		for _, hdr := range [][]string{nil, {"If-Match", "*"}, {"If-Match", id + ":1"}} {
			resp := b.do(t, b.admin.APIKey, http.MethodPatch, "/api/v1/workspaces/"+id, body, hdr...)
			want, code := http.StatusNotFound, "not_found"
			if hdr == nil {
				want, code = http.StatusPreconditionRequired, "precondition_required"
			}
			require.Equal(t, code, errorCode(t, resp, want), "%s %v", id, hdr)
			require.Empty(t, resp.Header.Get("ETag"))
		}
	}
	require.Equal(t, 1, b.count(t, "SELECT version FROM workspace WHERE id = $1", other.WorkspaceID))
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM workspace WHERE name = 'Other workspace'"))
}

func TestUpdateWorkspace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ws := b.admin.WorkspaceID
	path := "/api/v1/workspaces/" + ws
	patch := func(body any, hdr ...string) *http.Response {
		return b.do(t, b.admin.APIKey, http.MethodPatch, path, body, hdr...)
	}
	auditCount := func() int {
		return b.count(t, "SELECT count(*) FROM audit_event WHERE action = 'workspace.updated'")
	}

	require.Equal(t, "precondition_required", errorCode(t, patch(map[string]any{"name": "New"}), http.StatusPreconditionRequired))
	require.Equal(t, "precondition_failed", errorCode(t, patch(map[string]any{"name": "New"}, "If-Match", `"`+ws+`:7"`), http.StatusPreconditionFailed))
	require.Equal(t, "invalid_argument", errorCode(t, patch(map[string]any{"name": ""}, "If-Match", "*"), http.StatusBadRequest))

	// A change to nothing keeps the version and records nothing.
	for _, body := range []map[string]any{{}, {"name": "Default workspace"}} {
		resp := patch(body, "If-Match", ws+":1")
		got := decode[client.Workspace](t, resp, http.StatusOK)
		require.Equal(t, 1, got.Version)
		require.Equal(t, `"`+ws+`:1"`, resp.Header.Get("ETag"))
	}
	require.Zero(t, auditCount())

	resp := patch(map[string]any{"name": "Secret project name"}, "If-Match", `"`+ws+`:1"`)
	got := decode[client.Workspace](t, resp, http.StatusOK)
	require.Equal(t, "Secret project name", got.Name)
	require.Equal(t, 2, got.Version)
	require.Equal(t, `"`+ws+`:2"`, resp.Header.Get("ETag"))
	require.Equal(t, 1, auditCount())

	// The audit event names the field, never its value.
	evs := eventsOf(b.events(t, b.admin.APIKey), "workspace.updated")
	require.Len(t, evs, 1)
	require.Equal(t, []string{"name"}, evs[0].ChangedFields)
	require.Equal(t, 2, evs[0].Version.MustGet())
	require.Equal(t, ws, evs[0].SubjectId)
	require.Equal(t, b.admin.PrincipalID, evs[0].ActorId.MustGet())
	require.Equal(t, resp.Header.Get("X-Request-Id"), evs[0].RequestId.MustGet())
	raw, err := io.ReadAll(b.do(t, b.admin.APIKey, http.MethodGet, "/api/v1/audit-events", nil).Body)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "Secret project name")

	// The stale ETag of before is refused now; the caller's own view is renamed at once.
	require.Equal(t, "precondition_failed", errorCode(t, patch(map[string]any{"name": "Again"}, "If-Match", ws+":1"), http.StatusPreconditionFailed))
	me, err := b.h.Client(t, b.admin.APIKey).GetMeWithResponse(t.Context())
	require.NoError(t, err)
	require.Equal(t, "Secret project name", me.JSON200.Workspace.Name)
}

// TestConcurrentWorkspacePatch: of writers holding the
// same ETag and released at the same moment, exactly one wins, the others get
// 412, and the version moves by one.
func TestConcurrentWorkspacePatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ws := b.admin.WorkspaceID
	require.Equal(t, http.StatusOK, status(t, b.do(t, b.admin.APIKey, http.MethodGet, "/api/v1/me", nil)), "warm the key cache")
	const writers = 3 // below the test process's pool size, so all of them wait at once
	release := b.lockWorkspace(t, ws)
	statuses := make([]int, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = b.send(http.MethodPatch, "/api/v1/workspaces/"+ws, fmt.Sprintf(`{"name": "writer %d"}`, i),
				"Authorization", "Bearer "+b.admin.APIKey, "If-Match", `"`+ws+`:1"`)
		}()
	}
	b.waitLockWaiters(t, writers)
	release()
	wg.Wait()
	require.ElementsMatch(t, []int{http.StatusOK, http.StatusPreconditionFailed, http.StatusPreconditionFailed}, statuses)
	require.Equal(t, 2, b.count(t, "SELECT version FROM workspace WHERE id = $1", ws))
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM audit_event WHERE action = 'workspace.updated'"))
}
