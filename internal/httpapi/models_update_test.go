package httpapi_test

import (
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/internal/apitest"
)

// patch sends a PATCH of a model with If-Match etag ("" for none).
func (b *modelsBundle) patch(t *testing.T, api *client.ClientWithResponses, key, etag string, body client.UpdateModelRequest) *client.UpdateModelResponse {
	t.Helper()
	var edit []client.RequestEditorFn
	if etag == "" {
		edit = append(edit, apitest.WithoutIfMatch)
	}
	resp, err := api.UpdateModelWithResponse(t.Context(), key, &client.UpdateModelParams{IfMatch: etag}, body, edit...)
	require.NoError(t, err)
	return resp
}

func (b *modelsBundle) modelAudit(t *testing.T, key string) []string {
	t.Helper()
	rows, err := b.h.App.Pool.Query(t.Context(),
		`SELECT action || ':' || array_to_string(changed_fields, ',') FROM audit_event WHERE subject_type = 'model' AND subject_id = $1 ORDER BY id`, key)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	return out
}

func TestModelsPatch(t *testing.T) {
	t.Parallel()
	b := setupModels(t)
	m := b.mustModel(t, "main")

	name := "gpt-4.1"
	resp := b.patch(t, b.api, "main", "", client.UpdateModelRequest{Model: &name})
	require.Equal(t, http.StatusPreconditionRequired, resp.StatusCode())
	resp = b.patch(t, b.api, "main", `"main:7"`, client.UpdateModelRequest{Model: &name})
	require.Equal(t, http.StatusPreconditionFailed, resp.StatusCode())

	// A change to nothing keeps the version and writes no audit event.
	same := m.Model
	resp = b.patch(t, b.api, "main", modelETag(m), client.UpdateModelRequest{Model: &same, Api: &m.Api, ProviderId: &m.ProviderId,
		Enabled: &m.Enabled, Settings: &client.ModelSettings{"temperature": 1.5}})
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	require.Equal(t, m, *resp.JSON200)
	require.Equal(t, `"main:1"`, resp.HTTPResponse.Header.Get("ETag"))
	require.Equal(t, []string{"model.created:api,enabled,key,model,provider_id,settings"}, b.modelAudit(t, "main"))

	// A real change bumps the version once and names the changed fields.
	off := false
	resp = b.patch(t, b.api, "main", "main:1", client.UpdateModelRequest{Model: &name, Enabled: &off})
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	require.Equal(t, 2, resp.JSON200.Version)
	require.Equal(t, name, resp.JSON200.Model)
	require.False(t, resp.JSON200.Enabled)
	require.Equal(t, `"main:2"`, resp.HTTPResponse.Header.Get("ETag"))
	require.Equal(t, "model.updated:enabled,model", b.modelAudit(t, "main")[1])
	m = *resp.JSON200

	// An api the provider's type does not speak.
	messages := "messages"
	resp = b.patch(t, b.api, "main", modelETag(m), client.UpdateModelRequest{Api: &messages})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode(), string(resp.Body))
	require.Equal(t, []string{"api"}, detailFields(resp.JSON400))

	// Moving to the anthropic provider re-validates the kept api...
	resp = b.patch(t, b.api, "main", modelETag(m), client.UpdateModelRequest{ProviderId: &b.anthropic.Id})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode(), string(resp.Body))
	require.Equal(t, []string{"api"}, detailFields(resp.JSON400))
	// ...and the kept settings against the new API (temperature 1.5 > messages' 1).
	resp = b.patch(t, b.api, "main", modelETag(m), client.UpdateModelRequest{ProviderId: &b.anthropic.Id, Api: &messages})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode(), string(resp.Body))
	require.Equal(t, []string{"settings.temperature"}, detailFields(resp.JSON400))
	resp = b.patch(t, b.api, "main", modelETag(m), client.UpdateModelRequest{ProviderId: &b.anthropic.Id, Api: &messages,
		Settings: &client.ModelSettings{"temperature": 0.5, "top_k": 40}})
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	require.Equal(t, b.anthropic.Id, resp.JSON200.ProviderId)
	require.Equal(t, 3, resp.JSON200.Version)
	require.Equal(t, "model.updated:api,provider_id,settings", b.modelAudit(t, "main")[2])
	m = *resp.JSON200

	// A disabled provider refuses new use; the model already on it can still change.
	p := b.patchModel(t, b.openai.Id, etagOf(b.openai), client.UpdateModelProviderRequest{Enabled: &off})
	require.Equal(t, http.StatusOK, p.StatusCode(), string(p.Body))
	chat := "chat_completions"
	resp = b.patch(t, b.api, "main", modelETag(m), client.UpdateModelRequest{ProviderId: &b.openai.Id, Api: &chat})
	require.Equal(t, http.StatusConflict, resp.StatusCode(), string(resp.Body))
	require.Equal(t, client.ErrorCodeDisabled, resp.JSON409.Error.Code)

	// A viewer cannot change a model.
	on := true
	resp = b.patch(t, b.h.Client(t, b.viewer.Token), "main", modelETag(m), client.UpdateModelRequest{Enabled: &on})
	require.Equal(t, http.StatusForbidden, resp.StatusCode())
	got, err := b.api.GetModelWithResponse(t.Context(), "main")
	require.NoError(t, err)
	require.Equal(t, m, *got.JSON200)
}

