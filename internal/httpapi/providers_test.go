package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/testfactory"
)

// publicURL is a public address written as an IP literal, so the endpoint
// policy accepts it without a DNS lookup.
const publicURL = "https://93.184.216.34/v1"

// secretKey is the credential the tests store; it must never come back.
const secretKey = "sk-test-DO-NOT-LEAK-7f3a9c"

type providersBundle struct {
	h      *apitest.Harness
	admin  testfactory.Admin
	api    *client.ClientWithResponses
	viewer testfactory.Member
}

func setupProviders(t *testing.T) *providersBundle {
	t.Helper()
	return setupProvidersWith(t, func(cfg *config.Config) {
		cfg.EndpointPolicy.AllowedSockets = []string{"/var/run/docker.sock"} // the operator allows the local engine
	})
}

// setupProvidersWith starts a process configured by configure, with an admin
// and a viewer.
func setupProvidersWith(t *testing.T, configure func(*config.Config)) *providersBundle {
	t.Helper()
	h := apitest.Start(t, apitest.Options{Configure: configure})
	admin := testfactory.Bootstrap(t, h.App.Pool)
	viewer := testfactory.AddMember(t, h.App.Pool, admin.OrganizationID, admin.WorkspaceID, testfactory.MemberOpts{WorkspaceRole: "viewer"})
	return &providersBundle{h: h, admin: admin, api: h.Client(t, admin.APIKey), viewer: viewer}
}

// do sends a request as the admin (or the given token) and decodes the answer.
func (b *providersBundle) do(t *testing.T, method, path string, body any, header ...string) (int, map[string]any, http.Header) {
	t.Helper()
	if len(header) == 0 || header[0] != "Authorization" {
		header = append([]string{"Authorization", "Bearer " + b.admin.APIKey}, header...)
	}
	resp := b.h.Do(t, method, path, body, header...)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &out), string(raw))
	}
	return resp.StatusCode, out, resp.Header
}

// create makes a provider and returns its view, failing unless it is 201.
func (b *providersBundle) create(t *testing.T, kind string, body map[string]any) map[string]any {
	t.Helper()
	status, out, hdr := b.do(t, http.MethodPost, "/api/v1/"+kind+"-providers", body)
	require.Equal(t, http.StatusCreated, status, out)
	require.Equal(t, "/api/v1/"+kind+"-providers/"+out["id"].(string), hdr.Get("Location"))
	require.Equal(t, `"`+out["id"].(string)+`:1"`, hdr.Get("ETag"))
	return out
}

// fields returns the field names of an error answer's details.
func fields(t *testing.T, out map[string]any) []string {
	t.Helper()
	e, ok := out["error"].(map[string]any)
	require.True(t, ok, "an error body: %v", out)
	var names []string
	ds, _ := e["details"].([]any)
	for _, d := range ds {
		names = append(names, d.(map[string]any)["field"].(string))
	}
	return names
}

func TestProvidersCreateEveryKind(t *testing.T) {
	t.Parallel()
	b := setupProviders(t)
	cases := []struct {
		kind string
		body map[string]any
	}{
		{"model", map[string]any{"type": "openai", "name": "OpenAI", "config": map[string]any{"base_url": publicURL},
			"credential": map[string]any{"api_key": secretKey}, "extra_headers": map[string]any{"X-Team": "a", "OpenAI-Beta": "b"}}},
		{"web", map[string]any{"type": "tavily", "name": "Tavily", "credential": map[string]any{"api_key": secretKey}}},
		{"environment", map[string]any{"type": "docker", "name": "Docker", "config": map[string]any{"host": "unix:///var/run/docker.sock"}}},
		{"connector", map[string]any{"type": "composio", "name": "Composio", "credential": map[string]any{"api_key": secretKey}}},
		{"memory", map[string]any{"type": "turbopuffer", "name": "tpuf", "config": map[string]any{"region": "gcp-us-central1"},
			"credential": map[string]any{"api_key": secretKey}}},
	}
	for _, tc := range cases {
		p := b.create(t, tc.kind, tc.body)
		require.Regexp(t, `^prv_[0-9a-z]{26}$`, p["id"])
		require.Equal(t, tc.kind, p["kind"])
		require.Equal(t, tc.body["type"], p["type"])
		require.Equal(t, true, p["enabled"])
		require.EqualValues(t, 1, p["version"])
		require.Equal(t, b.admin.PrincipalID, p["created_by_id"])
		require.Equal(t, b.admin.PrincipalID, p["updated_by_id"])
		require.Equal(t, tc.body["credential"] != nil, p["credential_configured"])
		require.NotContains(t, p, "credential")
		if tc.kind == "model" {
			require.Equal(t, []any{"OpenAI-Beta", "X-Team"}, p["extra_header_names"], "sorted names only")
		} else {
			require.Nil(t, p["extra_header_names"])
			require.Contains(t, p, "extra_header_names")
		}
		cfg := tc.body["config"]
		if cfg == nil {
			cfg = map[string]any{}
		}
		require.Equal(t, cfg, p["config"])

		// Read back and find it in its own collection only.
		status, got, hdr := b.do(t, http.MethodGet, "/api/v1/"+tc.kind+"-providers/"+p["id"].(string), nil)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, p, got)
		require.Equal(t, `"`+p["id"].(string)+`:1"`, hdr.Get("ETag"))
		other := "web"
		if tc.kind == "web" {
			other = "model"
		}
		status, _, _ = b.do(t, http.MethodGet, "/api/v1/"+other+"-providers/"+p["id"].(string), nil)
		require.Equal(t, http.StatusNotFound, status, "a provider is not found in another kind's collection")
	}
	b.assertNoLeak(t)
}

