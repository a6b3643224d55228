package httpapi_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/connection/composiotest"
)

// connectionSecret is the connection credential the tests store; like
// secretKey, it must never come back.
const connectionSecret = "ca_DONOTLEAK_4b1d9e"

// connectionsBundle is a process allowed to call a Composio stand-in, with a
// composio provider pointing at it.
type connectionsBundle struct {
	*providersBundle
	composio *composiotest.Server
	provider map[string]any
}

func setupConnections(t *testing.T) *connectionsBundle {
	t.Helper()
	srv := composiotest.Start(t, secretKey)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	port, err := strconv.Atoi(u.Port())
	require.NoError(t, err)
	b := setupProvidersWith(t, func(cfg *config.Config) {
		cfg.EndpointPolicy.AllowHTTP = true
		cfg.EndpointPolicy.AllowedPrefixes = []string{"127.0.0.0/8"}
		cfg.EndpointPolicy.AllowedPorts = []int{port}
	})
	p := b.create(t, "connector", map[string]any{"type": "composio", "name": "Composio",
		"config": map[string]any{"base_url": srv.URL}, "credential": map[string]any{"api_key": secretKey}})
	return &connectionsBundle{providersBundle: b, composio: srv, provider: p}
}

// connectionBody is a valid create body on the bundle's provider.
func (b *connectionsBundle) connectionBody(name string) map[string]any {
	return map[string]any{"provider_id": b.provider["id"], "app": "github", "name": name, "config": map[string]any{"auth_config_id": "ac_oauth"}}
}

// createConnection makes a connection and checks the create answer's headers.
func (b *connectionsBundle) createConnection(t *testing.T, body map[string]any) map[string]any {
	t.Helper()
	status, out, hdr := b.do(t, http.MethodPost, "/api/v1/connections", body)
	require.Equal(t, http.StatusCreated, status, out)
	require.Equal(t, "/api/v1/connections/"+out["id"].(string), hdr.Get("Location"))
	require.Equal(t, etag(out), hdr.Get("ETag"))
	return out
}