// TestModelsConcurrentPatch: of writers holding one ETag, exactly one wins.
func TestModelsConcurrentPatch(t *testing.T) {
	t.Parallel()
	b := setupModels(t)
	m := b.mustModel(t, "race")
	const n = 8
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			name := "writer-" + strconv.Itoa(i)
			statuses[i] = b.patch(t, b.api, "race", modelETag(m), client.UpdateModelRequest{Model: &name}).StatusCode()
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
	got, err := b.api.GetModelWithResponse(t.Context(), "race")
	require.NoError(t, err)
	require.Equal(t, 2, got.JSON200.Version)
	require.Len(t, b.modelAudit(t, "race"), 2)
}

// TestModelsAcrossWorkspaces: another workspace's model
// key answers exactly like a missing one, with and without If-Match, and keys
// are per workspace.
func TestModelsAcrossWorkspaces(t *testing.T) {
	t.Parallel()
	b := setupModels(t)
	m := b.mustModel(t, "shared-name")
	ws, err := b.api.CreateWorkspaceWithResponse(t.Context(), nil, client.CreateWorkspaceRequest{Name: "other"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, ws.StatusCode(), string(ws.Body))
	other := b.h.Client(t, ws.JSON201.ApiKey)

	on := false
	var bodies []string
	for _, key := range []string{"shared-name", "never-created"} {
		g, err := other.GetModelWithResponse(t.Context(), key)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, g.StatusCode())
		require.Empty(t, g.HTTPResponse.Header.Get("ETag"))
		bodies = append(bodies, g.JSON404.Error.Message)
		// Without If-Match, refused before any model is looked up.
		u := b.patch(t, other, key, "", client.UpdateModelRequest{Enabled: &on})
		require.Equal(t, http.StatusPreconditionRequired, u.StatusCode(), "key %s", key)
		for _, etag := range []string{modelETag(m), "*"} {
			u := b.patch(t, other, key, etag, client.UpdateModelRequest{Enabled: &on})
			require.Equal(t, http.StatusNotFound, u.StatusCode(), "key %s etag %q", key, etag)
			require.Empty(t, u.HTTPResponse.Header.Get("ETag"))
			bodies = append(bodies, u.JSON404.Error.Message)
		}
	}
	require.Equal(t, bodies[:3], bodies[3:], "the same answers as for a missing model")
	l, err := other.ListModelsWithResponse(t.Context(), nil)
	require.NoError(t, err)
	require.Empty(t, l.JSON200.Items)

	// The same key in another workspace is another model.
	op := (&providersBundle{h: b.h, api: other}).createProvider(t, "anthropic")
	c, err := other.CreateModelWithResponse(t.Context(), nil, client.CreateModelRequest{Key: "shared-name", ProviderId: op.Id, Api: "messages", Model: "claude"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, c.StatusCode(), string(c.Body))
	got, err := b.api.GetModelWithResponse(t.Context(), "shared-name")
	require.NoError(t, err)
	require.Equal(t, m, *got.JSON200)

	// A path that is not a valid key names no model.
	g, err := b.api.GetModelWithResponse(t.Context(), "UPPER")
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, g.StatusCode())
}