// assertNoLeak checks that the secret is in no log record and no audit row.
func (b *providersBundle) assertNoLeak(t *testing.T) {
	t.Helper()
	require.NotContains(t, b.h.Logs.String(), secretKey)
	var dump string
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT coalesce(string_agg(a::text, E'\n'), '') FROM audit_event a`).Scan(&dump))
	require.NotContains(t, dump, secretKey)
	require.NotContains(t, dump, "sk-test")
	var plain int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(),
		`SELECT count(*) FROM provider WHERE position(convert_to($1, 'UTF8') in coalesce(credential, '')) > 0 OR config::text LIKE '%' || $1 || '%'`,
		secretKey).Scan(&plain))
	require.Zero(t, plain, "credentials are stored sealed")
}

func TestProvidersCreateRefusals(t *testing.T) {
	t.Parallel()
	b := setupProviders(t)
	cred := map[string]any{"api_key": secretKey}
	cases := []struct {
		name  string
		kind  string
		body  map[string]any
		field string
	}{
		{"type of another kind", "web", map[string]any{"type": "openai", "name": "x", "credential": cred}, "type"},
		{"unknown type", "model", map[string]any{"type": "nope", "name": "x", "credential": cred}, "type"},
		{"config schema", "model", map[string]any{"type": "openai", "name": "x", "config": map[string]any{"base_url": 12}, "credential": cred}, "config.base_url"},
		{"unknown config member", "model", map[string]any{"type": "openai", "name": "x", "config": map[string]any{"colour": "red"}, "credential": cred}, "config.colour"},
		{"missing credential", "model", map[string]any{"type": "openai", "name": "x"}, "credential"},
		{"credential schema", "model", map[string]any{"type": "openai", "name": "x", "credential": map[string]any{"key": secretKey}}, "credential.key"},
		{"plain http", "model", map[string]any{"type": "openai", "name": "x", "config": map[string]any{"base_url": "http://93.184.216.34/v1"}, "credential": cred}, "config.base_url"},
		{"loopback", "model", map[string]any{"type": "openai", "name": "x", "config": map[string]any{"base_url": "https://127.0.0.1/v1"}, "credential": cred}, "config.base_url"},
		{"metadata address", "web", map[string]any{"type": "tavily", "name": "x", "config": map[string]any{"base_url": "https://169.254.169.254/"}, "credential": cred}, "config.base_url"},
		{"default of a type checked when given", "model", map[string]any{"type": "ollama", "name": "x", "config": map[string]any{"base_url": "http://localhost:11434"}}, "config.base_url"},
		{"reserved header", "model", map[string]any{"type": "openai", "name": "x", "credential": cred, "extra_headers": map[string]any{"Authorization": "Bearer x"}}, "extra_headers.Authorization"},
		{"CR LF in header value", "model", map[string]any{"type": "openai", "name": "x", "credential": cred, "extra_headers": map[string]any{"X-A": "a\r\nX-Evil: 1"}}, "extra_headers.X-A"},
		{"LF in header value", "model", map[string]any{"type": "openai", "name": "x", "credential": cred, "extra_headers": map[string]any{"X-A": "a\nb"}}, "extra_headers.X-A"},
		{"NUL in header value", "model", map[string]any{"type": "openai", "name": "x", "credential": cred, "extra_headers": map[string]any{"X-A": "a\x00b"}}, "extra_headers.X-A"},
		{"bad header name", "model", map[string]any{"type": "openai", "name": "x", "credential": cred, "extra_headers": map[string]any{"X A\r\n": "v"}}, "extra_headers"},
		{"extra headers on web", "web", map[string]any{"type": "tavily", "name": "x", "credential": cred, "extra_headers": map[string]any{"X-A": "v"}}, ""},
		{"case-variant key", "model", map[string]any{"type": "openai", "name": "x", "Credential": cred}, ""},
	}
	for _, tc := range cases {
		status, out, _ := b.do(t, http.MethodPost, "/api/v1/"+tc.kind+"-providers", tc.body)
		require.Equal(t, http.StatusBadRequest, status, "%s: %v", tc.name, out)
		require.Equal(t, "invalid_argument", out["error"].(map[string]any)["code"], tc.name)
		if tc.field != "" {
			require.Contains(t, fields(t, out), tc.field, "%s: %v", tc.name, out)
		}
	}
	// Duplicate keys never reach a handler.
	resp := b.h.Do(t, http.MethodPost, "/api/v1/model-providers", json.RawMessage(
		`{"type":"openai","name":"x","credential":{"api_key":"a"},"credential":{"api_key":"b"}}`), "Authorization", "Bearer "+b.admin.APIKey)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)

	// A viewer reads but cannot create.
	status, out, _ := b.do(t, http.MethodPost, "/api/v1/web-providers", map[string]any{"type": "tavily", "name": "x", "credential": cred},
		"Authorization", "Bearer "+b.viewer.Token)
	require.Equal(t, http.StatusForbidden, status, out)
	status, _, _ = b.do(t, http.MethodGet, "/api/v1/web-providers", nil, "Authorization", "Bearer "+b.viewer.Token)
	require.Equal(t, http.StatusOK, status)

	var n int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT count(*) FROM provider`).Scan(&n))
	require.Zero(t, n, "nothing refused was stored")
	b.assertNoLeak(t)
	require.NotContains(t, b.h.Logs.String(), "X-Evil")
}

