package httpapi_test

import (
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// patchConnection sends a PATCH with If-Match etag ("" for none).
func (b *connectionsBundle) patchConnection(t *testing.T, id, ifMatch string, body map[string]any) (int, map[string]any) {
	t.Helper()
	var hdr []string
	if ifMatch != "" {
		hdr = []string{"If-Match", ifMatch}
	}
	status, out, h := b.do(t, http.MethodPatch, "/api/v1/connections/"+id, body, hdr...)
	if status == http.StatusOK {
		require.Equal(t, etag(out), h.Get("ETag"))
	}
	return status, out
}

// openCredential reads the stored credential of a connection the way the
// service seals it, to check what a PATCH stored.
func (b *connectionsBundle) openCredential(t *testing.T, id string) string {
	t.Helper()
	var sealed []byte
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT credential FROM connection WHERE id = $1`, id).Scan(&sealed))
	if sealed == nil {
		return ""
	}
	plain, err := b.h.App.Keyring.Open(sealed, []byte(id))
	require.NoError(t, err, "the credential is sealed bound to the connection id")
	return string(plain)
}

func TestConnectionsPatchTriState(t *testing.T) {
	t.Parallel()
	b := setupConnections(t)
	body := b.connectionBody("gh")
	body["credential"] = map[string]any{"connected_account_id": connectionSecret}
	c := b.createConnection(t, body)
	id := c["id"].(string)
	require.Equal(t, 1, b.auditCount(t, id))

	// Absent keeps: a rename keeps the credential.
	status, c := b.patchConnection(t, id, etag(c), map[string]any{"name": "GitHub ✓"})
	require.Equal(t, http.StatusOK, status, c)
	require.EqualValues(t, 2, c["version"])
	require.Equal(t, "GitHub ✓", c["name"])
	require.Equal(t, true, c["credential_configured"])
	require.JSONEq(t, `{"connected_account_id":"`+connectionSecret+`"}`, b.openCredential(t, id))

	// An empty PATCH, and one resending the same values and credential, keep
	// the version and write no audit event.
	for _, same := range []map[string]any{{}, {"name": "GitHub ✓", "enabled": true, "config": map[string]any{"auth_config_id": "ac_oauth"},
		"credential": map[string]any{"connected_account_id": connectionSecret}}} {
		status, got := b.patchConnection(t, id, etag(c), same)
		require.Equal(t, http.StatusOK, status, got)
		require.Equal(t, c, got)
	}
	require.Equal(t, 2, b.auditCount(t, id))

	// A value replaces.
	status, c = b.patchConnection(t, id, etag(c), map[string]any{"credential": map[string]any{"connected_account_id": "ca_replaced"}})
	require.Equal(t, http.StatusOK, status, c)
	require.EqualValues(t, 3, c["version"])
	require.JSONEq(t, `{"connected_account_id":"ca_replaced"}`, b.openCredential(t, id))

	// A config change while a credential is stored must resend or remove it:
	// 400 naming credential, nothing changed.
	status, out := b.patchConnection(t, id, etag(c), map[string]any{"config": map[string]any{"auth_config_id": "ac_other"}})
	require.Equal(t, http.StatusBadRequest, status, out)
	require.Equal(t, []string{"credential"}, fields(t, out))
	status, got, _ := b.do(t, http.MethodGet, "/api/v1/connections/"+id, nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, c, got)

	// null removes, together with the config change.
	status, c = b.patchConnection(t, id, etag(c), map[string]any{"config": map[string]any{"auth_config_id": "ac_other"}, "credential": nil})
	require.Equal(t, http.StatusOK, status, c)
	require.EqualValues(t, 4, c["version"])
	require.Equal(t, false, c["credential_configured"])
	require.Equal(t, map[string]any{"auth_config_id": "ac_other"}, c["config"])
	require.Empty(t, b.openCredential(t, id))

	// Removing what is not there is no change.
	status, got = b.patchConnection(t, id, etag(c), map[string]any{"credential": nil})
	require.Equal(t, http.StatusOK, status, got)
	require.Equal(t, c, got)

	// Invalid members are refused naming the field; provider_id and app never change.
	for _, bad := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"credential": map[string]any{"nope": 1}}, "credential.nope"},
		{map[string]any{"config": map[string]any{}}, "config.auth_config_id"},
		{map[string]any{"name": ""}, "name"},
		{map[string]any{"app": "gmail"}, ""},
		{map[string]any{"provider_id": b.provider["id"]}, ""},
	} {
		status, out := b.patchConnection(t, id, etag(c), bad.body)
		require.Equal(t, http.StatusBadRequest, status, "%v: %v", bad.body, out)
		if bad.field != "" {
			require.Contains(t, fields(t, out), bad.field)
		}
	}

	// The audit trail names fields, never values.
	rows, err := b.h.App.Pool.Query(t.Context(), `SELECT action, array_to_string(changed_fields, ',') FROM audit_event WHERE subject_id = $1 ORDER BY id`, id)
	require.NoError(t, err)
	var trail []string
	for rows.Next() {
		var action, f string
		require.NoError(t, rows.Scan(&action, &f))
		trail = append(trail, action+":"+f)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{
		"connection.created:app,config,credential,enabled,name,provider_id",
		"connection.updated:name",
		"connection.updated:credential",
		"connection.updated:config,credential",
	}, trail)
	b.assertNoConnectionLeak(t)
}

func TestConnectionsPatchPreconditions(t *testing.T) {
	t.Parallel()
	b := setupConnections(t)
	c := b.createConnection(t, b.connectionBody("gh"))
	id := c["id"].(string)

	status, out := b.patchConnection(t, id, "", map[string]any{"name": "x"})
	require.Equal(t, http.StatusPreconditionRequired, status, out)
	status, out = b.patchConnection(t, id, `"`+id+`:9"`, map[string]any{"name": "x"})
	require.Equal(t, http.StatusPreconditionFailed, status, out)
	// The bare form and * are accepted.
	status, c = b.patchConnection(t, id, id+":1", map[string]any{"name": "bare"})
	require.Equal(t, http.StatusOK, status, c)
	status, c = b.patchConnection(t, id, "*", map[string]any{"name": "star"})
	require.Equal(t, http.StatusOK, status, c)

	// Concurrent PATCHes with the same ETag: exactly one wins.
	const n = 8
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			statuses[i], _ = b.patchConnection(t, id, etag(c), map[string]any{"name": "writer-" + strconv.Itoa(i)})
		})
	}
	wg.Wait()
	won := 0
	for _, s := range statuses {
		require.Contains(t, []int{http.StatusOK, http.StatusPreconditionFailed}, s)
		if s == http.StatusOK {
			won++
		}
	}
	require.Equal(t, 1, won, statuses)
	status, got, _ := b.do(t, http.MethodGet, "/api/v1/connections/"+id, nil)
	require.Equal(t, http.StatusOK, status)
	require.EqualValues(t, 4, got["version"], "one increment for the one winner")
	require.Equal(t, 4, b.auditCount(t, id))

	// A viewer cannot change it.
	status, _, _ = b.do(t, http.MethodPatch, "/api/v1/connections/"+id, map[string]any{"name": "v"}, "Authorization", "Bearer "+b.viewer.Token, "If-Match", "*")
	require.Equal(t, http.StatusForbidden, status)
}

func TestConnectionsRevoke(t *testing.T) {
	t.Parallel()
	b := setupConnections(t)
	body := b.connectionBody("gh")
	body["credential"] = map[string]any{"connected_account_id": connectionSecret}
	c := b.createConnection(t, body)
	id := c["id"].(string)
	path := "/api/v1/connections/" + id + "/revoke"

	status, out, _ := b.do(t, http.MethodPost, path, nil)
	require.Equal(t, http.StatusPreconditionRequired, status, out)
	status, out, _ = b.do(t, http.MethodPost, path, nil, "If-Match", `"`+id+`:7"`)
	require.Equal(t, http.StatusPreconditionFailed, status, out)
	status, _, _ = b.do(t, http.MethodPost, path, nil, "Authorization", "Bearer "+b.viewer.Token, "If-Match", etag(c))
	require.Equal(t, http.StatusForbidden, status)

	status, r, hdr := b.do(t, http.MethodPost, path, nil, "If-Match", etag(c))
	require.Equal(t, http.StatusOK, status, r)
	require.Equal(t, false, r["credential_configured"])
	require.EqualValues(t, 2, r["version"])
	require.Equal(t, etag(r), hdr.Get("ETag"))
	require.Empty(t, b.openCredential(t, id))
	var action, f string
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(),
		`SELECT action, array_to_string(changed_fields, ',') FROM audit_event WHERE subject_id = $1 ORDER BY id DESC LIMIT 1`, id).Scan(&action, &f))
	require.Equal(t, "connection.revoked", action)
	require.Equal(t, "credential", f)

	// Revoking again is a no-op that keeps the version and writes nothing.
	status, again, _ := b.do(t, http.MethodPost, path, nil, "If-Match", etag(r))
	require.Equal(t, http.StatusOK, status, again)
	require.Equal(t, r, again)
	require.Equal(t, 2, b.auditCount(t, id))

	// A revoked connection is still enabled and can be given a credential again.
	status, c = b.patchConnection(t, id, etag(r), map[string]any{"credential": map[string]any{"connected_account_id": "ca_new"}})
	require.Equal(t, http.StatusOK, status, c)
	require.Equal(t, true, c["credential_configured"])
	b.assertNoConnectionLeak(t)
}
