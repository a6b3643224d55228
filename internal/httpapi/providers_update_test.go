package httpapi_test

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/oapi-codegen/nullable"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/provider/probe"
	"github.com/svcdev/svc/internal/testdb"
	"github.com/svcdev/svc/internal/testfactory"
)

// createModel makes an openai provider with a credential and one extra header
// through the typed client.
func (b *providersBundle) createModel(t *testing.T) client.Provider {
	t.Helper()
	cfg := client.ProviderConfig{"base_url": publicURL}
	cred := client.ProviderCredential{"api_key": secretKey}
	headers := client.ExtraHeaders{"X-Team": "blue"}
	resp, err := b.api.CreateModelProviderWithResponse(t.Context(), nil, client.CreateModelProviderRequest{
		Type: "openai", Name: "main", Config: &cfg, Credential: &cred, ExtraHeaders: &headers,
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode(), string(resp.Body))
	return *resp.JSON201
}

// patchModel sends a PATCH with If-Match etag ("" for none).
func (b *providersBundle) patchModel(t *testing.T, id, etag string, body client.UpdateModelProviderRequest) *client.UpdateModelProviderResponse {
	t.Helper()
	var edit []client.RequestEditorFn
	if etag == "" {
		edit = append(edit, apitest.WithoutIfMatch)
	}
	resp, err := b.api.UpdateModelProviderWithResponse(t.Context(), id, &client.UpdateModelProviderParams{IfMatch: etag}, body, edit...)
	require.NoError(t, err)
	require.NotContains(t, string(resp.Body), secretKey)
	return resp
}

func etagOf(p client.Provider) string { return `"` + p.Id + ":" + strconv.Itoa(p.Version) + `"` }

func (b *providersBundle) auditCount(t *testing.T, id string) int {
	t.Helper()
	var n int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT count(*) FROM audit_event WHERE subject_id = $1`, id).Scan(&n))
	return n
}

func TestProvidersPatchTriState(t *testing.T) {
	t.Parallel()
	b := setupProviders(t)
	p := b.createModel(t)
	require.Equal(t, 1, b.auditCount(t, p.Id))

	// Absent keeps: a rename keeps the credential and the headers.
	name := "renamed"
	resp := b.patchModel(t, p.Id, etagOf(p), client.UpdateModelProviderRequest{Name: &name})
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	p = *resp.JSON200
	require.Equal(t, 2, p.Version)
	require.True(t, p.CredentialConfigured)
	require.Equal(t, []string{"X-Team"}, p.ExtraHeaderNames.MustGet())
	require.Equal(t, etagOf(p), resp.HTTPResponse.Header.Get("ETag"))

	// A no-op (same name, same credential resent) keeps the version and writes no audit event.
	resp = b.patchModel(t, p.Id, etagOf(p), client.UpdateModelProviderRequest{
		Name: &name, Credential: nullable.NewNullableWithValue(map[string]any{"api_key": secretKey}),
		ExtraHeaders: nullable.NewNullableWithValue(map[string]string{"X-Team": "blue"}),
	})
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	require.Equal(t, 2, resp.JSON200.Version)
	require.Equal(t, 2, b.auditCount(t, p.Id))

	// A config change without resending the stored secrets is refused, naming both.
	cfg := client.ProviderConfig{"base_url": "https://93.184.216.35/v1"}
	resp = b.patchModel(t, p.Id, etagOf(p), client.UpdateModelProviderRequest{Config: &cfg})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode())
	require.ElementsMatch(t, []string{"credential", "extra_headers"}, detailFields(resp.JSON400))
	resp = b.patchModel(t, p.Id, etagOf(p), client.UpdateModelProviderRequest{Config: &cfg,
		Credential: nullable.NewNullableWithValue(map[string]any{"api_key": "sk-other"})})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode())
	require.Equal(t, []string{"extra_headers"}, detailFields(resp.JSON400))
	// Resending the same config is no change, so it needs nothing resent.
	same := client.ProviderConfig{"base_url": publicURL}
	resp = b.patchModel(t, p.Id, etagOf(p), client.UpdateModelProviderRequest{Config: &same})
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	require.Equal(t, 2, resp.JSON200.Version)

	// Value replaces, null removes.
	resp = b.patchModel(t, p.Id, etagOf(p), client.UpdateModelProviderRequest{Config: &cfg,
		Credential:   nullable.NewNullableWithValue(map[string]any{"api_key": "sk-other"}),
		ExtraHeaders: nullable.NewNullNullable[map[string]string]()})
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	p = *resp.JSON200
	require.Equal(t, 3, p.Version)
	require.True(t, p.CredentialConfigured)
	require.Equal(t, []string{}, p.ExtraHeaderNames.MustGet())
	require.Equal(t, "https://93.184.216.35/v1", p.Config["base_url"])
	var fields []string
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(),
		`SELECT changed_fields FROM audit_event WHERE subject_id = $1 ORDER BY id DESC LIMIT 1`, p.Id).Scan(&fields))
	require.Equal(t, []string{"config", "credential", "extra_headers"}, fields)

	// The credential of openai is required: null cannot remove it.
	resp = b.patchModel(t, p.Id, etagOf(p), client.UpdateModelProviderRequest{Credential: nullable.NewNullNullable[map[string]any]()})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode())
	require.Equal(t, []string{"credential"}, detailFields(resp.JSON400))

	// Disabling shows in the view.
	off := false
	resp = b.patchModel(t, p.Id, etagOf(p), client.UpdateModelProviderRequest{Enabled: &off})
	require.Equal(t, http.StatusOK, resp.StatusCode())
	require.False(t, resp.JSON200.Enabled)
	require.Equal(t, 4, resp.JSON200.Version)

	// Headers with CR/LF are refused on PATCH too.
	resp = b.patchModel(t, p.Id, etagOf(*resp.JSON200), client.UpdateModelProviderRequest{
		ExtraHeaders: nullable.NewNullableWithValue(map[string]string{"X-A": "x\r\nHost: evil"})})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode())
	require.Equal(t, []string{"extra_headers.X-A"}, detailFields(resp.JSON400))
	b.assertNoLeak(t)
	require.NotContains(t, b.h.Logs.String(), "sk-other")
}

func detailFields(e *client.Error) []string {
	var out []string
	if e == nil || e.Error.Details.IsNull() {
		return out
	}
	for _, d := range e.Error.Details.MustGet() {
		out = append(out, d.Field)
	}
	return out
}

func TestProvidersPatchPreconditions(t *testing.T) {
	t.Parallel()
	b := setupProviders(t)
	p := b.createModel(t)
	name := "x"
	resp := b.patchModel(t, p.Id, "", client.UpdateModelProviderRequest{Name: &name})
	require.Equal(t, http.StatusPreconditionRequired, resp.StatusCode())
	resp = b.patchModel(t, p.Id, `"`+p.Id+`:7"`, client.UpdateModelProviderRequest{Name: &name})
	require.Equal(t, http.StatusPreconditionFailed, resp.StatusCode())

	// Concurrent PATCHes with the same ETag: exactly one wins.
	const n = 8
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			nm := "writer-" + strconv.Itoa(i)
			statuses[i] = b.patchModel(t, p.Id, etagOf(p), client.UpdateModelProviderRequest{Name: &nm}).StatusCode()
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
	got, err := b.api.GetModelProviderWithResponse(t.Context(), p.Id)
	require.NoError(t, err)
	require.Equal(t, 2, got.JSON200.Version)
	require.Equal(t, 2, b.auditCount(t, p.Id))

	// Another workspace's id is 404 whatever If-Match says, like a missing one;
	// without If-Match both are refused before anything is looked up.
	ws, err := b.api.CreateWorkspaceWithResponse(t.Context(), nil, client.CreateWorkspaceRequest{Name: "other"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, ws.StatusCode(), string(ws.Body))
	other := b.h.Client(t, ws.JSON201.ApiKey)
	missing := "prv_01jd5v6w1q3yb8j8y3tn9z2k7h"
	var bodies []string
	for _, target := range []string{p.Id, missing} {
		g, err := other.GetModelProviderWithResponse(t.Context(), target)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, g.StatusCode())
		require.Empty(t, g.HTTPResponse.Header.Get("ETag"))
		for _, etag := range []string{"*", etagOf(*got.JSON200)} {
			u, err := other.UpdateModelProviderWithResponse(t.Context(), target, &client.UpdateModelProviderParams{IfMatch: etag},
				client.UpdateModelProviderRequest{Name: &name})
			require.NoError(t, err)
			require.Equal(t, http.StatusNotFound, u.StatusCode())
			bodies = append(bodies, u.JSON404.Error.Message)
		}
		u, err := other.UpdateModelProviderWithResponse(t.Context(), target, &client.UpdateModelProviderParams{},
			client.UpdateModelProviderRequest{Name: &name}, apitest.WithoutIfMatch)
		require.NoError(t, err)
		require.Equal(t, http.StatusPreconditionRequired, u.StatusCode())
	}
	require.Equal(t, bodies[0], bodies[2], "the same answer as for a missing provider")
	l, err := other.ListModelProvidersWithResponse(t.Context(), nil)
	require.NoError(t, err)
	require.Empty(t, l.JSON200.Items)
}

func TestProvidersSecretsBoundToTheirRow(t *testing.T) {
	t.Parallel()
	b := setupProviders(t)
	a := b.createModel(t)
	other := b.createModel(t)

	reg, err := catalog.New(catalog.Options{})
	require.NoError(t, err)
	policy, err := endpoint.NewPolicy(config.EndpointPolicy{})
	require.NoError(t, err)
	svc := provider.NewService(b.h.App.Pool, b.h.App.Keyring, reg, policy, probe.New(policy, time.Second))
	caller := &auth.Caller{PrincipalID: b.admin.PrincipalID, WorkspaceID: b.admin.WorkspaceID, OrganizationID: b.admin.OrganizationID, Role: auth.RoleAdmin}

	s, err := svc.OpenSecrets(t.Context(), caller, catalog.KindModel, a.Id)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"api_key": secretKey}, s.Credential)
	require.Equal(t, map[string]string{"X-Team": "blue"}, s.ExtraHeaders)

	// Move a's sealed credential onto the other row: it no longer opens.
	_, err = b.h.App.Pool.Exec(t.Context(), `UPDATE provider SET credential = (SELECT credential FROM provider WHERE id = $1) WHERE id = $2`, a.Id, other.Id)
	require.NoError(t, err)
	_, err = svc.OpenSecrets(t.Context(), caller, catalog.KindModel, other.Id)
	require.ErrorIs(t, err, provider.ErrSecretUnreadable)
	require.ErrorIs(t, err, keyring.ErrDecrypt)
	require.NotContains(t, err.Error(), secretKey)

	// Resending a credential repairs it (the unreadable one counts as changed).
	resp := b.patchModel(t, other.Id, etagOf(other), client.UpdateModelProviderRequest{
		Credential: nullable.NewNullableWithValue(map[string]any{"api_key": secretKey})})
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	require.Equal(t, 2, resp.JSON200.Version)
	s, err = svc.OpenSecrets(t.Context(), caller, catalog.KindModel, other.Id)
	require.NoError(t, err)
	require.Equal(t, secretKey, s.Credential["api_key"])

	// A viewer may not open secrets.
	viewer := *caller
	viewer.Role = auth.RoleViewer
	_, err = svc.OpenSecrets(t.Context(), &viewer, catalog.KindModel, a.Id)
	e, ok := apperr.As(err)
	require.True(t, ok, err)
	require.Equal(t, apperr.KindPermissionDenied, e.Kind)
}

func TestProvidersOfAnUninstalledType(t *testing.T) {
	t.Parallel()
	dbURL := testdb.NewURL(t)
	local := apitest.Start(t, apitest.Options{DatabaseURL: dbURL, Configure: func(c *config.Config) { c.Environments.LocalEnabled = true }})
	admin := testfactory.Bootstrap(t, local.App.Pool)
	b := &providersBundle{h: local, admin: admin}
	p := b.create(t, "environment", map[string]any{"type": "local", "name": "dev box"})

	// The same database under a process without the local type.
	b.h = apitest.Start(t, apitest.Options{DatabaseURL: dbURL})
	id := "/api/v1/environment-providers/" + p["id"].(string)
	status, out, _ := b.do(t, http.MethodPatch, id, map[string]any{"enabled": false}, "If-Match", `"`+p["id"].(string)+`:1"`)
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, false, out["enabled"])
	status, out, _ = b.do(t, http.MethodPatch, id, map[string]any{"config": map[string]any{}}, "If-Match", `"`+p["id"].(string)+`:2"`)
	require.Equal(t, http.StatusConflict, status, out)
	require.Equal(t, "conflict", out["error"].(map[string]any)["code"])
}