func TestProvidersListPages(t *testing.T) {
	t.Parallel()
	b := setupProviders(t)
	var want []string
	for i := range 5 {
		p := b.create(t, "web", map[string]any{"type": "searxng", "name": "s" + strings.Repeat("x", i), "config": map[string]any{"base_url": publicURL}})
		want = append([]string{p["id"].(string)}, want...) // newest first
	}
	b.create(t, "model", map[string]any{"type": "openai", "name": "other kind", "credential": map[string]any{"api_key": secretKey}})

	var got []string
	limit := 2
	var cursor *string
	for pages := 0; ; pages++ {
		require.Less(t, pages, 4)
		resp, err := b.api.ListWebProvidersWithResponse(t.Context(), &client.ListWebProvidersParams{Limit: &limit, Cursor: cursor})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
		for _, p := range resp.JSON200.Items {
			got = append(got, p.Id)
			require.Equal(t, client.ProviderKind("web"), p.Kind)
		}
		if resp.JSON200.NextCursor.IsNull() {
			break
		}
		c := resp.JSON200.NextCursor.MustGet()
		cursor = &c
	}
	require.Equal(t, want, got)

	status, out, _ := b.do(t, http.MethodGet, "/api/v1/web-providers?cursor=%21%21", nil)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, []string{"cursor"}, fields(t, out))
}

func TestProvidersCreateIsIdempotent(t *testing.T) {
	t.Parallel()
	b := setupProviders(t)
	body := map[string]any{"type": "tavily", "name": "once", "credential": map[string]any{"api_key": secretKey}}
	status, first, _ := b.do(t, http.MethodPost, "/api/v1/web-providers", body, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusCreated, status, first)
	status, again, hdr := b.do(t, http.MethodPost, "/api/v1/web-providers", body, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusCreated, status, again)
	require.Equal(t, "true", hdr.Get("Idempotent-Replayed"))
	require.Equal(t, first["id"], again["id"])
	var n int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT count(*) FROM provider`).Scan(&n))
	require.Equal(t, 1, n)
	b.assertNoLeak(t)
}
