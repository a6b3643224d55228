package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/testfactory"
)

const environmentsPath = "/api/v1/environments"

// insertEnvironment stands in for a run: runs make environments, the API
// does not, so the tests write the row a run would.
func (b *templatesBundle) insertEnvironment(t *testing.T, workspaceID, templateID, providerID, status string, lastUsed *time.Time) string {
	t.Helper()
	return testfactory.Environment(t, b.h.App.Pool, testfactory.Owner{WorkspaceID: workspaceID, PrincipalID: b.admin.PrincipalID},
		&testfactory.EnvironmentOpts{TemplateID: templateID, ProviderID: providerID, Status: status, LastUsedAt: lastUsed,
			VendorHandle: json.RawMessage(`{"container_id":"c0ffee","token":"vendor-secret-token"}`)}).ID
}

func TestEnvironmentsListReadDelete(t *testing.T) {
	t.Parallel()
	b := setupTemplates(t)
	tplA := b.mustTemplate(t, "a", nil)["id"].(string)
	tplB := b.mustTemplate(t, "b", nil)["id"].(string)
	used := time.Date(2026, 11, 20, 10, 0, 0, 123000000, time.UTC)
	e1 := b.insertEnvironment(t, b.admin.WorkspaceID, tplA, b.docker, "running", &used)
	e2 := b.insertEnvironment(t, b.admin.WorkspaceID, tplB, b.docker, "stopped", nil)
	e3 := b.insertEnvironment(t, b.admin.WorkspaceID, tplA, b.docker, "failed", nil)

	ids := func(out map[string]any) []string {
		var r []string
		for _, it := range out["items"].([]any) {
			r = append(r, it.(map[string]any)["id"].(string))
		}
		return r
	}
	path := environmentsPath + "/" + e1
	status, got, _ := b.do(t, http.MethodGet, path, nil)
	require.Equal(t, http.StatusOK, status, got)

	t.Run("Read", func(t *testing.T) {
		t.Run("OneWithoutItsHandle", func(t *testing.T) {
			t.Parallel()
			status, got, hdr := b.do(t, http.MethodGet, path, nil)
			require.Equal(t, http.StatusOK, status, got)
			require.Equal(t, `"`+e1+`:1"`, hdr.Get("ETag"))
			require.Equal(t, e1, got["id"])
			require.Equal(t, tplA, got["template_id"])
			require.Equal(t, b.docker, got["environment_provider_id"])
			require.Equal(t, "running", got["status"])
			require.Equal(t, "2026-11-20T10:00:00.123000Z", got["last_used_at"])
			require.EqualValues(t, 1, got["version"])
			require.NotContains(t, got, "vendor_handle", "the vendor's handle is never shown")
		})

		t.Run("ListNewestFirstWithoutHandles", func(t *testing.T) {
			t.Parallel()
			status, out, _ := b.do(t, http.MethodGet, environmentsPath, nil)
			require.Equal(t, http.StatusOK, status, out)
			require.Equal(t, []string{e3, e2, e1}, ids(out), "newest first")
			raw, err := json.Marshal(out)
			require.NoError(t, err)
			require.NotContains(t, string(raw), "c0ffee", "no vendor handle in lists")
		})

		t.Run("ListOfATemplateByPages", func(t *testing.T) {
			t.Parallel()
			status, out, _ := b.do(t, http.MethodGet, environmentsPath+"?template_id="+tplA, nil)
			require.Equal(t, http.StatusOK, status, out)
			require.Equal(t, []string{e3, e1}, ids(out))
			status, out, _ = b.do(t, http.MethodGet, environmentsPath+"?template_id="+tplA+"&limit=1", nil)
			require.Equal(t, http.StatusOK, status, out)
			require.Equal(t, []string{e3}, ids(out))
			status, out, _ = b.do(t, http.MethodGet, environmentsPath+"?template_id="+tplA+"&limit=1&cursor="+out["next_cursor"].(string), nil)
			require.Equal(t, http.StatusOK, status, out)
			require.Equal(t, []string{e1}, ids(out))
		})
	})

	t.Run("DeleteIsRefusedWithoutTheRightETagOrRole", func(t *testing.T) {
		status, out, _ := b.do(t, http.MethodDelete, path, nil)
		require.Equal(t, http.StatusPreconditionRequired, status, out)
		status, out, _ = b.do(t, http.MethodDelete, path, nil, "If-Match", `"`+e1+`:2"`)
		require.Equal(t, http.StatusPreconditionFailed, status, out)
		status, _, _ = b.do(t, http.MethodDelete, path, nil, as(b.viewer.Token, "If-Match", etag(got))...)
		require.Equal(t, http.StatusForbidden, status)
		require.Empty(t, b.auditTrail(t, e1))
	})

	t.Run("DeleteMovesToDeletingOnce", func(t *testing.T) {
		status, out, _ := b.do(t, http.MethodDelete, path, nil, "If-Match", etag(got))
		require.Equal(t, http.StatusNoContent, status, out)
		status, after, hdr := b.do(t, http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, "deleting", after["status"], "the sweep finishes the deletion")
		require.EqualValues(t, 2, after["version"])
		require.Equal(t, `"`+e1+`:2"`, hdr.Get("ETag"))
		require.Equal(t, []string{"environment.deleted:status"}, b.auditTrail(t, e1))
		var handle string
		require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT vendor_handle->>'container_id' FROM environment WHERE id = $1`, e1).Scan(&handle))
		require.Equal(t, "c0ffee", handle, "the sweep still needs the handle")

		// Deleting again changes nothing; a stale ETag is still refused.
		status, _, _ = b.do(t, http.MethodDelete, path, nil, "If-Match", etag(after))
		require.Equal(t, http.StatusNoContent, status)
		status, _, _ = b.do(t, http.MethodDelete, path, nil, "If-Match", etag(got))
		require.Equal(t, http.StatusPreconditionFailed, status)
		_, again, _ := b.do(t, http.MethodGet, path, nil)
		require.Equal(t, after, again)
		require.Len(t, b.auditTrail(t, e1), 1)
	})

	t.Run("ADeletedEnvironmentIsKeptAndCanBeDeletedAgain", func(t *testing.T) {
		// The sweep's end state.
		e4 := b.insertEnvironment(t, b.admin.WorkspaceID, tplB, b.docker, "deleted", nil)
		status, _, _ := b.do(t, http.MethodDelete, environmentsPath+"/"+e4, nil, "If-Match", "*")
		require.Equal(t, http.StatusNoContent, status)
		_, d, _ := b.do(t, http.MethodGet, environmentsPath+"/"+e4, nil)
		require.Equal(t, "deleted", d["status"])
		require.EqualValues(t, 1, d["version"])
	})
}

// TestEnvironmentsConcurrentDelete: of two deletes holding one ETag, one
// changes the environment and the other is stale.
func TestEnvironmentsConcurrentDelete(t *testing.T) {
	t.Parallel()
	b := setupTemplates(t)
	tpl := b.mustTemplate(t, "a", nil)["id"].(string)
	e := b.insertEnvironment(t, b.admin.WorkspaceID, tpl, b.docker, "running", nil)
	raceOnce(t, 6, http.StatusNoContent, func(int) int {
		status, _, _ := b.do(t, http.MethodDelete, environmentsPath+"/"+e, nil, "If-Match", `"`+e+`:1"`)
		return status
	})
	require.Len(t, b.auditTrail(t, e), 1)
}

// TestEnvironmentsAcrossWorkspaces: another workspace's environment answers
// exactly like a missing one.
func TestEnvironmentsAcrossWorkspaces(t *testing.T) {
	t.Parallel()
	b := setupTemplates(t)
	tpl := b.mustTemplate(t, "a", nil)["id"].(string)
	e := b.insertEnvironment(t, b.admin.WorkspaceID, tpl, b.docker, "running", nil)
	other := b.otherWorkspace(t)
	var bodies []string
	for _, envID := range []string{e, "env_01jd5v6w1q3yb8j8y3tn9z2k7h"} {
		status, out, hdr := b.do(t, http.MethodGet, environmentsPath+"/"+envID, nil, as(other)...)
		require.Equal(t, http.StatusNotFound, status)
		require.Empty(t, hdr.Get("ETag"))
		bodies = append(bodies, errorMessage(t, out))
		for _, tag := range []string{"", `"` + e + `:1"`, "*"} {
			h := as(other)
			if tag != "" {
				h = append(h, "If-Match", tag)
			}
			status, out, _ := b.do(t, http.MethodDelete, environmentsPath+"/"+envID, nil, h...)
			want := http.StatusNotFound
			if tag == "" {
				want = http.StatusPreconditionRequired // before any environment is looked up
			}
			require.Equal(t, want, status, "id %s etag %q", envID, tag)
			bodies = append(bodies, errorMessage(t, out))
		}
	}
	require.Equal(t, bodies[:4], bodies[4:])
	for _, q := range []string{"", "?template_id=" + tpl} {
		status, out, _ := b.do(t, http.MethodGet, environmentsPath+q, nil, as(other)...)
		require.Equal(t, http.StatusOK, status)
		require.Empty(t, out["items"], "another workspace's template lists nothing")
	}
	_, got, _ := b.do(t, http.MethodGet, environmentsPath+"/"+e, nil)
	require.Equal(t, "running", got["status"])
}