// assertNoConnectionLeak checks that no log record, audit row or stored
// column holds the connection credential in clear.
func (b *connectionsBundle) assertNoConnectionLeak(t *testing.T) {
	t.Helper()
	b.assertNoLeak(t)
	require.NotContains(t, b.h.Logs.String(), connectionSecret)
	var dump string
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT coalesce(string_agg(a::text, E'\n'), '') FROM audit_event a`).Scan(&dump))
	require.NotContains(t, dump, connectionSecret)
	require.NotContains(t, dump, "DONOTLEAK")
	var plain int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(),
		`SELECT count(*) FROM connection WHERE position(convert_to($1, 'UTF8') in coalesce(credential, '')) > 0 OR config::text LIKE '%' || $1 || '%'`,
		connectionSecret).Scan(&plain))
	require.Zero(t, plain, "credentials are stored sealed")
}

func TestConnectionsCreateReadList(t *testing.T) {
	t.Parallel()
	b := setupConnections(t)
	body := b.connectionBody("GitHub — équipe 🚀 平台")
	body["credential"] = map[string]any{"connected_account_id": connectionSecret}
	body["account"] = "user-42"
	c := b.createConnection(t, body)
	require.Regexp(t, `^con_[0-9a-z]{26}$`, c["id"])
	require.Equal(t, b.provider["id"], c["provider_id"])
	require.Equal(t, "github", c["app"])
	require.Equal(t, "user-42", c["account"])
	require.Equal(t, "GitHub — équipe 🚀 平台", c["name"], "unicode names round-trip")
	require.Equal(t, map[string]any{"auth_config_id": "ac_oauth"}, c["config"])
	require.Equal(t, true, c["credential_configured"])
	require.NotContains(t, c, "credential")
	require.Equal(t, true, c["enabled"])
	require.EqualValues(t, 1, c["version"])
	require.Equal(t, b.admin.PrincipalID, c["created_by_id"])
	require.Equal(t, b.admin.PrincipalID, c["updated_by_id"])

	status, got, hdr := b.do(t, http.MethodGet, "/api/v1/connections/"+c["id"].(string), nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, c, got)
	require.Equal(t, etag(c), hdr.Get("ETag"))

	// Without a credential or an account, disabled from the start.
	plain := b.connectionBody("Gmail")
	plain["app"] = "gmail"
	plain["enabled"] = false
	d := b.createConnection(t, plain)
	require.Equal(t, false, d["credential_configured"])
	require.Nil(t, d["account"])
	require.Contains(t, d, "account", "absent values are null, never omitted")
	require.Equal(t, false, d["enabled"])

	var action, fieldsCSV string
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(),
		`SELECT action, array_to_string(changed_fields, ',') FROM audit_event WHERE subject_type = 'connection' AND subject_id = $1`, c["id"]).Scan(&action, &fieldsCSV))
	require.Equal(t, "connection.created", action)
	require.Equal(t, "account,app,config,credential,enabled,name,provider_id", fieldsCSV)

	// Pages, newest first.
	for i := range 3 {
		b.createConnection(t, b.connectionBody("c"+strconv.Itoa(i)))
	}
	var seen []string
	var cursor string
	for page := 0; ; page++ {
		require.Less(t, page, 5)
		path := "/api/v1/connections?limit=2"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		status, out, _ := b.do(t, http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, status, out)
		for _, it := range out["items"].([]any) {
			seen = append(seen, it.(map[string]any)["name"].(string))
			require.NotContains(t, it, "credential")
		}
		next, _ := out["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	require.Equal(t, []string{"c2", "c1", "c0", "Gmail", "GitHub — équipe 🚀 平台"}, seen)

	// A viewer reads but cannot create.
	status, _, _ = b.do(t, http.MethodGet, "/api/v1/connections", nil, "Authorization", "Bearer "+b.viewer.Token)
	require.Equal(t, http.StatusOK, status)
	status, _, _ = b.do(t, http.MethodPost, "/api/v1/connections", b.connectionBody("x"), "Authorization", "Bearer "+b.viewer.Token)
	require.Equal(t, http.StatusForbidden, status)
	b.assertNoConnectionLeak(t)
}

func TestConnectionsCreateRefusals(t *testing.T) {
	t.Parallel()
	b := setupConnections(t)
	with := func(k string, v any) map[string]any {
		body := b.connectionBody("x")
		body[k] = v
		return body
	}
	cases := []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"app uppercase", with("app", "GitHub"), "app"},
		{"app with a slash", with("app", "git/hub"), "app"},
		{"app too long", with("app", strings.Repeat("a", 65)), "app"},
		{"name with a newline", with("name", "a\nb"), "name"},
		{"empty name", with("name", ""), "name"},
		{"name too long", with("name", strings.Repeat("é", 201)), "name"},
		{"account with NUL", with("account", "a\x00b"), ""},
		{"config without auth_config_id", with("config", map[string]any{}), "config.auth_config_id"},
		{"config unknown member", with("config", map[string]any{"auth_config_id": "ac_oauth", "colour": "red"}), "config.colour"},
		{"config callback not a URL", with("config", map[string]any{"auth_config_id": "ac_oauth", "callback_url": "javascript:alert(1)"}), "config.callback_url"},
		{"credential of the wrong shape", with("credential", map[string]any{"token": connectionSecret}), "credential.token"},
		{"credential id of the wrong shape", with("credential", map[string]any{"connected_account_id": "ca x"}), "credential.connected_account_id"},
		{"unknown member", with("colour", "red"), ""},
	}
	for _, tc := range cases {
		status, out, _ := b.do(t, http.MethodPost, "/api/v1/connections", tc.body)
		require.Equal(t, http.StatusBadRequest, status, "%s: %v", tc.name, out)
		require.Equal(t, "invalid_argument", out["error"].(map[string]any)["code"], tc.name)
		if tc.field != "" {
			require.Contains(t, fields(t, out), tc.field, "%s: %v", tc.name, out)
		}
		require.NotContains(t, out["error"].(map[string]any)["message"], connectionSecret)
	}

	// The provider: another workspace's, an absent one and one of another kind
	// are the same 404 naming provider_id.
	ws, err := b.api.CreateWorkspaceWithResponse(t.Context(), nil, client.CreateWorkspaceRequest{Name: "other"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, ws.StatusCode(), string(ws.Body))
	other := &providersBundle{h: b.h, admin: b.admin, api: b.h.Client(t, ws.JSON201.ApiKey)}
	other.admin.APIKey = ws.JSON201.ApiKey
	foreign := other.create(t, "connector", map[string]any{"type": "composio", "name": "theirs", "credential": map[string]any{"api_key": secretKey}})
	web := b.create(t, "web", map[string]any{"type": "tavily", "name": "Tavily", "credential": map[string]any{"api_key": secretKey}})
	var bodies []map[string]any
	for _, pid := range []any{foreign["id"], "prv_01jd5v6w1q3yb8j8y3tn9z2k7h", web["id"]} {
		status, out, _ := b.do(t, http.MethodPost, "/api/v1/connections", with("provider_id", pid))
		require.Equal(t, http.StatusNotFound, status, out)
		require.Equal(t, []string{"provider_id"}, fields(t, out))
		e := out["error"].(map[string]any)
		delete(e, "request_id")
		bodies = append(bodies, out)
	}
	require.Equal(t, bodies[0], bodies[1], "another workspace's provider is indistinguishable from a missing one")
	require.Equal(t, bodies[0], bodies[2])

	// A disabled provider: 409 disabled naming provider_id.
	status, _, _ := b.do(t, http.MethodPatch, "/api/v1/connector-providers/"+b.provider["id"].(string), map[string]any{"enabled": false}, "If-Match", etag(b.provider))
	require.Equal(t, http.StatusOK, status)
	status, out, _ := b.do(t, http.MethodPost, "/api/v1/connections", b.connectionBody("x"))
	require.Equal(t, http.StatusConflict, status, out)
	require.Equal(t, "disabled", out["error"].(map[string]any)["code"])
	require.Equal(t, []string{"provider_id"}, fields(t, out))

	status, out, _ = b.do(t, http.MethodGet, "/api/v1/connections", nil)
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, out["items"], "nothing refused was stored")
	b.assertNoConnectionLeak(t)
}

// TestConnectionsCrossWorkspace: every connection
// endpoint answers another workspace's id exactly like a missing one.
func TestConnectionsCrossWorkspace(t *testing.T) {
	t.Parallel()
	b := setupConnections(t)
	c := b.createConnection(t, b.connectionBody("mine"))
	ws, err := b.api.CreateWorkspaceWithResponse(t.Context(), nil, client.CreateWorkspaceRequest{Name: "other"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, ws.StatusCode(), string(ws.Body))
	otherKey := "Bearer " + ws.JSON201.ApiKey
	missing := "con_01jd5v6w1q3yb8j8y3tn9z2k7h"

	type call struct {
		method, path string
		body         any
	}
	calls := func(id string) []call {
		return []call{
			{http.MethodGet, "/api/v1/connections/" + id, nil},
			{http.MethodPatch, "/api/v1/connections/" + id, map[string]any{"name": "stolen"}},
			{http.MethodPost, "/api/v1/connections/" + id + "/revoke", nil},
			{http.MethodPost, "/api/v1/connections/" + id + "/authorizations", nil},
		}
	}
	for i, mine := range calls(c["id"].(string)) {
		absent := calls(missing)[i]
		for _, ifMatch := range []string{"", etag(c), "*"} {
			var answers []map[string]any
			for _, target := range []call{mine, absent} {
				hdr := []string{"Authorization", otherKey}
				if ifMatch != "" {
					hdr = append(hdr, "If-Match", ifMatch)
				}
				status, out, h := b.do(t, target.method, target.path, target.body, hdr...)
				want := http.StatusNotFound
				if ifMatch == "" && target.method != http.MethodGet && !strings.HasSuffix(target.path, "/authorizations") {
					want = http.StatusPreconditionRequired // a change without If-Match, before any lookup
				}
				require.Equal(t, want, status, "%s %s: %v", target.method, target.path, out)
				require.Empty(t, h.Get("ETag"))
				delete(out["error"].(map[string]any), "request_id")
				answers = append(answers, out)
			}
			require.Equal(t, answers[0], answers[1], "%s %s with If-Match %q", mine.method, mine.path, ifMatch)
		}
	}
	// Nothing changed.
	status, got, _ := b.do(t, http.MethodGet, "/api/v1/connections/"+c["id"].(string), nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, c, got)
	require.Empty(t, b.composio.Accounts(), "no vendor call was made for another workspace")

	// An id longer than any id is refused as such, by the contract.
	status, out, _ := b.do(t, http.MethodGet, "/api/v1/connections/con_"+strings.Repeat("x", 70), nil)
	require.Equal(t, http.StatusBadRequest, status, out)

	// An authorization operation, likewise.
	op := b.authorize(t, c["id"].(string))
	var answers []map[string]any
	for _, target := range []string{op["id"].(string), "cop_01jd5v6w1q3yb8j8y3tn9z2k7h"} {
		status, out, h := b.do(t, http.MethodGet, "/api/v1/connection-operations/"+target, nil, "Authorization", otherKey)
		require.Equal(t, http.StatusNotFound, status, out)
		require.Empty(t, h.Get("ETag"))
		delete(out["error"].(map[string]any), "request_id")
		answers = append(answers, out)
	}
	require.Equal(t, answers[0], answers[1])
}

// TestConnectionsRequireUsable covers the check other packages (agents) make
// before they refer to a connection.
func TestConnectionsRequireUsable(t *testing.T) {
	t.Parallel()
	b := setupConnections(t)
	c := b.createConnection(t, b.connectionBody("gh"))
	caller := &auth.Caller{OrganizationID: b.admin.OrganizationID, WorkspaceID: b.admin.WorkspaceID, PrincipalID: b.admin.PrincipalID, Role: auth.RoleViewer}
	svc := b.h.App.Connections
	ctx := t.Context()
	cid := c["id"].(string)

	got, err := svc.RequireUsable(ctx, caller, "tools[0].connection_id", cid)
	require.NoError(t, err)
	require.Equal(t, cid, got.ID)

	// Absent, and another workspace's: 404 naming the caller's field.
	for _, other := range []*auth.Caller{caller, {WorkspaceID: "ws_01jd5v6w1q3yb8j8y3tn9z2k7h", PrincipalID: b.admin.PrincipalID, Role: auth.RoleAdmin}} {
		target := cid
		if other == caller {
			target = "con_01jd5v6w1q3yb8j8y3tn9z2k7h"
		}
		_, err = svc.RequireUsable(ctx, other, "tools[0].connection_id", target)
		e, ok := apperr.As(err)
		require.True(t, ok, err)
		require.Equal(t, apperr.KindNotFound, e.Kind)
		require.Equal(t, []apperr.Detail{{Field: "tools[0].connection_id", Reason: "no connection with this id in the workspace"}}, e.Details)
	}

	// enabled: false: 409 disabled at once.
	status, c2, _ := b.do(t, http.MethodPatch, "/api/v1/connections/"+cid, map[string]any{"enabled": false}, "If-Match", etag(c))
	require.Equal(t, http.StatusOK, status, c2)
	_, err = svc.RequireUsable(ctx, caller, "connection_id", cid)
	require.Equal(t, apperr.KindDisabled, apperr.KindOf(err))
	e, _ := apperr.As(err)
	require.Equal(t, "connection_id", e.Details[0].Field)

	// Enabled again, but its provider disabled: still 409 disabled.
	status, c3, _ := b.do(t, http.MethodPatch, "/api/v1/connections/"+cid, map[string]any{"enabled": true}, "If-Match", etag(c2))
	require.Equal(t, http.StatusOK, status, c3)
	status, _, _ = b.do(t, http.MethodPatch, "/api/v1/connector-providers/"+b.provider["id"].(string), map[string]any{"enabled": false}, "If-Match", etag(b.provider))
	require.Equal(t, http.StatusOK, status)
	_, err = svc.RequireUsable(ctx, caller, "connection_id", cid)
	require.Equal(t, apperr.KindDisabled, apperr.KindOf(err))

	// A caller without any role in the workspace is refused before anything is read.
	_, err = svc.RequireUsable(ctx, &auth.Caller{WorkspaceID: b.admin.WorkspaceID}, "connection_id", cid)
	require.Equal(t, apperr.KindPermissionDenied, apperr.KindOf(err))
}
